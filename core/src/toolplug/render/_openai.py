"""OpenAI Chat Completions function tools."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from toolplug.schema import strict_problems, strict_schema

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata

__all__ = ["openai_tool"]


def openai_tool(metadata: ToolMetadata, strict: bool) -> dict[str, Any]:
    """``{"type": "function", "function": {...}}``; strict mode when ``strict`` allows it."""
    function: dict[str, Any] = {"name": metadata.name, "description": metadata.description}
    if strict and not strict_problems(metadata.parameters):
        function["parameters"] = strict_schema(metadata.parameters)
        function["strict"] = True
    else:
        function["parameters"] = copy.deepcopy(metadata.parameters)
        if strict:
            # Strict mode would refuse arguments the tool accepts: better unenforced than
            # unusable. The caller can tell from "strict": false (and strict_problems).
            function["strict"] = False
    return {"type": "function", "function": function}
