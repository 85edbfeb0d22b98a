"""The async-first call engine: calls share one loop, limits hold, nothing blocks a thread.

No assertion here is about elapsed time. Concurrency is shown by barriers that only open
when every call is in flight at once, and by the order in which things happen.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

import toolplug
from toolplug import ConfigError, ErrorType, Tool, ToolMetadata, ToolResult, hookimpl
from toolplug.contract._metadata import Annotations as ToolAnnotations


class Gate:
    """Shared state of the test tools: a barrier for async calls, counters for all."""

    def __init__(self) -> None:
        self.reset(0)

    def reset(self, expected: int) -> None:
        self.expected = expected
        self.entered = 0
        self.running = 0
        self.most = 0
        self.threads: set[int] = set()
        self.loops: set[int] = set()
        self.cancelled = 0
        self.attempts = 0
        self.order: list[str] = []
        self.lock = threading.Lock()
        self.opened: asyncio.Event | None = None
        self.hold = threading.Event()

    def enter(self) -> None:
        with self.lock:
            self.entered += 1
            self.running += 1
            self.most = max(self.most, self.running)
            self.threads.add(threading.get_ident())

    def leave(self) -> None:
        with self.lock:
            self.running -= 1


GATE = Gate()


def _meta(name: str, **extra: Any) -> ToolMetadata:
    return ToolMetadata(
        name=name,
        description=f"{name}: a test tool of the engine tests.",
        category="reference",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
        **extra,
    )


class AllAtOnce(Tool):
    """Returns only once ``GATE.expected`` calls are inside it at the same time."""

    metadata: ClassVar[ToolMetadata] = _meta("all_at_once", timeout_seconds=20)

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        GATE.enter()
        GATE.loops.add(id(asyncio.get_running_loop()))
        try:
            if GATE.opened is None:
                GATE.opened = asyncio.Event()
            if GATE.entered >= GATE.expected:
                GATE.opened.set()
            await GATE.opened.wait()
            return ToolResult.success("ok")
        finally:
            GATE.leave()


class ToThread(Tool):
    """An async tool that hands blocking work to the default pool, as many real ones do."""

    metadata: ClassVar[ToolMetadata] = _meta("to_thread", timeout_seconds=20)

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        GATE.enter()
        try:
            await asyncio.to_thread(time.sleep, 0.05)
            return ToolResult.success("ok")
        finally:
            GATE.leave()


class Forever(Tool):
    """Never returns on its own; records that it was cancelled."""

    metadata: ClassVar[ToolMetadata] = _meta("forever", timeout_seconds=30)

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        GATE.enter()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            GATE.cancelled += 1
            raise
        finally:
            GATE.leave()
        raise AssertionError("unreachable")


class Held(Tool):
    """A sync tool that holds its slot until the test lets go."""

    metadata: ClassVar[ToolMetadata] = _meta("held", timeout_seconds=20)

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        GATE.enter()
        try:
            GATE.hold.wait(10)
            return ToolResult.success(f"n={arguments.get('n')}")
        finally:
            GATE.leave()


class HeldShort(Held):
    """The same, with a short time limit in its metadata."""

    metadata: ClassVar[ToolMetadata] = _meta("held_short", timeout_seconds=0.05)


class Flaky(Tool):
    """Fails with a retryable error on its first attempt."""

    metadata: ClassVar[ToolMetadata] = _meta("flaky")

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        GATE.attempts += 1
        GATE.order.append(f"attempt {GATE.attempts}")
        if GATE.attempts == 1:
            return ToolResult.failure(ErrorType.NETWORK, "first try fails", retry_possible=True)
        return ToolResult.success("second try works")


class Square(Tool):
    """A cacheable sync tool."""

    metadata: ClassVar[ToolMetadata] = _meta(
        "square", annotations=ToolAnnotations(read_only=True, idempotent=True)
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        GATE.attempts += 1
        n = arguments.get("n", 0)
        return ToolResult.success(str(n * n), {"square": n * n})


class Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        for tool in (AllAtOnce, ToThread, Forever, Held, HeldShort, Flaky, Square):
            register(tool)


def registry(
    config: dict[str, Any] | None = None, *plugins: tuple[str, object]
) -> toolplug.Registry:
    return toolplug.load(
        config or {}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("engine-tests", Plugin()), *plugins]
    )


@pytest.fixture
def gate() -> Iterator[Gate]:
    GATE.reset(0)
    yield GATE
    GATE.hold.set()


def test_two_hundred_async_calls_are_in_flight_at_once_on_the_callers_loop(gate: Gate) -> None:
    tools = registry()
    gate.reset(200)

    async def main() -> list[ToolResult]:
        return await asyncio.gather(*(tools.acall("all_at_once", {}) for _ in range(200)))

    results = asyncio.run(main())
    assert [r.ok for r in results] == [True] * 200, results[0]
    assert gate.most == 200
    # Every call ran on the caller's thread and loop: no worker thread per call.
    assert gate.threads == {threading.get_ident()}
    assert len(gate.loops) == 1


def test_async_tools_using_to_thread_do_not_deadlock(gate: Gate) -> None:
    tools = registry()

    async def main() -> list[ToolResult]:
        return await asyncio.gather(*(tools.acall("to_thread", {}) for _ in range(40)))

    results = asyncio.run(main())
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:1]
    assert gate.entered == 40


def test_cancelling_the_awaiting_task_cancels_the_tool(gate: Gate) -> None:
    tools = registry()

    async def main() -> None:
        task = asyncio.ensure_future(tools.acall("forever", {}))
        while gate.entered == 0:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert gate.cancelled == 1
    assert gate.running == 0


def test_time_limit_holds_for_awaited_tools(gate: Gate) -> None:
    tools = registry({"tools": {"forever": {"timeout_seconds": 0.05}}})
    result = asyncio.run(tools.acall("forever", {}))
    assert result.error is not None
    assert result.error.type == ErrorType.TIMEOUT
    assert gate.cancelled == 1


def test_sync_call_of_an_async_tool_waits_in_the_callers_thread(gate: Gate) -> None:
    tools = registry()
    gate.reset(1)
    assert tools.call("all_at_once", {}).ok
    # On an event loop of this thread's own: no hop to another thread.
    assert gate.threads == {threading.get_ident()}

    async def inside_a_loop() -> ToolResult:
        # A sync call made from async code still works (it blocks this loop meanwhile): it
        # runs on the registry's loop thread, since this thread's loop is busy.
        return tools.call("all_at_once", {})

    gate.reset(1)
    assert asyncio.run(inside_a_loop()).ok
    assert threading.get_ident() not in gate.threads
    tools.close()


def test_sync_calls_of_async_tools_from_many_threads(gate: Gate) -> None:
    tools = registry()
    results: list[ToolResult] = []
    threads = [
        threading.Thread(target=lambda: results.append(tools.call("to_thread", {})))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    assert len(results) == 8
    assert all(r.ok for r in results)
    assert len(gate.threads) == 8  # each ran in its caller's thread


def test_sync_call_of_a_sync_tool_runs_in_the_callers_thread(gate: Gate) -> None:
    tools = registry()
    gate.hold.set()
    assert tools.call("held", {"n": 1}).output == "n=1"
    assert gate.threads == {threading.get_ident()}


def test_sync_tools_under_acall_share_a_bounded_pool(gate: Gate) -> None:
    tools = registry({"calls": {"sync_workers": 2}})

    async def main() -> list[ToolResult]:
        calls = [asyncio.ensure_future(tools.acall("held", {"n": i})) for i in range(6)]
        while gate.running < 2:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)
        assert gate.running == 2  # the other four wait for a worker
        gate.hold.set()
        return await asyncio.gather(*calls)

    results = asyncio.run(main())
    assert [r.output for r in results] == [f"n={i}" for i in range(6)]
    assert gate.most == 2
    assert len(gate.threads) == 2


@pytest.mark.parametrize(
    "config",
    [
        {"tools": {"held": {"max_concurrency": 3}}},
        {"calls": {"max_concurrency": 3}},
        {"calls": {"max_concurrency": 5}, "tools": {"held": {"max_concurrency": 3}}},
    ],
    ids=["tool", "all", "both"],
)
def test_max_concurrency_makes_the_others_wait(gate: Gate, config: dict[str, Any]) -> None:
    tools = registry(config)

    async def main() -> list[ToolResult]:
        calls = [asyncio.ensure_future(tools.acall("held", {"n": i})) for i in range(10)]
        while gate.running < 3:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)
        assert gate.running == 3
        gate.hold.set()
        return await asyncio.gather(*calls)

    results = asyncio.run(main())
    assert all(r.ok for r in results)
    assert gate.most == 3


def test_a_call_waiting_for_a_slot_times_out_within_its_limit(gate: Gate) -> None:
    tools = registry({"calls": {"max_concurrency": 1}})

    async def main() -> ToolResult:
        first = asyncio.ensure_future(tools.acall("held", {"n": 1}))
        while gate.running < 1:
            await asyncio.sleep(0.001)
        second = await tools.acall("held_short", {"n": 2})  # 0.05 s limit, no free slot
        gate.hold.set()
        assert (await first).ok
        return second

    second = asyncio.run(main())
    assert second.error is not None
    assert second.error.type == ErrorType.TIMEOUT
    assert gate.entered == 1  # the second never started


def test_sync_calls_respect_the_same_limits(gate: Gate) -> None:
    tools = registry({"tools": {"held": {"max_concurrency": 2}}})
    results: list[ToolResult] = []
    threads = [
        threading.Thread(target=lambda i=i: results.append(tools.call("held", {"n": i})))
        for i in range(6)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while gate.running < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(0.05)
    assert gate.running == 2
    gate.hold.set()
    for thread in threads:
        thread.join(10)
    assert len(results) == 6
    assert all(r.ok for r in results)
    assert gate.most == 2


def test_retry_backoff_is_awaited_not_slept(gate: Gate) -> None:
    tools = registry({"tools": {"flaky": {"retries": 1, "retry_backoff_seconds": 0.2}}})

    async def ticker() -> None:
        await asyncio.sleep(0.02)
        gate.order.append("tick")

    async def main() -> ToolResult:
        result, _ = await asyncio.gather(tools.acall("flaky", {}), ticker())
        return result

    assert asyncio.run(main()).output == "second try works"
    # The loop ran other work while the call waited to retry.
    assert gate.order == ["attempt 1", "tick", "attempt 2"]


def test_rate_limit_waits_are_awaited(gate: Gate) -> None:
    tools = registry({"tools": {"square": {"rate_limit": {"calls": 1, "per_seconds": 0.2}}}})
    order: list[str] = []

    async def call(n: int) -> None:
        await tools.acall("square", {"n": n})
        order.append(f"call {n}")

    async def ticker() -> None:
        await asyncio.sleep(0.02)
        order.append("tick")

    async def main() -> None:
        await asyncio.gather(call(1), call(2), ticker())

    asyncio.run(main())
    assert order == ["call 1", "tick", "call 2"]


def test_a_rate_limit_wait_longer_than_the_time_limit_is_refused_at_once(gate: Gate) -> None:
    # The slot frees in 60 s, the time limit is 0.5 s: waiting could only end in a timeout.
    config = {"tools": {"square": {"timeout_seconds": 0.5,
                                   "rate_limit": {"calls": 1, "per_seconds": 60}}}}
    tools = registry(config)
    assert tools.call("square", {"n": 1}).ok
    started = time.monotonic()
    refused = tools.call("square", {"n": 2})
    assert time.monotonic() - started < 0.5  # not after waiting out the limit
    assert refused.error is not None
    assert refused.error.type == "RateLimitError"
    assert refused.error.retry_possible
    assert 59 < refused.error.details["retry_after_seconds"] <= 60
    assert "longer than the 0.5 s time limit" in refused.error.message
    assert gate.attempts == 1


def test_the_memory_cache_is_bounded_by_entries(gate: Gate) -> None:
    config = {"calls": {"cache_entries": 50}, "tools": {"square": {"cache_ttl_seconds": 60}}}
    tools = registry(config)
    for n in range(500):
        assert tools.call("square", {"n": n}).data == {"square": n * n}
    assert gate.attempts == 500
    assert tools.call("square", {"n": 499}).ok  # among the newest 50: still cached
    assert gate.attempts == 500
    assert tools.call("square", {"n": 0}).ok  # the oldest: evicted, so the tool runs again
    assert gate.attempts == 501


def test_cached_entries_expire_by_their_own_time_to_live(gate: Gate) -> None:
    tools = registry({"tools": {"square": {"cache_ttl_seconds": 0.05}}})
    tools.call("square", {"n": 3})
    tools.call("square", {"n": 3})
    assert gate.attempts == 1
    time.sleep(0.1)
    tools.call("square", {"n": 3})
    assert gate.attempts == 2


class Recorder:
    """Interceptors of every kind, recording what they saw."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl(wrapper=True)
    def tool_call(self, call: Any) -> Any:
        self.seen.append(f"wrapper before {call.tool} on {threading.get_ident()}")
        result = yield
        self.seen.append(f"wrapper after {result.output}")
        return result


class OldStyle:
    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl(hookwrapper=True)
    def tool_call(self, call: Any) -> Any:
        outcome = yield
        self.seen.append(f"old style saw {outcome.get_result().output}")


class Awaiting:
    """An async interceptor: awaits the tool itself and adds a warning."""

    @hookimpl(tryfirst=True)
    async def tool_call(self, call: Any) -> ToolResult:
        await asyncio.sleep(0)
        result: ToolResult = await call.aexecute()
        return ToolResult(output=result.output, warnings=("seen by an async interceptor",))


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_interceptors_of_every_kind_run_for_sync_and_async_hosts(gate: Gate, mode: str) -> None:
    recorder, old = Recorder(), OldStyle()
    tools = registry({}, ("rec", recorder), ("old", old), ("awaiting", Awaiting()))
    gate.reset(1)
    if mode == "call":
        result = tools.call("all_at_once", {})
    else:
        result = asyncio.run(tools.acall("all_at_once", {}))
    assert result.output == "ok"
    assert result.warnings == ("seen by an async interceptor",)
    assert recorder.seen[1] == "wrapper after ok"
    assert old.seen == ["old style saw ok"]
    if mode == "acall":  # the wrapper ran on the caller's thread, not a worker
        assert recorder.seen[0].endswith(str(threading.get_ident()))


def test_an_interceptor_that_raises_becomes_an_execution_error(gate: Gate) -> None:
    class Broken:
        @hookimpl(wrapper=True)
        def tool_call(self, call: Any) -> Any:
            yield
            raise ValueError("interceptor bug")

    tools = registry({}, ("broken", Broken()))
    result = asyncio.run(tools.acall("square", {"n": 2}))
    assert result.error is not None
    assert result.error.type == ErrorType.EXECUTION
    assert "interceptor bug" in result.error.message


class Layers:
    """tool_call implementations of every kind and priority, writing down what they do."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.seen: list[Any] = []

    @hookimpl(wrapper=True, tryfirst=True)
    def tool_call(self, call: Any) -> Any:
        self.seen.append(call)
        self.events.append("outer wrapper before")
        result = yield
        self.events.append(f"outer wrapper after {result.output}")
        return ToolResult.success(f"{result.output}!")


class OldLayer:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    @hookimpl(hookwrapper=True)
    def tool_call(self, call: Any) -> Any:
        self.events.append("old style before")
        outcome = yield
        if outcome.exception is not None:
            self.events.append(f"old style saw {outcome.exception}")
            return
        self.events.append(f"old style saw {outcome.get_result().output}")
        outcome.force_result(ToolResult.success(f"{outcome.get_result().output}?"))


class Catching:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    @hookimpl(wrapper=True)
    def tool_call(self, call: Any) -> Any:
        self.events.append("catching before")
        try:
            return (yield)
        except ValueError as exc:
            self.events.append(f"catching caught {exc}")
            return ToolResult.success("recovered")


class Passing:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    @hookimpl(tryfirst=True)
    def tool_call(self, call: Any) -> None:
        self.events.append("passing")


class Answering:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    @hookimpl
    def tool_call(self, call: Any) -> ToolResult | None:
        self.events.append("answering")
        n = call.arguments.get("n")
        if n == 4:
            raise ValueError("four is refused")
        return ToolResult.success("answered") if n == 3 else None


class Last:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    @hookimpl(trylast=True)
    def tool_call(self, call: Any) -> None:
        self.events.append("trylast")


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_chain_runs_the_hooks_as_pluggy_does(gate: Gate, n: int) -> None:
    # pluggy's own call of the same implementations is the reference: the chain must see
    # the same steps in the same order and answer the same output.
    layers = Layers()
    events = layers.events
    plugins = [
        ("layers", layers), ("old", OldLayer(events)), ("catching", Catching(events)),
        ("passing", Passing(events)), ("answering", Answering(events)), ("last", Last(events)),
    ]
    tools = registry({}, *plugins)
    through_chain = tools.call("square", {"n": n})
    chain_events = list(events)
    events.clear()
    through_pluggy = tools.plugin_manager.hook.tool_call(call=layers.seen[0])
    assert chain_events == events
    assert through_chain.output == through_pluggy.output
    assert through_chain.output == {2: "4?!", 3: "answered?!", 4: "recovered!"}[n]
    # the built-in registers when the engine starts, after every plugin: it runs last
    assert chain_events[-1] == "outer wrapper after " + {2: "4?", 3: "answered?", 4: "recovered"}[n]
    assert ("trylast" in chain_events) == (n == 2)
    assert asyncio.run(tools.acall("square", {"n": n})).output == through_chain.output


def test_a_plugin_registered_after_the_first_call_joins_the_chain(gate: Gate) -> None:
    tools = registry({})
    assert tools.call("square", {"n": 2}).output == "4"
    events: list[str] = []
    tools.plugin_manager.register(Passing(events), name="passing")
    tools.plugin_manager.register(Answering(events), name="answering")
    assert tools.call("square", {"n": 3}).output == "answered"
    assert events == ["passing", "answering"]
    tools.plugin_manager.unregister(name="answering")
    assert tools.call("square", {"n": 3}).output == "9"


@pytest.mark.parametrize(
    ("calls", "key", "found", "expected"),
    [
        # a key [calls] does not have: the message lists every key it does have
        (
            {"workers": 2},
            "calls.workers",
            "unknown key",
            "one of ask_timeout_seconds, cache_entries, cache_max_mb, max_concurrency,"
            " max_output_chars, max_part_bytes, max_result_bytes, spill_max_count, spill_max_mb,"
            " spill_ttl_seconds, store, sync_workers, task_after_seconds, task_entries,"
            " task_ttl_seconds, telemetry_content",
        ),
        # a pool of no threads could run nothing
        (
            {"sync_workers": 0},
            "calls.sync_workers",
            "got 0",
            "a whole number of threads, 1 or more",
        ),
        # a word where a number belongs
        (
            {"max_concurrency": "many"},
            "calls.max_concurrency",
            "got 'many'",
            "a whole number of calls, 1 or more",
        ),
        # a store toolplug cannot talk to: the message shows the URL form it can
        (
            {"store": "memcached://x"},
            "calls.store",
            "got 'memcached://x'",
            '"memory", or the URL of a Redis server: "redis://HOST:PORT/DB"',
        ),
        # True is an int to Python, not a count to a person
        (
            {"cache_entries": True},
            "calls.cache_entries",
            "got True",
            "a whole number of cached results, 1 or more",
        ),
    ],
)
def test_bad_calls_settings_are_named(
    calls: dict[str, Any], key: str, found: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        registry({"calls": calls})
    assert caught.value.key == key
    assert caught.value.expected == expected
    assert str(caught.value) == f"configuration: {key}: {found} (expected {expected})"


def test_bad_tool_max_concurrency_is_named() -> None:
    with pytest.raises(ConfigError) as caught:
        registry({"tools": {"held": {"max_concurrency": 0}}})
    assert caught.value.key == "tools.held.max_concurrency"
    assert caught.value.expected == "a whole number of calls at once, 1 or more"
