"""Content parts: what a result holds besides its text and its data.

A tool returns pictures, sound, documents and resources as the ``parts`` of its result,
in the order a host should show them::

    ToolResult.success("The chart of March.", parts=[Image.from_file("march.png")])

Six kinds, the content types MCP names and every provider carries in some form:

- ``Text``: more text, in its place among the other parts;
- ``Image``, ``Audio``: bytes of a picture or a recording, with their MIME type;
- ``File``: a document's bytes (a PDF, a spreadsheet, anything else), with a file name;
- ``ResourceLink``: where something can be read (a URI, a name, a MIME type, a size),
  without its bytes;
- ``EmbeddedResource``: a resource's contents (text or bytes) with its URI.

Bytes are ``bytes`` here: only the wire (an MCP message, a provider's request) carries
base64 (``Part.to_dict`` for JSON). A part checks its own shape when it is made (a MIME
type of the wrong family raises ``ValueError``); whether its bytes are what the MIME type
says is checked by the engine after the call (``problem``), so a tool that sends a GIF as
``image/png`` gets a structured error naming the part, not a host that shows garbage.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, TypeAlias

__all__ = [
    "PART_KINDS",
    "Audio",
    "EmbeddedResource",
    "File",
    "Image",
    "Part",
    "PartKind",
    "ResourceLink",
    "Text",
    "as_argument",
    "part_for",
    "sniff",
]

PartKind: TypeAlias = Literal["text", "image", "audio", "file", "resource_link", "resource"]
"""The kind of one part, as ``Part.kind`` and ``ToolMetadata.parts`` name it."""

PART_KINDS: Final[tuple[PartKind, ...]] = (
    "text", "image", "audio", "file", "resource_link", "resource",
)

_MIME: Final = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$")
_SCHEME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

# The first bytes of the formats hosts show, by MIME type: a part that claims one of these
# types must start so. Others (an SVG, a spreadsheet) are passed on as they are.
_SIGNATURES: Final[dict[str, tuple[bytes, ...]]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # and "WEBP" at offset 8, checked below
    "image/bmp": (b"BM",),
    "application/pdf": (b"%PDF-",),
    "audio/wav": (b"RIFF",),  # and "WAVE" at offset 8
    "audio/x-wav": (b"RIFF",),
    "audio/wave": (b"RIFF",),
    "audio/mpeg": (b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"),
    "audio/ogg": (b"OggS",),
    "audio/flac": (b"fLaC",),
    "application/zip": (b"PK\x03\x04",),
}
_RIFF_FORM: Final = {"image/webp": b"WEBP", "audio/wav": b"WAVE", "audio/x-wav": b"WAVE",
                     "audio/wave": b"WAVE"}


def sniff(data: bytes) -> str | None:
    """The MIME type ``data`` starts like, among the formats hosts show; None if none."""
    for mime, heads in _SIGNATURES.items():
        if mime in ("audio/x-wav", "audio/wave"):
            continue
        if any(data.startswith(head) for head in heads) and (
            mime not in _RIFF_FORM or data[8:12] == _RIFF_FORM[mime]
        ):
            return mime
    return None


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


def _checked_mime(mime_type: str, family: str | None, what: str) -> str:
    mime = mime_type.strip().lower()
    if not _MIME.match(mime):
        raise ValueError(f"{what}: {mime_type!r} is not a MIME type such as 'image/png'")
    if family is not None and not mime.startswith(family + "/"):
        raise ValueError(
            f"{what}: {mime_type!r} is not an {family}/* type; "
            f"use {'File' if family == 'image' else 'File or Image'} for other content"
        )
    return mime


class Part:
    """One part of a result; see the module's docstring for the six kinds."""

    __slots__ = ()
    kind: ClassVar[PartKind]

    @property
    def size(self) -> int:
        """How many bytes (or characters, for text) the part carries."""
        raise NotImplementedError

    def describe(self) -> str:
        """A few words a text-only host can show in the part's place."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-compatible data, bytes in base64 (``data``)."""
        raise NotImplementedError

    def problem(self) -> str | None:
        """Why the part is not what it says (bytes that do not match its MIME type), or
        None. The engine asks after every call."""
        return None


@dataclass(frozen=True, slots=True)
class Text(Part):
    """More text, in its place among a result's parts."""

    kind: ClassVar[PartKind] = "text"
    text: str

    @property
    def size(self) -> int:
        """How many bytes (or characters, for text) the part carries."""
        return len(self.text)

    def describe(self) -> str:
        """A few words a text-only host can show in the part's place."""
        return self.text

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-compatible data, bytes in base64 (``data``)."""
        return {"kind": "text", "text": self.text}


@dataclass(frozen=True, slots=True, repr=False)
class _Binary(Part):
    data: bytes
    mime_type: str

    _FAMILY: ClassVar[str | None] = None

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes | bytearray | memoryview):
            raise TypeError(
                f"{type(self).__name__}: data must be bytes, got {type(self.data).__name__} "
                f"(read a file with {type(self).__name__}.from_file(path))"
            )
        object.__setattr__(self, "data", bytes(self.data))
        object.__setattr__(
            self, "mime_type", _checked_mime(self.mime_type, self._FAMILY, type(self).__name__)
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.mime_type}, {_size(len(self.data))})"

    @property
    def size(self) -> int:
        """How many bytes (or characters, for text) the part carries."""
        return len(self.data)

    def base64(self) -> str:
        """The bytes in base64, as the wire carries them."""
        return base64.b64encode(self.data).decode("ascii")

    def describe(self) -> str:
        """A few words a text-only host can show in the part's place."""
        return f"[{self.kind}: {self.mime_type}, {_size(len(self.data))}]"

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-compatible data, bytes in base64 (``data``)."""
        return {"kind": self.kind, "mime_type": self.mime_type, "data": self.base64()}

    def problem(self) -> str | None:
        """Why the part is not what it says, or None (the engine asks after every call)."""
        if not self.data:
            return "it has no bytes"
        heads = _SIGNATURES.get(self.mime_type)
        if heads is None:
            return None
        form = _RIFF_FORM.get(self.mime_type)
        if any(self.data.startswith(h) for h in heads) and (
            form is None or self.data[8:12] == form
        ):
            return None
        found = sniff(self.data)
        said = f"they look like {found}" if found else "they are not in that format"
        return f"its bytes are not {self.mime_type}: {said}"


@dataclass(frozen=True, slots=True, repr=False)
class Image(_Binary):
    """A picture: PNG, JPEG, GIF, WebP (any ``image/*`` type)."""

    kind: ClassVar[PartKind] = "image"
    mime_type: str = "image/png"
    _FAMILY: ClassVar[str | None] = "image"

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], mime_type: str | None = None) -> Image:
        """The picture in a file; its type read from its first bytes, else its name."""
        data = Path(path).read_bytes()
        return cls(data, mime_type or _guessed(data, path, "image/png"))


@dataclass(frozen=True, slots=True, repr=False)
class Audio(_Binary):
    """A recording: WAV, MP3, OGG, FLAC (any ``audio/*`` type)."""

    kind: ClassVar[PartKind] = "audio"
    mime_type: str = "audio/wav"
    _FAMILY: ClassVar[str | None] = "audio"

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], mime_type: str | None = None) -> Audio:
        """The recording in a file; its type read from its first bytes, else its name."""
        data = Path(path).read_bytes()
        return cls(data, mime_type or _guessed(data, path, "audio/wav"))


@dataclass(frozen=True, slots=True, repr=False)
class File(_Binary):
    """A document or any other file: a PDF, a spreadsheet, an archive."""

    kind: ClassVar[PartKind] = "file"
    mime_type: str = "application/octet-stream"
    name: str | None = None
    """The file's name, for hosts that show one (``report.pdf``)."""

    def __repr__(self) -> str:
        named = f"{self.name!r}, " if self.name else ""
        return f"File({named}{self.mime_type}, {_size(len(self.data))})"

    def describe(self) -> str:
        """A few words a text-only host can show in the part's place."""
        named = f"{self.name}, " if self.name else ""
        return f"[file: {named}{self.mime_type}, {_size(len(self.data))}]"

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-compatible data, bytes in base64 (``data``)."""
        body = _Binary.to_dict(self)
        if self.name:
            body["name"] = self.name
        return body

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], mime_type: str | None = None) -> File:
        """A file's bytes, named after it; its type read from its first bytes, else its
        name, else ``application/octet-stream``."""
        data = Path(path).read_bytes()
        guessed = mime_type or _guessed(data, path, "application/octet-stream")
        return cls(data, guessed, name=Path(path).name)


@dataclass(frozen=True, slots=True)
class ResourceLink(Part):
    """Where something can be read, without its bytes (MCP's ``resource_link``)."""

    kind: ClassVar[PartKind] = "resource_link"
    uri: str
    name: str
    mime_type: str | None = None
    size_bytes: int | None = None
    """How large the resource is, when known."""
    description: str | None = None

    def __post_init__(self) -> None:
        if not _SCHEME.match(self.uri):
            raise ValueError(f"ResourceLink: {self.uri!r} is not a URI (it needs a scheme)")
        if not self.name:
            raise ValueError("ResourceLink: name must not be empty")
        if self.mime_type is not None:
            object.__setattr__(
                self, "mime_type", _checked_mime(self.mime_type, None, "ResourceLink")
            )
        if self.size_bytes is not None and self.size_bytes < 0:
            raise ValueError("ResourceLink: size_bytes must not be negative")

    @property
    def size(self) -> int:
        """How many bytes (or characters, for text) the part carries."""
        return len(self.uri) + len(self.name) + len(self.description or "")

    def describe(self) -> str:
        """A few words a text-only host can show in the part's place."""
        extra = ", ".join(
            x for x in (self.mime_type, _size(self.size_bytes) if self.size_bytes else None) if x
        )
        return f"[resource: {self.name} at {self.uri}{f', {extra}' if extra else ''}]"

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-compatible data, bytes in base64 (``data``)."""
        body: dict[str, Any] = {"kind": "resource_link", "uri": self.uri, "name": self.name}
        for key in ("mime_type", "size_bytes", "description"):
            if getattr(self, key) is not None:
                body[key] = getattr(self, key)
        return body


@dataclass(frozen=True, slots=True, repr=False)
class EmbeddedResource(Part):
    """A resource's contents with its URI: text, or bytes (MCP's embedded ``resource``)."""

    kind: ClassVar[PartKind] = "resource"
    uri: str
    text: str | None = None
    data: bytes | None = None
    mime_type: str | None = None

    def __post_init__(self) -> None:
        if not _SCHEME.match(self.uri):
            raise ValueError(f"EmbeddedResource: {self.uri!r} is not a URI (it needs a scheme)")
        if (self.text is None) == (self.data is None):
            raise ValueError("EmbeddedResource: give exactly one of text and data")
        if self.data is not None:
            object.__setattr__(self, "data", bytes(self.data))
        if self.mime_type is not None:
            object.__setattr__(
                self, "mime_type", _checked_mime(self.mime_type, None, "EmbeddedResource")
            )

    def __repr__(self) -> str:
        what = f"{len(self.text)} characters" if self.text is not None else _size(self.size)
        return f"EmbeddedResource({self.uri!r}, {self.mime_type or 'no type'}, {what})"

    @property
    def size(self) -> int:
        """How many bytes (or characters, for text) the part carries."""
        return len(self.text) if self.text is not None else len(self.data or b"")

    def describe(self) -> str:
        """A few words a text-only host can show in the part's place."""
        if self.text is not None:
            return self.text
        return f"[resource: {self.uri}, {self.mime_type or 'bytes'}, {_size(self.size)}]"

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-compatible data, bytes in base64 (``data``)."""
        body: dict[str, Any] = {"kind": "resource", "uri": self.uri}
        if self.mime_type is not None:
            body["mime_type"] = self.mime_type
        if self.text is not None:
            body["text"] = self.text
        else:
            body["data"] = base64.b64encode(self.data or b"").decode("ascii")
        return body

    def problem(self) -> str | None:
        """Why the part is not what it says, or None (the engine asks after every call)."""
        if self.data is None or self.mime_type is None:
            return None
        return _Binary.problem(File(self.data, self.mime_type))


def _guessed(data: bytes, path: str | os.PathLike[str], fallback: str) -> str:
    return sniff(data) or mimetypes.guess_type(os.fspath(path))[0] or fallback


def part_for(data: bytes, mime_type: str | None = None, *, name: str | None = None) -> Part:
    """The part bytes of a MIME type make: an ``Image`` for ``image/*``, an ``Audio`` for
    ``audio/*``, else a ``File`` (named ``name``). Without a type, the bytes' first bytes
    decide, else ``application/octet-stream``."""
    mime = (mime_type or sniff(data) or "application/octet-stream").split(";")[0].strip().lower()
    if mime.startswith("image/"):
        return Image(data, mime)
    if mime.startswith("audio/"):
        return Audio(data, mime)
    return File(data, mime, name=name)


def as_argument(part: Part) -> str:
    """The part as one JSON string a tool can take as an argument: a text part's text (an
    embedded resource's too), a resource link's URI, else its bytes as a ``data:`` URL
    (RFC 2397) of its MIME type, ``data:image/png;base64,...``. A JSON argument holds no
    bytes; a data URL says what they are, is accepted where a URL is, and needs no store
    to be read (a link to bytes this process keeps would mean nothing to another)."""
    body = part.to_dict()
    if "data" not in body:
        return str(body["text"] if "text" in body else body["uri"])
    return f"data:{body.get('mime_type') or 'application/octet-stream'};base64,{body['data']}"
