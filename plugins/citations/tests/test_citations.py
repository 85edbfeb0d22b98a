"""The citations tool: the list per project, duplicates, formats, concurrent writers and
collecting what other tools return."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug.testing import check_plugin
from toolplug_citations._store import Store, normalize_url


def load(store: Path, **settings: Any) -> toolplug.Registry:
    config = {"tools": {"citations": {"store_dir": str(store), **settings}}}
    return toolplug.load(config, env={"TOOLPLUG_PLUGINS": "toolplug-citations"})


def call(registry: toolplug.Registry, **arguments: Any) -> toolplug.ToolResult:
    return registry.call("citations", arguments)


def test_add_list_remove(tmp_path: Path) -> None:
    tools = load(tmp_path)
    added = call(
        tools,
        action="add",
        title="Release notes",
        url="https://example.org/notes",
        authors=["Ada Lovelace"],
        published="2024-10-07",
    )
    assert added.ok, added.error
    assert added.output == "Added [1] Release notes."
    assert added.data["status"] == "added"
    call(tools, action="add", title="Second", url="https://example.org/second")
    listed = call(tools, action="list")
    assert listed.output.splitlines() == [
        "[1] Release notes <https://example.org/notes>",
        "[2] Second <https://example.org/second>",
    ]
    assert [c.url for c in listed.citations] == [
        "https://example.org/notes",
        "https://example.org/second",
    ]
    removed = call(tools, action="remove", id=1)
    assert removed.output == "Removed [1] Release notes."
    assert [c["id"] for c in call(tools, action="list").data["citations"]] == [2]
    missing = call(tools, action="remove", id=9)
    assert missing.error is not None
    assert missing.error.type == "NotFoundError"
    # On disk: one JSON file per project.
    document = json.loads((tmp_path / "default.json").read_text(encoding="utf-8"))
    assert [c["url"] for c in document["citations"]] == ["https://example.org/second"]


def test_duplicates_merge_by_normalized_url(tmp_path: Path) -> None:
    tools = load(tmp_path)
    call(tools, action="add", url="https://Example.org/post/?utm_source=x#top")
    merged = call(
        tools, action="add", url="https://example.org/post", title="The post", authors=["B. Writer"]
    )
    assert merged.data["status"] == "merged"
    again = call(tools, action="add", url="https://EXAMPLE.org:443/post/")
    assert again.data["status"] == "known"
    [entry] = call(tools, action="list").data["citations"]
    assert entry["title"] == "The post"
    assert entry["authors"] == ["B. Writer"]
    assert normalize_url("http://a.example:80/x/?b=2&a=1&fbclid=z") == "http://a.example/x?a=1&b=2"
    assert normalize_url("https://a.example:8443/") == "https://a.example:8443"


@pytest.mark.parametrize(
    "url",
    [
        "http://[",  # an unclosed IPv6 bracket: urlsplit raises
        "https://example.org:99999/x",  # a port out of range: .port raises
    ],
)
def test_a_url_that_does_not_parse_is_compared_as_written(tmp_path: Path, url: str) -> None:
    tools = load(tmp_path)
    assert normalize_url(url) == url
    missing = call(tools, action="remove", url=url)
    assert missing.error is not None
    assert missing.error.type == "NotFoundError"  # not an ExecutionError with a traceback
    assert call(tools, action="add", url=url).data["status"] == "added"
    assert call(tools, action="add", url=url).data["status"] == "known"
    assert call(tools, action="remove", url=url).ok


def test_projects_are_separate_and_names_are_checked(tmp_path: Path) -> None:
    tools = load(tmp_path, project="book")
    call(tools, action="add", url="https://example.org/a")
    call(tools, action="add", url="https://example.org/b", project="post")
    assert len(call(tools, action="list").data["citations"]) == 1
    assert call(tools, action="list", project="post").data["project"] == "post"
    bad = call(tools, action="list", project="../etc")
    assert bad.error is not None
    assert bad.error.type == "ValidationError"
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["book.json", "post.json"]


def test_formats(tmp_path: Path) -> None:
    tools = load(tmp_path)
    call(
        tools,
        action="add",
        title="Python 3.13 {notes} & more",
        url="https://docs.example/313",
        authors=["Guido van Rossum", "Thomas Wouters"],
        published="2024-10-07",
        accessed="2026-11-20",
    )
    call(tools, action="add", title="Undated page", url="https://blog.example/p")
    markdown = call(tools, action="format").output
    assert markdown.splitlines()[0] == (
        "1. [Python 3.13 {notes} & more](https://docs.example/313), Guido van Rossum, and "
        "Thomas Wouters (2024-10-07), accessed 2026-11-20"
    )
    apa = call(tools, action="format", style="apa").output
    assert (
        "Guido van Rossum, & Thomas Wouters (2024, October 7). *Python 3.13 {notes} & more*. "
        "Retrieved November 20, 2026, from https://docs.example/313"
    ) in apa
    assert "Undated page (n.d.)." in apa
    bibtex = call(tools, action="format", style="bibtex").output
    assert bibtex.startswith(
        "@misc{rossum2024python,\n  title = {Python 3.13 \\{notes\\} \\& more},"
    )
    assert "  author = {Guido van Rossum and Thomas Wouters}," in bibtex
    assert "  url = {https://docs.example/313}," in bibtex
    assert "@misc{source" in bibtex  # no author, no year



def test_blank_author_names_are_left_out_in_every_style(tmp_path: Path) -> None:
    # the fuzz suite once gave an author of a single space: BibTeX's key raised on it
    tools = load(tmp_path)
    added = call(tools, action="add", title="Blank names", url="https://blank.example/",
                 authors=[" ", "\t"])
    assert added.ok, added.error
    for style in ("markdown", "apa", "bibtex"):
        result = call(tools, action="format", style=style)
        assert result.ok, (style, result.error)
    assert "@misc{source" in call(tools, action="format", style="bibtex").output
    assert "author" not in call(tools, action="format", style="bibtex").output


WRITER = """
import sys
from pathlib import Path
from toolplug_citations._store import Entry, Store

folder, worker = Path(sys.argv[1]), sys.argv[2]
store = Store(folder, "shared")
for n in range(25):
    store.add([Entry(0, f"w{worker}-{n}", f"https://example.org/{worker}/{n}")])
"""


def test_concurrent_writers_in_separate_processes_lose_nothing(tmp_path: Path) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(w)])
        for w in range(4)
    ]
    for process in writers:
        assert process.wait(timeout=120) == 0
    entries = Store(tmp_path, "shared").entries()
    assert len(entries) == 100
    assert sorted(e.id for e in entries) == list(range(1, 101))
    assert len({e.url for e in entries}) == 100
    assert not list(tmp_path.glob(".citations-*"))  # no temporary file left behind


LINKS = [
    {"name": "github", "url": "https://github.com/example"},
    {"name": "blog", "url": "https://blog.example/?utm_medium=social"},
]


def collecting(tmp_path: Path, collect: bool) -> toolplug.Registry:
    config = {
        "tools": {
            "citations": {"store_dir": str(tmp_path), "collect": collect, "project": "post"},
            "static_links": {"links": LINKS},
        }
    }
    return toolplug.load(
        config, env={"TOOLPLUG_PLUGINS": "toolplug-citations,toolplug-static-links"}
    )


def test_collect_records_what_other_tools_cite(tmp_path: Path) -> None:
    tools = collecting(tmp_path, collect=True)
    result = tools.call("static_links", {"action": "list"})
    assert result.ok
    asyncio.run(tools.acall("static_links", {"action": "get", "name": "blog"}))
    listed = call(tools, action="list", project="post").data["citations"]
    assert [(c["url"], c["source_tool"]) for c in listed] == [
        ("https://github.com/example", "static_links"),
        ("https://blog.example/?utm_medium=social", "static_links"),
    ]


def test_collect_is_off_by_default(tmp_path: Path) -> None:
    tools = collecting(tmp_path, collect=False)
    assert tools.call("static_links", {"action": "list"}).ok
    assert not (tmp_path / "post.json").exists()


def test_an_unwritable_store_fails_the_call_not_the_host(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    result = call(load(blocker), action="add", url="https://example.org")
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert result.error.retry_possible


@pytest.mark.usefixtures("tmp_path")
def test_passes_the_contract_kit(tmp_path: Path) -> None:
    check_plugin(
        "toolplug-citations", config={"tools": {"citations": {"store_dir": str(tmp_path)}}}
    )
