"""Tool search: the index, what it scores, any script, the semantic hook, one order for all.

Properties, not timings: a paraphrase finds its tool among 200 distractors, parameter text
counts, a request in Japanese or Korean finds a tool described in that script, the order is
deterministic, and every consumer of ranking agrees with ``registry.search``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import Run
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult, hookimpl
from toolplug.search._index import Index, index_of
from toolplug.search._text import terms, words

NOUNS = ["invoice", "ticket", "playlist", "meeting", "parcel", "recipe", "flight", "budget",
         "sensor", "contract"]
VERBS = ["create", "delete", "list", "update", "archive", "share", "export", "import",
         "summarize", "translate"]
QUALIFIERS = ["", "team", "draft"]


def meta(name: str, description: str, **extra: Any) -> ToolMetadata:
    return ToolMetadata(name=name, description=description, category="utility", **extra)


def distractors(count: int = 200) -> list[ToolMetadata]:
    made = []
    for verb, noun, qualifier in itertools.product(VERBS, NOUNS, QUALIFIERS):
        words_ = [verb, qualifier, noun] if qualifier else [verb, noun]
        made.append(meta("_".join(words_), f"{verb.title()} a {qualifier} {noun} record."))
    return made[:count]


TARGETS = [
    meta("movie_finder", "Look up films playing in cinemas near a city.",
         parameters={"type": "object", "properties": {
             "city": {"type": "string", "description": "Where to look"},
             "director": {"type": "string", "description": "Only films by this director"},
         }}),
    meta("car_rental", "Reserve a vehicle for a trip.",
         parameters={"type": "object", "properties": {
             "pickup_city": {"type": "string", "description": "City where the car is collected"},
             "car_type": {"type": "string", "enum": ["sedan", "suv", "van"]},
         }}),
    meta("weather_jp", "指定した都市の天気予報を返します。"),
    meta("weather_ko", "도시의 날씨 예보를 알려줍니다."),
]


def tools() -> list[ToolMetadata]:
    return distractors() + TARGETS


def top(query: str, limit: int = 3) -> list[str]:
    return [hit.name for hit in Index(tools()).search(query, limit)]


def test_a_paraphrase_finds_its_tool_among_200_distractors() -> None:
    assert len(distractors()) == 200
    assert "movie_finder" in top("which films are showing in the cinema in Boston tonight?")


def test_parameter_text_counts() -> None:
    # Only the director parameter says "director"; only the enum says "sedan".
    assert top("movies directed by Greta Gerwig", 1) == ["movie_finder"]
    assert top("can you please rent me a sedan in Los Angeles", 1) == ["car_rental"]


@pytest.mark.parametrize(("query", "tool"), [
    ("東京の天気予報を教えて", "weather_jp"),
    ("서울 날씨 예보", "weather_ko"),
])
def test_a_request_in_another_script_finds_a_tool_in_that_script(query: str, tool: str) -> None:
    assert top(query, 1) == [tool]


def test_filler_and_single_letters_do_not_count() -> None:
    assert words("Can you please help me, I want to") == []
    assert words("Mr. X") == ["mr"]
    assert words("renting rented rents") == ["rent", "rent", "rent"]


# Words written in camelCase: brand names in prose, identifiers in names and parameters.
CAMEL = [
    meta("repo_reader", "Read issues from GitHub repositories."),
    meta("jira_issues", "List the issues of a Jira project."),
    meta("photo_backup", "Copy the photos of an iPhone to the cloud."),
    meta("phone_dialer", "Call a phone number."),
    meta("video_trends", "Trending videos on YouTube by country."),
    meta("tube_map", "Plan a journey on the London Tube."),
    meta("search_page", "Search a page of results.",
         parameters={"type": "object", "properties": {"maxResults": {"type": "integer"}}}),
]


@pytest.mark.parametrize(("text", "expected"), [
    ("GitHub", ["github"]),  # not git + hub, which no description says
    ("iPhone", ["iphon"]),  # not "phone" (the "i" is one letter and dropped)
    ("YouTube videos", ["youtub", "video"]),  # not "you" (filler) + "tube"
    ("maxResults", ["maxresult"]),  # an identifier pasted into a request stays whole too
])
def test_a_request_keeps_a_camel_case_word_whole(text: str, expected: list[str]) -> None:
    assert words(text) == expected
    assert words(text.lower()) == expected  # the same term as the word in any case


@pytest.mark.parametrize(("identifier", "expected"), [
    ("maxResults", ("maxresult", "max", "result")),  # whole, then each hump
    ("HTTPServer", ("httpserver", "http", "server")),  # an acronym is one hump
    ("userId", ("userid", "user", "id")),
    ("max_results", ("max", "result")),  # no humps: split at "_" only
])
def test_an_identifier_counts_whole_and_by_its_humps(
    identifier: str, expected: tuple[str, ...]
) -> None:
    assert terms(identifier, identifiers=True) == expected


@pytest.mark.parametrize(("query", "tool"), [
    ("Show me GitHub issues", "repo_reader"),  # was jira_issues: "git" and "hub" matched nothing
    ("sync my iPhone", "photo_backup"),  # was phone_dialer, on "phone"
    ("what is new on YouTube", "video_trends"),  # was tube_map, on "tube"
    ("max results", "search_page"),  # a camelCase parameter still matches its parts
    ("maxResults", "search_page"),  # and itself
])
def test_a_camel_case_word_meets_the_same_word_in_a_tool(query: str, tool: str) -> None:
    index = Index(distractors() + CAMEL)
    assert index.search(query, 1)[0].name == tool


def test_matched_terms_are_reported_per_field() -> None:
    [hit] = Index(tools()).search("films by this director", 1)
    assert hit.name == "movie_finder"
    assert hit.matched == {"description": ("film",), "parameters": ("director",),
                           "parameter_text": ("director", "film")}
    assert hit.to_dict()["matched"]["parameters"] == ["director"]


def test_the_order_is_deterministic_and_ties_go_by_name() -> None:
    first = [h.name for h in Index(tools()).search("archive a playlist", 20)]
    again = [h.name for h in Index(list(reversed(tools()))).search("archive a playlist", 20)]
    assert first == again
    tied = list(Index(tools()).search("playlist", None))
    for a, b in itertools.pairwise(tied):
        assert (-a.score, a.name) <= (-b.score, b.name)


def test_the_index_is_built_once_per_set_of_tools() -> None:
    some = tools()
    assert index_of(some) is index_of(some)
    assert index_of(some) is not index_of(some[:-1])


class Plugin:
    def __init__(self, *made: ToolMetadata) -> None:
        self.made = made

    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        for m in self.made:
            register(type(m.name, (Tool,), {"metadata": m, "run": _run}))


def _run(self: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult.success("")


def load(*plugins: Any) -> toolplug.Registry:
    return toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""},
                         plugins=[(f"p{i}", p) for i, p in enumerate(plugins)])


def test_a_plugin_loaded_from_code_after_a_search_is_found() -> None:
    first = load(Plugin(*distractors(50)))
    assert "movie_finder" not in [h.name for h in first.search("films in cinemas")]
    second = load(Plugin(*distractors(50)), Plugin(TARGETS[0]))
    assert second.search("films in cinemas", limit=1)[0].name == "movie_finder"


def test_every_consumer_agrees_with_registry_search() -> None:
    registry = load(Plugin(*tools()))
    task = "share the team playlist and export the draft budget"
    expected = [h.name for h in registry.search(task, limit=5)]
    assert len(expected) == 5
    section = toolplug.optional_tools_section(registry, task=task, max_tools=5)
    # The section groups by category and names in order; the five chosen are the same.
    listed = [line[4:] for line in section.splitlines() if line.startswith("### ")]
    assert sorted(listed) == sorted(expected)
    exported = toolplug.export_tools(registry, "openai", task=task, max_tools=5)
    names = [t["function"]["name"] for t in exported if t["function"]["name"] != "search_tools"]
    assert names == sorted(expected)  # the export lists its chosen tools by name
    session = toolplug.ToolSearch(registry, "openai", task=task, max_tools=5)
    assert sorted(session.loaded) == sorted(expected)
    found = [m.name for m in session.search(task, 5)]
    assert found == expected


def test_cli_search_text_and_json(cli: Any) -> None:
    text: Run = cli("search", "check whether these links still work", "--limit", "2")
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert lines[0].split() == ["RANK", "NAME", "SCORE", "MATCHED"]
    assert lines[1].split()[:2] == ["1", "link_validator"]
    as_json: Run = cli("search", "check whether these links still work", "--json")
    hits = json.loads(as_json.out)
    assert hits[0]["name"] == "link_validator"
    assert set(hits[0]) == {"name", "score", "matched"}
    assert "link" in hits[0]["matched"]["name"]
    nothing: Run = cli("search", "zzzz qqqq")
    assert nothing.code == 0
    assert "no tool matches" in nothing.out


# -- the semantic hook -------------------------------------------------------------------

CONCEPTS = {"rain": 0, "umbrella": 0, "wet": 0, "storm": 0, "money": 1, "pay": 1,
            "invoice": 1, "music": 2, "song": 2, "playlist": 2}


class Embedder:
    """A tiny deterministic embedder: one dimension per concept, counted from words."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    @hookimpl
    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        vectors = []
        for text in texts:
            vector = [0.0, 0.0, 0.0]
            for word in re.findall(r"[a-z]+", text.lower()):
                if word in CONCEPTS:
                    vector[CONCEPTS[word]] += 1
            vectors.append(vector)
        return vectors


def test_an_embedder_makes_ranking_hybrid_and_embeds_tools_once() -> None:
    umbrella = meta("umbrella_advisor", "Say whether to carry an umbrella today.")
    embedder = Embedder()
    lexical = load(Plugin(*distractors(60), umbrella))
    hybrid = load(Plugin(*distractors(60), umbrella), embedder)
    query = "will there be a storm, will I get wet?"
    assert "umbrella_advisor" not in [h.name for h in lexical.search(query, limit=5)]
    assert [h.name for h in hybrid.search(query, limit=1)] == ["umbrella_advisor"]
    hybrid.search("rain later?", limit=3)
    # The tools were embedded once (61 texts); each query is one more text.
    assert embedder.calls == [61, 1, 1]


def test_an_embedder_that_returns_the_wrong_shape_is_an_error() -> None:
    class Broken:
        @hookimpl
        def embed_texts(self, texts: list[str]) -> list[list[float]]:
            return [[1.0]]

    registry = load(Plugin(*distractors(10)), Broken())
    with pytest.raises(ValueError, match="one vector per text"):
        registry.search("anything")

