"""Every renderer takes the registry first and the same selection options.

The prompt section, the provider exports and the reference docs all select tools the same
way (toolset, available only or all, task and max tools); the Python functions give what
the command line prints for the same options.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import Run
from toolplug.render._export import FORMATS, dumps

LINKS = {"links": [{"name": "blog", "url": "https://blog.example.org"}]}
CONFIG: dict[str, Any] = {
    "tools": {"static_links": LINKS},
    "toolsets": {"writer": {"include": ["static_links", "rss_feed", "github_api"]}},
}


@pytest.fixture
def registry() -> toolplug.Registry:
    return toolplug.load(CONFIG, env={})


def _names_in_section(text: str) -> list[str]:
    return [line[4:] for line in text.splitlines() if line.startswith("### ")]


def _names_exported(tools: list[dict[str, Any]]) -> list[str]:
    """The tools exported in full: not deferred, and not a provider's tool search tool."""
    return [
        t.get("name") or t["function"]["name"]
        for t in tools
        if not t.get("defer_loading") and not str(t.get("type", "")).startswith("tool_search")
    ]


RENDERERS: dict[str, Callable[..., list[str]]] = {
    # the optional-tools section: the tool headings, in their printed order
    "prompt": lambda r, **o: _names_in_section(toolplug.optional_tools_section(r, **o)),
    # provider exports: the exported names
    "export": lambda r, **o: _names_exported(toolplug.export_tools(r, "anthropic", **o)),
    # the loss report of an export: the tools it covers
    "explain": lambda r, **o: list(toolplug.explain_export(r, "gemini-openapi", **o)),
    # the reference pages written to disk (documentation includes unavailable tools unless
    # told otherwise, so the default is given here to compare like with like)
    "docs": lambda r, **o: _pages_written(r, **{"include_unavailable": False, **o}),
}


def _pages_written(registry: toolplug.Registry, **options: Any) -> list[str]:
    from toolplug.render._docs import write_reference

    with tempfile.TemporaryDirectory() as out:
        paths = write_reference(registry, out, **options)
    return [p.stem for p in paths if p.name != "index.md"]


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # no options: every available tool (github_api lacks its token)
        ({}, {"static_links", "rss_feed"}),
        # include_unavailable adds the tools that cannot run here
        ({"include_unavailable": True}, {"static_links", "rss_feed", "github_api"}),
        # a toolset narrows the selection before anything else
        (
            {"toolset": "writer", "include_unavailable": True},
            {"static_links", "rss_feed", "github_api"},
        ),
        # task with max_tools keeps the most relevant tools only
        ({"task": "recent posts from the blog feed", "max_tools": 1}, {"rss_feed"}),
    ],
)
def test_every_renderer_selects_the_same_way(
    registry: toolplug.Registry, renderer: str, options: dict[str, Any], expected: set[str]
) -> None:
    names = set(RENDERERS[renderer](registry, **options))
    if "toolset" in options or "max_tools" in options:
        assert names == expected
    else:
        assert names >= expected
        assert ("github_api" in names) == bool(options.get("include_unavailable"))


def test_registry_search_takes_the_same_options(registry: toolplug.Registry) -> None:
    task = "recent posts from the blog feed or repository releases"
    available = {hit.name for hit in registry.search(task)}
    assert "github_api" not in available  # no token here
    everything = {hit.name for hit in registry.search(task, include_unavailable=True)}
    assert "github_api" in everything
    narrowed = registry.search(task, toolset="writer", include_unavailable=True)
    assert {hit.name for hit in narrowed} <= {"static_links", "rss_feed", "github_api"}


def test_reference_pages_take_the_same_options(registry: toolplug.Registry) -> None:
    from toolplug.render._docs import reference_pages

    pages = reference_pages(registry, toolset="writer")
    assert list(pages) == ["index.md", "github_api.md", "rss_feed.md", "static_links.md"]
    available = reference_pages(registry, toolset="writer", include_unavailable=False)
    assert "github_api.md" not in available
    ranked = reference_pages(registry, task="recent posts from the blog feed", max_tools=1)
    assert list(ranked) == ["index.md", "rss_feed.md"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_tools_of_the_registry_is_what_the_cli_prints(
    fmt: str, tmp_path: Path, cli: Callable[..., Run]
) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text(
        '[[tools.static_links.links]]\nname = "blog"\nurl = "https://blog.example.org"\n',
        encoding="utf-8",
    )
    registry = toolplug.load(config)
    printed = cli("--config", str(config), "schema", "--format", fmt)
    assert printed.code == 0, printed.err
    assert printed.out == dumps(toolplug.export_tools(registry, fmt))
    assert json.loads(printed.out)  # not an empty list: the catalog is installed


def test_tool_reference_of_the_registry_is_the_page_docs_writes(
    registry: toolplug.Registry, tmp_path: Path, cli: Callable[..., Run]
) -> None:
    done = cli("docs", "--output", str(tmp_path / "out"))
    assert done.code == 0, done.err
    written = (tmp_path / "out" / "rss_feed.md").read_text(encoding="utf-8")
    assert toolplug.tool_reference(registry, "rss_feed") == written


def test_tool_reference_of_metadata_still_works_and_warns(registry: toolplug.Registry) -> None:
    meta = registry.get("rss_feed").metadata
    with pytest.warns(DeprecationWarning, match=r"tool_reference\(toolplug.load\(\), name\)"):
        page = toolplug.tool_reference(meta)
    assert page.splitlines()[2].startswith("# rss_feed")


def test_export_tools_names_the_registry_when_given_something_else() -> None:
    with pytest.raises(TypeError, match=r"toolplug.load\(\)"):
        toolplug.export_tools("openai", "openai")  # type: ignore[arg-type]
