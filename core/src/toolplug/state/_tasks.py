"""Calls as tasks: start a call, get a handle at once, ask for it later from any process.

``registry.start(name, arguments)`` runs the call through the engine (``acall``: validation,
approvals, limits, telemetry) on the registry's loop thread and returns a ``Task`` at once.
Its state is a record in the registry's state backend (``toolplug.state._backend``, as
``[calls] store`` names it): this process's memory by default, Redis when the store names
it. With Redis every process that shares the store can ask for a task by id
(``registry.task(id)``), and a cancel asked for anywhere reaches the process that runs it
on its next heartbeat. The same code runs on both: the tasks see only the backend.

A process that runs tasks beats every ``BEAT_SECONDS``: it marks itself alive, writes its
tasks' progress and picks up cancels. A working task whose process has not beaten for
``STALE_SECONDS`` is failed by whoever asks for it next (the process died: SIGKILL, a lost
machine), never left working for ever. A finished task is kept for ``[calls]
task_ttl_seconds``, and at most ``[calls] task_entries`` of them are kept, the oldest going
first: the store's memory is bounded.

When Redis cannot be reached, the tasks this process runs keep working from its memory
(the backend falls back; their state reaches Redis again with the next write); other
processes' tasks read as ``unknown`` meanwhile, saying the store cannot be reached.

The registry gives the tasks what they need of it, nothing more: the coroutine function
that runs a call (its engine's ``acall``), the loop tasks run on, and a function that runs
a coroutine there and waits for it (for the sync handles).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias, TypeVar

from toolplug.contract._tool import ErrorType, ToolResult
from toolplug.state._store import decode_result, encode_result
from toolplug.trust._conversation import Conversation, current

if TYPE_CHECKING:
    from toolplug.config._settings import CallsSettings
    from toolplug.contract._approval import Approver
    from toolplug.state._backend import Backend

__all__ = [
    "BEAT_SECONDS", "STALE_SECONDS", "CallRunner", "Task", "TaskState", "TaskStatus", "Tasks",
    "Waiter",
]

_T = TypeVar("_T")


class Waiter(Protocol):
    """Runs a coroutine on the registry's loop thread and waits for it (sync handles)."""

    def __call__(self, coroutine: Coroutine[Any, Any, _T], /) -> _T: ...


CallRunner: TypeAlias = Callable[..., Awaitable[ToolResult]]
"""The engine's ``acall``: ``(name, arguments, host, approver, *, approved, passthrough)``."""

log = logging.getLogger("toolplug")

TaskState: TypeAlias = Literal["working", "completed", "failed", "cancelled", "unknown"]
"""Where a task is: running, ended (``completed``: the tool succeeded; ``failed``: it
returned an error or its process died; ``cancelled``), or ``unknown`` (no such task: it
expired or never existed, or the shared store cannot be reached)."""

BEAT_SECONDS: Final = 0.5
"""How often a process that runs tasks says it is alive and writes their progress."""
STALE_SECONDS: Final = 3.0
"""A working task whose process has not beaten for this long is failed."""
_POLL_SECONDS: Final = (0.02, 0.25)
"""Waiting for another process's task: the first and the longest pause between reads."""
_ENDED: Final = frozenset({"completed", "failed", "cancelled"})
_RECORD: Final = ":"
_ALIVE: Final = "-alive:"
_CANCEL: Final = "-cancel:"
_ENDED_INDEX: Final = "s-ended"
"""The keys under the backend's ``task`` part: ``task:ID``, ``task-alive:OWNER``..."""


@dataclass(frozen=True, slots=True)
class TaskStatus:
    """What a task is doing, as last written to the store."""

    id: str
    """The task's id (unguessable; any process sharing the store can ask for it)."""
    state: TaskState
    """``working``, ``completed``, ``failed``, ``cancelled`` or ``unknown``."""
    tool: str = ""
    """The tool the task calls."""
    done: float | None = None
    """Progress the tool reported: units done."""
    total: float | None = None
    """Progress the tool reported: units in all, when it knows."""
    message: str | None = None
    """A line about the state: the tool's progress message, or why it failed."""
    created_at: float = 0.0
    """When it started (seconds since the epoch)."""
    updated_at: float = 0.0
    """When its record last changed (seconds since the epoch)."""
    lost: bool = False
    """It failed because its process ended (died, or shut down) before the tool did."""
    waiting: str | None = None
    """The approval request it waits for (``toolplug approvals approve ID``) while a person
    is to decide its call (``[approvals] inbox``); still ``working``."""

    @property
    def ended(self) -> bool:
        """True once the task completed, failed or was cancelled."""
        return self.state in _ENDED


@dataclass(slots=True)
class _Record:
    """A task's state as kept in the store (one JSON text in Redis)."""

    id: str
    tool: str
    owner: str
    state: TaskState = "working"
    created_at: float = 0.0
    updated_at: float = 0.0
    done: float | None = None
    total: float | None = None
    message: str | None = None
    lost: bool = False
    result: ToolResult | None = None
    waiting: str | None = None

    def status(self) -> TaskStatus:
        return TaskStatus(
            self.id, self.state, self.tool, self.done, self.total, self.message,
            self.created_at, self.updated_at, self.lost, self.waiting,
        )

    def dumps(self) -> str:
        body = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.waiting is None:  # left out: an earlier version reads the record still
            del body["waiting"]
        result = self.result
        if result is not None:
            encoded = encode_result(result)
            if encoded is None:  # data JSON cannot carry: the text still reaches every reader
                warning = "the result's data could not be stored with the task and was left out"
                encoded = encode_result(
                    dataclasses.replace(result, data=None, warnings=(*result.warnings, warning))
                )
            body["result"] = encoded
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def loads(cls, raw: bytes | str) -> _Record | None:
        try:
            body = json.loads(raw)
            encoded = body.pop("result", None)
            record = cls(**body)
        except (ValueError, TypeError):  # written by another version: not ours to read
            return None
        record.result = decode_result(encoded) if encoded is not None else None
        return record


def _ended_by(record: _Record, state: TaskState, result: ToolResult, *, lost: bool) -> None:
    record.state, record.result, record.lost = state, result, lost
    record.waiting = None
    record.updated_at = time.time()
    if result.error is not None:
        record.message = result.error.message


# -- where records live --------------------------------------------------------------


class _Records:
    """Task records in the backend: the record of each task, each process's heartbeat, the
    cancels asked for, and the index that keeps at most ``entries`` finished tasks (the
    oldest leave first), each for ``ttl`` seconds."""

    def __init__(self, backend: Backend, ttl: float, entries: int, owner: str) -> None:
        # room for the finished records, and for those running, their beats and cancels;
        # the keys are named as earlier versions named them (``task:ID``, ``task-alive:``,
        # ``task-cancel:``, ``tasks-ended``), so both read one another's tasks during an
        # upgrade of the replicas one by one
        self._backend = backend.part("task", entries=2 * entries + 10_000)
        self._ttl, self._entries, self._owner = ttl, entries, owner

    async def put(self, record: _Record) -> None:
        # at once, not one after the other: each is a round trip to Redis
        await asyncio.gather(
            self._backend.set(_ALIVE + self._owner, "1", STALE_SECONDS),
            self._backend.set(_RECORD + record.id, record.dumps(), self._ttl),
        )

    async def finish(self, record: _Record, expected: str = "") -> bool:
        """Write the record of a task that ended; with ``expected``, only if it still
        reads so (failing a task whose process died must not overwrite a result written
        meanwhile)."""
        text, key, backend = record.dumps(), _RECORD + record.id, self._backend
        if expected and not await backend.swap(key, expected, text, self._ttl):
            return False
        ended = backend.index_add(
            _ENDED_INDEX, record.id, record.updated_at, keep=self._entries,
            drop_below=time.time() - self._ttl, ttl=None,
        )
        if expected:
            dropped = await ended
        else:  # the record and the index at once: each is a round trip to Redis
            _, dropped = await asyncio.gather(backend.set(key, text, self._ttl), ended)
        if dropped:
            await self._backend.delete(*(_RECORD + d for d in dropped))
        return True

    async def get(self, task_id: str) -> tuple[_Record | None, str]:
        """The record and the text it was read from."""
        text = await self._backend.get(_RECORD + task_id)
        if text is None:
            return None, ""
        return _Record.loads(text), text

    async def alive(self, owner: str) -> bool:
        return await self._backend.get(_ALIVE + owner) is not None

    async def ask_cancel(self, task_id: str) -> None:
        await self._backend.set(_CANCEL + task_id, "1", self._ttl)

    async def beat(self, running: list[_Record]) -> set[str]:
        """Say this process is alive, write its tasks' progress, and return the ids of
        those asked to stop."""
        backend = self._backend
        progress = {_RECORD + record.id: record.dumps() for record in running}
        _, _, flags = await asyncio.gather(  # at once: each is a round trip to Redis
            backend.set(_ALIVE + self._owner, "1", STALE_SECONDS),
            backend.set_many(progress, self._ttl, only_if_present=True),
            backend.get_many([_CANCEL + r.id for r in running]),
        )
        return {r.id for r, flag in zip(running, flags, strict=True) if flag is not None}

    async def gone(self) -> None:
        """This process runs no more tasks."""
        await self._backend.delete(_ALIVE + self._owner)


# -- the engine side -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Call:
    """What ``start`` was asked to run."""

    name: str
    arguments: Any
    host: Mapping[str, Any] | None
    approver: Approver | None
    approved: bool
    conversation: Conversation | None = None
    """The conversation current where it was started: the task is recorded and guarded in
    it, though it runs on the registry's loop thread."""


@dataclass(slots=True)
class _Running:
    """A task this process runs."""

    record: _Record
    ended: concurrent.futures.Future[ToolResult]
    job: asyncio.Task[None] | None = None
    why: str | None = None  # set when the process ends it (shutdown), not a person


class Tasks:
    """The tasks of one registry: starts them, keeps their records, answers for them."""

    def __init__(
        self,
        call: CallRunner,
        settings: CallsSettings,
        backend: Backend,
        *,
        home: Callable[[], asyncio.AbstractEventLoop],
        wait: Waiter,
    ) -> None:
        self._call = call
        self._home = home
        self._wait = wait
        self.owner = secrets.token_hex(8)
        """This process's name in the backend (its heartbeat key)."""
        self.ttl = settings.task_ttl_seconds
        self._backend = backend
        self._records = _Records(
            backend, settings.task_ttl_seconds, settings.task_entries, self.owner
        )
        self._running: dict[str, _Running] = {}
        self._beating: asyncio.Task[None] | None = None
        # Held by a heartbeat's writes and a task's last write (both on the home loop), so a
        # heartbeat never writes "working" over the record of a task that just ended.
        self._writing: asyncio.Lock | None = None

    def _write_lock(self) -> asyncio.Lock:
        if self._writing is None:
            self._writing = asyncio.Lock()
        return self._writing

    @property
    def home(self) -> asyncio.AbstractEventLoop:
        """The loop tasks run on: the registry's loop thread."""
        return self._home()

    def running(self) -> int:
        """How many tasks this process runs now."""
        return len(self._running)

    def wait(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` on the home loop and wait for it in this thread."""
        return self._wait(coroutine)

    # -- starting ----------------------------------------------------------------

    def start(
        self, name: str, arguments: Any, host: Mapping[str, Any] | None,
        approver: Approver | None, *, approved: bool,
    ) -> Task:
        call = _Call(name, arguments, host, approver, approved, current())
        return self._wait(self._begin(call))

    async def astart(
        self, name: str, arguments: Any, host: Mapping[str, Any] | None,
        approver: Approver | None, *, approved: bool,
    ) -> Task:
        call = _Call(name, arguments, host, approver, approved, current())
        return await self._at_home(self._begin(call))

    async def _at_home(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        home = self.home
        if asyncio.get_running_loop() is home:
            return await coroutine
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, home))

    async def _begin(self, call: _Call) -> Task:
        """Record the task, then start it (on the home loop): a handle is answerable at
        once, by this process and, with Redis, by any other."""
        now = time.time()
        record = _Record(
            secrets.token_urlsafe(16), str(call.name), self.owner, created_at=now, updated_at=now
        )
        running = _Running(record, concurrent.futures.Future())
        self._running[record.id] = running
        await self._records.put(record)
        loop = asyncio.get_running_loop()
        if self._beating is None or self._beating.done():
            self._beating = loop.create_task(self._beat())
        running.job = loop.create_task(self._run(running, call))
        return Task(self, record.id)

    async def _run(self, running: _Running, call: _Call) -> None:
        record = running.record
        host = {
            **(call.host or {}), "task": record.id, "progress": _reporter(record, call.host),
            "waiting": _awaiting(record),
        }
        try:
            with call.conversation or contextlib.nullcontext():
                result = await self._call(
                    call.name, call.arguments, host, call.approver, approved=call.approved,
                    passthrough=(),
                )
        except asyncio.CancelledError:
            if running.why is not None:
                failed = ToolResult.failure(ErrorType.EXECUTION, running.why, retry_possible=True)
                _ended_by(record, "failed", failed, lost=True)
            else:
                stopped = ToolResult.failure(
                    ErrorType.EXECUTION, f"the task of {record.tool} was cancelled"
                )
                _ended_by(record, "cancelled", stopped, lost=False)
        except Exception as exc:  # acall returns failures; this is a bug, told as one
            log.exception("task %s of %s failed", record.id, record.tool)
            broken = ToolResult.failure(ErrorType.EXECUTION, f"{type(exc).__name__}: {exc}")
            _ended_by(record, "failed", broken, lost=False)
        else:
            _ended_by(record, "completed" if result.ok else "failed", result, lost=False)
        async with self._write_lock():
            await self._records.finish(record)
        self._running.pop(record.id, None)
        assert record.result is not None
        if not running.ended.done():
            running.ended.set_result(record.result)

    async def _beat(self) -> None:
        """While this process runs tasks: say so, write progress, pick up cancels."""
        while True:
            running = [r for r in self._running.values() if r.record.state == "working"]
            async with self._write_lock():
                stop = await self._records.beat([r.record for r in running])
            for item in running:
                if item.record.id in stop and item.job is not None:
                    item.job.cancel()
            if not self._running:
                return
            await asyncio.sleep(BEAT_SECONDS)

    # -- asking ------------------------------------------------------------------

    async def read(self, task_id: str) -> tuple[TaskStatus, ToolResult | None]:
        """The task's status and, once it ended, its result."""
        running = self._running.get(task_id)
        if running is not None:  # ended here while its end is being written: the result too
            return running.record.status(), running.record.result
        found: tuple[TaskStatus, ToolResult | None] = await self._at_home(self._read(task_id))
        return found

    async def _read(self, task_id: str) -> tuple[TaskStatus, ToolResult | None]:
        record, text = await self._records.get(task_id)
        if record is None:
            problem = self._backend.problem
            if problem is not None:
                why = f"the shared store cannot be reached: {problem}"
                return TaskStatus(task_id, "unknown", message=why), None
            return _unknown(task_id), None
        if record.state == "working" and not await self._records.alive(record.owner):
            why = (
                f"the process running this task stopped: no heartbeat for {STALE_SECONDS:g} "
                "seconds (it died or lost the store)"
            )
            failed = ToolResult.failure(ErrorType.EXECUTION, why, retry_possible=True)
            _ended_by(record, "failed", failed, lost=True)
            if not await self._records.finish(record, expected=text):
                return await self._read(task_id)  # it changed meanwhile: read again
        return record.status(), record.result

    async def result(self, task_id: str, wait: float | None) -> ToolResult | None:
        """The task's result once it ended: waits up to ``wait`` seconds (None: until it
        ends); None when it is still working then."""
        running = self._running.get(task_id)
        if running is not None and running.record.result is not None:
            return running.record.result  # ended; its end is still being written
        if running is not None:
            try:
                # shielded: a wait that times out must not cancel the task's own future
                return await asyncio.wait_for(
                    asyncio.shield(asyncio.wrap_future(running.ended)), wait
                )
            except TimeoutError:
                return None
        deadline = None if wait is None else time.monotonic() + wait
        pause = _POLL_SECONDS[0]
        while True:
            status, result = await self.read(task_id)
            if status.state == "unknown":
                return _unknown_result(status)
            if result is not None:
                return result
            if self._running.get(task_id) is not None:  # started here meanwhile: rare
                return await self.result(task_id, _left(deadline))
            left = _left(deadline)
            if left is not None and left <= 0:
                return None
            await asyncio.sleep(pause if left is None else min(pause, left))
            pause = min(pause * 2, _POLL_SECONDS[1])

    async def cancel(self, task_id: str) -> TaskStatus:
        """Ask the task to stop: at once when this process runs it, else at the next
        heartbeat of the process that does. Its status, as it reads now."""
        running = self._running.get(task_id)
        if running is not None:
            if running.job is not None:
                self.home.call_soon_threadsafe(running.job.cancel)
            return running.record.status()
        status, _ = await self.read(task_id)
        if status.state == "working":
            await self._at_home(self._records.ask_cancel(task_id))
        return status

    async def aclose(self) -> None:
        """End the tasks still running here as failed (the process is ending), on the home
        loop, and stop the heartbeat."""
        why = "the process running this task shut down before the task ended; start it again"
        jobs = []
        for running in list(self._running.values()):
            running.why = why
            if running.job is not None:
                running.job.cancel()
                jobs.append(running.job)
        if jobs:
            await asyncio.wait(jobs, timeout=5)
        if self._beating is not None:
            self._beating.cancel()
        await self._records.gone()


class Task:
    """A call running as a task: ask for its status and result, or cancel it.

    Made by ``registry.start`` (or ``astart``), or by ``registry.task(id)`` for a task any
    process sharing the store started. Never raises for the task's fault: a task that
    cannot be found reads as ``unknown``, and its result is a ``NotFoundError``.
    """

    __slots__ = ("_tasks", "id")

    def __init__(self, tasks: Tasks, task_id: str) -> None:
        self._tasks = tasks
        self.id = task_id
        """The task's id: pass it to ``registry.task(id)`` in this process or another."""

    def __repr__(self) -> str:
        return f"<Task {self.id}>"

    def status(self) -> TaskStatus:
        """What the task is doing now."""
        running = self._tasks._running.get(self.id)
        if running is not None:
            return running.record.status()
        return self._tasks.wait(self.astatus())

    async def astatus(self) -> TaskStatus:
        """``status`` for async code."""
        status, _ = await self._tasks.read(self.id)
        return status

    def result(self, wait: float | None = None) -> ToolResult | None:
        """The call's ``ToolResult`` once the task ended, waiting up to ``wait`` seconds
        for it (None: as long as it takes); None if it is still working then."""
        return self._tasks.wait(self._tasks.result(self.id, wait))

    async def aresult(self, wait: float | None = None) -> ToolResult | None:
        """``result`` for async code."""
        return await self._tasks.result(self.id, wait)

    def cancel(self) -> TaskStatus:
        """Ask the task to stop; its status as it reads now (it reads ``cancelled`` once
        the process that runs it has stopped the tool). An ended task stays as it is."""
        return self._tasks.wait(self._tasks.cancel(self.id))

    async def acancel(self) -> TaskStatus:
        """``cancel`` for async code."""
        return await self._tasks.cancel(self.id)


def _reporter(
    record: _Record, host: Mapping[str, Any] | None
) -> Callable[..., None]:
    """The ``progress(done, total=None, message=None)`` a task's tool reports through:
    kept in the record (written to Redis with the next heartbeat), and passed on to the
    host's own ``progress`` when it gave one."""
    theirs = (host or {}).get("progress")

    def progress(done: float, total: float | None = None, message: str | None = None) -> None:
        record.done, record.total = done, total
        if message is not None:
            record.message = message
        record.updated_at = time.time()
        if callable(theirs):
            theirs(done, total)

    return progress


def _awaiting(record: _Record) -> Callable[[Any], None]:
    """The ``waiting(request)`` the inbox (``toolplug.engine._inbox``) tells of the approval
    request the task's call waits for, and of None once it was decided: kept in the record
    (written with the next heartbeat)."""

    def waiting(request: Any) -> None:
        record.waiting = None if request is None else str(request.id)
        record.updated_at = time.time()

    return waiting


def _unknown(task_id: str) -> TaskStatus:
    return TaskStatus(
        task_id, "unknown", message="no such task: it ended too long ago, or never existed"
    )


def _unknown_result(status: TaskStatus) -> ToolResult:
    kind = ErrorType.UNAVAILABLE if "store" in (status.message or "") else ErrorType.NOT_FOUND
    return ToolResult.failure(
        kind, f"task {status.id}: {status.message}", retry_possible=kind is ErrorType.UNAVAILABLE
    )


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.monotonic()
