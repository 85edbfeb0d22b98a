"""Gemini function declarations: JSON Schema (``gemini``) or OpenAPI (``gemini-openapi``)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from toolplug.schema import gemini_schema

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust

__all__ = ["gemini_openapi_tool", "gemini_tool"]


def gemini_tool(
    metadata: ToolMetadata, *, strict: bool = False, defer_loading: bool = False,
    labels: Trust | None = None,
) -> dict[str, Any]:
    """A function declaration with the parameters as they are in ``parametersJsonSchema``,
    and ``returns`` (when declared) as ``responseJsonSchema``."""
    declaration: dict[str, Any] = {
        "name": metadata.name,
        "description": metadata.description,
        "parametersJsonSchema": copy.deepcopy(metadata.parameters),
    }
    if metadata.returns is not None:
        declaration["responseJsonSchema"] = copy.deepcopy(metadata.returns)
    return declaration


def gemini_openapi_tool(
    metadata: ToolMetadata, *, strict: bool = False, defer_loading: bool = False,
    labels: Trust | None = None,
) -> dict[str, Any]:
    """A function declaration whose ``parameters`` are the OpenAPI subset older SDKs read."""
    declaration: dict[str, Any] = {"name": metadata.name, "description": metadata.description}
    parameters = gemini_schema(metadata.parameters)
    # Gemini rejects an object without properties; a tool without arguments omits them.
    if parameters.get("properties"):
        declaration["parameters"] = parameters
    return declaration
