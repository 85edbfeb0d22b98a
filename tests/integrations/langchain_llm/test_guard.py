"""The flow guard through LangChain's ``create_agent`` (LangGraph) and llm's chains, each
driven by its framework's own test model: a sink carrying the page's text is asked about
in the framework's approval flow; the same value from the user's words runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import llm
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pytest_httpserver import HTTPServer

import toolplug
from tests.helpers.guard import PLUGIN, POSTED
from tests.helpers.guard_threads import CheckThreads, long_news
from toolplug import ApprovalRequest
from toolplug.integrations.langchain import ToolplugToolkit
from toolplug.integrations.llm import approve_calls, toolbox

NEWS = "https://news.example/today"
EVIL = "https://collect.evil.example/drop?k=1"
READ = AIMessage("", tool_calls=[{"name": "read_page", "args": {"url": NEWS}, "id": "c1"}])
POST = AIMessage("", tool_calls=[{"name": "post", "args": {"text": f"see {EVIL}"}, "id": "c2"}])
DONE = AIMessage("done")


class Model(GenericFakeChatModel):
    """LangChain's fake chat model, accepting tools as a tool-calling model does."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


@pytest.fixture
def registry() -> Iterator[toolplug.Registry]:
    POSTED.clear()
    loaded = toolplug.load({}, plugins=[PLUGIN], env={"TOOLPLUG_PLUGINS": ""})
    yield loaded
    loaded.close()


@pytest.fixture(autouse=True)
def _llm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))


def _user(text: str) -> Any:
    return {"messages": [{"role": "user", "content": text}]}


def test_langgraph_interrupts_for_a_sink_carrying_the_page(registry: toolplug.Registry) -> None:
    agent = create_agent(
        Model(messages=iter([READ, POST, DONE])),
        ToolplugToolkit(registry).get_tools(),
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    prompt = "Summarize today's news"
    with registry.conversation(prompt):
        paused = agent.invoke(_user(prompt), config)
        [interrupt] = paused["__interrupt__"]
        assert interrupt.value["name"] == "post"
        assert "read untrusted content" in interrupt.value["description"]
        assert "read_page (call 1)" in interrupt.value["description"]
        assert POSTED == []
        done = agent.invoke(Command(resume={"type": "approve"}), config)
    assert done["messages"][-1].content == "done"
    assert [{"text": f"see {EVIL}"}] == POSTED


def test_the_middleware_asks_for_a_sink_carrying_the_page(registry: toolplug.Registry) -> None:
    toolkit = ToolplugToolkit(registry)
    assert sorted(toolkit.interrupt_on()) == ["post", "read_page"]  # their labels name sinks
    agent = create_agent(
        Model(messages=iter([READ, POST, DONE])),
        toolkit.get_tools(),
        middleware=[HumanInTheLoopMiddleware(interrupt_on=toolkit.interrupt_on())],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    with registry.conversation("Summarize today's news"):
        paused = agent.invoke(_user("Summarize today's news"), config)
    [interrupt] = paused["__interrupt__"]
    [action] = interrupt.value["action_requests"]
    assert action["name"] == "post"  # read_page carried nothing untrusted: not asked
    assert "read untrusted content" in action["description"]


def test_langgraph_runs_the_same_value_from_the_users_words(
    registry: toolplug.Registry,
) -> None:
    agent = create_agent(
        Model(messages=iter([READ, POST, DONE])),
        ToolplugToolkit(registry).get_tools(),
        checkpointer=InMemorySaver(),
    )
    prompt = f"Read the news and post {EVIL}"
    with registry.conversation(prompt):
        done = agent.invoke(_user(prompt), {"configurable": {"thread_id": "t2"}})
    assert "__interrupt__" not in done
    assert [{"text": f"see {EVIL}"}] == POSTED


def _calls(*calls: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in calls]})


def test_llm_asks_before_a_sink_carrying_the_page(registry: toolplug.Registry) -> None:
    asked: list[ApprovalRequest] = []

    def ask(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    prompt = _calls(("read_page", {"url": NEWS}), ("post", {"text": f"see {EVIL}"}))
    chain = llm.get_model("echo").chain(
        prompt,
        tools=[toolbox(registry, request="Summarize today's news")],
        before_call=approve_calls(ask),
    )
    chain.text()
    assert [r.tool for r in asked] == ["post"]
    assert "read untrusted content" in asked[0].reason
    assert POSTED == []


def test_llm_runs_the_same_value_from_the_users_words(registry: toolplug.Registry) -> None:
    prompt = _calls(("read_page", {"url": NEWS}), ("post", {"text": f"see {EVIL}"}))
    chain = llm.get_model("echo").chain(
        prompt,
        tools=[toolbox(registry, request=f"post {EVIL} after reading the news")],
        before_call=approve_calls(lambda request: False),
    )
    chain.text()
    assert [{"text": f"see {EVIL}"}] == POSTED


def test_langgraph_run_async_checks_a_long_page_off_the_loop(
    registry: toolplug.Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ainvoke: the tools' arun decides on LangGraph's loop whether a person is asked
    long_news(monkeypatch)
    checks = CheckThreads(monkeypatch)
    agent = create_agent(
        Model(messages=iter([READ, POST, DONE])),
        ToolplugToolkit(registry).get_tools(),
        checkpointer=InMemorySaver(),
    )
    prompt = "Summarize today's news"

    async def main() -> Any:
        async with registry.conversation(prompt):
            return await agent.ainvoke(_user(prompt), {"configurable": {"thread_id": "t3"}})

    paused = asyncio.run(main())
    [interrupt] = paused["__interrupt__"]
    assert interrupt.value["name"] == "post"
    assert "read untrusted content" in interrupt.value["description"]
    assert POSTED == []
    assert checks.threads
    assert checks.on_the_loop == []


def test_llm_async_chain_checks_a_long_page_off_the_loop(
    registry: toolplug.Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # llm's async chain awaits before_call and the tool on its loop: both checks of the
    # post search the long page in a worker thread
    long_news(monkeypatch)
    checks = CheckThreads(monkeypatch)
    asked: list[ApprovalRequest] = []

    def ask(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    async def main() -> None:
        prompt = _calls(("read_page", {"url": NEWS}), ("post", {"text": f"see {EVIL}"}))
        chain = llm.get_async_model("echo").chain(
            prompt,
            tools=[toolbox(registry, request="Summarize today's news")],
            before_call=approve_calls(ask),
        )
        await chain.text()

    asyncio.run(main())
    assert [r.tool for r in asked] == ["post"]
    assert "read untrusted content" in asked[0].reason
    assert [{"text": f"see {EVIL}"}] == POSTED  # approved: it ran once
    assert len(checks.threads) >= 2  # the question, and the call's own
    assert checks.on_the_loop == []


def _walk_through(page: str) -> list[AIMessage]:
    """The model of docs/security.md's walk-through: fetch the page, post what it planted."""
    fetch = AIMessage("", tool_calls=[{"name": "url_fetch", "args": {"url": page}, "id": "c1"}])
    return [fetch, POST, DONE]


def test_langgraph_walk_through_with_the_catalogs_url_fetch(
    fetching: toolplug.Registry, news_page: str, httpserver_ipv4: HTTPServer
) -> None:
    # the GET only reads: it runs unasked; the post carrying the page's address interrupts
    agent = create_agent(
        Model(messages=iter(_walk_through(news_page))),
        ToolplugToolkit(fetching).get_tools(),
        checkpointer=InMemorySaver(),
    )
    prompt = "Summarize today's news"
    with fetching.conversation(prompt):
        paused = agent.invoke(_user(prompt), {"configurable": {"thread_id": "w1"}})
    [interrupt] = paused["__interrupt__"]
    assert interrupt.value["name"] == "post"
    assert "read untrusted content: post's text carries" in interrupt.value["description"]
    assert "url_fetch (call 1)" in interrupt.value["description"]
    [fetched] = [m for m in paused["messages"] if getattr(m, "name", None) == "url_fetch"]
    assert EVIL in fetched.content  # the page reached the model, and the guard
    assert [request.path for request, _ in httpserver_ipv4.log] == ["/today"]
    assert POSTED == []


def test_the_middleware_walk_through_with_the_catalogs_url_fetch(
    fetching: toolplug.Registry, news_page: str, httpserver_ipv4: HTTPServer
) -> None:
    # url_fetch is in interrupt_on (its POST waits), but the question for its GET says no
    toolkit = ToolplugToolkit(fetching)
    assert {"post", "url_fetch"} <= set(toolkit.interrupt_on())
    agent = create_agent(
        Model(messages=iter(_walk_through(news_page))),
        toolkit.get_tools(),
        middleware=[HumanInTheLoopMiddleware(interrupt_on=toolkit.interrupt_on())],
        checkpointer=InMemorySaver(),
    )
    prompt = "Summarize today's news"
    with fetching.conversation(prompt):
        paused = agent.invoke(_user(prompt), {"configurable": {"thread_id": "w2"}})
    [interrupt] = paused["__interrupt__"]
    [action] = interrupt.value["action_requests"]
    assert action["name"] == "post"
    assert "url_fetch (call 1)" in action["description"]
    assert [request.path for request, _ in httpserver_ipv4.log] == ["/today"]
    assert POSTED == []


def test_llm_walk_through_with_the_catalogs_url_fetch(
    fetching: toolplug.Registry, news_page: str, httpserver_ipv4: HTTPServer
) -> None:
    # before_call asks only where toolplug asks: not the GET, then the post, refused
    asked: list[ApprovalRequest] = []

    def ask(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    prompt = _calls(("url_fetch", {"url": news_page}), ("post", {"text": f"see {EVIL}"}))
    chain = llm.get_model("echo").chain(
        prompt,
        tools=[toolbox(fetching, request="Summarize today's news")],
        before_call=approve_calls(ask),
    )
    # the echo model's last turn was given both results: the page, and the refusal
    *_, last = chain.responses()
    fetched, refused = json.loads(last.text())["tool_results"]
    assert [r.tool for r in asked] == ["post"]
    assert asked[0].reason.startswith("this session read untrusted content: post's text carries")
    assert "url_fetch (call 1)" in asked[0].reason
    assert fetched["name"] == "url_fetch"
    assert EVIL in fetched["output"]  # the page reached the model, and the guard
    assert refused["name"] == "post"
    assert [request.path for request, _ in httpserver_ipv4.log] == ["/today"]
    assert POSTED == []
