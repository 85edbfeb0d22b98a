"""``ToolplugToolkit(allow=...)`` through LangChain's ``create_agent`` (LangGraph), driven by
LangChain's own fake chat model: the page asks for a post and the model posts words of its
own, so value flow finds nothing; the bound of the effects the user asked for interrupts
the post, in a conversation the host opened (the toolkit's bound inside the host's, never
wider) or in the toolkit's own per LangGraph thread."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import toolplug
from tests.helpers.guard import PLUGIN, POSTED
from toolplug.integrations.langchain import ToolplugToolkit

NEWS = "https://news.example/today"
OWN_WORDS = {"text": "Weather is fine today."}


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


def _script() -> Model:
    read = AIMessage("", tool_calls=[{"name": "read_page", "args": {"url": NEWS}, "id": "c1"}])
    post = AIMessage("", tool_calls=[{"name": "post", "args": OWN_WORDS, "id": "c2"}])
    return Model(messages=iter([read, post, AIMessage("done")]))


def _agent(toolkit: ToolplugToolkit, *, middleware: bool = False) -> Any:
    hitl = [HumanInTheLoopMiddleware(interrupt_on=toolkit.interrupt_on())] if middleware else []
    return create_agent(
        _script(), toolkit.get_tools(), middleware=hitl, checkpointer=InMemorySaver()
    )


def _user(text: str) -> Any:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize(
    ("host", "allow", "asks", "allows"),
    [
        (None, ["read_page"], True, "(it allows: read_page)"),  # no post asked for
        (None, ["research", "publish"], False, None),  # by their categories
        (None, {"read_page": None, "post": 0}, True, "asked for 0 such calls"),  # none
        (["read_page", "post"], ["read_page"], True, "(it allows: read_page)"),  # narrows
        (["read_page"], ["read_page", "post"], True, "(it allows: read_page)"),  # not wider
        (["read_page", "post"], ["read_page", "post"], False, None),  # inside both
        (["read_page"], "inferred", True, "(it allows: read_page)"),  # the host's holds
        (["read_page", "post"], "inferred", False, None),  # "Post" names the post
    ],
)
def test_langgraph_interrupts_a_call_outside_the_bound(
    registry: toolplug.Registry, host: Any, allow: Any, asks: bool, allows: Any
) -> None:
    agent = _agent(ToolplugToolkit(registry, allow=allow))
    config: Any = {"configurable": {"thread_id": "t1"}}
    prompt = "Post the news"
    opened = registry.conversation(prompt, allow=host) if host is not None else None
    with opened if opened is not None else contextlib.nullcontext():
        paused = agent.invoke(_user(prompt), config)
        if not asks:
            assert "__interrupt__" not in paused
            assert [OWN_WORDS] == POSTED
            return
        [interrupt] = paused["__interrupt__"]
        assert interrupt.value["name"] == "post"
        assert "(effects rule)" in interrupt.value["description"]
        assert allows in interrupt.value["description"]
        assert POSTED == []
        done = agent.invoke(Command(resume={"type": "approve"}), config)  # the person: yes
    assert done["messages"][-1].content == "done"
    assert [OWN_WORDS] == POSTED
    if opened is not None:
        assert opened.effects == frozenset(host)  # the host's bound unchanged


def test_the_middleware_asks_about_a_call_outside_the_bound(
    registry: toolplug.Registry,
) -> None:
    toolkit = ToolplugToolkit(registry, allow=["read_page"])
    agent = _agent(toolkit, middleware=True)
    config: Any = {"configurable": {"thread_id": "m1"}}
    with registry.conversation("Summarize today's news"):
        paused = agent.invoke(_user("Summarize today's news"), config)
        [interrupt] = paused["__interrupt__"]
        [action] = interrupt.value["action_requests"]
        assert action["name"] == "post"  # read_page is inside the bound: not asked
        assert "(effects rule)" in action["description"]
        assert POSTED == []
        # the reviewer rejects: the call never runs
        agent.invoke(Command(resume={"decisions": [{"type": "reject"}]}), config)
    assert POSTED == []


def test_the_toolkits_own_conversation_is_one_per_thread(registry: toolplug.Registry) -> None:
    # no conversation opened: a thread that read the page asks about the post, and a
    # thread that read nothing untrusted posts unasked (nothing entered it)
    toolkit = ToolplugToolkit(registry, allow=["read_page"])
    agent = _agent(toolkit)
    paused = agent.invoke(_user("Summarize"), {"configurable": {"thread_id": "a"}})
    assert paused["__interrupt__"][0].value["name"] == "post"
    post = AIMessage("", tool_calls=[{"name": "post", "args": OWN_WORDS, "id": "c9"}])
    alone = create_agent(
        Model(messages=iter([post, AIMessage("done")])), toolkit.get_tools(),
        checkpointer=InMemorySaver(),
    )
    done = alone.invoke(_user("Post"), {"configurable": {"thread_id": "b"}})
    assert "__interrupt__" not in done
    assert [OWN_WORDS] == POSTED


def test_langgraph_async_run_is_bounded_too(registry: toolplug.Registry) -> None:
    agent = _agent(ToolplugToolkit(registry, allow=["read_page"]))

    async def main() -> Any:
        async with registry.conversation("Post the news", allow=["read_page", "post"]):
            return await agent.ainvoke(_user("Post"), {"configurable": {"thread_id": "x"}})

    paused = asyncio.run(main())
    assert paused["__interrupt__"][0].value["name"] == "post"
    assert POSTED == []


def test_a_malformed_allow_fails_when_the_toolkit_is_made(registry: toolplug.Registry) -> None:
    with pytest.raises(TypeError, match=r"allow\['post'\] is -1: give how many calls"):
        ToolplugToolkit(registry, allow={"post": -1})
    with pytest.raises(TypeError, match="give a list of tool names or categories"):
        ToolplugToolkit(registry, allow="post")
