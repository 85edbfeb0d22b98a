"""Small tools whose runs can be watched, for the framework integration tests
(tests/integrations/): each framework's own test model drives them through toolplug."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolplug import (
    Annotations,
    Guidelines,
    Tool,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
    hookimpl,
)

NOTE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "topic": {"type": "string", "minLength": 1, "description": "What to look up."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2},
        "tags": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Free-form labels (a map: kept as it is, not rewritten).",
        },
    },
    "required": ["topic"],
    "additionalProperties": False,
}
NOTES = {"tides": ["High tide at 06:10.", "Low tide at 12:25.", "High tide at 18:40."]}


@dataclass
class Watch:
    """What the tools saw: each run, each cancellation, and an event per start."""

    runs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    started: asyncio.Event | None = None


WATCH = Watch()


class Notes(Tool):
    metadata = ToolMetadata(
        name="notes",
        description="Look up short notes about a topic.",
        category="reference",
        optionality="optional",
        usage_hint="Use when the user asks about tides.",
        guidelines=Guidelines(
            do=("Use when the question is about tides.",),
            do_not=("Do not use for weather.",),
        ),
        parameters=NOTE_PARAMETERS,
        annotations=Annotations(read_only=True, destructive=False, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        WATCH.runs.append(("notes", arguments))
        found = NOTES.get(arguments["topic"])
        if found is None:
            raise ToolFailure(
                "NotFoundError",
                f"no notes about {arguments['topic']!r}; known topics: {', '.join(NOTES)}",
            )
        shown = found[: arguments["limit"]]
        return ToolResult.success(
            "\n".join(shown),
            {"topic": arguments["topic"], "notes": shown},
            warnings=[f"{len(found) - len(shown)} more; call notes again with a higher limit"],
        )


class Erase(Tool):
    metadata = ToolMetadata(
        name="erase",
        description="Erase a named note for good.",
        category="utility",
        optionality="optional",
        parameters={
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
        annotations=Annotations(read_only=False, destructive=True, open_world=False),
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        WATCH.runs.append(("erase", arguments))
        return ToolResult.success(f"erased {arguments['name']}", {"erased": arguments["name"]})


class Send(Tool):
    """Changes something elsewhere, except with GET: its annotations depend on the call."""

    metadata = ToolMetadata(
        name="send",
        description="Send a request to the team's board.",
        category="publish",
        parameters={
            "type": "object",
            "properties": {"method": {"enum": ["GET", "POST"]}, "body": {"type": "string"}},
            "required": ["method"],
        },
        annotations=Annotations(read_only=False, destructive=False, open_world=True),
    )

    @classmethod
    def annotations_for(cls, arguments: Mapping[str, Any]) -> Annotations:
        if arguments.get("method") == "GET":
            return Annotations(read_only=True, destructive=False, open_world=True)
        return cls.metadata.annotations

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        WATCH.runs.append(("send", arguments))
        return ToolResult.success(f"{arguments['method']} done")


class Wait(Tool):
    metadata = ToolMetadata(
        name="wait",
        description="Wait until told to stop.",
        category="utility",
        annotations=Annotations(read_only=True, destructive=False, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        WATCH.runs.append(("wait", arguments))
        assert WATCH.started is not None
        WATCH.started.set()
        try:
            await asyncio.Event().wait()  # only a cancellation ends this
        except asyncio.CancelledError:
            WATCH.cancelled.append("wait")
            raise
        return ToolResult.success("never")


class TestTools:
    """The plugin that registers the tools above."""

    @hookimpl
    def register_tools(self, register: Any) -> None:
        for tool in (Notes, Erase, Send, Wait):
            register(tool)
