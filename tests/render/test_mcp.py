"""MCP tool definitions: the kinds of part a tool's results may hold, in ``_meta``."""

from __future__ import annotations

from toolplug import ToolMetadata
from toolplug.render._mcp import (
    PARTS_META,
    RESULT_EXTRAS,
    TRUST_META,
    mcp_output_schema,
    mcp_tool,
    structured_content,
)


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


def test_an_output_schema_toolplug_gave_is_not_wrapped_again_when_served_again() -> None:
    # a tool of a `toolplug serve`, mounted and served again: its warnings and citations
    # are toolplug's own two, so the schema is not wrapped as one whose names collide
    served = {"type": "object", "properties": {"n": {"type": "integer"}, **RESULT_EXTRAS}}
    metadata = ToolMetadata(name="n", description="A number.", category="utility", returns=served)
    assert mcp_output_schema(metadata) == served
    assert structured_content(metadata, {"n": 1}, warnings=["cut"]) == {"n": 1, "warnings": ["cut"]}
    own = {"type": "object", "properties": {"warnings": {"type": "integer"}}}
    collides = ToolMetadata(name="w", description="A count.", category="utility", returns=own)
    assert structured_content(collides, {"warnings": 3}) == {"result": {"warnings": 3}}
