"""toolplug.integrations.pydantic_ai's prompts and resources: a plugin's prompt as the user
prompt or the message history of a real ``Agent`` run, its resources as text and
``BinaryContent``, read by pydantic-ai's ``FunctionModel``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, cast

import pytest
from pydantic_ai import (
    Agent,
    BinaryContent,
    FilePart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.helpers.published import PICTURE, load_notes
from toolplug import PublishedError, Registry
from toolplug.integrations.pydantic_ai import (
    aprompt_content,
    aprompt_messages,
    aresource_content,
    prompt_content,
    prompt_messages,
    resource_content,
)


@pytest.fixture
def notes() -> Iterator[Registry]:
    registry = load_notes()
    yield registry
    registry.close()


def run(agent: Agent[None, str], *args: Any, **options: Any) -> Any:
    """``agent.run`` on a loop of its own, closed after (``run_sync`` leaves its loop open)."""
    return asyncio.run(agent.run(*args, **options))


class Reader:
    """A ``FunctionModel`` that keeps the messages it was sent and answers "seen"."""

    def __init__(self) -> None:
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        return ModelResponse(parts=[TextPart("seen")])


def test_a_prompt_is_the_user_prompt_of_a_run(notes: Registry) -> None:
    reader = Reader()
    agent = Agent(FunctionModel(reader))
    result = run(agent, prompt_content(notes, "show", {"subject": "this chart"}))
    assert result.output == "seen"
    (sent,) = reader.seen
    (request,) = sent
    assert isinstance(request, ModelRequest)
    (part,) = [p for p in request.parts if isinstance(p, UserPromptPart)]
    picture, words = cast("list[Any]", part.content)
    assert isinstance(picture, BinaryContent)
    assert picture.is_image
    assert (picture.data, picture.media_type) == (PICTURE, "image/png")
    assert words == "What is this chart?"


def test_a_prompt_with_replies_is_a_message_history(notes: Registry) -> None:
    reader = Reader()
    agent = Agent(FunctionModel(reader))
    history = prompt_messages(notes, "describe", {"subject": "sales"})
    assert [type(m) for m in history] == [ModelRequest, ModelResponse, ModelRequest]
    run(agent, message_history=history)
    (sent,) = reader.seen
    first, reply, last = sent
    assert isinstance(first, ModelRequest)
    text, picture = [p.content for p in first.parts if isinstance(p, UserPromptPart)]
    assert text == "Here is a chart of sales. Describe it in a plain tone."
    assert isinstance(picture[0], BinaryContent)
    assert picture[0].data == PICTURE
    assert isinstance(reply, ModelResponse)
    assert reply.parts == [TextPart("I see the chart.")]
    assert [p.content for p in last.parts if isinstance(p, UserPromptPart)] == ["What stands out?"]


def test_an_assistant_message_is_no_user_prompt(notes: Registry) -> None:
    with pytest.raises(ValueError, match=r"'describe' has 1 assistant message.*prompt_messages"):
        prompt_content(notes, "describe", {"subject": "sales"})


def test_an_assistant_picture_is_a_file_part() -> None:
    import toolplug
    from toolplug import Image, Message, prompt, provides

    @prompt(description="A picture the model drew.")
    def drawn() -> list[Message]:
        return [Message("user", "Draw."), Message("assistant", Image(PICTURE, "image/png"))]

    class Drawing:
        register_prompts = provides(drawn)

    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("drawing", Drawing)])
    try:
        _, reply = prompt_messages(registry, "drawn")
        (part,) = reply.parts
        assert isinstance(part, FilePart)
        assert part.content.data == PICTURE
    finally:
        registry.close()


def test_resources_are_text_and_binary_content_in_a_prompt(notes: Registry) -> None:
    reader = Reader()
    agent = Agent(FunctionModel(reader))
    chart = resource_content(notes, "notes://chart.png")
    assert isinstance(chart, BinaryContent)
    assert (chart.data, chart.media_type, chart.identifier) == (
        PICTURE, "image/png", "notes://chart.png"
    )
    today = resource_content(notes, "notes://today")
    run(agent, ["Read these.", today, chart])
    (part,) = [p for p in reader.seen[0][0].parts if isinstance(p, UserPromptPart)]
    assert part.content[1] == "Buy milk."
    assert part.content[2] == chart
    assert resource_content(notes, "notes://friday/summary") == "Nothing much happened on friday."


def test_the_async_forms_give_the_same(notes: Registry) -> None:
    async def all_three() -> tuple[Any, Any, Any]:
        return (
            await aprompt_content(notes, "show", {"subject": "x"}),
            await aprompt_messages(notes, "question", {"topic": "y"}),
            await aresource_content(notes, "notes://chart.png"),
        )

    content, history, chart = asyncio.run(all_three())
    assert content == prompt_content(notes, "show", {"subject": "x"})
    assert history[0].parts[0].content == "What is y?"
    assert isinstance(chart, BinaryContent)
    assert chart.data == PICTURE


def test_what_is_not_offered_says_why(notes: Registry) -> None:
    with pytest.raises(PublishedError) as caught:
        resource_content(notes, "notes://secret")
    assert (caught.value.kind, caught.value.uri) == ("unavailable", "notes://secret")
    with pytest.raises(PublishedError) as unknown:
        prompt_content(notes, "nope")
    assert unknown.value.kind == "unknown_prompt"
