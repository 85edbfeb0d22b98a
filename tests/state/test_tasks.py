"""Calls as tasks in Python: ``registry.start`` / ``astart`` / ``task(id)``, in this
process's memory and in a real Redis shared by two registries (two owners, as two
replicas would be). The MCP side and real replicas are in tests/serve/test_tasks.py."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import toolplug
from tests.helpers.redis import redis_server
from toolplug import ConfigError, ErrorType, Tool, ToolMetadata, ToolResult, hookimpl
from toolplug.config._settings import CallsSettings
from toolplug.state._memory import MemoryBackend
from toolplug.state._tasks import Task, Tasks

TIMEOUT = 30


class Steps(Tool):
    """Counts to ``steps``, reporting progress; waits at ``hold`` until released."""

    metadata: ClassVar[ToolMetadata] = ToolMetadata(
        name="steps",
        description="Count slowly: a test tool of the task tests.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "minimum": 0},
                "hold": {"type": "boolean", "default": False},
            },
            "required": ["steps"],
        },
    )
    release: ClassVar[threading.Event] = threading.Event()
    holding: ClassVar[threading.Event] = threading.Event()
    cancelled: ClassVar[threading.Event] = threading.Event()

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        steps = arguments["steps"]
        report = context.host["progress"]
        try:
            for done in range(steps):
                report(done, steps, f"step {done}")
                await asyncio.sleep(0)
            if arguments["hold"]:
                report(steps, steps, "holding")
                Steps.holding.set()
                while not Steps.release.is_set():
                    await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            Steps.cancelled.set()
            raise
        data = {"steps": steps, "task": context.host["task"]}
        return ToolResult.success(f"counted to {steps}", data)


class Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Steps)


@pytest.fixture(autouse=True)
def _fresh_events() -> Iterator[None]:
    for event in (Steps.release, Steps.holding, Steps.cancelled):
        event.clear()
    yield
    Steps.release.set()  # a held tool never outlives its test


def load(**calls: Any) -> toolplug.Registry:
    return toolplug.load({"calls": calls}, plugins=[("steps", Plugin())])


def test_a_task_runs_the_call_and_keeps_its_result() -> None:
    registry = load()
    try:
        task = registry.start("steps", {"steps": 3})
        result = task.result(wait=TIMEOUT)
        assert result is not None
        assert result.ok, result
        assert result.data == {"steps": 3, "task": task.id}  # the tool sees its task's id
        status = task.status()
        assert status.state == "completed"
        assert status.ended
        assert (status.tool, status.done, status.total) == ("steps", 2, 3)
        assert registry.task(task.id).result() == result  # a new handle, the same answer
    finally:
        registry.close()


def test_a_working_task_reports_progress_and_no_result_yet() -> None:
    registry = load()
    try:
        task = registry.start("steps", {"steps": 2, "hold": True})
        assert Steps.holding.wait(TIMEOUT)
        status = task.status()
        assert (status.state, status.done, status.total) == ("working", 2, 2)
        assert status.message == "holding"
        assert task.result(wait=0) is None  # still working: nothing yet, no error
        Steps.release.set()
        assert task.result(wait=TIMEOUT) is not None
    finally:
        registry.close()


def test_the_engine_decides_as_for_any_call() -> None:
    registry = load()
    try:
        bad = registry.start("steps", {"steps": "three"})
        result = bad.result(wait=TIMEOUT)
        assert result is not None
        assert result.error is not None
        assert result.error.type == ErrorType.VALIDATION
        assert bad.status().state == "failed"
        assert not bad.status().lost
        unknown = registry.start("stepz", {}).result(wait=TIMEOUT)
        assert unknown is not None
        assert unknown.error is not None
        assert unknown.error.type == ErrorType.NOT_FOUND
    finally:
        registry.close()


def test_cancel_stops_the_tool() -> None:
    registry = load()
    try:
        task = registry.start("steps", {"steps": 1, "hold": True})
        assert Steps.holding.wait(TIMEOUT)
        task.cancel()
        result = task.result(wait=TIMEOUT)
        assert Steps.cancelled.is_set()
        assert result is not None
        assert result.error is not None
        assert task.status().state == "cancelled"
        assert task.cancel().state == "cancelled"  # an ended task stays as it is
    finally:
        registry.close()


def test_an_unknown_task_is_a_status_and_a_result_not_an_exception() -> None:
    registry = load()
    try:
        task = registry.task("no-such-task")
        assert task.status().state == "unknown"
        result = task.result()
        assert result is not None
        assert result.error is not None
        assert result.error.type == ErrorType.NOT_FOUND
    finally:
        registry.close()


def test_finished_tasks_are_bounded_by_count() -> None:
    registry = load(task_entries=2)
    try:
        tasks = [registry.start("steps", {"steps": 0}) for _ in range(3)]
        for task in tasks:
            assert task.result(wait=TIMEOUT) is not None
        assert [t.status().state for t in tasks] == ["unknown", "completed", "completed"]
    finally:
        registry.close()


def test_finished_tasks_expire() -> None:
    registry = load(task_ttl_seconds=0.01)
    try:
        task = registry.start("steps", {"steps": 0})
        assert task.result(wait=TIMEOUT) is not None
        asyncio.run(asyncio.sleep(0.05))
        assert task.status().state == "unknown"
    finally:
        registry.close()


def test_async_handles() -> None:
    registry = load()

    async def main() -> tuple[Any, ...]:
        task = await registry.astart("steps", {"steps": 1, "hold": True})
        while not Steps.holding.is_set():
            await asyncio.sleep(0.01)
        early = await task.aresult(wait=0.01)
        working = (await task.astatus()).state
        Steps.release.set()
        return early, working, await task.aresult(), (await task.astatus()).state

    try:
        early, working, result, state = asyncio.run(asyncio.wait_for(main(), TIMEOUT))
        assert (early, working, state) == (None, "working", "completed")
        assert result.ok
    finally:
        registry.close()


def test_closing_the_registry_fails_its_running_tasks() -> None:
    registry = load()
    task = registry.start("steps", {"steps": 1, "hold": True})
    assert Steps.holding.wait(TIMEOUT)
    registry.close()
    status = task.status()
    assert status.state == "failed"
    assert status.lost
    assert "shut down" in (status.message or "")


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"task_ttl_seconds": 0}, "calls.task_ttl_seconds"),  # not positive
        ({"task_entries": 0}, "calls.task_entries"),  # keeps nothing
        ({"task_entries": "many"}, "calls.task_entries"),  # not a number
        ({"task_after_seconds": -1}, "calls.task_after_seconds"),  # before it started
        ({"task_after_seconds": "soon"}, "calls.task_after_seconds"),  # not a number
    ],
)
def test_bad_task_settings_name_the_key(table: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        toolplug.load({"calls": table})
    assert caught.value.key == key


# -- two registries on one Redis ---------------------------------------------------


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path) as url:
        yield url


def test_any_registry_on_the_store_answers_for_a_task(redis_url: str) -> None:
    one, two = load(store=redis_url), load(store=redis_url)
    try:
        task = one.start("steps", {"steps": 2, "hold": True})
        assert Steps.holding.wait(TIMEOUT)
        there = two.task(task.id)
        # progress reaches the store with the next heartbeat
        while there.status().message != "holding":
            asyncio.run(asyncio.sleep(0.05))
        assert there.status().state == "working"
        assert there.result(wait=0) is None
        Steps.release.set()
        result = there.result(wait=TIMEOUT)
        assert result is not None
        assert result.data == {"steps": 2, "task": task.id}
        assert there.status().state == "completed"
    finally:
        one.close()
        two.close()


def test_a_cancel_from_another_registry_stops_the_tool(redis_url: str) -> None:
    one, two = load(store=redis_url), load(store=redis_url)
    try:
        task = one.start("steps", {"steps": 1, "hold": True})
        assert Steps.holding.wait(TIMEOUT)
        assert two.task(task.id).cancel().state == "working"  # asked; one stops it on its beat
        result = two.task(task.id).result(wait=TIMEOUT)
        assert Steps.cancelled.is_set()
        assert result is not None
        assert two.task(task.id).status().state == "cancelled"
    finally:
        one.close()
        two.close()


def test_redis_keeps_a_bounded_count_of_finished_tasks(redis_url: str) -> None:
    one, two = load(store=redis_url, task_entries=2), load(store=redis_url)
    try:
        tasks = [one.start("steps", {"steps": 0}) for _ in range(3)]
        for task in tasks:
            assert task.result(wait=TIMEOUT) is not None
        assert [two.task(t.id).status().state for t in tasks] == [
            "unknown", "completed", "completed",
        ]
    finally:
        one.close()
        two.close()


def test_tasks_need_a_call_runner_a_loop_and_a_backend_nothing_of_the_engine() -> None:
    """The tasks take what they need as arguments: a function that runs a call, the loop
    they run on, a waiter for the sync handles, and any backend (here one in memory)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    seen: list[tuple[str, Any]] = []

    async def call(name: str, arguments: Any, host: Any, *_: Any, **__: Any) -> ToolResult:
        seen.append((name, arguments))
        host["progress"](1, 2, "half")
        return ToolResult.success(f"ran {name}")

    def wait(coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    tasks = Tasks(call, CallsSettings(), MemoryBackend(), home=lambda: loop, wait=wait)
    try:
        task = tasks.start("echo", {"x": 1}, None, None, approved=True)
        result = task.result(wait=TIMEOUT)
        assert result is not None
        assert result.output == "ran echo"
        assert seen == [("echo", {"x": 1})]
        assert Task(tasks, task.id).status().state == "completed"  # read from the backend
        assert Task(tasks, "nope").status().state == "unknown"
    finally:
        wait(tasks.aclose())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(TIMEOUT)
        loop.close()


def test_a_task_read_while_its_end_is_written_has_its_result() -> None:
    """Between a task's end and the write of its record, a reader in this process sees it
    ended and gets its result: never ``completed`` with no result (the MCP ``tasks/get``
    once answered a finished call with an error that way)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def call(name: str, *_: Any, **__: Any) -> ToolResult:
        return ToolResult.success(f"ran {name}")

    def wait(coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(TIMEOUT)

    tasks = Tasks(call, CallsSettings(), MemoryBackend(), home=lambda: loop, wait=wait)
    writing, written = threading.Event(), asyncio.Event()
    finish = tasks._records.finish

    async def slow_finish(record: Any, **kwargs: Any) -> Any:
        writing.set()
        await written.wait()
        return await finish(record, **kwargs)

    tasks._records.finish = slow_finish  # type: ignore[method-assign,assignment]
    try:
        task = tasks.start("echo", {}, None, None, approved=True)
        assert writing.wait(TIMEOUT)
        status, result = wait(tasks.read(task.id))
        assert status.state == "completed"
        assert result is not None
        assert result.output == "ran echo"
        early = wait(task.aresult(wait=0))
        assert early is not None
        assert early.output == "ran echo"
        loop.call_soon_threadsafe(written.set)
        later = task.result(wait=TIMEOUT)
        assert later is not None
        assert later.output == "ran echo"
        assert Task(tasks, task.id).status().state == "completed"
    finally:
        loop.call_soon_threadsafe(written.set)
        wait(tasks.aclose())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(TIMEOUT)
        loop.close()


def test_a_tasks_result_keeps_its_parts() -> None:
    # a task's record is JSON: the parts' bytes go in it as base64 and come back identical
    from tests.helpers.parts import Returns, ReturnsPlugin, png, wav

    parts = (
        toolplug.Image(png(5, 5)), toolplug.Text("and"), toolplug.Audio(wav()),
        toolplug.EmbeddedResource("file:///a.bin", data=b"\x00\x01", mime_type="application/x-a"),
    )
    Returns.RESULT = ToolResult.success("pictures", parts=parts)
    registry = toolplug.load(
        {}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("returns", ReturnsPlugin())]
    )
    try:
        task = registry.start("returns", {})
        result = task.result(wait=TIMEOUT)
        assert result is not None
        assert result.parts == parts
        again = registry.task(task.id).result()
        assert again is not None
        assert again.parts == parts
    finally:
        registry.close()
