"""Tools that talk back, for the integration tests: ``greet`` asks its user a name,
``gist`` asks the host's model, ``twice`` asks two questions; the first two record what
they saw in ``HEARD``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import toolplug
from toolplug import Answer, Tool, ToolContext, ToolMetadata, ToolResult, hookimpl

NAME_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Your name", "minLength": 1}},
    "required": ["name"],
}
NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}


@dataclass
class Heard:
    """What the talking tools saw: each run's start, each answer, each completion."""

    runs: list[str] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    sampled: list[str] = field(default_factory=list)

    def clear(self) -> None:
        self.runs.clear()
        self.answers.clear()
        self.sampled.clear()


HEARD = Heard()


class Greet(Tool):
    metadata = ToolMetadata(
        name="greet", description="Greets the user by the name they give when asked.",
        category="utility", parameters=NO_ARGUMENTS,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        HEARD.runs.append("greet")
        context.report_progress(0, 1, "asking for a name")
        context.log("info", "greet asks for a name")
        answer = await context.ask("What name shall I greet?", NAME_FORM)
        HEARD.answers.append(answer)
        if not answer.accepted:
            return ToolResult.success(f"not greeted: the user chose {answer.action}")
        return ToolResult.success(f"hello {answer.content['name']}")


class Gist(Tool):
    metadata = ToolMetadata(
        name="gist", description="Asks the host's model for the gist of a text.",
        category="utility", parameters=NO_ARGUMENTS,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        HEARD.runs.append("gist")
        done = await context.sample(
            "Give the gist of: tides rise twice a day.", system="One line.", max_tokens=50
        )
        HEARD.sampled.append(done.text)
        return ToolResult.success(f"gist: {done.text}")


class Twice(Tool):
    metadata = ToolMetadata(
        name="twice", description="Asks two yes-or-no questions.", category="utility",
        parameters=NO_ARGUMENTS,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        first = await context.ask("First?", None)
        second = await context.ask("Second?", None)
        return ToolResult.success(f"{first.action} then {second.action}")


class Talking:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Greet)
        register(Gist)
        register(Twice)


def load_talking() -> toolplug.Registry:
    """A registry of exactly ``greet`` and ``gist``; ``HEARD`` emptied."""
    HEARD.clear()
    return toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("talking", Talking())])
