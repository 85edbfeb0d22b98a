"""OpenAI function tools and their results: Chat Completions (``openai``) and Responses
(``openai-responses``)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._parts import EmbeddedResource, File, Image, Text
from toolplug.render._results import ResultLoss, data_url, file_name, notes, sent_parts
from toolplug.schema import strict_schema

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust
    from toolplug.contract._tool import ToolResult

__all__ = ["openai_responses_result", "openai_responses_tool", "openai_result", "openai_tool"]

IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types OpenAI reads."""
_CHAT_CARRIES: Final = "a Chat Completions tool message carries text only"
_RESPONSES_CARRIES: Final = (
    "a function_call_output carries text, PNG, JPEG, GIF and WebP images, PDF and text files"
)


def _parameters(metadata: ToolMetadata, strict: bool) -> dict[str, Any]:
    if strict:
        return strict_schema(metadata.parameters, dialect="openai")
    return copy.deepcopy(metadata.parameters)


def openai_tool(
    metadata: ToolMetadata, *, strict: bool, defer_loading: bool = False,
    labels: Trust | None = None,
) -> dict[str, Any]:
    """``{"type": "function", "function": {...}}``, strict mode when ``strict``."""
    function: dict[str, Any] = {
        "name": metadata.name,
        "description": metadata.description,
        "parameters": _parameters(metadata, strict),
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def openai_responses_tool(
    metadata: ToolMetadata, *, strict: bool, defer_loading: bool = False,
    labels: Trust | None = None,
) -> dict[str, Any]:
    """A flat Responses API function tool: ``{"type", "name", "description", "parameters",
    "strict"}`` (``strict`` is always written: the Responses API guesses when it is left out)."""
    tool: dict[str, Any] = {
        "type": "function",
        "name": metadata.name,
        "description": metadata.description,
        "parameters": _parameters(metadata, strict),
        "strict": strict,
    }
    if defer_loading:
        tool["defer_loading"] = True
    return tool


def openai_result(
    result: ToolResult, *, call_id: str | None, name: str | None = None
) -> tuple[dict[str, Any], list[ResultLoss]]:
    """A Chat Completions ``{"role": "tool", "tool_call_id", "content"}`` message: the text
    of ``for_model``, each part other than text described in its place."""
    message = {"role": "tool", "tool_call_id": call_id, "content": result.for_model()}
    if result.error is not None:
        return message, []
    losses = [
        sent.described(_CHAT_CARRIES)
        for sent in sent_parts(result)
        if not isinstance(sent.original, Text)
    ]
    return message, losses


def openai_responses_result(
    result: ToolResult, *, call_id: str | None, name: str | None = None
) -> tuple[dict[str, Any], list[ResultLoss]]:
    """A ``function_call_output`` item: ``output`` is the text of ``for_model`` when the
    result has no parts (or is an error), else a list of ``input_text``, ``input_image``
    (a data URL) and ``input_file`` (``file_data`` as a data URL, with a ``filename``)."""
    item: dict[str, Any] = {"type": "function_call_output", "call_id": call_id}
    if result.error is not None or not result.parts:
        item["output"] = result.for_model()
        return item, []
    output: list[dict[str, Any]] = []
    losses: list[ResultLoss] = []

    def text(value: str) -> None:
        if value:
            output.append({"type": "input_text", "text": value})

    text(result.output)
    for sent in sent_parts(result):
        part = sent.part
        if isinstance(part, Image) and part.mime_type in IMAGE_TYPES:
            output.append({"type": "input_image", "image_url": data_url(part.mime_type, part.data)})
            if sent.uri:
                losses.append(sent.rewritten("an input_image"))
        elif isinstance(part, File) and _readable_file(part.mime_type):
            output.append({
                "type": "input_file",
                "filename": file_name(sent),
                "file_data": data_url(part.mime_type, part.data),
            })
            if sent.uri:
                losses.append(sent.rewritten(f"an input_file named {file_name(sent)}"))
        elif isinstance(part, Text):
            text(part.text)
        elif isinstance(part, EmbeddedResource) and part.text is not None:
            text(part.text)
            losses.append(sent.rewritten("input_text"))
        else:
            text(sent.text)
            losses.append(sent.described(_RESPONSES_CARRIES))
    text(notes(result))
    item["output"] = output
    return item, losses


def _readable_file(mime_type: str) -> bool:
    return mime_type == "application/pdf" or mime_type.startswith("text/")
