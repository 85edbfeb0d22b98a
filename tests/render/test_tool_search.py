"""Tool search for large catalogs: the N most relevant tools in full, the others deferred.

The catalog plus 200 generated tools stands for a large install. Each of the three ways to
defer (Anthropic's tool search, OpenAI's tool_search with namespaces, and toolplug's own
search_tools) is checked against the provider SDK's request types, and for what a model
needs: the tool a task calls for is among the N, and search_tools finds a deferred tool by
a paraphrase of what it does.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import anthropic.types
import pytest
from google.genai import types as gemini_types
from mcp import types as mcp_types
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import ToolParam as ResponsesToolParam
from pydantic import TypeAdapter

import toolplug
from tests.helpers.cli import Run
from toolplug import Guidelines, Tool, ToolContext, ToolMetadata, ToolResult, ToolSearch, hookimpl
from toolplug.render._export import dumps
from toolplug.render._search import SEARCH_TOOLS

ANTHROPIC_TOOLS: TypeAdapter[Any] = TypeAdapter(list[anthropic.types.ToolUnionParam])
RESPONSES_TOOLS: TypeAdapter[Any] = TypeAdapter(list[ResponsesToolParam])
CHAT_TOOLS: TypeAdapter[Any] = TypeAdapter(list[ChatCompletionToolParam])
GEMINI_TOOLS: TypeAdapter[Any] = TypeAdapter(list[gemini_types.FunctionDeclaration])

# 200 generated tools that share everyday words ("check", "list", "recent", "report") with
# the catalog, as the neighbours of a catalog tool in a big install would.
SUBJECTS = [
    "weather forecast", "stock price", "currency rate", "recipe", "flight status",
    "parcel tracking", "translation", "image thumbnail", "spreadsheet cell", "podcast episode",
    "train timetable", "sports score", "movie review", "book summary", "invoice total",
    "support ticket", "calendar holiday", "crypto wallet", "fitness log", "music playlist",
    "news headline", "job listing", "hotel booking", "restaurant menu", "air quality",
]
VERBS = [
    ("find", "Find the {s} you need for a place or item."),
    ("list", "List recent {s} entries from the provider."),
    ("check", "Check the {s} and report whether it changed."),
    ("summarise", "Summarise a {s} page into key points."),
    ("compare", "Compare two {s} records side by side."),
    ("export", "Export the {s} data as a table."),
    ("watch", "Watch the {s} and notify on updates."),
    ("explain", "Explain a {s} in plain words."),
]
CATEGORIES = ["research", "reference", "enhance", "publish", "utility"]


def generated() -> list[type[Tool]]:
    made: list[type[Tool]] = []
    pairs = itertools.product(SUBJECTS, VERBS)
    for index, (subject, (verb, sentence)) in enumerate(pairs):
        name = f"{verb}_{subject.replace(' ', '_')}"
        meta = ToolMetadata(
            name=name,
            description=sentence.format(s=subject),
            category=CATEGORIES[index % len(CATEGORIES)],
            usage_hint=f"Use when the user asks about a {subject}.",
            guidelines=Guidelines(do=(f"The task mentions a {subject}",), do_not=("Other tasks",)),
            parameters={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": f"Which {subject}"},
                    "options": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "required": ["query"],
            },
        )

        def run(self: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            return ToolResult.success("")

        made.append(type(name, (Tool,), {"metadata": meta, "run": run}))
    assert len(made) == 200
    return made


class Generated:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        for cls in generated():
            register(cls)


CONFIG = {
    "tools": {
        "static_links": {"links": [{"name": "gh", "url": "https://github.com/x"}]},
        "calendar": {"sources": [{"name": "team", "url": "https://example.org/team.ics"}]},
    }
}


@pytest.fixture(scope="module")
def registry() -> toolplug.Registry:
    loaded = toolplug.load(
        CONFIG, env={"GITHUB_TOKEN": "ghp_search_test"}, plugins=[("generated", Generated())]
    )
    assert len(loaded.select()) > 200
    return loaded


def full_names(tools: list[dict[str, Any]]) -> list[str]:
    """The tools in full: neither deferred nor a tool search tool."""
    names = []
    for tool in tools:
        if tool.get("defer_loading") or tool.get("type") in ("namespace", "tool_search"):
            continue
        name = tool.get("name") or tool["function"]["name"]
        if not name.startswith("tool_search_tool"):
            names.append(name)
    return names


# Tasks that clearly call for one catalog tool.
TASKS = [
    ("check that every link in the README still works", "link_validator"),
    ("search the web for the latest release news", "web_search"),
    ("what posts did the blog publish recently", "rss_feed"),
    ("quote the README from a GitHub repository", "github_api"),
    ("save my draft notes to a file for later", "write_file"),
]
N = 5


@pytest.mark.parametrize(("task", "tool"), TASKS)
@pytest.mark.parametrize("fmt", ["openai", "openai-responses", "anthropic", "gemini", "mcp"])
def test_the_tool_a_task_calls_for_is_in_full(
    registry: toolplug.Registry, fmt: str, task: str, tool: str
) -> None:
    tools = toolplug.export_tools(registry, fmt, task=task, max_tools=N)
    full = full_names(tools)
    assert tool in full, (task, full)
    assert len([n for n in full if n != SEARCH_TOOLS]) == N


def test_anthropic_defers_to_its_bm25_tool_search(registry: toolplug.Registry) -> None:
    tools = toolplug.export_tools(registry, "anthropic", task=TASKS[0][0], max_tools=N)
    ANTHROPIC_TOOLS.validate_python(tools)
    assert tools[-1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    deferred = [t for t in tools if t.get("defer_loading")]
    assert len(deferred) == len(registry.select()) - N
    # Deferred tools are still complete definitions: Anthropic loads them as they are.
    assert all("input_schema" in t for t in deferred)
    assert dumps(tools) == dumps(
        toolplug.export_tools(registry, "anthropic", task=TASKS[0][0], max_tools=N)
    )


def test_openai_responses_defers_to_tool_search_in_namespaces(
    registry: toolplug.Registry,
) -> None:
    tools = toolplug.export_tools(registry, "openai-responses", task=TASKS[0][0], max_tools=N)
    RESPONSES_TOOLS.validate_python(tools)
    assert tools[-1] == {"type": "tool_search"}
    namespaces = [t for t in tools if t["type"] == "namespace"]
    assert sorted(n["name"] for n in namespaces) == sorted(CATEGORIES)
    research = next(n for n in namespaces if n["name"] == "research")
    assert research["description"].startswith("Gather external information: ")
    inside = [f for n in namespaces for f in n["tools"]]
    # defer_loading goes on the functions inside a namespace, not on the namespace.
    assert all(f["defer_loading"] is True and f["strict"] is True for f in inside)
    assert all("defer_loading" not in n for n in namespaces)
    singles = [t for t in tools if t["type"] == "function" and t.get("defer_loading")]
    assert len(inside) + len(singles) == len(registry.select()) - N


def test_a_category_with_one_deferred_tool_needs_no_namespace() -> None:
    small = toolplug.load(CONFIG, env={"GITHUB_TOKEN": "ghp_x"})
    tools = toolplug.export_tools(small, "openai-responses", task="web search", max_tools=6)
    RESPONSES_TOOLS.validate_python(tools)
    deferred = [t for t in tools if t.get("defer_loading") or t["type"] == "namespace"]
    for entry in deferred:
        if entry["type"] == "namespace":
            assert len(entry["tools"]) >= 2
        else:
            assert entry["defer_loading"] is True


@pytest.mark.parametrize(
    ("fmt", "check"),
    [
        ("openai", CHAT_TOOLS.validate_python),
        ("gemini", GEMINI_TOOLS.validate_python),
        ("gemini-openapi", GEMINI_TOOLS.validate_python),
        ("mcp", lambda ts: [mcp_types.Tool.model_validate(t) for t in ts]),
    ],
)
def test_other_formats_get_the_n_tools_and_search_tools(
    registry: toolplug.Registry, fmt: str, check: Callable[[Any], Any]
) -> None:
    tools = toolplug.export_tools(registry, fmt, task=TASKS[0][0], max_tools=N)
    check(tools)
    assert len(tools) == N + 1
    last = tools[-1]
    assert (last.get("name") or last["function"]["name"]) == SEARCH_TOOLS


def test_nothing_is_deferred_when_everything_fits() -> None:
    small = toolplug.load(CONFIG, env={"GITHUB_TOKEN": "ghp_x"})
    everything = toolplug.export_tools(small, "anthropic")
    assert toolplug.export_tools(small, "anthropic", max_tools=len(everything)) == everything


# Paraphrases of what a deferred catalog tool does, in other words than its own.
PARAPHRASES = [
    ("are any of these web addresses dead or redirecting", "link_validator"),
    ("up-to-date facts backed by sources", "web_search"),
    ("download the contents of an http address", "url_fetch"),
    ("upcoming meetings and deadlines", "calendar"),
    ("the author's social media profiles", "static_links"),
]


@pytest.mark.parametrize(("query", "tool"), PARAPHRASES)
def test_search_tools_finds_a_deferred_tool_by_a_paraphrase(
    registry: toolplug.Registry, query: str, tool: str
) -> None:
    session = ToolSearch(registry, "openai", task="compare two stock price records", max_tools=N)
    assert tool in session.deferred
    result = session.answer({"query": query})
    assert result.ok, result.error
    found = [d["function"]["name"] for d in result.data["tools"]]
    assert tool in found, (query, found)
    assert tool in result.data["added"]
    # The host sends the grown list with its next request.
    assert tool in [d["function"]["name"] for d in session.definitions()]
    assert tool in session.loaded
    # The model reads the definitions in the result too.
    assert f'"name": "{tool}"' in result.for_model()


def test_search_tools_answers(registry: toolplug.Registry) -> None:
    session = ToolSearch(registry, "mcp", max_tools=2)
    # A JSON string works as well as a mapping (what a provider hands the host).
    result = session.answer(json.dumps({"query": "weather forecast", "limit": 2}))
    assert result.ok
    assert len(result.data["tools"]) == 2
    again = session.answer({"query": "weather forecast", "limit": 2})
    assert again.data["added"] == []  # found before: nothing new
    nothing = session.answer({"query": "zzzz qqqq"})
    assert nothing.ok
    assert nothing.data["tools"] == []
    assert "No tool matches" in nothing.output
    bad_arguments: list[Any] = [{}, {"query": ""}, {"query": "x", "limit": 0}, "[", 7]
    for bad in [*bad_arguments, {"query": "x", "limit": True}]:
        refused = session.answer(bad)
        assert refused.error is not None
        assert refused.error.type == "ValidationError"


def test_search_tools_is_not_a_registered_tool(
    registry: toolplug.Registry, cli: Callable[..., Run]
) -> None:
    assert SEARCH_TOOLS not in registry.tools
    listed = cli("list", "--all", "--json")
    assert SEARCH_TOOLS not in {t["name"] for t in json.loads(listed.out)}


def test_cli_prints_what_export_tools_gives(cli: Callable[..., Run]) -> None:
    registry = toolplug.load({})
    task = "validate the links in a draft"
    for fmt in ("anthropic", "openai", "openai-responses"):
        done = cli("schema", "--format", fmt, "--all", "--task", task, "--max-tools", "2")
        assert done.code == 0, done.err
        expected = toolplug.export_tools(
            registry, fmt, include_unavailable=True, task=task, max_tools=2
        )
        assert done.out == dumps(expected)
    lonely = cli("schema", "--format", "openai", "--task", task)
    assert lonely.code == 2
    assert "--task needs --max-tools" in lonely.err


def test_schema_says_search_tools_comes_beside_max_tools(cli: Callable[..., Run]) -> None:
    """``--max-tools 2`` gives two tools in full and search_tools: three definitions, and
    stderr says why there is one more than asked."""
    done = cli("schema", "--format", "openai", "--all", "--task", "links", "--max-tools", "2")
    assert done.code == 0, done.err
    names = [d["function"]["name"] for d in json.loads(done.out)]
    assert len(names) == 3
    assert SEARCH_TOOLS in names
    assert "--max-tools 2 counts the tools given in full; search_tools" in done.err
