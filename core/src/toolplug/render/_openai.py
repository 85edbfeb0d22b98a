"""OpenAI function tools: Chat Completions (``openai``) and Responses (``openai-responses``)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from toolplug.schema import strict_schema

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust

__all__ = ["openai_responses_tool", "openai_tool"]


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
