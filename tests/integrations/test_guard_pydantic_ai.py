"""The flow guard through pydantic-ai's own agent loop: each run is a conversation carrying
the user's prompt; a call the guard asks about pauses the run for the person
(``DeferredToolRequests``), as toolplug's other approvals do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pytest_httpserver import HTTPServer

import toolplug
from tests.helpers.guard import PLUGIN, POSTED
from tests.helpers.guard_threads import CheckThreads, long_news
from toolplug import Registry
from toolplug.integrations.pydantic_ai import ToolplugToolset

NEWS = "https://news.example/today"
EVIL = "https://collect.evil.example/drop?k=1"


@pytest.fixture
def registry() -> Iterator[Registry]:
    POSTED.clear()
    loaded = toolplug.load({}, plugins=[PLUGIN], env={})
    yield loaded
    loaded.close()


def _agent(
    registry: Registry, *calls: tuple[str, dict[str, Any]], allow: Any = None
) -> Agent[None, Any]:
    """A model that reads the news, then makes ``calls``, one a turn; the toolset bounds
    each run's effects by ``allow``."""
    script = [("read_page", {"url": NEWS}), *calls]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < len(script):
            name, arguments = script[turn]
            return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=f"c{turn}")])
        return ModelResponse(parts=[TextPart("done")])

    return Agent(
        FunctionModel(respond),
        toolsets=[ToolplugToolset(registry, allow=allow)],
        output_type=[str, DeferredToolRequests],
    )


def test_a_sink_carrying_the_pages_text_pauses_the_run(registry: Registry) -> None:
    agent = _agent(registry, ("post", {"text": f"notes at {EVIL}"}))
    paused = asyncio.run(agent.run("Summarize today's news"))
    requests = paused.output
    assert isinstance(requests, DeferredToolRequests)
    [call] = requests.approvals
    assert call.tool_name == "post"
    reason = requests.metadata[call.tool_call_id]["reason"]
    assert "read untrusted content" in reason
    assert "read_page (call 1, id c0)" in reason
    assert POSTED == []

    # the person approves later, from a history kept as JSON: the call runs once
    resumed = asyncio.run(
        agent.run(
            message_history=ModelMessagesTypeAdapter.validate_json(paused.all_messages_json()),
            deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
        )
    )
    assert resumed.output == "done"
    assert [{"text": f"notes at {EVIL}"}] == POSTED


def test_only_the_call_that_carries_the_page_pauses(registry: Registry) -> None:
    # two sink calls: the first carries nothing of the page, the second does
    agent = _agent(registry, ("post", {"text": "fine"}), ("post", {"text": EVIL}))
    paused = asyncio.run(agent.run("Summarize today's news"))
    assert isinstance(paused.output, DeferredToolRequests)
    [call] = paused.output.approvals
    assert call.args == {"text": EVIL}


def test_the_same_value_from_the_users_prompt_runs(registry: Registry) -> None:
    agent = _agent(registry, ("post", {"text": f"notes at {EVIL}"}))
    result = asyncio.run(agent.run(f"Read the news and post my notes link {EVIL}"))
    assert result.output == "done"
    assert [{"text": f"notes at {EVIL}"}] == POSTED


def test_a_conversation_opened_around_the_run_is_used(registry: Registry) -> None:
    agent = _agent(registry, ("post", {"text": f"notes at {EVIL}"}))

    async def main() -> Any:
        async with registry.conversation(f"the link is {EVIL}") as conversation:
            result = await agent.run("Summarize today's news")
        return result, conversation

    result, conversation = asyncio.run(main())
    assert result.output == "done"  # the request of the opened conversation holds EVIL
    assert [s.tool for s in conversation.sources] == [None, "read_page", "post"]


# The page asks for a post, and the model posts words of its own: value flow finds nothing,
# the bound of the effects the user asked for does.
OWN_WORDS = ("post", {"text": "Weather is fine today."})


@pytest.mark.parametrize(
    ("allow", "prompt", "runs"),
    [
        (["read_page"], "Summarize today's news", False),  # no post asked for
        (["post"], "Summarize today's news", True),  # the host says a post was asked for
        (["research", "publish"], "Summarize today's news", True),  # by their categories
        ({"post": 0}, "Summarize today's news", False),  # a count of none
        ("inferred", "Summarize today's news", False),  # no verb of post in it
        ("inferred", "Read the news and post a summary", True),  # "post" names it
        (None, "Summarize today's news", True),  # unbounded: as before
        # a one-pass iterable: checked when the toolset is made, and still the bound after
        ((name for name in ["read_page", "post"]), "Summarize today's news", True),
    ],
)
def test_a_run_is_bounded_by_the_toolset_s_allow(
    registry: Registry, allow: Any, prompt: str, runs: bool
) -> None:
    result = asyncio.run(_agent(registry, OWN_WORDS, allow=allow).run(prompt))
    if runs:
        assert result.output == "done"
        assert [OWN_WORDS[1]] == POSTED
        return
    assert isinstance(result.output, DeferredToolRequests)
    [call] = result.output.approvals
    reason = result.output.metadata[call.tool_call_id]["reason"]
    assert "(effects rule)" in reason
    assert POSTED == []


def test_the_toolset_s_allow_narrows_a_conversation_the_host_opened(registry: Registry) -> None:
    agent = _agent(registry, OWN_WORDS, allow=["read_page"])

    async def main() -> Any:
        async with registry.conversation("Post the news", allow=["post", "read_page"]) as opened:
            return await agent.run("Summarize today's news"), opened

    result, opened = asyncio.run(main())
    assert isinstance(result.output, DeferredToolRequests)  # the toolset's bound holds too
    assert [s.tool for s in opened.sources] == [None, "read_page"]  # recorded in the host's
    assert opened.effects == frozenset({"post", "read_page"})  # the host's bound unchanged
    [call] = result.output.approvals
    assert "(it allows: read_page)" in result.output.metadata[call.tool_call_id]["reason"]


def test_the_toolset_s_allow_cannot_widen_a_conversation_the_host_opened(
    registry: Registry,
) -> None:
    agent = _agent(registry, OWN_WORDS, allow=["read_page", "post"])

    async def main() -> Any:
        async with registry.conversation("Post the news", allow=["read_page"]) as opened:
            return await agent.run("Post the news"), opened

    result, opened = asyncio.run(main())
    assert isinstance(result.output, DeferredToolRequests)  # the host's bound holds
    assert opened.effects == frozenset({"read_page"})
    [call] = result.output.approvals
    assert "(it allows: read_page)" in result.output.metadata[call.tool_call_id]["reason"]
    assert POSTED == []


def test_a_malformed_allow_fails_when_the_toolset_is_made(registry: Registry) -> None:
    with pytest.raises(TypeError, match=r"allow\['post'\] is -1: give how many calls"):
        ToolplugToolset(registry, allow={"post": -1})
    with pytest.raises(TypeError, match="give a list of tool names or categories"):
        ToolplugToolset(registry, allow="post")


def test_after_a_long_page_the_pause_is_checked_off_the_loop(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the toolset's call_tool decides on pydantic-ai's loop whether to defer the call: the
    # check of a conversation that read a long page searches it in a worker thread
    long_news(monkeypatch)
    checks = CheckThreads(monkeypatch)
    paused = asyncio.run(
        _agent(registry, ("post", {"text": f"notes at {EVIL}"})).run("Summarize today's news")
    )
    assert isinstance(paused.output, DeferredToolRequests)
    [call] = paused.output.approvals
    assert call.tool_name == "post"
    assert "read untrusted content" in paused.output.metadata[call.tool_call_id]["reason"]
    assert POSTED == []
    assert checks.threads
    assert checks.on_the_loop == []


def test_the_walk_through_with_the_catalogs_url_fetch(
    fetching: Registry, news_page: str, httpserver_ipv4: HTTPServer
) -> None:
    # docs/security.md with the real fetcher: its GET only reads, so it runs unasked in
    # pydantic-ai's loop; the guard records the page, and the post carrying the address
    # the page planted pauses the run, naming the fetch
    script = [("url_fetch", {"url": news_page}), ("post", {"text": f"notes at {EVIL}"})]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < len(script):
            name, arguments = script[turn]
            return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=f"c{turn}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(
        FunctionModel(respond),
        toolsets=[ToolplugToolset(fetching)],
        output_type=[str, DeferredToolRequests],
    )
    paused = asyncio.run(agent.run("Summarize today's news"))
    requests = paused.output
    assert isinstance(requests, DeferredToolRequests)
    [call] = requests.approvals  # the fetch was not among them: it ran
    assert call.tool_name == "post"
    reason = requests.metadata[call.tool_call_id]["reason"]
    assert reason.startswith("this session read untrusted content: post's text carries")
    assert "url_fetch (call 1, id c0)" in reason
    [fetched] = [
        part
        for message in paused.all_messages()
        for part in message.parts
        if part.part_kind == "tool-return" and part.tool_name == "url_fetch"
    ]
    assert EVIL in fetched.model_response_str()  # the page reached the model, and the guard
    assert [request.path for request, _ in httpserver_ipv4.log] == ["/today"]
    assert POSTED == []
