"""Anthropic Messages API tool definitions."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata

__all__ = ["anthropic_tool"]


def anthropic_tool(metadata: ToolMetadata) -> dict[str, Any]:
    """``{"name", "description", "input_schema"}`` with the parameters unchanged."""
    return {
        "name": metadata.name,
        "description": metadata.description,
        "input_schema": copy.deepcopy(metadata.parameters),
    }
