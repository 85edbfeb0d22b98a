"""A tool's time limit measures the tool: waiting for a worker thread or a concurrency
slot is bounded on its own and reported as such (issue 26: 9 of 16,823 calls of a 1 ms
tool ended in ``TimeoutError`` under load, charged for the time they queued)."""

from __future__ import annotations

import asyncio
import time
import types
from typing import Any

import toolplug
from toolplug import ErrorType, Tool, ToolMetadata, ToolResult

NAP = 0.3
LIMIT = 0.5
"""One nap fits the limit; a nap after waiting for another does not."""


class SyncNap(Tool):
    metadata = ToolMetadata(
        name="sync_nap", description="Sleep in a thread.", category="utility",
        timeout_seconds=LIMIT,
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        time.sleep(NAP)
        return ToolResult.success("rested")


class AsyncNap(Tool):
    metadata = ToolMetadata(
        name="async_nap", description="Sleep on the loop.", category="utility",
        timeout_seconds=LIMIT,
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        await asyncio.sleep(NAP)
        return ToolResult.success("rested")


def _registry(config: dict[str, Any]) -> toolplug.Registry:
    plugin = types.SimpleNamespace(register_tools=toolplug.provides(SyncNap, AsyncNap))
    return toolplug.load(config, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("naps", plugin)])


async def _at_once(registry: toolplug.Registry, name: str, count: int) -> list[ToolResult]:
    return list(await asyncio.gather(*(registry.acall(name, {}) for _ in range(count))))


def test_waiting_for_a_worker_thread_is_not_charged_to_the_tool() -> None:
    # One thread: the second call waits a nap for it, then naps; 0.6 s in all, each nap
    # within its 0.5 s limit.
    registry = _registry({"calls": {"sync_workers": 1}})
    try:
        results = asyncio.run(_at_once(registry, "sync_nap", 2))
    finally:
        registry.close()
    assert [r.output for r in results] == ["rested", "rested"], [r.to_dict() for r in results]


def test_waiting_for_a_concurrency_slot_is_not_charged_to_the_tool() -> None:
    registry = _registry({"tools": {"async_nap": {"max_concurrency": 1}}})
    results = asyncio.run(_at_once(registry, "async_nap", 2))
    assert [r.output for r in results] == ["rested", "rested"], [r.to_dict() for r in results]


def test_a_wait_longer_than_the_limit_is_reported_as_a_wait() -> None:
    # Three calls, one thread: the third waits two naps (0.6 s) for a thread, longer than
    # the wait allowed (the tool's limit, again): it never starts, and says so.
    registry = _registry({"calls": {"sync_workers": 1}})
    try:
        results = asyncio.run(_at_once(registry, "sync_nap", 3))
    finally:
        registry.close()
    assert [r.output for r in results[:2]] == ["rested", "rested"]
    late = results[2].error
    assert late is not None
    assert late.type == ErrorType.TIMEOUT
    assert late.retry_possible is True
    assert late.message.startswith("sync_nap did not start: waited 0.5 s for a free worker ")
    assert "its time limit was not used" in late.message
    assert late.details == {"queued_seconds": LIMIT}
