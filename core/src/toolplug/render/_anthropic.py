"""Anthropic Messages API tool definitions, and tool results."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._parts import EmbeddedResource, File, Image, Text
from toolplug.render._results import ResultLoss, Sent, notes, sent_parts
from toolplug.schema import strict_arguments, strict_schema

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust
    from toolplug.contract._tool import ToolResult

__all__ = ["anthropic_result", "anthropic_tool"]

IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types the Messages API reads (its base64 image source)."""
_CARRIES: Final = (
    "a tool_result carries text, JPEG, PNG, GIF and WebP images, PDF and plain-text documents"
)


def anthropic_tool(
    metadata: ToolMetadata, *, strict: bool, defer_loading: bool = False,
    labels: Trust | None = None,
) -> dict[str, Any]:
    """``{"name", "description", "input_schema"}``, with ``input_examples`` from the examples.

    With ``strict``, ``"strict": true`` and the schema rewritten for Anthropic's strict tool
    use; the examples are given in the same shape, so they still fit ``input_schema``.
    """
    tool: dict[str, Any] = {"name": metadata.name, "description": metadata.description}
    if strict:
        tool["input_schema"] = strict_schema(metadata.parameters, dialect="anthropic")
        tool["strict"] = True
    else:
        tool["input_schema"] = copy.deepcopy(metadata.parameters)
    examples = [
        strict_arguments(metadata.parameters, example.input, dialect="anthropic")
        if strict
        else copy.deepcopy(example.input)
        for example in metadata.examples
    ]
    if examples:
        tool["input_examples"] = examples
    if defer_loading:
        tool["defer_loading"] = True
    return tool


def anthropic_result(
    result: ToolResult, *, call_id: str | None, name: str | None = None
) -> tuple[dict[str, Any], list[ResultLoss]]:
    """A ``tool_result`` block: ``content`` is the text of ``for_model`` when the result has
    no parts, else a list of ``text``, ``image`` (base64) and ``document`` blocks (a PDF in
    base64, or plain text; titled with the file's name or the resource's URI). An error
    is ``for_model``'s error JSON with ``is_error``."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    if result.error is not None:
        block["content"] = result.for_model()
        block["is_error"] = True
        return block, []
    if not result.parts:
        if text := result.for_model():  # an empty text block is refused; none is fine
            block["content"] = text
        return block, []
    content: list[dict[str, Any]] = []
    losses: list[ResultLoss] = []

    def text_block(value: str) -> None:
        if value:
            content.append({"type": "text", "text": value})

    text_block(result.output)
    for sent in sent_parts(result):
        part = sent.part
        if isinstance(part, Text):
            text_block(part.text)
        elif isinstance(part, Image) and part.mime_type in IMAGE_TYPES:
            content.append({"type": "image", "source": {
                "type": "base64", "media_type": part.mime_type, "data": part.base64(),
            }})
            if sent.uri:
                losses.append(sent.rewritten("an image block"))
        elif (document := _document(sent)) is not None:
            content.append(document)
        else:
            text_block(sent.text)
            losses.append(sent.described(_CARRIES))
    text_block(notes(result))
    block["content"] = content
    return block, losses


def _document(sent: Sent) -> dict[str, Any] | None:
    """A document block for a PDF, a text file or a text resource; None for anything else."""
    part = sent.part
    source: dict[str, Any]
    if isinstance(part, EmbeddedResource) and part.text is not None:
        source = {"type": "text", "media_type": "text/plain", "data": part.text}
    elif isinstance(part, File) and part.mime_type == "application/pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": part.base64()}
    elif isinstance(part, File) and part.mime_type.startswith("text/"):
        try:
            data = part.data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        source = {"type": "text", "media_type": "text/plain", "data": data}
    else:
        return None
    document: dict[str, Any] = {"type": "document", "source": source}
    title = sent.uri or (part.name if isinstance(part, File) else None)
    if title:
        document["title"] = title
    return document
