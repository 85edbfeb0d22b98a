"""How a result's parts reach a framework: each in the framework's own type, or as its text.

Every integration hands a success's parts (``ToolResult.parts``) to its framework through
``carried``, with a function that makes the framework's type of one part (pydantic-ai's
``BinaryContent``, the Agents SDK's ``ToolOutputImage``, a LangChain content block, an llm
``Attachment``), or None when the framework has no type for it. A part without one reaches
the model as its ``describe()`` text, in its place; a picture, recording or file left as
text is also logged (logger ``toolplug.integrations``, a warning naming the framework, the
tool and the part), so nothing is dropped without a word.
"""

from __future__ import annotations

import dataclasses
import logging
import mimetypes
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeAlias, TypeVar

from toolplug import Audio, EmbeddedResource, File, Image, ResourceLink

if TYPE_CHECKING:
    from toolplug import Part, ToolResult

__all__ = [
    "Binary",
    "binary",
    "carried",
    "data_url",
    "file_name",
    "text_of",
    "web_link",
    "without_parts",
]

Binary: TypeAlias = Image | Audio | File
"""A part of bytes: a picture, a recording or a file."""

logger: Final = logging.getLogger("toolplug.integrations")

T = TypeVar("T")


def carried(
    result: ToolResult, framework: str, tool: str, native: Callable[[Part], T | None]
) -> list[T | str]:
    """Each of ``result``'s parts as ``native`` makes it, or its ``describe()`` text.

    A part that holds bytes and is left as text is logged as a warning: the model reads what
    it was (``[audio: audio/wav, 1.6 KB]``), not the bytes.
    """
    items: list[T | str] = []
    for index, part in enumerate(result.parts):
        made = native(part)
        if made is not None:
            items.append(made)
            continue
        items.append(part.describe())
        if binary(part) is not None:
            logger.warning(
                "%s cannot carry the %s part %d of %s's result (%r): the model reads "
                "%r in its place",
                framework, part.kind, index, tool, part, part.describe(),
            )
    return items


def binary(part: Part) -> Binary | None:
    """The picture, recording or file a part holds: itself for ``Image``, ``Audio`` and
    ``File``, the ``Image``, ``Audio`` or ``File`` of an embedded resource's bytes, by its
    MIME type (a ``File`` of ``application/octet-stream`` without one); None for text and
    links."""
    if isinstance(part, EmbeddedResource):
        if part.data is None:
            return None
        mime = part.mime_type or "application/octet-stream"
        if mime.startswith("image/"):
            return Image(part.data, mime)
        if mime.startswith("audio/"):
            return Audio(part.data, mime)
        return File(part.data, mime, name=part.uri.rstrip("/").rsplit("/", 1)[-1] or None)
    return part if isinstance(part, Image | Audio | File) else None


def text_of(part: Part) -> str | None:
    """The text a part is: a ``Text``'s, or an embedded resource's text; else None."""
    if part.kind == "text" or (isinstance(part, EmbeddedResource) and part.text is not None):
        return part.describe()
    return None


def web_link(part: Part) -> ResourceLink | None:
    """A resource link a provider can fetch itself (``http`` or ``https``, with a MIME
    type): a framework may pass it as a URL; any other link is read as its text."""
    if not isinstance(part, ResourceLink) or part.mime_type is None:
        return None
    return part if part.uri.lower().startswith(("http://", "https://")) else None


def data_url(part: Binary) -> str:
    """``data:MIME;base64,...``: the bytes of an ``Image``, ``Audio`` or ``File``."""
    return f"data:{part.mime_type};base64,{part.base64()}"


def file_name(part: Binary) -> str:
    """The file's own name, else ``file`` with the extension of its MIME type (providers
    that take a document want a name to read its type from)."""
    if isinstance(part, File) and part.name:
        return part.name
    return "file" + (mimetypes.guess_extension(part.mime_type) or "")


def without_parts(result: ToolResult) -> ToolResult:
    """The result with no parts: its text as a text-only model reads it, parts aside."""
    return dataclasses.replace(result, parts=())
