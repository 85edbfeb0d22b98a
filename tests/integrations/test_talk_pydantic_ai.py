"""A tool that talks back through pydantic-ai: its question defers the call (the run ends
with ``DeferredToolRequests``), ``answers()`` resumes it with the user's answer, and it
samples the agent's own model. Real agent runs with ``FunctionModel``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolDenied,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolplug
from tests.helpers.talking import HEARD, load_talking
from tests.integrations.test_pydantic_ai import run, scripted
from toolplug import Answer
from toolplug.integrations.pydantic_ai import ToolplugToolset, answers


@pytest.fixture
def talking() -> Iterator[toolplug.Registry]:
    loaded = load_talking()
    yield loaded
    loaded.close()


def agent_of(registry: toolplug.Registry, *calls: tuple[str, dict[str, Any]]) -> Agent[None, Any]:
    respond, _ = scripted(*calls)
    return Agent(
        FunctionModel(respond), toolsets=[ToolplugToolset(registry)],
        output_type=[str, DeferredToolRequests],
    )


def test_a_question_defers_the_call_and_the_answer_resumes_the_tool(
    talking: toolplug.Registry,
) -> None:
    agent = agent_of(talking, ("greet", {}))
    paused = run(agent, "greet me")
    requests = paused.output
    assert isinstance(requests, DeferredToolRequests)
    [call] = requests.approvals
    asked = requests.metadata[call.tool_call_id]
    assert asked["type"] == "tool_question"
    assert asked["message"] == "What name shall I greet?"
    assert asked["schema"]["required"] == ["name"]
    assert HEARD.answers == []
    kept = ModelMessagesTypeAdapter.validate_json(paused.all_messages_json())  # kept as JSON
    given = {call.tool_call_id: Answer("accept", {"name": "Ada"})}
    resumed = run(agent, message_history=kept, deferred_tool_results=answers(requests, given))
    assert resumed.output == 'done: {"output":"hello Ada"}'
    assert HEARD.runs == ["greet", "greet"]  # run again from its start
    assert HEARD.answers == [Answer("accept", {"name": "Ada"})]


def test_a_declined_question_reaches_the_tool_and_a_refused_one_the_model(
    talking: toolplug.Registry,
) -> None:
    agent = agent_of(talking, ("greet", {}))
    paused = run(agent, "greet me")
    [call] = paused.output.approvals
    declined = run(
        agent, message_history=paused.all_messages(),
        deferred_tool_results=answers(paused.output, {call.tool_call_id: {"action": "decline"}}),
    )
    assert declined.output == 'done: {"output":"not greeted: the user chose decline"}'
    HEARD.clear()
    again = run(agent_of(talking, ("greet", {})), "greet me")
    [call] = again.output.approvals
    refused = run(
        agent, message_history=again.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={call.tool_call_id: ToolDenied("the user will not say")}
        ),
    )
    assert refused.output == "done: the user will not say"
    assert HEARD.answers == []  # a refusal never reaches the tool
    with pytest.raises(ValueError, match="not a tool's question"):
        answers(again.output, {"call-99": Answer("accept", {"name": "x"})})


def test_a_tool_samples_the_agent_s_own_model(talking: toolplug.Registry) -> None:
    sampled: list[list[ModelMessage]] = []
    respond, _ = scripted(("gist", {}))

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not info.function_tools:  # the tool's request: no tools offered
            sampled.append(messages)
            return ModelResponse(parts=[TextPart("tides come twice")])
        return respond(messages, info)

    agent = Agent(FunctionModel(model), toolsets=[ToolplugToolset(talking)])
    assert run(agent, "gist please").output == 'done: {"output":"gist: tides come twice"}'
    [request] = sampled
    [message] = request
    assert isinstance(message, ModelRequest)
    system, user = message.parts
    assert isinstance(system, SystemPromptPart)
    assert system.content == "One line."
    assert isinstance(user, UserPromptPart)
    assert user.content == ["Give the gist of: tides rise twice a day."]


def test_a_tool_that_asks_twice_pauses_twice_and_gets_both_answers_in_order(
    talking: toolplug.Registry,
) -> None:
    agent = agent_of(talking, ("twice", {}))
    paused = run(agent, "ask twice")
    [call] = paused.output.approvals
    assert paused.output.metadata[call.tool_call_id]["message"] == "First?"
    again = run(
        agent, message_history=paused.all_messages(),
        deferred_tool_results=answers(paused.output, {call.tool_call_id: Answer("accept")}),
    )
    assert again.output.metadata[call.tool_call_id]["message"] == "Second?"
    done = run(
        agent, message_history=again.all_messages(),
        deferred_tool_results=answers(again.output, {call.tool_call_id: Answer("decline")}),
    )
    assert done.output == 'done: {"output":"accept then decline"}'
