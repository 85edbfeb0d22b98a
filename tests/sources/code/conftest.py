"""Test tools for code mode, registered from code, and a registry with run_code on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolplug
from toolplug import Annotations, Tool, ToolContext, ToolMetadata, ToolResult, hookimpl


class Journal:
    """What the test tools saw: calls started, finished, cancelled."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[str] = []
        self.cancelled: list[str] = []
        self.gate: asyncio.Event | None = None
        self.all_started: asyncio.Event | None = None
        self.expected = 0


JOURNAL = Journal()


class Echo(Tool):
    metadata = ToolMetadata(
        name="echo",
        description="Repeat the text.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1}},
            "required": ["text"],
            "additionalProperties": False,
        },
        returns={"type": "object", "properties": {"text": {"type": "string"}}},
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        JOURNAL.started.append(arguments["text"])
        return ToolResult.success(arguments["text"], {"text": arguments["text"]})


class Wait(Tool):
    """Waits until ``expected`` calls have started (proves they run at once), then for the
    gate, if one is set (a call in flight that a test cancels)."""

    metadata = ToolMetadata(
        name="wait",
        description="Wait for the others.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {"label": {"type": "string"}},
            "required": ["label"],
        },
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        timeout_seconds=20,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        label = arguments["label"]
        JOURNAL.started.append(label)
        try:
            if JOURNAL.all_started is not None:
                if len(JOURNAL.started) >= JOURNAL.expected:
                    JOURNAL.all_started.set()
                await asyncio.wait_for(JOURNAL.all_started.wait(), 10)
            if JOURNAL.gate is not None:
                await JOURNAL.gate.wait()
        except asyncio.CancelledError:
            JOURNAL.cancelled.append(label)
            raise
        JOURNAL.finished.append(label)
        return ToolResult.success(label, {"label": label})


class Erase(Tool):
    metadata = ToolMetadata(
        name="erase",
        description="Erase a record.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {"record": {"type": "integer"}},
            "required": ["record"],
        },
        annotations=Annotations(destructive=True, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        JOURNAL.finished.append(f"erased {arguments['record']}")
        return ToolResult.success(f"erased {arguments['record']}", {"erased": arguments["record"]})


class TestTools:
    @hookimpl
    def register_tools(self, register: Callable[[type[Tool]], None]) -> None:
        for tool in (Echo, Wait, Erase):
            register(tool)


@pytest.fixture
def journal() -> Journal:
    """A fresh journal for the test tools."""
    global JOURNAL  # noqa: PLW0603 - the tools read the module's journal
    JOURNAL = Journal()
    return JOURNAL


@pytest.fixture
def load_code(journal: Journal) -> Iterator[Callable[..., toolplug.Registry]]:
    """``load_code(max_calls=5, approver=..., config={...})``: the test tools and run_code,
    nothing else (``config``: more of the configuration, such as toolsets)."""
    made: list[toolplug.Registry] = []

    def load(
        *, approver: Any = None, config: dict[str, Any] | None = None, **code: Any
    ) -> toolplug.Registry:
        registry = toolplug.load(
            {"code": {"enabled": True, **code}, **(config or {})},
            env={"TOOLPLUG_PLUGINS": ""},
            plugins=[("code-test-tools", TestTools())],
            approver=approver,
        )
        made.append(registry)
        return registry

    yield load
    for registry in made:
        registry.close()
