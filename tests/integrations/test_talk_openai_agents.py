"""A tool that talks back through the OpenAI Agents SDK: the host's ``Channel`` rides in
the run's context and answers while the tool waits. Real runs with the SDK's
``ScriptedModel``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from agents import Runner

import toolplug
from tests.helpers.talking import HEARD, load_talking
from tests.integrations.test_openai_agents import NO_TRACES, agent_with, call, outputs
from toolplug import Answer, Channel, Question, Sampled, SamplingRequest


@pytest.fixture
def talking() -> Iterator[toolplug.Registry]:
    loaded = load_talking()
    yield loaded
    loaded.close()


class Desk(Channel):
    """A host that answers as its user would, and samples its own model."""

    can_ask = True
    can_sample = True

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[Question] = []
        self.progress_seen: list[tuple[float, float | None, str | None]] = []

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        self.progress_seen.append((done, total, message))

    async def ask(self, question: Question) -> Answer:
        self.asked.append(question)
        return self.answer

    async def sample(self, request: SamplingRequest) -> Sampled:
        return Sampled(f"{len(request.messages)} message, system {request.system!r}", "desk")


@dataclass
class AppContext:
    user: str
    toolplug_channel: Channel = field(default_factory=Channel)


def run_with(agent: Any, context: Any) -> Any:
    return asyncio.run(Runner.run(agent, "greet me", context=context, run_config=NO_TRACES))


@pytest.mark.parametrize(
    ("answer", "said"),
    [(Answer("accept", {"name": "Ada"}), "hello Ada"),
     (Answer("decline"), "not greeted: the user chose decline")],
)
def test_the_run_s_context_channel_answers_the_tool(
    talking: toolplug.Registry, answer: Answer, said: str
) -> None:
    desk = Desk(answer)
    agent, model = agent_with(talking, call("greet", {}))
    result = run_with(agent, desk)
    assert said in outputs(model)["call-1"]
    assert result.final_output == "done"
    [question] = desk.asked
    assert (question.tool, question.message) == ("greet", "What name shall I greet?")
    assert desk.progress_seen == [(0.0, 1.0, "asking for a name")]
    assert HEARD.runs == ["greet"]  # asked while it ran: once


def test_a_context_of_the_host_s_own_carries_the_channel_and_samples(
    talking: toolplug.Registry,
) -> None:
    agent, model = agent_with(talking, call("gist", {}))
    run_with(agent, AppContext("ada", Desk(Answer("cancel"))))
    assert "gist: 1 message, system 'One line.'" in outputs(model)["call-1"]


def test_without_a_channel_the_model_reads_what_the_host_should_do(
    talking: toolplug.Registry,
) -> None:
    agent, model = agent_with(talking, call("greet", {}))
    run_with(agent, None)
    said = outputs(model)["call-1"]
    assert "UnavailableError" in said
    assert "context=channel" in said
    assert HEARD.answers == []
