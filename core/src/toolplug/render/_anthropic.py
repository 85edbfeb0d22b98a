"""Anthropic Messages API tool definitions."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from toolplug.schema import strict_arguments, strict_schema

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust

__all__ = ["anthropic_tool"]


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
