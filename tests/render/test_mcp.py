"""MCP tool definitions: the kinds of part a tool's results may hold, in ``_meta``."""

from __future__ import annotations

from toolplug import ToolMetadata
from toolplug.render._mcp import PARTS_META, TRUST_META, mcp_tool


def test_a_tool_that_returns_parts_says_which_in_meta() -> None:
    metadata = ToolMetadata(
        name="chart", description="Chart a month.", category="utility", parts=("image", "file"),
    )
    meta = mcp_tool(metadata)["_meta"]
    assert meta[PARTS_META] == ["image", "file"]
    assert TRUST_META in meta


def test_a_text_only_tool_has_no_parts_key() -> None:
    metadata = ToolMetadata(name="echo", description="Repeat the text.", category="utility")
    assert set(mcp_tool(metadata)["_meta"]) == {TRUST_META}
