"""A result's parts at the terminal: bytes written to files, text shown in its place.

``toolplug call`` prints what a tool returned; a picture, a recording or a PDF is bytes no
terminal should receive. Each such part is written to a file of its own (in ``--parts-dir``,
else a new directory under the system's temporary directory, so nothing in the working
directory is ever overwritten) and its line names the file instead.
"""

from __future__ import annotations

import mimetypes
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from toolplug.contract._parts import EmbeddedResource, File, Part, Text

__all__ = ["binary", "save_parts", "shown"]

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._ -]+")
_EXTENSIONS: Final = {  # where the platform's table has none, or an odd first choice
    "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/wave": ".wav", "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg", "audio/flac": ".flac", "image/jpeg": ".jpg", "image/webp": ".webp",
}


def binary(part: Part) -> bytes | None:
    """The bytes a part carries that belong in a file, or None (text, links)."""
    if isinstance(part, Text):
        return None
    if isinstance(part, EmbeddedResource):
        return part.data
    data = getattr(part, "data", None)
    return data if isinstance(data, bytes) else None


def _file_name(part: Part, position: int) -> str:
    """A safe name for the part's file: a File's own name (its last component, tamed),
    else ``part-N`` with the extension of its MIME type."""
    if isinstance(part, File) and part.name:
        tamed = _UNSAFE.sub("_", Path(part.name.replace("\\", "/")).name).strip(" .")
        if tamed:
            return tamed
    mime = getattr(part, "mime_type", None) or "application/octet-stream"
    extension = _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime) or ".bin"
    return f"part-{position}{extension}"


def _write_new(directory: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to a file that did not exist (``name``, else ``stem-2``, ...)."""
    stem, suffix = Path(name).stem, Path(name).suffix
    number = 1
    while True:
        target = directory / (name if number == 1 else f"{stem}-{number}{suffix}")
        try:
            with target.open("xb") as handle:  # never over an existing file or a link
                handle.write(data)
        except FileExistsError:
            number += 1
            continue
        return target


def save_parts(parts: Sequence[Part], directory: str | None) -> dict[int, Path]:
    """Write each binary part to a file; the paths by the part's position in ``parts``.

    ``directory`` is made when missing; None makes a new one under the temporary directory,
    only when some part has bytes to write.

    Raises:
        OSError: the directory cannot be made or written to.
    """
    pending = [(i, data) for i, p in enumerate(parts) if (data := binary(p)) is not None]
    if not pending:
        return {}
    if directory is None:
        folder = Path(tempfile.mkdtemp(prefix="toolplug-parts-"))
    else:
        folder = Path(directory).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
    return {
        index: _write_new(folder, _file_name(parts[index], index + 1), data).resolve()
        for index, data in pending
    }


def shown(part: Part, path: Path | None) -> str:
    """The part's line at the terminal: its text, or what it is and where it was written."""
    if path is None:
        return part.describe()
    return f"{part.describe()} saved to {path}"
