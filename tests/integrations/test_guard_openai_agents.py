"""The flow guard through the Agents SDK's own agent loop (``ScriptedModel``): each run is a
conversation carrying the user's input; a call the guard asks about interrupts the run for
the person, as toolplug's other approvals do, and runs once they approve."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from agents import Agent, RunConfig, Runner, RunResult, RunState
from agents.testing import ScriptedModel, assistant_message, function_call
from pytest_httpserver import HTTPServer

import toolplug
from tests.helpers.guard import PLUGIN, POSTED
from tests.helpers.guard_threads import CheckThreads, long_news
from toolplug import (
    Annotations,
    Conversation,
    Registry,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    hookimpl,
)
from toolplug.integrations.openai_agents import function_tools
from toolplug.schema import strict_arguments

NO_TRACES = RunConfig(tracing_disabled=True)  # the SDK would try to upload its traces
NEWS = "https://news.example/today"
EVIL = "https://collect.evil.example/drop?k=1"


@pytest.fixture
def registry() -> Iterator[Registry]:
    POSTED.clear()
    loaded = toolplug.load({}, plugins=[PLUGIN], env={})
    yield loaded
    loaded.close()


def _agent(registry: Registry, text: str, allow: Any = None) -> Agent[Any]:
    """A model that reads the news, then posts ``text``; the tools bound each run's effects
    by ``allow``."""

    def strict(name: str, arguments: dict[str, Any]) -> Any:
        return strict_arguments(registry.get(name).metadata.parameters, arguments)

    model = ScriptedModel(
        [
            [function_call("read_page", strict("read_page", {"url": NEWS}), call_id="c1")],
            [function_call("post", strict("post", {"text": text}), call_id="c2")],
            [assistant_message("done")],
        ]
    )
    return Agent(name="assistant", model=model, tools=function_tools(registry, allow=allow))


def _run(agent: Agent[Any], given: Any) -> RunResult:
    return asyncio.run(Runner.run(agent, given, run_config=NO_TRACES))


def test_a_sink_carrying_the_pages_text_interrupts_the_run(registry: Registry) -> None:
    agent = _agent(registry, f"notes at {EVIL}")
    paused = _run(agent, "Summarize today's news")
    [waiting] = paused.interruptions
    assert waiting.tool_name == "post"
    assert POSTED == []
    # the person approves: the call runs once, unasked by toolplug
    state = paused.to_state()
    state.approve(waiting)
    resumed = _run(agent, state)
    assert resumed.final_output == "done"
    assert [{"text": f"notes at {EVIL}"}] == POSTED


def test_the_same_value_from_the_users_input_runs(registry: Registry) -> None:
    agent = _agent(registry, f"notes at {EVIL}")
    result = _run(agent, f"Read the news, then post my notes link {EVIL}")
    assert result.interruptions == []
    assert result.final_output == "done"
    assert [{"text": f"notes at {EVIL}"}] == POSTED


def test_text_the_model_wrote_runs(registry: Registry) -> None:
    result = _run(_agent(registry, "The weather is fine."), "Summarize today's news")
    assert result.interruptions == []
    assert POSTED == [{"text": "The weather is fine."}]


# The page asks for a post, and the model posts words of its own: value flow finds nothing,
# the bound of the effects the user asked for does.
OWN_WORDS = "Weather is fine today."


@pytest.mark.parametrize(
    ("allow", "prompt", "runs"),
    [
        (["read_page"], "Summarize today's news", False),  # no post asked for
        (["read_page", "post"], "Summarize today's news", True),  # the host says one was
        (["research", "publish"], "Summarize today's news", True),  # by their categories
        ({"read_page": None, "post": 0}, "Summarize today's news", False),  # a count of none
        ("inferred", "Summarize today's news", False),  # no verb of post in it
        ("inferred", "Read the news and post a summary", True),  # "post" names it
        (None, "Summarize today's news", True),  # unbounded: as before
    ],
)
def test_a_run_is_bounded_by_the_tools_allow(
    registry: Registry, allow: Any, prompt: str, runs: bool
) -> None:
    agent = _agent(registry, OWN_WORDS, allow=allow)
    result = _run(agent, prompt)
    if runs:
        assert result.interruptions == []
        assert result.final_output == "done"
        assert POSTED == [{"text": OWN_WORDS}]
        return
    [waiting] = result.interruptions  # the read ran unasked: it is inside every bound
    assert waiting.tool_name == "post"
    assert POSTED == []
    # the person approves: the call outside the bound runs once
    state = result.to_state()
    state.approve(waiting)
    assert _run(agent, state).final_output == "done"
    assert POSTED == [{"text": OWN_WORDS}]


@pytest.mark.parametrize(
    ("host", "tools", "runs", "allows"),
    [
        (["read_page", "post"], ["read_page"], False, "read_page"),  # the tools narrow
        (["read_page"], ["read_page", "post"], False, "read_page"),  # and cannot widen
        (["read_page"], "inferred", False, "read_page"),  # the host's words name a post
        (["read_page", "post"], ["read_page", "post"], True, None),  # inside both
    ],
)
def test_the_tools_allow_stays_inside_a_conversation_the_host_opened(
    registry: Registry, host: Any, tools: Any, runs: bool, allows: str | None
) -> None:
    agent = _agent(registry, OWN_WORDS, allow=tools)

    async def main() -> tuple[RunResult, Conversation]:
        async with registry.conversation("Post the news", allow=host) as opened:
            result = await Runner.run(agent, "Post the news", run_config=NO_TRACES)
            if result.interruptions:  # the person approves: the call runs, unasked again
                state = result.to_state()
                state.approve(result.interruptions[0])
                await Runner.run(agent, state, run_config=NO_TRACES)
        return result, opened

    result, opened = asyncio.run(main())
    assert [s.tool for s in opened.sources] == [None, "read_page", "post"]  # recorded there
    assert opened.effects == frozenset(host)  # the host's bound unchanged
    assert POSTED == [{"text": OWN_WORDS}]
    if runs:
        assert result.interruptions == []
        return
    [waiting] = result.interruptions
    assert waiting.tool_name == "post"
    [asked] = [d for d in opened.decisions if d.action == "ask"]
    assert (asked.tool, asked.rule, asked.approved) == ("post", "effects", True)
    assert f"(it allows: {allows})" in asked.reason


ARCHIVED: list[dict[str, Any]] = []


class Archive(Tool):
    """Changes something, and declares no labels (the cautious default's): neither toolplug's
    approval rule nor value flow asks about it, the effects rule may."""

    metadata: ClassVar[ToolMetadata] = ToolMetadata(
        name="archive",
        description="Archive a page.",
        category="utility",
        parameters={"type": "object", "properties": {"name": {"type": "string"}}},
        annotations=Annotations(read_only=False, destructive=False, open_world=False),
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        ARCHIVED.append(dict(arguments))
        return ToolResult.success("archived")


class ArchiveTools:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Archive)


def test_a_tool_only_the_bound_asks_about_interrupts_the_run() -> None:
    # with allow=, the SDK asks toolplug per call about every tool with an effect: the call
    # outside the bound interrupts the run (not an error the model reads), one inside runs
    ARCHIVED.clear()
    loaded = toolplug.load({}, plugins=[PLUGIN, ("archive-tools", ArchiveTools())], env={})
    try:
        for allow, interrupted in ((["read_page"], True), (["read_page", "archive"], False)):
            model = ScriptedModel(
                [
                    [function_call("read_page", json.dumps({"url": NEWS}), call_id="c1")],
                    [function_call("archive", json.dumps({"name": "today"}), call_id="c2")],
                    [assistant_message("done")],
                ]
            )
            tools = function_tools(loaded, allow=allow)
            agent = Agent(name="assistant", model=model, tools=tools)
            result = _run(agent, "Summarize today's news")
            assert [i.tool_name for i in result.interruptions] == (
                ["archive"] if interrupted else []
            )
            ran = [] if interrupted else [{"name": "today"}]
            assert ran == ARCHIVED
    finally:
        loaded.close()


@pytest.mark.parametrize(
    ("first", "second", "asked"),
    [
        # the list made first bounds its calls more narrowly: the other's bound still holds
        # for its own calls (archive runs), and its own for the post it does not allow
        ((["read_page", "post"], ["read_page", "post"]), (["read_page", "archive"], ["archive"]),
         []),
        # the list whose call comes first bounds more widely: the other's stays narrow
        ((["read_page", "archive", "post"], ["read_page", "archive"]),
         (["read_page"], ["post"]), ["post"]),
    ],
)
def test_two_tool_lists_in_one_run_each_keep_their_own_bound(
    first: tuple[list[str], list[str]], second: tuple[list[str], list[str]], asked: list[str]
) -> None:
    # one agent offered the tools of two function_tools lists, each made with its own
    # allow= (say, a host's and a toolkit's): the run reads the page with the first list's
    # read_page, then makes the first list's effect, then the second's
    POSTED.clear()
    ARCHIVED.clear()
    loaded = toolplug.load({}, plugins=[PLUGIN, ("archive-tools", ArchiveTools())], env={})
    try:
        tools = []
        for allow, names in (first, second):
            tools += [t for t in function_tools(loaded, allow=allow) if t.name in names]
        effects = [n for n in first[1] + second[1] if n != "read_page"]
        arguments = {"post": {"text": OWN_WORDS}, "archive": {"name": "today"}}
        model = ScriptedModel(
            [
                [function_call("read_page", json.dumps({"url": NEWS}), call_id="c1")],
                *[
                    [function_call(n, json.dumps(arguments[n]), call_id=f"c{i}")]
                    for i, n in enumerate(effects, 2)
                ],
                [assistant_message("done")],
            ]
        )
        agent = Agent(name="assistant", model=model, tools=tools)
        result = _run(agent, "Summarize today's news")
        assert [i.tool_name for i in result.interruptions] == asked
        ran = [n for n in effects if n not in asked]
        archived = [{"name": "today"}] if "archive" in ran else []
        posted = [{"text": OWN_WORDS}] if "post" in ran else []
        assert (archived, posted) == (ARCHIVED, POSTED)
        if asked:  # the person approves: the call outside its list's bound runs once
            state = result.to_state()
            state.approve(result.interruptions[0])
            assert _run(agent, state).final_output == "done"
            assert POSTED == [{"text": OWN_WORDS}]
        else:
            assert result.final_output == "done"
    finally:
        loaded.close()


def test_a_malformed_allow_fails_when_the_tools_are_made(registry: Registry) -> None:
    with pytest.raises(TypeError, match=r"allow\['post'\] is -1: give how many calls"):
        function_tools(registry, allow={"post": -1})
    with pytest.raises(TypeError, match="give a list of tool names or categories"):
        function_tools(registry, allow="post")
    with pytest.raises(TypeError, match="each effect is a tool's name"):
        function_tools(registry, allow=["post", " "])


def test_a_run_resumed_from_kept_state_in_an_opened_conversation_still_remembers(
    registry: Registry,
) -> None:
    agent = _agent(registry, f"notes at {EVIL}")

    async def main() -> None:
        async with registry.conversation("Summarize today's news"):
            paused = await Runner.run(agent, "Summarize today's news", run_config=NO_TRACES)
            [waiting] = paused.interruptions
            state = await RunState.from_string(agent, paused.to_state().to_string())
            state.reject(state.get_interruptions()[0], rejection_message="no")
            await Runner.run(agent, state, run_config=NO_TRACES)
            assert waiting.tool_name == "post"

    asyncio.run(main())
    assert POSTED == []


def test_after_a_long_page_the_sdks_question_is_checked_off_the_loop(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the SDK awaits needs_approval on its loop: toolplug's check of a conversation that
    # read a long page searches it in a worker thread, and the run is interrupted the same
    long_news(monkeypatch)
    checks = CheckThreads(monkeypatch)
    paused = _run(_agent(registry, f"notes at {EVIL}"), "Summarize today's news")
    [waiting] = paused.interruptions
    assert waiting.tool_name == "post"
    assert POSTED == []
    assert checks.threads
    assert checks.on_the_loop == []


def test_the_walk_through_with_the_catalogs_url_fetch(
    fetching: Registry, news_page: str, httpserver_ipv4: HTTPServer
) -> None:
    # docs/security.md with the real fetcher: the SDK asks toolplug's needs_approval per
    # call; the GET only reads, so it runs unasked, the guard records the page, and the
    # post carrying the address the page planted interrupts the run
    def strict(name: str, arguments: dict[str, Any]) -> Any:
        return strict_arguments(fetching.get(name).metadata.parameters, arguments)

    model = ScriptedModel(
        [
            [function_call("url_fetch", strict("url_fetch", {"url": news_page}), call_id="c1")],
            [function_call("post", strict("post", {"text": f"notes at {EVIL}"}), call_id="c2")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="assistant", model=model, tools=function_tools(fetching))
    prompt = "Summarize today's news"

    async def main() -> tuple[RunResult, str | None]:
        async with fetching.conversation(prompt):
            paused = await Runner.run(agent, prompt, run_config=NO_TRACES)
            # what toolplug answers the SDK for the post: the guard's reason
            reason = await fetching.aguard_reason("post", {"text": f"notes at {EVIL}"})
        return paused, reason

    paused, reason = asyncio.run(main())
    [waiting] = paused.interruptions  # the fetch was not among them: it ran
    assert waiting.tool_name == "post"
    assert reason is not None
    assert reason.startswith("this session read untrusted content: post's text carries")
    assert "url_fetch (call 1" in reason
    assert model.last_call is not None
    [output] = [
        item["output"]
        for item in model.last_call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert EVIL in output  # the page reached the model, and the guard
    assert [request.path for request, _ in httpserver_ipv4.log] == ["/today"]
    assert POSTED == []
