"""A tool that talks back through LangChain: its question is a LangGraph ``interrupt()``
answered with ``Command(resume=...)``, its progress goes to the run's ``custom`` stream, and
it samples the chat model given to the toolkit. Real ``create_agent`` runs with LangChain's
fake chat model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import toolplug
from tests.helpers.talking import HEARD, load_talking
from tests.integrations.langchain_llm.test_langchain import USER, scripted
from toolplug import Answer
from toolplug.integrations.langchain import ToolplugToolkit

GREET = AIMessage("", tool_calls=[{"name": "greet", "args": {}, "id": "call-g"}])
GIST = AIMessage("", tool_calls=[{"name": "gist", "args": {}, "id": "call-s"}])
CONFIG: Any = {"configurable": {"thread_id": "talk"}}


@pytest.fixture
def talking() -> Iterator[toolplug.Registry]:
    loaded = load_talking()
    yield loaded
    loaded.close()


def result_of(state: dict[str, Any]) -> str:
    [message] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    return str(message.content)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tool_s_question_pauses_the_graph_and_the_resume_value_answers_it(
    talking: toolplug.Registry, mode: str
) -> None:
    agent = create_agent(
        scripted(GREET, AIMessage("done")), ToolplugToolkit(talking).get_tools(),
        checkpointer=InMemorySaver(),
    )
    if mode == "async":
        paused = asyncio.run(agent.ainvoke(USER, CONFIG))
    else:
        paused = agent.invoke(USER, CONFIG)
    [interrupt] = paused["__interrupt__"]
    assert interrupt.value["type"] == "tool_question"
    assert interrupt.value["name"] == "greet"
    assert interrupt.value["tool_call_id"] == "call-g"
    assert interrupt.value["message"] == "What name shall I greet?"
    assert interrupt.value["schema"]["required"] == ["name"]
    assert HEARD.answers == []
    resume: Command[Any] = Command(resume={"action": "accept", "content": {"name": "Ada"}})
    if mode == "async":
        done = asyncio.run(agent.ainvoke(resume, CONFIG))
    else:
        done = agent.invoke(resume, CONFIG)
    assert "hello Ada" in result_of(done)
    assert HEARD.runs == ["greet", "greet"]  # run again from its start on resume
    assert HEARD.answers == [Answer("accept", {"name": "Ada"})]
    assert done["messages"][-1].content == "done"


def test_a_decline_reaches_the_tool_and_a_wrong_resume_value_is_named(
    talking: toolplug.Registry,
) -> None:
    agent = create_agent(
        scripted(GREET, AIMessage("done"), GREET, AIMessage("done")),
        ToolplugToolkit(talking).get_tools(), checkpointer=InMemorySaver(),
    )
    agent.invoke(USER, CONFIG)
    declined = agent.invoke(Command(resume={"action": "decline"}), CONFIG)
    assert "not greeted: the user chose decline" in result_of(declined)
    other: Any = {"configurable": {"thread_id": "other"}}
    agent.invoke(USER, other)
    wrong = agent.invoke(Command(resume="Ada"), other)
    assert "resume a tool_question interrupt with Command(resume=" in result_of(wrong)
    assert "ValidationError" in result_of(wrong)


def test_progress_goes_to_the_custom_stream_and_outside_a_graph_nobody_is_asked(
    talking: toolplug.Registry,
) -> None:
    agent = create_agent(
        scripted(GREET, AIMessage("done")), ToolplugToolkit(talking).get_tools(),
        checkpointer=InMemorySaver(),
    )
    custom = list(agent.stream(USER, CONFIG, stream_mode="custom"))
    assert {"type": "tool_progress", "tool_call_id": "call-g", "progress": 0.0,
            "total": 1.0, "message": "asking for a name"} in custom
    [greet] = [t for t in ToolplugToolkit(talking).get_tools() if t.name == "greet"]
    alone = str(greet.invoke({}))  # no graph: the tool's ask fails, and says what to do
    assert "UnavailableError" in alone
    assert "outside a LangGraph run" in alone


def test_a_tool_samples_the_chat_model_given_to_the_toolkit(
    talking: toolplug.Registry,
) -> None:
    writer = scripted(AIMessage("tides come twice"))
    agent = create_agent(
        scripted(GIST, AIMessage("done")),
        ToolplugToolkit(talking, model=writer).get_tools(),
    )
    done = agent.invoke(USER)
    assert "gist: tides come twice" in result_of(done)
    assert [type(m).__name__ for m in writer.seen[-1]] == ["SystemMessage", "HumanMessage"]
    unsampled = create_agent(
        scripted(GIST, AIMessage("done")), ToolplugToolkit(talking).get_tools()
    ).invoke(USER)
    assert "ToolplugToolkit(registry, model=...)" in result_of(unsampled)
