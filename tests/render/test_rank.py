"""Task-aware prompt sections: BM25 over the tools' own words picks the right tools."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolplug
from toolplug import Guidelines, Tool, ToolContext, ToolMetadata, ToolResult, hookimpl
from toolplug.render._select import rank as rank_tools
from toolplug.search import Index

# 40 distractors, built from pairs so that they share everyday words ("find", "recent",
# "list", "check", "page") with the catalog, as real neighbours in a big install would.
SUBJECTS = ["weather forecast", "stock price", "currency rate", "recipe", "flight status",
            "parcel tracking", "translation", "image thumbnail", "spreadsheet cell",
            "podcast episode"]
VERBS = [("find", "Find the {s} you need for a place or item."),
         ("list", "List recent {s} entries from the provider."),
         ("check", "Check the {s} and report whether it changed."),
         ("summarise", "Summarise a {s} page into key points.")]


def distractors() -> list[type[Tool]]:
    made: list[type[Tool]] = []
    for subject, (verb, sentence) in itertools.product(SUBJECTS, VERBS):
        name = f"{verb}_{subject.replace(' ', '_')}"
        text = sentence.format(s=subject)
        meta = ToolMetadata(
            name=name, description=text, category="utility",
            usage_hint=f"Use when the user asks about a {subject}.",
            guidelines=Guidelines(do=(f"The task mentions a {subject}",),
                                  do_not=("Anything else",)),
        )

        def run(self: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            return ToolResult.success("")

        made.append(type(name, (Tool,), {"metadata": meta, "run": run}))
    assert len(made) == 40
    return made


class Distractors:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        for cls in distractors():
            register(cls)


@pytest.fixture(scope="module")
def registry() -> toolplug.Registry:
    config = {"tools": {
        "static_links": {"links": [{"name": "gh", "url": "https://github.com/x"}]},
        "calendar": {"sources": [{"name": "team", "url": "https://example.org/team.ics"}]},
    }}
    return toolplug.load(config, env={"GITHUB_TOKEN": "ghp_rank_test"},
                         plugins=[("distractors", Distractors())])


TASKS = [
    ("What changed in the latest Python release? Look up current news about it.", "web_search"),
    ("Search the web for the official documentation of the requests library.", "web_search"),
    ("Write a newsletter with a 'recent posts' section from my blog feed.", "rss_feed"),
    ("Pull the newest items from this RSS feed and summarise them.", "rss_feed"),
    ("Before publishing, make sure none of the links in this post are broken.", "link_validator"),
    ("Verify that these 30 URLs still resolve and do not 404.", "link_validator"),
    ("Show me the README of the pallets/flask repository on GitHub.", "github_api"),
    ("What does issue 1234 in the repository say? Fetch it from GitHub.", "github_api"),
    ("Which meetups and conferences are on my calendar next month?", "calendar"),
    ("Add an upcoming events section with the deadlines from the team calendar.", "calendar"),
]


@pytest.mark.parametrize(("task", "expected"), TASKS)
def test_the_right_tool_is_in_the_top_three(
    registry: toolplug.Registry, task: str, expected: str
) -> None:
    tools = [t.metadata for t in registry.select(optional_only=True)]
    assert len(tools) >= 49
    top = [m.name for m in rank_tools(tools, task, limit=3)]
    assert expected in top, f"{task!r}: top three were {top}"


def test_max_tools_keeps_the_best_in_the_usual_order(registry: toolplug.Registry) -> None:
    section = toolplug.optional_tools_section(
        registry, task="check the links in my post for 404s", max_tools=2
    )
    headings = [line[4:] for line in section.splitlines() if line.startswith("### ")]
    assert len(headings) == 2
    assert "link_validator" in headings
    assert "## Reference Tools" in section  # rendered in the usual category layout
    assert section == toolplug.optional_tools_section(
        registry, task="check the links in my post for 404s", max_tools=2
    )


def test_ranking_is_deterministic_and_ties_keep_name_order() -> None:
    metas = [ToolMetadata(name=n, description="Same words.", category="utility")
             for n in ("b_tool", "a_tool", "c_tool")]
    assert [m.name for m in rank_tools(metas, "unrelated")] == ["a_tool", "b_tool", "c_tool"]
    assert [m.name for m in rank_tools(metas, "", limit=2)] == ["a_tool", "b_tool"]


# -- ranking with a limit: the best put in order, not every tool -------------------------

CATALOG = [
    ToolMetadata(name=name, description=text, category="utility")
    for name, text in [
        ("b_weather", "Weather forecast for a city."),
        ("a_weather", "Weather forecast for a city."),  # the same words: tied, by name
        ("rain_radar", "Rain radar images for a city."),
        ("stock_quote", "Stock price of a company."),
        ("zebra_facts", "Facts about zebras."),
        ("apple_pie", "A recipe for apple pie."),
    ]
]


def every_tool_in_order(tools: list[ToolMetadata], task: str) -> list[str]:
    """The definition: by score, best first, ties by name; the tools that score nothing
    after, by name."""
    scores = Index(tools).scores(task)
    positions = sorted(range(len(tools)), key=lambda p: (-scores.get(p, 0.0), tools[p].name))
    return [tools[p].name for p in positions]


@pytest.mark.parametrize("task", [
    "weather forecast",  # two tied at the top, one more on "city", the rest by name
    "rain in the city",  # one clear best, then the city ties
    "zzzz qqqq",  # matches nothing: all by name
    "stock",  # one match, the others fill by name
])
@pytest.mark.parametrize("limit", [0, 1, 2, 3, 5, 6, 50])
def test_a_limited_ranking_is_the_full_ranking_cut(task: str, limit: int) -> None:
    expected = every_tool_in_order(CATALOG, task)
    assert [m.name for m in rank_tools(CATALOG, task)] == expected
    assert [m.name for m in rank_tools(CATALOG, task, limit=limit)] == expected[:limit]
    hits = Index(CATALOG).search(task, limit, keep_all=True)
    assert [h.name for h in hits] == expected[:limit]


WORDS = ["weather", "city", "rain", "stock", "price", "recipe", "zebra", "map", "train"]
descriptions = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)


@given(
    st.lists(st.tuples(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), descriptions),
             unique_by=lambda t: t[0], max_size=15),
    descriptions,
    st.integers(min_value=0, max_value=20),
)
def test_any_limited_ranking_is_the_full_ranking_cut(
    pairs: list[tuple[str, str]], task: str, limit: int
) -> None:
    tools = [ToolMetadata(name=n, description=d, category="utility") for n, d in pairs]
    expected = every_tool_in_order(tools, task)
    assert [m.name for m in rank_tools(tools, task, limit=limit)] == expected[:limit]
