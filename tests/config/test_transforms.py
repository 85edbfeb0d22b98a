"""``[transforms.NAME]``: a tool of any source offered under another name, description or
arguments. Schemas, stubs, prompts and calls see the transformed tool; the original's
``run`` gets the original's arguments. Sources: a plugin registered from code, a mounted
MCP server (tests/helpers/mcp_servers.py), and an OpenAPI description served by FastAPI.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import toolplug
from tests.helpers.mcp_servers import stdio_table, write_server
from tests.helpers.openapi import fastapi_server
from toolplug import ConfigError, Tool, ToolMetadata, ToolResult, Trust, hookimpl

SEEN: list[dict[str, Any]] = []


class Search(Tool):
    """Records the arguments its run receives."""

    metadata: ClassVar[ToolMetadata] = ToolMetadata(
        name="site_search",
        description="Search a site for pages.",
        category="research",
        usage_hint="Use to find pages.",
        parameters={
            "type": "object",
            "properties": {
                "q": {"type": "string", "description": "the words to look for"},
                "site": {"type": "string", "description": "the site to search"},
                "limit": {"type": "integer", "default": 10},
            },
            "required": ["q", "site"],
            "additionalProperties": False,
        },
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        SEEN.append(dict(arguments))
        return ToolResult.success(json.dumps(arguments, sort_keys=True), arguments)


class _Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Search)


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    SEEN.clear()
    yield
    SEEN.clear()


def _load(transforms: dict[str, Any], **config: Any) -> toolplug.Registry:
    return toolplug.load(
        {"transforms": transforms, **config}, plugins=[("test-search", _Plugin())]
    )


DOCS_SEARCH = {
    "from": "site_search",
    "description": "Search the project's documentation.",
    "usage_hint": "Use for questions about the project's own docs.",
    "guidelines": {"do": ["ask short queries"]},
    "hide": {"site": "docs.example.org"},
    "defaults": {"limit": 3},
    "rename_args": {"query": "q"},
}


def test_a_renamed_tool_with_a_hidden_argument_reaches_the_original() -> None:
    registry = _load({"docs_search": DOCS_SEARCH})
    assert "site_search" not in registry.tools  # replaced, not doubled
    meta = registry.get("docs_search").metadata
    assert meta.description == "Search the project's documentation."
    assert meta.guidelines.do == ("ask short queries",)
    assert meta.parameters["properties"] == {
        "limit": {"type": "integer", "default": 3},
        "query": {"type": "string", "description": "the words to look for"},
    }
    assert meta.parameters["required"] == ["query"]
    result = registry.call("docs_search", {"query": "install"})
    assert result.ok, result.error
    # the original got its own names, the fixed value and the new default
    assert SEEN == [{"q": "install", "site": "docs.example.org", "limit": 3}]
    # the hidden argument cannot be set by the model
    refused = registry.call("docs_search", {"query": "x", "site": "evil.example"})
    assert refused.error is not None
    assert refused.error.type == "ValidationError"
    assert len(SEEN) == 1


def test_schemas_stubs_prompts_and_search_see_the_transformed_tool() -> None:
    registry = _load({"docs_search": DOCS_SEARCH})
    (schema,) = [
        s for s in toolplug.export_tools(registry, "openai", include_unavailable=True)
        if s.get("name") == "docs_search" or s.get("function", {}).get("name") == "docs_search"
    ]
    assert "query" in json.dumps(schema)
    assert "site" not in json.dumps(schema)
    stubs = toolplug.tool_stubs(registry)
    assert "async def docs_search(" in stubs
    assert "query: str" in stubs
    assert "site_search" not in stubs
    section = toolplug.optional_tools_section(registry)
    assert "### docs_search" in section
    assert "site_search" not in section
    assert registry.select().search("project documentation", 1)[0].name == "docs_search"


def test_in_place_and_keep_original() -> None:
    # no `from`: the tool of the table's own name changes
    registry = _load({"site_search": {"description": "Search any site."}})
    assert registry.get("site_search").metadata.description == "Search any site."
    both = _load({"docs_search": {**DOCS_SEARCH, "keep_original": True}})
    assert {"docs_search", "site_search"} <= set(both.tools)


def test_trust_sinks_follow_renamed_arguments() -> None:
    registry = _load({"docs_search": DOCS_SEARCH})
    # the original declares no labels: cautious, every parameter a sink, under its new name
    assert registry.labels("docs_search").sinks == ("limit", "query")


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        ({"from": "nothing_here"}, "no tool has that name"),
        ({"from": "site_search", "hide": {"nope": 1}}, "has no argument 'nope'"),
        ({"from": "site_search", "rename_args": {"limit": "q"}}, "already has an argument"),
        # a fixed value the original would refuse
        ({"from": "site_search", "hide": {"limit": "ten"}}, "does not fit site_search's"),
    ],
)
def test_a_transform_that_does_not_fit_is_reported(
    transform: dict[str, Any], message: str
) -> None:
    registry = _load({"new_tool": transform})
    assert "new_tool" not in registry.tools
    assert "site_search" in registry.tools
    problems = [p.describe() for p in registry.problems]
    assert any("[transforms.new_tool]" in p and message in p for p in problems), problems


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"Bad-Name": {"from": "x"}}, "transforms.Bad-Name"),
        ({"ok": {"from": "x", "unknown": 1}}, "transforms.ok.unknown"),
        ({"ok": {"from": "x", "rename_args": {"1bad": "q"}}}, "transforms.ok"),
    ],
)
def test_bad_transform_tables_are_config_errors(table: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        toolplug.load({"transforms": table})
    assert key in str(caught.value)


def test_a_mounted_mcp_tool_is_transformed(tmp_path: Path) -> None:
    script = write_server(tmp_path)
    # the server's annotations are trusted, so its read-only add runs without asking
    text = stdio_table("calc", script, extra="trust_annotations = true") + (
        '\n[transforms.add_ten]\nfrom = "calc_add"\ndescription = "Add ten to a number."\n'
        'hide = { b = 10 }\nrename_args = { number = "a" }\n'
    )
    config = tomllib.loads(text)
    registry = toolplug.load({**config, "cache_dir": str(tmp_path / "cache")})
    try:
        assert "calc_add" not in registry.tools
        assert list(registry.get("add_ten").metadata.parameters["properties"]) == ["number"]
        result = registry.call("add_ten", {"number": 5})
        assert result.ok, result.error
        assert "15" in result.output
    finally:
        registry.close()


def test_an_openapi_tool_is_transformed(tmp_path: Path) -> None:
    with fastapi_server(tmp_path) as url:
        registry = toolplug.load({
            "network": {"allow": ["127.0.0.1"]},
            "cache_dir": str(tmp_path / "cache"),
            "openapi": {"notes": {"spec": f"{url}/openapi.json", "include": ["tag:notes"]}},
            "transforms": {"demo_notes": {
                "from": "notes_list_notes", "hide": {"tag": "demo"},
                "rename_args": {"size": "per_page"},
            }},
        })
        result = registry.call("demo_notes", {"size": 3})
        assert result.ok, result.error
        assert [n["id"] for n in result.data] == [1, 2, 3]
        # the next-page hint names the argument the model sees (size), not per_page
        assert "more results: call again with page=2, size=3" in result.warnings
        assert registry.needs_approval("demo_notes", {"size": 3}) is None
        assert registry.labels("demo_notes").sinks == ("page", "size")


def test_a_renamed_paging_argument_still_pages_and_the_cut_names_it(tmp_path: Path) -> None:
    """read_file reads on from ``offset``: offered with ``start`` instead, a cut output
    still says how to read on (not "ask for less", not spilled), by the name the model
    sees; a hidden offset is no paging argument."""
    text = "".join(f"line {n:05d}\n" for n in range(3000))  # 33,000 characters
    (tmp_path / "long.txt").write_text(text)
    registry = toolplug.load({
        "cache_dir": str(tmp_path / "cache"),
        "tools": {name: {"read_roots": [str(tmp_path)], "max_output_chars": 2000}
                  for name in ("read_file", "read_from", "read_head")},
        "transforms": {
            "read_from": {"from": "read_file", "rename_args": {"start": "offset"},
                          "keep_original": True},
            "read_head": {"from": "read_file", "hide": {"offset": 0}, "keep_original": True},
        },
    })
    path = str(tmp_path / "long.txt")
    assert "offset" not in registry.get("read_from").metadata.parameters["properties"]
    original = registry.call("read_file", {"path": path, "max_chars": 30000})
    assert "call the tool again with a larger offset for the rest" in original.output
    renamed = registry.call("read_from", {"path": path, "max_chars": 30000, "start": 11})
    assert renamed.ok, renamed.error
    assert renamed.output.startswith("line 00001\n")  # the original got offset=11
    assert "call the tool again with a larger start for the rest" in renamed.output
    assert renamed.spill is None
    head = registry.call("read_head", {"path": path, "max_chars": 30000})
    assert "larger" not in head.output  # nothing the model could page with


def test_a_trust_table_written_for_the_original_names_the_arguments_the_model_sees(
    tmp_path: Path,
) -> None:
    """The original's ``[tools.NAME] trust`` table carries over to its transformed tool with
    the renamed sinks by their new names: else the argument the model sends is no sink."""
    registry = toolplug.load({
        "cache_dir": str(tmp_path / "cache"),
        "tools": {"read_file": {"trust": {"sinks": ["path", "offset"]}}},
        "transforms": {
            "read_from": {"from": "read_file", "rename_args": {"start": "offset"}},
            "read_head": {"from": "read_file", "hide": {"offset": 0}},
        },
    })
    assert registry.labels("read_from").sinks == ("path", "start")
    assert registry.labels("read_head").sinks == ("path",)


def test_refs_follow_renamed_arguments(tmp_path: Path) -> None:
    """A ref (and a destination) is renamed like a sink, from the tool's own labels and
    from a ``trust`` table written for the original; a hidden argument is no ref of the
    transformed tool."""

    class Labelled(Search):
        metadata = Search.metadata.model_copy(
            update={
                "name": "labelled_search",
                "trust": Trust(
                    output="untrusted", sinks=("q", "site"), refs=("site",),
                    destinations=("site",),
                ),
            }
        )

    class _Labelled:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(Labelled)

    registry = toolplug.load(
        {
            "cache_dir": str(tmp_path / "cache"),
            "tools": {
                "read_file": {
                    "trust": {
                        "sinks": ["path", "offset"], "refs": ["path"], "destinations": ["path"],
                    }
                }
            },
            "transforms": {
                "where_search": {"from": "labelled_search", "rename_args": {"where": "site"}},
                "docs_only": {"from": "labelled_search", "hide": {"site": "docs.example.org"}},
                "read_from": {"from": "read_file", "rename_args": {"file": "path"}},
            },
        },
        plugins=[("labelled-search", _Labelled())],
    )
    try:
        assert registry.labels("where_search").refs == ("where",)
        assert registry.labels("where_search").sinks == ("q", "where")
        assert registry.labels("docs_only").refs == ()
        assert registry.labels("read_from").refs == ("file",)
        assert registry.labels("read_from").sinks == ("file", "offset")
        # destinations follow the same names
        assert registry.labels("where_search").destinations == ("where",)
        assert registry.labels("docs_only").destinations == ()
        assert registry.labels("read_from").destinations == ("file",)
    finally:
        registry.close()


_LINKS: Any = {"links": [{"name": "github", "url": "https://github.com/example"}]}


@pytest.mark.parametrize("keep_original", [False, True])
def test_a_transformed_tool_reads_the_originals_settings(keep_original: bool) -> None:
    """[tools.static_links] links reach project_link, offered alone or beside the original
    (before: unavailable alone, "configured names: none" beside it)."""
    registry = toolplug.load({
        "tools": {"static_links": _LINKS},
        "transforms": {"project_link": {"from": "static_links", "keep_original": keep_original}},
    })
    assert ("static_links" in registry.tools) is keep_original
    assert registry.availability("project_link").available, registry.problems
    result = registry.call("project_link", {"action": "get", "name": "github"})
    assert result.ok, result.error
    assert result.data["links"][0]["url"] == "https://github.com/example"
    assert not [p for p in registry.problems if "static_links" in p.describe()]


def test_a_transformed_tools_own_table_overrides_the_originals_key_by_key() -> None:
    mine = {"links": [{"name": "docs", "url": "https://docs.example.org"}]}
    registry = toolplug.load({
        "tools": {"static_links": _LINKS, "project_link": mine},
        "transforms": {"project_link": {"from": "static_links", "keep_original": True}},
    })
    assert registry.call("project_link", {"action": "get", "name": "docs"}).ok
    assert registry.call("static_links", {"action": "get", "name": "github"}).ok


def test_a_renamed_tools_warnings_name_it_as_the_model_sees_it(tmp_path: Path) -> None:
    """read_file's hint "call read_file again with offset 12", from read_note, names
    read_note: the model is not offered read_file."""
    (tmp_path / "note.txt").write_text("x" * 40)
    registry = toolplug.load({
        "cache_dir": str(tmp_path / "cache"),
        "tools": {"read_file": {"read_roots": [str(tmp_path)]}},
        "transforms": {"read_note": {"from": "read_file"}},
    })
    result = registry.call("read_note", {"path": str(tmp_path / "note.txt"), "max_chars": 12})
    assert result.ok, result.error
    (warning,) = result.warnings
    assert "call read_note again with offset 12" in warning
    assert "read_file" not in warning
