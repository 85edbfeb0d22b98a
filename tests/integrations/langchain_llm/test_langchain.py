"""toolplug.integrations.langchain: real agent runs of LangChain's ``create_agent`` (a LangGraph
graph) with LangChain's own fake chat model, through the toolkit.

What the model is offered (names, schemas, the section in the system message), what it
reads back (text, data as the artifact, errors it can act on), approvals through LangGraph's
``interrupt()`` and through ``HumanInTheLoopMiddleware`` (one gate), and cancellation.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any, cast

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import toolplug
from tests.helpers.agent_tools import NOTE_PARAMETERS, TestTools, Watch
from tests.helpers.integrations import Chart
from toolplug import Approval, ApprovalRequest, optional_tools_section
from toolplug.integrations.langchain import ToolplugToolkit, system_prompt

ASK_NOTES = AIMessage(
    "", tool_calls=[{"name": "notes", "args": {"topic": "tides"}, "id": "call-1"}]
)
ASK_ERASE = AIMessage("", tool_calls=[{"name": "erase", "args": {"name": "old"}, "id": "call-2"}])
DONE = AIMessage("done")


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, accepting tools as a tool-calling model does.

    ``GenericFakeChatModel`` answers with the scripted messages but does not implement
    ``bind_tools``; this records what a provider would be sent (LangChain's own conversion
    to an OpenAI tool) and every list of messages the model is given.
    """

    bound: list[dict[str, Any]] = []  # noqa: RUF012 - pydantic copies the default per model
    seen: list[list[BaseMessage]] = []  # noqa: RUF012

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self.bound[:] = [convert_to_openai_tool(t) for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def scripted(*turns: AIMessage) -> ScriptedModel:
    return ScriptedModel(messages=iter(turns))


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def run(agent: Any, request: Any, config: dict[str, Any] | None, mode: str) -> dict[str, Any]:
    """One agent run, through LangGraph's sync or async path."""
    if mode == "async":
        result: dict[str, Any] = asyncio.run(agent.ainvoke(request, config))
    else:
        result = agent.invoke(request, config)
    return result


USER: Any = {"messages": [{"role": "user", "content": "What are the tides today?"}]}


def test_the_model_is_offered_every_tool_with_its_schema_intact(
    registry: toolplug.Registry,
) -> None:
    model = scripted(DONE)
    toolkit = ToolplugToolkit(registry)
    create_agent(model, toolkit.get_tools()).invoke(USER)
    offered = {t["function"]["name"]: t["function"] for t in model.bound}
    assert sorted(offered) == ["erase", "notes", "send", "wait"]
    assert offered["notes"]["parameters"] == NOTE_PARAMETERS  # the map stays a map
    assert offered["notes"]["description"] == (
        "Look up short notes about a topic.\n\nUse when the user asks about tides."
    )
    assert all(isinstance(t, BaseTool) for t in toolkit.get_tools())


def test_the_selection_options_choose_the_tools(registry: toolplug.Registry) -> None:
    toolkit = ToolplugToolkit(registry, task="look up tides", max_tools=1)
    assert [t.name for t in toolkit.get_tools()] == ["notes"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_gives_the_model_its_text_and_the_host_its_data(
    registry: toolplug.Registry, watch: Watch, mode: str
) -> None:
    model = scripted(ASK_NOTES, DONE)
    agent = create_agent(model, ToolplugToolkit(registry).get_tools())
    state = run(agent, USER, None, mode)
    [message] = tool_messages(state)
    assert message.status == "success"
    assert message.content == (
        "High tide at 06:10.\nLow tide at 12:25.\n\n"
        "Warning: 1 more; call notes again with a higher limit"
    )
    assert message.artifact == {
        "topic": "tides", "notes": ["High tide at 06:10.", "Low tide at 12:25."]
    }
    assert watch.runs == [("notes", {"topic": "tides", "limit": 2})]  # defaults filled
    assert model.seen[-1][-1] == message  # the model read it on its next turn
    assert state["messages"][-1].content == "done"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tool_error_is_a_message_the_model_acts_on(
    registry: toolplug.Registry, mode: str
) -> None:
    wrong = AIMessage(
        "",
        tool_calls=[
            {"name": "notes", "args": {"topic": "moon"}, "id": "c1"},  # the tool's error
            {"name": "notes", "args": {"topic": ""}, "id": "c2"},  # the schema's error
        ],
    )
    model = scripted(wrong, ASK_NOTES, DONE)
    agent = create_agent(model, ToolplugToolkit(registry).get_tools())
    state = run(agent, USER, None, mode)
    missing, invalid, found = tool_messages(state)
    assert missing.status == invalid.status == "error"
    assert missing.content == (
        '{"error": true, "error_type": "NotFoundError", "error_message": "no notes about '
        "'moon'; known topics: tides\", \"retry_possible\": false}"
    )
    assert '"error_type": "ValidationError"' in str(invalid.content)
    assert "topic" in str(invalid.content)
    assert found.status == "success"  # the model went on, and its next call worked
    assert state["messages"][-1].content == "done"


def test_the_section_is_the_system_message(registry: toolplug.Registry) -> None:
    model = scripted(DONE)
    toolkit = ToolplugToolkit(registry)
    create_agent(model, toolkit.get_tools(), system_prompt=toolkit.system_prompt()).invoke(USER)
    first = model.seen[0][0]
    assert isinstance(first, SystemMessage)
    assert first.content == optional_tools_section(registry)
    assert "### notes" in first.content
    assert "**Needs approval:**" in first.content  # erase says that a person is asked
    assert system_prompt(registry, task="tides", max_tools=1) == optional_tools_section(
        registry, task="tides", max_tools=1
    )


# -- approvals -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "case",
    [
        # the person approves: the call runs once, nobody is asked again
        ({"type": "approve"}, [("erase", {"name": "old"})], "erased old"),
        # the person rejects, with a reason the model reads
        ({"type": "reject", "message": "keep it"}, [], "denied by the person approving it"),
        # plain booleans answer too
        (False, [], "denied by the person approving it"),
    ],
)
def test_interrupt_pauses_the_run_for_a_person(
    registry: toolplug.Registry, watch: Watch, mode: str, case: tuple[Any, list[Any], str]
) -> None:
    answer, ran, reply = case
    model = scripted(ASK_ERASE, DONE)
    agent = create_agent(
        model, ToolplugToolkit(registry).get_tools(), checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t1"}}
    paused = run(agent, USER, config, mode)
    [interrupt] = paused["__interrupt__"]  # GraphInterrupt crossed toolplug unchanged
    assert interrupt.value["type"] == "tool_approval"
    assert interrupt.value["name"] == "erase"
    assert interrupt.value["tool_call_id"] == "call-2"
    assert interrupt.value["args"] == {"name": "old"}
    assert "annotated destructive" in interrupt.value["description"]
    assert watch.runs == []  # nothing ran before the person answered
    done = run(agent, Command(resume=answer), config, mode)
    assert watch.runs == ran
    [message] = tool_messages(done)
    assert reply in str(message.content)
    assert "__interrupt__" not in done  # asked once, not twice
    assert done["messages"][-1].content == "done"


def test_a_resume_value_that_is_no_answer_fails_the_call_not_the_run(
    registry: toolplug.Registry, watch: Watch
) -> None:
    agent = create_agent(
        scripted(ASK_ERASE, DONE), ToolplugToolkit(registry).get_tools(),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    run(agent, USER, config, "sync")
    done = run(agent, Command(resume="sure"), config, "sync")
    [message] = tool_messages(done)
    assert "resume the approval interrupt with {'type': 'approve'}" in str(message.content)
    assert watch.runs == []


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("decision", "ran"),
    [
        # approved in the middleware: toolplug runs the call without asking again
        ({"type": "approve"}, [("erase", {"name": "old"})]),
        # edited, then run with the reviewer's arguments (still one gate)
        (
            {"type": "edit", "edited_action": {"name": "erase", "args": {"name": "older"}}},
            [("erase", {"name": "older"})],
        ),
        # rejected in the middleware: the tool never runs
        ({"type": "reject", "message": "no"}, []),
    ],
)
def test_human_in_the_loop_middleware_is_the_one_gate(
    registry: toolplug.Registry, watch: Watch, mode: str, decision: Any, ran: list[Any]
) -> None:
    toolkit = ToolplugToolkit(registry)
    interrupt_on = toolkit.interrupt_on()
    assert sorted(interrupt_on) == ["erase", "send"]  # notes and wait are read-only
    agent = create_agent(
        scripted(ASK_NOTES.model_copy(update={"tool_calls": [*ASK_NOTES.tool_calls,
                                                             *ASK_ERASE.tool_calls]}), DONE),
        toolkit.get_tools(),
        middleware=[HumanInTheLoopMiddleware(interrupt_on=interrupt_on)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    paused = run(agent, USER, config, mode)
    [interrupt] = paused["__interrupt__"]
    [action] = interrupt.value["action_requests"]  # notes needs no approval: not asked
    assert action["name"] == "erase"
    assert action["description"] == (
        "erase needs approval because it may destroy or overwrite data (annotated destructive)"
    )
    done = run(agent, Command(resume={"decisions": [decision]}), config, mode)
    assert "__interrupt__" not in done  # toolplug did not ask a second time
    assert [r for r in watch.runs if r[0] == "erase"] == ran
    assert done["messages"][-1].content == "done"


def test_the_middleware_asking_per_call_is_the_one_gate_too(
    registry: toolplug.Registry, watch: Watch
) -> None:
    toolkit = ToolplugToolkit(registry)
    agent = create_agent(
        scripted(ASK_ERASE, DONE),
        toolkit.get_tools(),
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on=toolkit.interrupt_on(), interrupt_mode="per_call")
        ],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    [interrupt] = agent.invoke(USER, config)["__interrupt__"]
    assert interrupt.value["type"] == "tool_approval"
    assert interrupt.value["tool_call_id"] == "call-2"
    done = agent.invoke(Command(resume={interrupt.id: {"type": "approve"}}), config)
    assert "__interrupt__" not in done
    assert watch.runs == [("erase", {"name": "old"})]


@pytest.mark.parametrize("middleware", [False, True])
def test_approval_is_decided_per_call(
    registry: toolplug.Registry, watch: Watch, middleware: bool
) -> None:
    toolkit = ToolplugToolkit(registry)
    both = AIMessage(
        "",
        tool_calls=[
            {"name": "send", "args": {"method": "GET"}, "id": "get"},  # read-only: unasked
            {"name": "send", "args": {"method": "POST", "body": "hi"}, "id": "post"},
        ],
    )
    agent = create_agent(
        scripted(both, DONE),
        toolkit.get_tools(),
        middleware=[HumanInTheLoopMiddleware(interrupt_on=toolkit.interrupt_on())]
        if middleware else [],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    interrupts = agent.invoke(USER, config)["__interrupt__"]
    if middleware:
        [interrupt] = interrupts
        assert [a["args"] for a in interrupt.value["action_requests"]] == [
            {"method": "POST", "body": "hi"}
        ]
        answer: Any = {"decisions": [{"type": "approve"}]}
    else:
        [interrupt] = interrupts
        assert interrupt.value["tool_call_id"] == "post"
        answer = {"type": "approve"}
    done = agent.invoke(Command(resume=answer), config)
    assert "__interrupt__" not in done
    assert sorted(args["method"] for _, args in watch.runs) == ["GET", "POST"]


def test_outside_a_graph_the_registry_approvers_decide(watch: Watch) -> None:
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval.approve()

    loaded = toolplug.load(
        {}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("tools", TestTools())], approver=approver
    )
    try:
        [erase] = [t for t in ToolplugToolkit(loaded).get_tools() if t.name == "erase"]
        message = erase.invoke(
            {"type": "tool_call", "name": "erase", "args": {"name": "x"}, "id": "c9"}
        )
    finally:
        loaded.close()
    assert message.content == "erased x"
    assert [r.call_id for r in asked] == ["c9"]


def test_with_nobody_to_ask_the_model_reads_why(registry: toolplug.Registry) -> None:
    [erase] = [t for t in ToolplugToolkit(registry).get_tools() if t.name == "erase"]
    message = erase.invoke({"type": "tool_call", "name": "erase", "args": {"name": "x"}, "id": "c"})
    assert message.status == "error"
    assert '"error_type": "ApprovalRequiredError"' in message.content


# -- cancellation --------------------------------------------------------------------


def test_cancelling_the_run_stops_the_tool(registry: toolplug.Registry, watch: Watch) -> None:
    agent = create_agent(
        scripted(AIMessage("", tool_calls=[{"name": "wait", "args": {}, "id": "w"}]), DONE),
        ToolplugToolkit(registry).get_tools(),
    )

    async def main() -> None:
        watch.started = asyncio.Event()
        task = asyncio.create_task(agent.ainvoke(USER))
        await asyncio.wait_for(watch.started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert watch.cancelled == ["wait"]


# -- installing ----------------------------------------------------------------------


def test_without_langchain_the_import_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "toolplug.integrations.langchain")
    monkeypatch.setitem(sys.modules, "langchain_core.tools", None)  # as if not installed
    with pytest.raises(ImportError, match=r'pip install "toolplug\[langchain\]"'):
        importlib.import_module("toolplug.integrations.langchain")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_result_s_parts_reach_the_model_as_standard_content_blocks(
    chart: Chart, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    ask = AIMessage("", tool_calls=[{"name": "chart", "args": {}, "id": "call-9"}])
    model = scripted(ask, DONE)
    model.seen.clear()
    agent = create_agent(model, ToolplugToolkit(chart.registry).get_tools())
    with caplog.at_level(logging.WARNING, logger="toolplug.integrations"):
        state = run(agent, USER, None, mode)
    assert state["messages"][-1].content == "done"
    # what the model was given on its next turn: the tool message and its blocks
    [message] = [m for m in model.seen[1] if isinstance(m, ToolMessage)]
    assert message.artifact == {"month": "March"}  # the data stays the artifact
    blocks = message.content
    assert isinstance(blocks, list)
    text, picture, recording, report, more, link = (cast(dict[str, Any], b) for b in blocks)
    assert text == {"type": "text", "text": "The chart of March."}
    assert picture["type"] == "image"
    assert picture["mime_type"] == "image/png"
    assert base64.b64decode(picture["base64"]) == chart.png
    assert report["type"] == "file"
    assert (report["mime_type"], report["filename"]) == ("application/pdf", "march.pdf")
    assert base64.b64decode(report["base64"]) == chart.pdf
    assert more == {"type": "text", "text": "Sales rose 4%."}
    assert link["text"] == "[resource: march.csv at file:///reports/march.csv, text/csv]"
    # a tool message takes no audio block: the model reads what it was, the host is told
    assert recording == {"type": "text", "text": "[audio: audio/wav, 1.6 KB]"}
    [warned] = caplog.records
    assert "LangChain cannot carry the audio part 1" in warned.getMessage()
