"""The contract kit and its pytest fixtures (see ``toolplug.testing``)."""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import contextlib
import gc
import inspect
import json
import operator
import os
import tempfile
import threading
import time
import types
from collections.abc import Callable, Coroutine, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar

import pytest
from jsonschema import Draft202012Validator

from toolplug.contract._errors import MetadataError
from toolplug.contract._hooks import hookimpl
from toolplug.contract._metadata import (
    BUILTIN_CATEGORIES,
    Category,
    ToolMetadata,
    validate_tool_metadata,
)
from toolplug.contract._tool import Tool, ToolContext
from toolplug.render._export import FORMATS, STRICT_DEFAULTS, export_tool
from toolplug.render._formats import BY_NAME
from toolplug.schema import restore_strict_arguments, strict_arguments
from toolplug.sources._load import load
from toolplug.sources._plugins import normalize_distribution
from toolplug.testing._published import published_problems

if TYPE_CHECKING:
    from pytest_httpserver import HTTPServer

    from toolplug.contract._capabilities import Capability
    from toolplug.contract._metadata import Example
    from toolplug.runtime._registry import Registry

_T = TypeVar("_T")


class ContractError(AssertionError):
    """A tool or plugin breaks the contract; the message lists every broken rule."""

    def __init__(self, subject: str, problems: list[str]) -> None:
        self.subject = subject
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{subject} breaks the toolplug contract:\n{lines}")


def fake_context(tool: str, config: Mapping[str, Any] | None = None) -> ToolContext:
    """A context for calling ``run`` directly: temporary directories, no network allowed."""
    root = Path(tempfile.mkdtemp(prefix=f"toolplug-{tool}-"))
    return ToolContext(
        tool=tool,
        config=dict(config or {}),
        cache_dir=root / "cache",
        state_dir=root / "state",
        env={},
    )


def concurrent_calls() -> int:
    """How many calls at once the kit makes of each async tool: 4 x the default thread pool.

    The default pool of ``concurrent.futures`` (and so of ``asyncio.to_thread``) has
    ``min(32, cpus + 4)`` threads; four times that many calls in flight shows a tool that
    blocks the event loop or waits on a pool that the calls themselves have used up.
    """
    return 4 * _default_workers()


def _default_workers() -> int:
    """The size of the default thread pool of ``concurrent.futures`` and ``asyncio``."""
    return min(32, (os.cpu_count() or 1) + 4)


def check_tool(  # noqa: C901 - one contract check per item, reported in order
    cls: type[Tool],
    *,
    run_examples: bool = True,
    known_categories: set[str] | None = None,
    network: bool = False,
    config: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    capabilities: Iterable[Capability] = (),
    exact_outputs: bool = False,
) -> None:
    """Check one tool class against the contract.

    Rules: metadata is a ``ToolMetadata`` and passes registration checks; every example
    validates; every example's declared ``output`` matches ``returns``; the parameters
    export to every provider format; an optional tool has a usage hint and DO / DO NOT
    guidance; the errors it returns are declared; it declares ``annotations`` (without
    them the approval policy never gates it) and ``trust`` labels (without them the flow
    guard assumes the worst).

    With ``run_examples``, each example is called the way a host calls the tool: through
    ``Registry.call`` (arguments validated, defaults filled, the tool's settings resolved
    from ``config``, a mapping shaped like ``toolplug.toml``, and from ``env``). Each must
    answer with a ``ToolResult`` (a structured failure of a declared type is fine); a
    successful result's ``data`` must match ``returns`` and have the shape of the example's
    declared ``output`` (the same keys and JSON types; equal values with
    ``exact_outputs=True``). An async tool is then called ``concurrent_calls()`` times at
    once with its first example: the calls may hold the event loop in steps of 2 ms or more
    for at most 4 ms a call on average (a ``run`` that blocks the loop fails), and all of
    them must finish within a budget set by the time of one call (one that waits on a
    thread pool its own calls filled fails).

    The examples run in ``env`` alone, an empty environment by default: the process's
    variables never leak in. Required capabilities are detected, never granted: one that is
    missing there (its variable unset, its setting empty) is reported as a broken rule, so
    pass the ``env`` or ``config`` that makes it present (``check_plugin`` knows the
    plugin's capabilities; give ``check_tool`` them as ``capabilities``). Examples of a tool
    that requires the ``network`` capability run only with ``network=True``, because test
    suites must not leave the machine: point them at a ``toolplug_service`` on 127.0.0.1.

    Raises:
        ContractError: listing every rule broken.
    """
    name = getattr(cls, "__qualname__", repr(cls))
    problems: list[str] = []
    if not (isinstance(cls, type) and issubclass(cls, Tool)):
        raise ContractError(name, ["is not a subclass of toolplug.Tool"])
    meta = getattr(cls, "metadata", None)
    if not isinstance(meta, ToolMetadata):
        raise ContractError(name, ["has no metadata = ToolMetadata(...)"])
    name = meta.name
    categories = known_categories or {c.name for c in BUILTIN_CATEGORIES}
    try:
        validate_tool_metadata(meta, known_categories=categories | {meta.category})
    except MetadataError as exc:
        problems.append(str(exc))
    if cls.run is Tool.run:
        problems.append("does not implement run()")
    for prop, spec in sorted(meta.parameters.get("properties", {}).items()):
        if not isinstance(spec, Mapping) or not spec.get("description"):
            problems.append(f"parameter {prop!r} has no description")
    if meta.optionality == "optional":
        if not meta.usage_hint.strip():
            problems.append("an optional tool needs a usage_hint")
        if not meta.guidelines.do or not meta.guidelines.do_not:
            problems.append("an optional tool needs DO and DO NOT guidelines")
    if not meta.errors:
        problems.append("declares no errors (metadata.errors)")
    if "annotations" not in meta.model_fields_set:
        problems.append(
            "declares no annotations, so the approval policy never asks before a call of it, "
            "whatever it does: declare annotations=Annotations(read_only=..., "
            "destructive=..., idempotent=..., open_world=...) so that approvals can be decided"
        )
    if meta.trust is None:
        problems.append(
            "declares no trust labels, so a flow guard must treat it as the worst case "
            "(untrusted, private, every parameter a sink): declare trust=Trust("
            'output="untrusted" if anyone outside could have written its output else '
            '"trusted", private=True if it returns the user\'s own data, sinks=(the '
            "parameters whose values leave the machine or change the world)); see "
            "guidelines/README.md, Trust labels"
        )
    if not meta.examples:
        problems.append("has no examples")
    if meta.returns is not None:
        for example in meta.examples:
            if example.output is not None:
                problems += _returns_problems(
                    meta.returns, example.output, f"example {example.description!r}: output"
                )
    problems += _export_problems(meta)
    if "network" in meta.requires_capabilities and not network:
        run_examples = False
    if run_examples and not problems:
        setup = _Setup(categories, config or {}, env or {}, tuple(capabilities), exact_outputs)
        problems += _example_problems(cls, meta, setup)
    if problems:
        raise ContractError(f"tool {name!r}", problems)


@dataclass(frozen=True)
class _Setup:
    categories: set[str]
    config: Mapping[str, Any]
    env: Mapping[str, str]
    capabilities: tuple[Capability, ...]
    exact_outputs: bool


def _example_problems(cls: type[Tool], meta: ToolMetadata, setup: _Setup) -> list[str]:
    class Single:
        """Registers the tool under test (and its category), and the capabilities given."""

        @staticmethod
        @hookimpl
        def register_tools(register: Callable[[Any], None]) -> None:
            if meta.category not in setup.categories:
                register(Category(name=meta.category, description="declared by the tool"))
            register(cls)

        @staticmethod
        @hookimpl
        def register_capabilities(register: Callable[[Any], None]) -> None:
            for capability in setup.capabilities:
                if capability.name != "network":  # the built-in one is always there
                    register(capability)

    root = Path(tempfile.mkdtemp(prefix=f"toolplug-contract-{meta.name}-"))
    settings = {"cache_dir": str(root / "cache"), "state_dir": str(root / "state"), **setup.config}
    registry = load(
        settings,
        env={**setup.env, "TOOLPLUG_PLUGINS": ""},
        plugins=[("contract-kit", Single)],
        approver=lambda request: True,  # examples show what the tool does once approved
    )
    try:
        availability = registry.availability(meta.name)
        if not availability.available:
            return [
                "its examples cannot run: it is unavailable in the kit's environment ("
                + "; ".join(availability.reasons)
                + "). The kit grants nothing and runs in env= alone (empty by default): pass "
                "the env= or config= that makes it available, or run_examples=False"
            ]
        problems: list[str] = []
        for example in meta.examples:
            problems += _run_example(registry, meta, example, setup.exact_outputs)
        if inspect.iscoroutinefunction(cls.run):
            problems += _concurrency_problems(registry, meta.name, meta.examples[0].input)
        return problems
    finally:
        registry.close()


_ALWAYS_ALLOWED = frozenset(
    {"ValidationError", "TimeoutError", "ExecutionError", "UnavailableError"}
)


def _run_example(
    registry: Registry, meta: ToolMetadata, example: Example, exact: bool
) -> list[str]:
    label = f"example {example.description!r}"
    outcome = registry.call(meta.name, dict(example.input))
    if outcome.error is not None:
        if outcome.error.type == "ExecutionError":
            return [
                f"{label} crashed: {outcome.error.message}; "
                "return ToolResult.failure(...) or raise ToolFailure instead"
            ]
        declared = {e.type for e in meta.errors} | _ALWAYS_ALLOWED
        if outcome.error.type not in declared:
            return [
                f"{label} returned the undeclared error type {outcome.error.type}; "
                "add it to metadata.errors"
            ]
        return []
    problems: list[str] = []
    if meta.returns is not None:
        problems += _returns_problems(meta.returns, outcome.data, f"{label}: data")
    undeclared = sorted({part.kind for part in outcome.parts} - set(meta.parts))
    if undeclared:
        problems.append(
            f"{label} returned {', '.join(undeclared)} parts, which metadata.parts does not "
            f"declare ({', '.join(meta.parts) or 'none'}): add them, so hosts and the "
            "reference docs know the tool returns them"
        )
    if example.output is not None:
        if exact:
            if outcome.data != example.output:
                problems.append(
                    f"{label}: data is {_short(outcome.data)}, but the example's output says "
                    f"{_short(example.output)}"
                )
        else:
            problems += [f"{label}: {p}" for p in _shape_problems(example.output, outcome.data)]
    return problems


def _short(value: object, limit: int = 120) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _shape_problems(declared: object, real: object, where: str = "output") -> list[str]:
    """Where the real data does not have the declared output's shape.

    The same JSON type everywhere; every key the declared output shows is in the data (the
    data may have more); list items compared pairwise as far as both go. Values may differ:
    an example's output may be illustrative (dates, live data).
    """
    expected, found = _json_type(declared), _json_type(real)
    if expected != found:
        return [f"{where} is {expected} in the example's output, but the tool returned {found}"]
    if isinstance(declared, Mapping) and isinstance(real, Mapping):
        problems = []
        for key in declared:
            if key not in real:
                problems.append(f"{where}.{key} is in the example's output, not in the data")
            else:
                problems += _shape_problems(declared[key], real[key], f"{where}.{key}")
        return problems
    if isinstance(declared, list | tuple) and isinstance(real, list | tuple):
        return [
            p
            for index, (one, other) in enumerate(zip(declared, real, strict=False))
            for p in _shape_problems(one, other, f"{where}[{index}]")
        ]
    return []


_STRETCH: Final = 0.002
"""A step of a call this long or longer may stall the event loop; a shorter one never does.

Shorter steps are the ordinary work between two awaits: a busy but well-behaved tool takes
many of them, and none keeps another call waiting long.
"""

_STALL_PER_CALL: Final = 0.004
"""The stall allowed per call: the calls may stall the loop ``concurrent_calls()`` x 4 ms in all.

A call that blocks for 10 ms stalls it more than twice that. Well-behaved tools, a loopback
network tool among them, stayed under a third of it on two cores loaded by six CPU-bound
processes, and a stall is measured twice before it is reported.
"""

_TICK: Final = 0.001
"""How often the bystander thread wakes."""

_LATE: Final = 0.003
"""A bystander tick this late after the one before, less its wait for a CPU: no GIL to be had."""


class _Stalls:
    """How long the calls stalled the event loop, step by step; enter it on the loop's thread.

    A step's wall time alone overstates it: the loop's thread also waits for a CPU (other
    processes) and for the GIL (other threads, such as a loopback server's), which is no
    fault of the tool. So a step stalls the loop for the CPU time it used, plus the time it
    slept (wall time less CPU time, less its wait for a CPU) while the GIL was free. That
    a bystander thread of the kit's tells: waking every millisecond, it keeps its rhythm
    while the loop's thread is blocked in a call (``time.sleep``, a blocking socket or
    lock), which frees the GIL, and falls behind while other threads hold the GIL. A wait
    for a CPU is known on Linux (``/proc/thread-self/schedstat``); elsewhere it counts as
    sleep, and as falling behind.
    """

    def __init__(self) -> None:
        self.total = 0.0
        """The stalls added up, in seconds."""
        self.longest = 0.0
        """The longest stall of one step."""
        self._ticks: list[tuple[float, float]] = []
        """When the bystander woke, and how long it had waited for a CPU by then."""
        self._done = threading.Event()
        self._bystander = threading.Thread(
            target=self._tick, name="toolplug-kit-bystander", daemon=True
        )
        self.queued = _QueueClock.NONE
        """How long the loop's thread has waited for a CPU so far, in seconds."""

    def __enter__(self) -> _Stalls:
        self.queued = _QueueClock()
        self._bystander.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._bystander.join()
        self.queued.close()

    def _tick(self) -> None:
        ticks, now, queued = self._ticks, time.perf_counter, _QueueClock()
        try:
            while not self._done.wait(_TICK):
                ticks.append((now(), queued()))
        finally:
            queued.close()

    def step(self, started: float, cpu: float, queued: float) -> None:
        """Count a step begun at ``started`` that used ``cpu`` s of CPU, ``queued()`` then."""
        ended = time.perf_counter()
        if ended - started < _STRETCH:
            return
        asleep = ended - started - cpu - (self.queued() - queued)
        stall = cpu + min(max(asleep, 0.0), self._free(started, ended))
        if stall >= _STRETCH:
            self.total += stall
            self.longest = max(self.longest, stall)

    def _free(self, start: float, end: float) -> float:
        """How long between ``start`` and ``end`` the bystander kept its rhythm."""
        ticks = self._ticks
        index = max(bisect.bisect_right(ticks, start, key=operator.itemgetter(0)), 1)
        free = 0.0
        while index < len(ticks) and ticks[index][0] <= end:
            (before, queued_before), (after, queued_after) = ticks[index - 1], ticks[index]
            if after - before - (queued_after - queued_before) <= _LATE:
                free += after - max(before, start)
            index += 1
        return free


class _QueueClock:
    """How long the thread that made it has waited for a CPU, in seconds: Linux says, else 0."""

    NONE: ClassVar[_QueueClock]
    """A clock that always says 0."""

    def __init__(self, path: str | None = "/proc/thread-self/schedstat") -> None:
        self._fd: int | None = None
        if path is not None:
            with contextlib.suppress(OSError):
                self._fd = os.open(path, os.O_RDONLY)

    def __call__(self) -> float:
        if self._fd is None:
            return 0.0
        # "time on the CPU, time waiting for it, time slices", in nanoseconds
        return int(os.pread(self._fd, 64, 0).split()[1]) / 1e9

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


_QueueClock.NONE = _QueueClock(None)


@types.coroutine
def _timed(coroutine: Coroutine[Any, Any, _T], stalls: _Stalls) -> Generator[Any, Any, _T]:
    """Drive ``coroutine`` as ``await`` would, timing each step it takes on the loop."""
    sent: Any = None
    error: BaseException | None = None
    while True:
        started, cpu, queued = time.perf_counter(), time.thread_time(), stalls.queued()
        try:
            waiting = coroutine.send(sent) if error is None else coroutine.throw(error)
        except StopIteration as stop:
            stalls.step(started, time.thread_time() - cpu, queued)
            result: _T = stop.value
            return result
        except BaseException:
            stalls.step(started, time.thread_time() - cpu, queued)
            raise
        stalls.step(started, time.thread_time() - cpu, queued)
        try:
            sent, error = (yield waiting), None
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:  # thrown in by the task (a cancellation): pass it on
            sent, error = None, exc


def _timing_factory(stalls: _Stalls) -> Callable[..., asyncio.Task[Any]]:
    """A task factory timing every task on the loop: the kit's calls and what they start."""

    async def timed(coroutine: Coroutine[Any, Any, Any]) -> Any:
        return await _timed(coroutine, stalls)

    def factory(
        loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, Any], **options: Any
    ) -> asyncio.Task[Any]:
        return asyncio.Task(timed(coroutine), loop=loop, **options)

    return factory


@dataclass(frozen=True)
class _Measured:
    """What one round of calls at once showed."""

    single: float
    """How long one call alone took, in seconds."""
    budget: float
    """How long all the calls together may take: as long as one after another, and 2 s more."""
    started: int
    """How many calls were started (fewer than planned once the loop stalled too long)."""
    finished: int
    """How many of them finished within the budget."""
    stalls: _Stalls
    """How long the calls held the loop."""


def _concurrency_problems(registry: Registry, name: str, arguments: Mapping[str, Any]) -> list[str]:
    """Call an async tool many times at once; none may stall the loop or wait forever.

    Every step each call takes on the event loop is timed (a task factory wraps the calls
    and any task they start) and counted as ``_Stalls`` says: a ``run`` that blocks
    (``time.sleep``, blocking I/O, heavy CPU work) stalls the loop in long steps, which add
    up over the calls, while the time the loop's thread waits for a CPU or for the GIL is
    no stall of the tool's. A heartbeat task's gaps would count that too. A round that
    stalls too long is measured once more, and the better of the two reported, so that a
    burst of load from elsewhere is not blamed on the tool.

    All calls must also finish in a budget set by the time of one call: one that waits on
    a thread pool its own calls filled, or on a lock another call holds, does not.
    """
    count = concurrent_calls()
    limit = count * _STALL_PER_CALL
    measured = _measure_concurrency(registry, name, arguments, count, limit)
    if measured.stalls.total >= limit:
        again = _measure_concurrency(registry, name, arguments, count, limit)
        measured = min(measured, again, key=lambda m: m.stalls.total)
    if measured.stalls.total >= limit:
        stalls, started = measured.stalls, measured.started
        calls = f"{started} call{'s' if started > 1 else ''}"
        return [
            f"{count} calls at once stalled the event loop: a call held it for "
            f"{stalls.total / started * 1000:.0f} ms on average ({stalls.total * 1000:.0f} ms "
            f"over the {calls} started, in steps of {_STRETCH * 1000:.0f} ms or more, "
            f"the longest {stalls.longest * 1000:.0f} ms), over the limit of "
            f"{_STALL_PER_CALL * 1000:.0f} ms a call: run blocks the event loop (time.sleep, "
            "a blocking client such as requests, blocking file or socket I/O, heavy CPU "
            "work), and every other call waits meanwhile. Await non-blocking work instead "
            "(asyncio.sleep, toolplug.http.fetch, httpx.AsyncClient), run the blocking work in "
            "a thread (await asyncio.to_thread(...)), or make run a plain def (it then runs "
            "in a worker thread)"
        ]
    if measured.finished < count:
        return [
            f"{count} calls at once: {measured.finished} finished within "
            f"{measured.budget:.2f} s, for a tool that takes {measured.single:.3f} s a call: "
            "run waits on something its own calls hold, such as a thread pool they filled "
            "(work in asyncio.to_thread that itself waits for the pool) or a lock. Give "
            "blocking work that waits for other work a pool or a limit of its own"
        ]
    return []


def _measure_concurrency(
    registry: Registry, name: str, arguments: Mapping[str, Any], count: int, limit: float
) -> _Measured:
    """One round of ``count`` calls at once, on a fresh loop whose thread pool is started."""
    workers = _default_workers()
    pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="toolplug-kit")
    # Start every thread of the pool first, as a long-running host has: a thread starting
    # inside a call holds the loop until it runs, which a loaded machine makes slow.
    barrier = threading.Barrier(workers)
    concurrent.futures.wait([pool.submit(barrier.wait, 10) for _ in range(workers)])
    loop = asyncio.new_event_loop()
    loop.set_default_executor(pool)
    try:
        return loop.run_until_complete(_calls_at_once(registry, name, arguments, count, limit))
    finally:
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.wait(left))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
            # A thread stuck in a tool's deadlock must not keep the tests from going on.
            pool.shutdown(wait=False, cancel_futures=True)


async def _calls_at_once(
    registry: Registry, name: str, arguments: Mapping[str, Any], count: int, limit: float
) -> _Measured:
    await registry.acall(name, dict(arguments))  # warm up: validators, the instance, imports
    begun = time.perf_counter()
    await registry.acall(name, dict(arguments))
    single = time.perf_counter() - begun
    # Generous, since only a call that never finishes must miss it: calls queued four deep
    # for the pool's threads take about 4 x single, but a loaded machine slows them all.
    budget = single * count + 2.0
    loop = asyncio.get_running_loop()
    gc.collect()  # the test process's garbage, collected in a call, is no stall of the tool
    calls: list[asyncio.Task[Any]] = []
    with _Stalls() as stalls:
        loop.set_task_factory(_timing_factory(stalls))
        begun = time.perf_counter()
        try:
            for _ in range(count):
                calls.append(loop.create_task(registry.acall(name, dict(arguments))))
                await asyncio.sleep(0)  # its first step runs now: stop once stalled enough
                if stalls.total >= limit:
                    break
            left = budget - (time.perf_counter() - begun)
            done, pending = await asyncio.wait(calls, timeout=max(left, 0.0))
            for call in pending:
                call.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            loop.set_task_factory(None)
    return _Measured(single, budget, len(calls), len(done), stalls)


def _returns_problems(schema: dict[str, Any], data: object, label: str) -> list[str]:
    errors = sorted(
        Draft202012Validator(schema).iter_errors(data), key=lambda e: list(map(str, e.path))
    )
    return [
        f"{label} does not match returns at "
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in errors
    ]


def _export_problems(meta: Any) -> list[str]:
    problems = []
    variants = [(fmt, None) for fmt in FORMATS] + [(fmt, True) for fmt in STRICT_DEFAULTS]
    for fmt, strict in variants:
        try:
            export_tool(meta, fmt, strict=strict)
        except Exception as exc:
            label = f"{fmt} (strict)" if strict else fmt
            problems.append(f"does not export to {label}: {type(exc).__name__}: {exc}")
    # A model that follows the strict schema must call the tool as it declared.
    for example in meta.examples:
        for dialect in dict.fromkeys(BY_NAME[fmt].dialect for fmt in STRICT_DEFAULTS):
            shaped = strict_arguments(meta.parameters, example.input, dialect=dialect)
            back = restore_strict_arguments(meta.parameters, shaped)
            kept = {k: v for k, v in back.items() if k in example.input or v is not None}
            if kept != example.input:
                problems.append(
                    f"example {example.description!r} does not come back from the {dialect} "
                    f"strict shape: {kept!r}"
                )
    return problems


def check_plugin(
    distribution: str,
    *,
    run_examples: bool = True,
    config: Mapping[str, Any] | None = None,
    network: bool = False,
    env: Mapping[str, str] | None = None,
    exact_outputs: bool = False,
    prompt_arguments: Mapping[str, Mapping[str, str]] | None = None,
    template_uris: Mapping[str, str] | None = None,
) -> None:
    """Check an installed plugin distribution: it loads cleanly and its tools pass.

    The plugin is loaded alone, through its entry point, in ``env`` (empty by default) with
    ``config``; each tool is then checked as ``check_tool`` describes, with the capabilities
    the plugin registers. Its prompts are rendered and its resources read
    (``testing/_published.py``): ``prompt_arguments`` gives a prompt's example arguments
    by name (else each is ``"example"``), ``template_uris`` a template's example URI.

    Raises:
        ContractError: the plugin had load problems, registered nothing, or a tool, prompt
            or resource failed.
    """
    registry = load(config or {}, env={**(env or {}), "TOOLPLUG_PLUGINS": distribution})
    wanted = normalize_distribution(distribution)
    problems = [p.describe() for p in registry.problems]
    tools = [
        t
        for t in registry.tools.values()
        if t.distribution and normalize_distribution(t.distribution) == wanted
    ]
    published, broken = published_problems(
        registry, distribution, prompt_arguments=prompt_arguments, template_uris=template_uris
    )
    problems += broken
    if not tools and not published and not problems:  # a load problem would say why
        problems.append(f"no tool, prompt or resource was registered by {distribution}")
    categories = {c.name for c in registry.categories}
    capabilities = tuple(registry.capabilities.values())
    registry.close()
    for tool in tools:
        try:
            check_tool(
                tool.cls,
                run_examples=run_examples,
                known_categories=categories,
                network=network,
                config=config,
                env=env,
                capabilities=capabilities,
                exact_outputs=exact_outputs,
            )
        except ContractError as exc:
            problems += [f"{tool.name}: {p}" for p in exc.problems]
    if problems:
        raise ContractError(f"plugin {distribution!r}", problems)


@pytest.fixture
def toolplug_config(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """Build an isolated configuration mapping: ``toolplug_config(tools={...}, network=...)``.

    Cache and state directories point into the test's temporary directory.
    """

    def make(**tables: Any) -> dict[str, Any]:
        config: dict[str, Any] = {
            "cache_dir": str(tmp_path / "toolplug-cache"),
            "state_dir": str(tmp_path / "toolplug-state"),
        }
        config.update(tables)
        return config

    return make


@pytest.fixture
def toolplug_registry(toolplug_config: Callable[..., dict[str, Any]]) -> Iterator[Registry]:
    """A registry of every installed plugin with an isolated, empty configuration."""
    registry = load(toolplug_config())
    yield registry
    registry.close()


@dataclass
class LoopbackService:
    """A real HTTP server on 127.0.0.1 that the network guard lets tools reach.

    ``server`` is a ``pytest_httpserver.HTTPServer``: tell it what to answer with
    ``server.expect_request(...).respond_with_json(...)``. ``config(...)`` builds a
    configuration whose ``[network] allow`` names 127.0.0.1, so guarded fetches reach it.
    """

    server: HTTPServer
    """The server: set its answers with ``expect_request``."""
    _base: Callable[..., dict[str, Any]] = field(repr=False)

    @property
    def url(self) -> str:
        """The server's base URL, without a trailing slash: ``http://127.0.0.1:PORT``."""
        return self.server.url_for("/").rstrip("/")

    def url_for(self, path: str) -> str:
        """The URL of ``path`` on the server."""
        return self.server.url_for(path)

    def config(self, **tables: Any) -> dict[str, Any]:
        """``toolplug_config(**tables)`` with 127.0.0.1 added to ``[network] allow``."""
        network = dict(tables.pop("network", {}))
        network["allow"] = [*network.get("allow", []), "127.0.0.1/32"]
        return self._base(network=network, **tables)


@pytest.fixture
def toolplug_service(toolplug_config: Callable[..., dict[str, Any]]) -> Iterator[LoopbackService]:
    """A ``LoopbackService``: a real HTTP server on 127.0.0.1, for tools to fetch from.

    Built on pytest-httpserver (``pip install "toolplug[testing]"``); the server answers
    requests in threads, so many calls at once can reach it.
    """
    try:
        from pytest_httpserver import HTTPServer
    except ImportError:  # pragma: no cover - the testing extra brings it
        pytest.fail('toolplug_service needs pytest-httpserver: pip install "toolplug[testing]"')
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield LoopbackService(server, toolplug_config)
    finally:
        server.clear()
        if server.is_running():
            server.stop()
