"""A plugin that publishes prompts and resources, for the integrations' helpers: a prompt
with an argument and a real PNG among its messages, a text resource, a bytes resource, a
template, and a prompt and a resource that need a capability nobody has."""

from __future__ import annotations

from tests.helpers.media import png
from toolplug import Capability, EnvVar, Image, Message, Registry, load, prompt, provides, resource

PICTURE = png(3, 2)
"""The real PNG the prompt shows and ``notes://chart.png`` holds."""


@prompt(description="Ask about a picture.", arguments={"subject": "What the picture shows"})
def describe(subject: str, tone: str = "plain") -> list[Message]:
    return [
        Message("user", f"Here is a chart of {subject}. Describe it in a {tone} tone."),
        Message("user", Image(PICTURE, "image/png")),
        Message("assistant", "I see the chart."),
        Message("user", "What stands out?"),
    ]


@prompt(description="Show a picture and ask about it.")
async def show(subject: str) -> list[Message]:
    return [Message("user", Image(PICTURE, "image/png")), Message("user", f"What is {subject}?")]


@prompt(description="Ask one question.")
def question(topic: str) -> str:
    return f"What is {topic}?"


@prompt(description="Needs the notes key.", requires=("notes_key",))
def locked() -> str:
    return "hidden"


@resource("notes://today", mime_type="text/plain")
def today() -> str:
    """Today's note."""
    return "Buy milk."


@resource("notes://chart.png", mime_type="image/png")
def chart() -> bytes:
    """The chart of March."""
    return PICTURE


@resource("notes://{day}/summary", mime_type="text/plain")
def summary(day: str) -> str:
    """The summary of a day."""
    return f"Nothing much happened on {day}."


@resource("notes://secret", requires=("notes_key",))
def secret() -> str:
    return "hidden"


class Notes:
    """The plugin."""

    register_prompts = provides(describe, question, show, locked)
    register_resources = provides(today, chart, summary, secret)
    register_capabilities = provides(
        Capability(name="notes_key", description="The notes key.",
                   detectors=(EnvVar("NOTES_KEY"),), setup="export NOTES_KEY=...")
    )


def load_notes() -> Registry:
    """A registry of the plugin alone."""
    return load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("notes", Notes)])
