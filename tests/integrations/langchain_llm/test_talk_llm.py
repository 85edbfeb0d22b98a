"""A tool that talks back through llm: its question pauses the chain (``ToolQuestion``, an
``llm.PauseChain``) until the answer is in ``toolbox(answers=...)``, or an ``asker``
answers it while the tool waits; ``toolbox(model=...)`` samples. Real chains of llm's
echo model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import llm
import pytest

import toolplug
from tests.helpers.talking import HEARD, load_talking
from tests.integrations.langchain_llm.test_llm import calls, tool_results
from toolplug import Answer, Question
from toolplug.integrations.llm import ToolQuestion, toolbox


@pytest.fixture
def talking() -> Iterator[toolplug.Registry]:
    loaded = load_talking()
    yield loaded
    loaded.close()


def test_a_question_pauses_the_chain_and_the_resumed_chain_answers_it(
    talking: toolplug.Registry,
) -> None:
    model = llm.get_model("echo")
    answers: dict[str, Answer] = {}
    box = toolbox(talking, answers=answers)
    chain = model.chain(calls(("greet", {})), tools=[box])
    seen: list[Any] = []
    with pytest.raises(llm.PauseChain) as stop:  # crossed toolplug unchanged
        seen.extend(chain.responses())
    assert isinstance(stop.value, ToolQuestion)
    assert stop.value.question.message == "What name shall I greet?"
    assert stop.value.question.schema["required"] == ["name"]
    call = stop.value.tool_call
    assert call is not None
    assert call.tool_call_id is not None
    answers[call.tool_call_id] = Answer("accept", {"name": "Ada"})
    [paused] = seen
    resumed = model.chain(messages=[*paused.prompt.messages, *paused.messages()], tools=[box])
    [greet] = tool_results(resumed)
    assert greet["output"] == "hello Ada"
    assert HEARD.runs == ["greet", "greet"]  # run again from its start


def test_an_asker_answers_while_the_tool_waits_in_the_async_chain(
    talking: toolplug.Registry,
) -> None:
    asked: list[Question] = []

    async def asker(question: Question) -> Answer:
        asked.append(question)
        return Answer("decline")

    async def chained() -> Any:
        chain = llm.get_async_model("echo").chain(
            calls(("greet", {})), tools=[toolbox(talking, asker=asker)]
        )
        return [r async for r in chain.responses()][-1]

    last = asyncio.run(chained())
    [greet] = json.loads(asyncio.run(last.text()))["tool_results"]
    assert greet["output"] == "not greeted: the user chose decline"
    assert [q.tool for q in asked] == ["greet"]


def test_without_a_way_to_ask_the_call_says_what_to_give_and_the_model_samples(
    talking: toolplug.Registry,
) -> None:
    model = llm.get_model("echo")
    [greet] = tool_results(model.chain(calls(("greet", {})), tools=[toolbox(talking)]))
    assert "UnavailableError" in greet["output"]
    assert "toolbox(registry, asker=...)" in greet["output"]
    box = toolbox(talking, model=model)
    [gist] = tool_results(model.chain(calls(("gist", {})), tools=[box]))
    said = json.loads(gist["output"].removeprefix("gist: "))
    assert said["prompt"] == "Give the gist of: tides rise twice a day."
    assert said["system"] == "One line."


def test_at_the_terminal_each_field_of_the_form_is_prompted_for() -> None:
    from click.testing import CliRunner

    from toolplug.integrations.llm import _ask_question_at_the_terminal

    form = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Your name"},
            "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
            "copies": {"type": "integer"},
            "gift": {"type": "boolean", "default": False},
        },
        "required": ["name"],
    }
    question = Question("Who is it for?", form, "order")
    with CliRunner().isolation(input="y\nAda\nlarge\n3\ny\n") as (_out, err, *_):
        accepted = asyncio.run(_ask_question_at_the_terminal(question))
        shown = err.getvalue().decode()
    assert accepted == Answer("accept", {"name": "Ada", "size": "large", "copies": 3, "gift": True})
    assert "order asks: Who is it for?" in shown
    assert "Your name" in shown
    with CliRunner().isolation(input="n\n"):
        assert asyncio.run(_ask_question_at_the_terminal(question)) == Answer("decline")
