"""toolplug.integrations.langchain's prompts and resources: a plugin's prompt as the messages
of a real ``create_agent`` run with LangChain's fake chat model, its resources as ``Blob`` s."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any, cast

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate

from tests.helpers.published import PICTURE, load_notes
from toolplug import PublishedError, Registry
from toolplug.integrations.langchain import (
    aload_prompt,
    aload_resources,
    load_prompt,
    load_resources,
)


class Watching(GenericFakeChatModel):
    """LangChain's fake chat model, keeping every list of messages it is given."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - one model per test

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


@pytest.fixture
def notes() -> Iterator[Registry]:
    registry = load_notes()
    yield registry
    registry.close()


def test_a_prompt_is_the_messages_an_agent_run_starts_with(notes: Registry) -> None:
    model = Watching(messages=iter([AIMessage("A red chart.")]))
    model.seen.clear()
    agent = create_agent(model, [])
    messages = load_prompt(notes, "describe", {"subject": "sales", "tone": "dry"})
    state: dict[str, Any] = agent.invoke({"messages": messages})  # type: ignore[call-overload]
    assert state["messages"][-1].content == "A red chart."
    (given,) = model.seen
    assert [type(m) for m in given] == [HumanMessage, HumanMessage, AIMessage, HumanMessage]
    assert given[0].content == "Here is a chart of sales. Describe it in a dry tone."
    (block,) = cast("list[dict[str, Any]]", given[1].content)
    assert block["type"] == "image"
    assert block["mime_type"] == "image/png"
    assert base64.b64decode(block["base64"]) == PICTURE
    assert given[2].content == "I see the chart."


def test_the_messages_make_a_chat_prompt_template(notes: Registry) -> None:
    template = ChatPromptTemplate.from_messages(
        [*load_prompt(notes, "question", {"topic": "a tide"}), ("human", "In {words} words.")]
    )
    value = template.invoke({"words": "ten"})
    assert [m.content for m in value.to_messages()] == ["What is a tide?", "In ten words."]


def test_the_async_form_renders_the_same(notes: Registry) -> None:
    sync = load_prompt(notes, "describe", {"subject": "sales"})
    assert asyncio.run(aload_prompt(notes, "describe", {"subject": "sales"})) == sync


def test_a_missing_argument_is_named(notes: Registry) -> None:
    with pytest.raises(PublishedError) as caught:
        load_prompt(notes, "describe")
    assert (caught.value.kind, caught.value.argument) == ("missing_argument", "subject")


def test_resources_are_blobs_of_text_and_bytes(notes: Registry) -> None:
    chart, today = load_resources(notes)  # every resource offered, by URI
    assert (chart.metadata["uri"], chart.mimetype, chart.as_bytes()) == (
        "notes://chart.png", "image/png", PICTURE
    )
    assert (today.metadata["uri"], today.mimetype, today.as_string()) == (
        "notes://today", "text/plain", "Buy milk."
    )
    (summary,) = load_resources(notes, ["notes://monday/summary"])  # a template's URI
    assert summary.as_string() == "Nothing much happened on monday."
    blobs = asyncio.run(aload_resources(notes, ["notes://chart.png"]))
    assert blobs[0].as_bytes() == PICTURE


def test_a_resource_that_is_not_offered_says_why(notes: Registry) -> None:
    with pytest.raises(PublishedError) as caught:
        load_resources(notes, ["notes://secret"])
    assert (caught.value.kind, caught.value.uri) == ("unavailable", "notes://secret")
    assert "notes_key" in str(caught.value)


def test_a_recording_and_an_embedded_note_are_blocks_of_their_kind() -> None:
    import toolplug
    from tests.helpers.media import wav
    from toolplug import Audio, EmbeddedResource, Message, ResourceLink, prompt, provides

    sound = wav()

    @prompt(description="Listen, read, follow.")
    def mixed() -> list[Message]:
        return [
            Message("user", Audio(sound, "audio/wav")),
            Message("user", EmbeddedResource("notes://today", text="Buy milk.")),
            Message("user", ResourceLink("notes://elsewhere", name="elsewhere")),
        ]

    class Mixed:
        register_prompts = provides(mixed)

    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("mixed", Mixed)])
    try:
        audio, note, link = (m.content[0] for m in load_prompt(registry, "mixed"))
    finally:
        registry.close()
    assert isinstance(audio, dict)
    assert (audio["type"], audio["mime_type"]) == ("audio", "audio/wav")
    assert base64.b64decode(audio["base64"]) == sound
    assert note == {"type": "text", "text": "Buy milk."}
    assert isinstance(link, dict)
    assert link["type"] == "text"
    assert "notes://elsewhere" in link["text"]
