"""A successful result as MCP content blocks: its text, then each part as its MCP type.

``content_blocks(result)`` is the ``content`` of a ``CallToolResult``: the output (and the
result's warnings) as one ``TextContent`` when there is any text, then the parts in their
order:

========================  =================================================================
part                      MCP content block
========================  =================================================================
``Text``                  ``TextContent``
``Image``                 ``ImageContent`` (``data`` in base64, ``mimeType``)
``Audio``                 ``AudioContent`` (``data`` in base64, ``mimeType``)
``File``                  ``EmbeddedResource`` of ``BlobResourceContents`` at ``file_uri``
``ResourceLink``          ``ResourceLink`` (``uri``, ``name``, ``mimeType``, ``size``,
                          ``description``)
``EmbeddedResource``      ``EmbeddedResource`` of ``TextResourceContents`` (text) or
                          ``BlobResourceContents`` (bytes)
========================  =================================================================

MCP has no block for a file: a resource's contents with its URI is the one way it names
bytes that are neither a picture nor a recording, so a file goes as an embedded resource
whose URI (``file_uri``) says which bytes these are and keeps the file's name. Each
part's bytes are encoded once, here, as the reply is built.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from mcp import types

from toolplug.contract._parts import Audio, EmbeddedResource, File, Image, ResourceLink, Text

if TYPE_CHECKING:
    from toolplug.contract._parts import Part
    from toolplug.contract._tool import ToolResult

__all__ = ["PARTS_URI", "content_blocks", "file_uri", "part_block"]

PARTS_URI: Final = "toolplug://parts/"
"""Where the URIs of files sent as embedded resources start (``file_uri``)."""


def file_uri(part: File) -> str:
    """The URI a file part is sent at: ``toolplug://parts/<digest>/<name>``.

    ``<digest>`` is the first 32 hex digits of the SHA-256 of its bytes, so the same bytes
    get the same URI in every reply and other bytes another; ``<name>`` is the file's name
    (``report.pdf``), or ``file`` with the extension of its MIME type when it has none.
    The URI names the bytes the block carries; ``resources/read`` does not serve it.
    """
    digest = hashlib.sha256(part.data).hexdigest()[:32]
    name = part.name or f"file{mimetypes.guess_extension(part.mime_type) or ''}"
    return f"{PARTS_URI}{digest}/{quote(name, safe='')}"


def content_blocks(result: ToolResult) -> list[Any]:
    """The content blocks of a successful result (see the module's docstring); a result
    with neither text nor parts is one empty ``TextContent``, as MCP wants some content."""
    if not result.parts:
        return [types.TextContent(type="text", text=result.for_model())]
    text = replace(result, parts=()).for_model()  # the output and its warnings
    blocks: list[Any] = [types.TextContent(type="text", text=text)] if text else []
    blocks.extend(_block(part) for part in result.parts)
    return blocks


def part_block(part: Part) -> Any:
    """One part as its MCP content block (the table above); a prompt's message too."""
    return _block(part)


def _encoded(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _block(part: Part) -> Any:
    if isinstance(part, Text):
        return types.TextContent(type="text", text=part.text)
    if isinstance(part, Image):
        return types.ImageContent(type="image", data=part.base64(), mime_type=part.mime_type)
    if isinstance(part, Audio):
        return types.AudioContent(type="audio", data=part.base64(), mime_type=part.mime_type)
    if isinstance(part, File):
        blob = types.BlobResourceContents(
            uri=file_uri(part), mime_type=part.mime_type, blob=part.base64()
        )
        return types.EmbeddedResource(type="resource", resource=blob)
    if isinstance(part, ResourceLink):
        return types.ResourceLink(
            type="resource_link", uri=part.uri, name=part.name, mime_type=part.mime_type,
            size=part.size_bytes, description=part.description,
        )
    if isinstance(part, EmbeddedResource):
        inner: types.TextResourceContents | types.BlobResourceContents
        if part.text is not None:
            inner = types.TextResourceContents(
                uri=part.uri, mime_type=part.mime_type, text=part.text
            )
        else:
            inner = types.BlobResourceContents(
                uri=part.uri, mime_type=part.mime_type, blob=_encoded(part.data or b"")
            )
        return types.EmbeddedResource(type="resource", resource=inner)
    # A part of a kind this module does not know (a Part subclass of a plugin's): what it
    # is, in words, rather than nothing.
    return types.TextContent(type="text", text=part.describe())
