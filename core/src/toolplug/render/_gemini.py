"""Gemini function declarations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolplug.schema import gemini_schema

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata

__all__ = ["gemini_tool"]


def gemini_tool(metadata: ToolMetadata) -> dict[str, Any]:
    """A function declaration whose ``parameters`` are the OpenAPI subset Gemini reads."""
    declaration: dict[str, Any] = {"name": metadata.name, "description": metadata.description}
    parameters = gemini_schema(metadata.parameters)
    # Gemini rejects an object without properties; a tool without arguments omits them.
    if parameters.get("properties"):
        declaration["parameters"] = parameters
    return declaration
