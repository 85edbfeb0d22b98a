"""A mounted server's content blocks as a result's output and parts.

The text blocks are the output, joined by blank lines as before parts existed; every other
block becomes the part of its kind, in its order:

========================  =================================================================
MCP content block         part
========================  =================================================================
``TextContent``           the output
``ImageContent``          ``Image`` (the base64 ``data`` decoded, ``mimeType``)
``AudioContent``          ``Audio``
``ResourceLink``          ``ResourceLink`` (``uri``, ``name``, ``mimeType``, ``size``,
                          ``description``)
``EmbeddedResource``      ``EmbeddedResource`` (its text, or its blob decoded)
========================  =================================================================

A block that cannot be a part (data that is not base64, an image whose MIME type is not
``image/*``) is not passed on as something it is not: ``blocks`` raises ``BadBlock``
naming it, and the call fails with that message.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from toolplug.contract._parts import Audio, EmbeddedResource, Image, Part, ResourceLink

__all__ = ["BadBlock", "blocks"]


class BadBlock(ValueError):
    """A content block of a server's result that makes no part, and why."""


def blocks(content: Sequence[Any]) -> tuple[str, list[Part]]:
    """The output (the text blocks) and the parts (the others) of a result's content."""
    texts: list[str] = []
    parts: list[Part] = []
    for index, block in enumerate(content):
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
            continue
        try:
            part = _part(kind, block)
        except (ValueError, TypeError) as exc:
            raise BadBlock(f"content[{index}] ({kind or 'no type'}): {exc}") from None
        if part is not None:
            parts.append(part)
    return "\n\n".join(texts), parts


def _part(kind: str, block: Any) -> Part | None:
    if kind == "image":
        return Image(_decoded(block.data), block.mime_type)
    if kind == "audio":
        return Audio(_decoded(block.data), block.mime_type)
    if kind == "resource_link":
        return ResourceLink(
            str(block.uri), block.name, mime_type=block.mime_type, size_bytes=block.size,
            description=block.description,
        )
    if kind == "resource":
        inner = block.resource
        text = getattr(inner, "text", None)
        if text is not None:
            return EmbeddedResource(str(inner.uri), text=text, mime_type=inner.mime_type)
        return EmbeddedResource(
            str(inner.uri), data=_decoded(inner.blob), mime_type=inner.mime_type
        )
    return None  # a kind of block newer than this SDK's: the SDK would not have parsed it


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("its data is not base64") from None
