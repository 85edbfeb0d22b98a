"""Reading and writing inside the sandbox.

Writes are atomic: the new content goes to a temporary file in the target's directory, is
flushed and fsynced, gets the old file's permissions (or the umask's for a new file), and
then replaces the target with ``os.replace``. A failure at any step leaves the old file as it
was and removes the temporary file. An append copies the old content and the new into the
temporary file, so it is atomic too, at the price of rewriting the file.
"""

from __future__ import annotations

import contextlib
import errno
import mimetypes
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Final

from toolplug import ErrorType, ToolContext, ToolFailure, ToolResult
from toolplug_files import _PAGE_CHARS
from toolplug_files._sandbox import Sandbox, Target

__all__ = ["read_file", "write_file"]

_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_SNIFF: Final = 8192
"""Bytes looked at for NUL bytes, which mark a file as binary."""
_SIGNATURES: Final = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (or a format built on ZIP)"),
    (b"\x1f\x8b", "gzip archive"),
    (b"\x7fELF", "ELF executable"),
    (b"SQLite format 3\x00", "SQLite database"),
)


def read_file(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    """Read a page of a text file inside the sandbox (of its first ``max_bytes``)."""
    try:
        offset = _whole(arguments.get("offset", 0), "offset", least=0)
        limit = _whole(arguments.get("max_chars", _PAGE_CHARS), "max_chars", least=1)
        target = Sandbox.from_context(context).resolve(arguments.get("path"), writing=False)
        return _read(target, int(context.config.get("max_bytes", 200_000)), offset, limit)
    except ToolFailure as failure:
        return failure.to_result()


def _whole(value: Any, name: str, *, least: int) -> int:
    """``value`` as a whole number of at least ``least``; schema-checked already for calls
    through a registry, checked again for a hand-made call of ``run``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ToolFailure(
            ErrorType.VALIDATION, f"{name}: expected a whole number >= {least}, got {value!r}"
        )
    return value


def write_file(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    """Write (or append) text to a file inside the sandbox, atomically."""
    try:
        mode = arguments.get("mode", "overwrite")
        if mode not in ("overwrite", "append"):
            raise ToolFailure(
                ErrorType.VALIDATION, f"mode: expected 'overwrite' or 'append', got {mode!r}"
            )
        content = arguments.get("content")
        if not isinstance(content, str):
            raise ToolFailure(ErrorType.VALIDATION, "content: expected a string of text")
        raw = arguments.get("path")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolFailure(
                ErrorType.VALIDATION, "content: contains a lone surrogate, which is not text"
            ) from None
        cap = int(context.config.get("max_bytes", 1_000_000))
        if len(data) > cap:
            raise ToolFailure(
                ErrorType.VALIDATION,
                f"content is {len(data)} bytes; write_file accepts at most {cap} bytes "
                "(max_bytes): write less, or split it over several appends",
            )
        target = Sandbox.from_context(context).resolve(raw, writing=True)
        if isinstance(raw, str) and raw.endswith("/"):
            raise ToolFailure(
                ErrorType.VALIDATION,
                f"path: {raw!r} ends with '/', which names a directory; add a file name",
            )
        return _write(target, data, append=mode == "append")
    except ToolFailure as failure:
        return failure.to_result()


# --- reading --------------------------------------------------------------------------------


def _read(target: Target, cap: int, offset: int, limit: int) -> ToolResult:
    shown = target.shown
    try:
        fd = os.open(target.real, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolFailure(
            ErrorType.NOT_FOUND, f"there is no file at {shown}; check the path or write it first"
        ) from None
    except PermissionError:
        raise ToolFailure(
            ErrorType.PERMISSION, f"{shown} cannot be read: the operating system denied access"
        ) from None
    except OSError as exc:
        raise _os_failure(exc, f"{shown} cannot be read") from None
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolFailure(
                ErrorType.NOT_FOUND, f"{shown} is a directory, not a file; name a file inside it"
            )
        raise ToolFailure(ErrorType.NOT_FOUND, f"{shown} is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(cap + 1)
        except OSError as exc:
            raise _os_failure(exc, f"{shown} cannot be read") from None
    size = max(info.st_size, len(data))
    truncated = len(data) > cap
    data = data[:cap]
    text = _decode(data, truncated)
    result: dict[str, Any] = {
        "path": shown,
        "absolute_path": str(target.real),
        "size_bytes": size,
        "bytes_read": len(data),
        "truncated": truncated,
        "binary": text is None,
        "content": text,
        "offset": offset,
        "chars": 0,
        "total_chars": None,
        "next_offset": None,
    }
    if text is None:
        kind = _kind(target.real, data)
        output = f"{shown} is a binary file ({size} bytes, {kind}); its bytes are not shown."
        return ToolResult.success(output, result)
    total = len(text)
    if offset > total:
        within = f" (the first {len(data)} bytes: read_file max_bytes)" if truncated else ""
        raise ToolFailure(
            ErrorType.VALIDATION,
            f"offset {offset} is past the end of {shown}, whose text{within} is {total} "
            f"characters long; give an offset from 0 to {total}",
        )
    page = text[offset : offset + limit]
    end = offset + len(page)
    more = end < total
    result.update(
        content=page, chars=len(page), total_chars=total, next_offset=end if more else None
    )
    warnings = []
    if more:
        warnings.append(
            f"{shown}: characters {offset} to {end} of {total} were returned; call read_file "
            f"again with offset {end} for the rest"
        )
    if truncated:
        warnings.append(
            f"{shown} is {size} bytes; only the first {len(data)} were read (read_file max_bytes)"
        )
    if page:
        output = page  # exactly the text: a cut reply's offset arithmetic holds
    elif total:
        output = f"(no more text: {shown} has {total} characters and offset {offset} is the end)"
    else:
        output = f"({shown} is empty)"
    return ToolResult.success(output, result, warnings=warnings)


def _decode(data: bytes, truncated: bool) -> str | None:
    """The bytes as UTF-8 text, or None when they are binary."""
    if b"\x00" in data[:_SNIFF]:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The cap may cut a multi-byte character in half; drop the half.
        if truncated and exc.reason == "unexpected end of data" and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8")
        return None


def _kind(path: Path, data: bytes) -> str:
    for signature, kind in _SIGNATURES:
        if data.startswith(signature):
            return kind
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "not UTF-8 text"


# --- writing --------------------------------------------------------------------------------


def _write(target: Target, data: bytes, *, append: bool) -> ToolResult:
    shown, real = target.shown, target.real
    if real == target.root.real or real.is_dir():
        raise ToolFailure(
            ErrorType.VALIDATION, f"{shown} is a directory; give the path of a file inside it"
        )
    parent = real.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ToolFailure(
            ErrorType.VALIDATION, f"{shown}: a part of the path is a file, not a directory"
        ) from None
    except OSError as exc:
        raise _os_failure(exc, f"cannot create the directories for {shown}") from None
    if not Path(os.path.realpath(parent)).is_relative_to(target.root.real):
        # The directory changed under us after the check (a symlink was planted).
        raise ToolFailure(
            ErrorType.PERMISSION,
            f"{shown} is refused: a symlink inside the root points outside it",
        )
    try:
        before = os.lstat(real)
    except FileNotFoundError:
        before = None
    except OSError as exc:
        raise _os_failure(exc, f"cannot write {shown}") from None
    if before is not None and not stat.S_ISREG(before.st_mode):
        raise ToolFailure(ErrorType.VALIDATION, f"{shown} exists and is not a regular file")
    permissions = stat.S_IMODE(before.st_mode) if before is not None else 0o666 & ~_umask()
    try:
        size = _replace(real, data, permissions, keep=append and before is not None)
    except OSError as exc:
        raise _os_failure(exc, f"writing {shown} failed; the file was left as it was") from None
    _sync_directory(parent)
    if append:
        summary = f"Appended {len(data)} bytes to {shown}; it now holds {size} bytes."
    elif before is None:
        summary = f"Created {shown} ({len(data)} bytes)."
    else:
        summary = f"Replaced the content of {shown} ({len(data)} bytes)."
    result = {
        "path": shown,
        "absolute_path": str(real),
        "mode": "append" if append else "overwrite",
        "bytes_written": len(data),
        "size_bytes": size,
        "created": before is None,
    }
    return ToolResult.success(summary, result)


def _replace(target: Path, data: bytes, permissions: int, *, keep: bool) -> int:
    """Write the new file beside ``target`` and swap it in; return the new size.

    Raises:
        OSError: Any step failed; ``target`` is unchanged and the temporary file is gone.
    """
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            if keep:
                old = os.open(target, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
                with os.fdopen(old, "rb") as source:
                    shutil.copyfileobj(source, out)
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
            size = out.tell()
        os.chmod(temporary, permissions)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return size


def _sync_directory(directory: Path) -> None:
    """Make the rename durable; not every platform or file system can, which is fine."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | _CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    """The process umask, read without changing it where the platform allows."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: set and restore, the only portable way
    os.umask(mask)
    return mask


def _os_failure(exc: OSError, what: str) -> ToolFailure:
    if exc.errno == errno.ELOOP:
        return ToolFailure(
            ErrorType.PERMISSION, f"{what}: a symlink inside the root points outside it"
        )
    if isinstance(exc, PermissionError):
        return ToolFailure(ErrorType.PERMISSION, f"{what}: the operating system denied access")
    reason = exc.strerror or type(exc).__name__
    return ToolFailure(ErrorType.EXECUTION, f"{what} ({reason})")
