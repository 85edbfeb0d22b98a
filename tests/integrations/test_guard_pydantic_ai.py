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


def _agent(registry: Registry, *calls: tuple[str, dict[str, Any]]) -> Agent[None, Any]:
    """A model that reads the news, then makes ``calls``, one a turn."""
    script = [("read_page", {"url": NEWS}), *calls]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < len(script):
            name, arguments = script[turn]
            return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=f"c{turn}")])
        return ModelResponse(parts=[TextPart("done")])

    return Agent(
        FunctionModel(respond),
        toolsets=[ToolplugToolset(registry)],
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
