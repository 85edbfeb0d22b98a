"""Where mounted sessions live: one event loop on a thread of its own, one session a server.

An MCP client session belongs to the task that opened it (its transport runs in that
task's task group), while toolplug's callers await from their own loops: the host's
``acall`` on its loop, the sync ``call`` on a loop of its thread, ``serve`` on another. So
each server's session is opened, owned and closed by one task on this module's loop, and
callers reach it through ``run``, which awaits the work on that loop without blocking the
caller's. Cancelling the caller cancels the work there, and the SDK tells the server with
``notifications/cancelled``.

A session starts on first use and is shared by every call of that server in the process.
When the server exits or the connection breaks, the session is dropped and the next use
starts it again, after a backoff that doubles with each failure in a row (0.5 s to 30 s).

Whatever is started here is ended here. The SDK starts a stdio server in a process group
of its own (``start_new_session``) and, when its session ends, closes the server's stdin,
then after a grace period sends SIGTERM to the group, then SIGKILL (about 4 s for a
server that ignores both). A start that is given up (no answer within
``startup_timeout_seconds``) waits for that before it reports the server down, and
closing waits for every session a connection ever opened, the given-up ones too; at
interpreter exit every session is closed that way.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import logging
import shlex
import shutil
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from toolplug.sources.mcp._down import ServerDown, tail

if TYPE_CHECKING:
    from mcp import Client

    from toolplug.config._servers import ServerSettings
    from toolplug.contract._tool import ToolContext
    from toolplug.sources.mcp._credentials import Credentials

__all__ = [
    "Connection", "InFlight", "Resolved", "ServerDown", "close_all", "loop", "run",
    "run_blocking", "session", "tail",
]

log = logging.getLogger("toolplug.mount")
T = TypeVar("T")

_BACKOFF_FIRST = 0.5
_BACKOFF_MAX = 30.0
_CLOSE_SECONDS = 5.0
"""How long a session is given to end by itself once asked to (its server to exit)."""
_END_SECONDS = 10.0
"""How long the SDK's end of a session may take once cancelled: its stdin closed, SIGTERM
to the process group, SIGKILL (2 s apart), the process reaped."""


class _Loop:
    """The thread and event loop every mounted session lives on (started on first use)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self._serve, name="toolplug-mcp-sessions", daemon=True
        )
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()


_home: _Loop | None = None
_home_lock = threading.Lock()
_connections: list[Connection] = []


def _loop() -> asyncio.AbstractEventLoop:
    global _home  # noqa: PLW0603 - one home per process, made on first use
    if _home is None:
        with _home_lock:
            if _home is None:
                _home = _Loop()
                atexit.register(close_all)
    return _home.loop


def loop() -> asyncio.AbstractEventLoop:
    """The sessions' loop (started on first use)."""
    return _loop()


async def run(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Await ``work()`` on the sessions' loop, from any loop, without blocking this one."""
    home = _loop()
    try:
        if asyncio.get_running_loop() is home:
            return await work()
    except RuntimeError:  # pragma: no cover - run is always awaited
        pass
    future = asyncio.run_coroutine_threadsafe(work(), home)
    return await asyncio.wrap_future(future)


def run_blocking(work: Callable[[], Coroutine[Any, Any, T]], timeout: float) -> T:
    """``work()`` on the sessions' loop, waited for from a thread that is not that loop's."""
    future = asyncio.run_coroutine_threadsafe(work(), _loop())
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"no answer within {timeout:g} s") from None


def close_all() -> None:
    """Close every session (their servers exit); called at interpreter exit."""
    if _home is None or not _connections:
        return

    async def close() -> None:
        await asyncio.gather(*(c.close() for c in list(_connections)), return_exceptions=True)

    if threading.current_thread() is _home.thread:  # pragma: no cover - never from a session
        return
    with contextlib.suppress(Exception):
        run_blocking(close, _CLOSE_SECONDS + _END_SECONDS)


def session() -> Any:
    """``toolplug.sources.mcp._session``: the part that speaks MCP, imported (with the SDK) once,
    when a server is first started or called; the mounted tools' lists are read without it.

    Raises:
        ServerDown: the MCP SDK is not installed.
    """
    try:
        from toolplug.sources.mcp import _session
    except ImportError:
        raise ServerDown('the MCP SDK is not installed: pip install "toolplug[mcp]"') from None
    return _session


@dataclass(eq=False)
class InFlight:
    """One call of a mounted tool in flight: what a server's request during it talks to.

    The call's ``ToolContext`` answers on the caller's loop (``loop``), in the caller's
    context variables (``variables``: the conversation the flow guard tracks), so a
    question the server asks reaches the caller's host as the tool's own would.
    """

    context: ToolContext
    loop: asyncio.AbstractEventLoop
    variables: contextvars.Context
    paused: BaseException | None = None
    """What the caller's host raised instead of answering (a modern ``toolplug serve``'s
    ``InputLater``, a framework's pause): raised from the call once the server's answer is
    in, never inside the SDK's request handler, whose session it would end."""

    @classmethod
    def here(cls, context: ToolContext) -> InFlight:
        """The call of ``context`` running in the current task."""
        return cls(context, asyncio.get_running_loop(), contextvars.copy_context())

    async def on_caller(self, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Await ``work()`` on the caller's loop and in its context, from any loop."""
        if asyncio.get_running_loop() is self.loop:
            return await self.loop.create_task(work(), context=self.variables)
        done: concurrent.futures.Future[T] = concurrent.futures.Future()
        started: list[asyncio.Task[T]] = []

        def start() -> None:
            if done.cancelled():
                return
            task = self.loop.create_task(work(), context=self.variables)
            started.append(task)

            def settle(task: asyncio.Task[T]) -> None:
                if done.cancelled():
                    return
                if task.cancelled():
                    done.cancel()
                elif task.exception() is not None:
                    done.set_exception(task.exception())
                else:
                    done.set_result(task.result())

            task.add_done_callback(settle)

        self.loop.call_soon_threadsafe(start)
        try:
            return await asyncio.wrap_future(done)
        except asyncio.CancelledError:
            self.loop.call_soon_threadsafe(lambda: [t.cancel() for t in started])
            raise


@dataclass
class Resolved:
    """A server's settings with its ``{ env = ... }`` and ``{ file = ... }`` values read."""

    settings: ServerSettings
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    oauth: Credentials | None = None
    """Its OAuth client's settings and secret (``auth = "oauth"``), with the token store."""
    problem: str | None = None
    """Why the server cannot be started with these values (an unset variable ...)."""

    def describe(self) -> str:
        """The command line or URL, for reasons and ``doctor`` (no secret in it)."""
        s = self.settings
        if s.command is not None:
            return shlex.join([s.command, *s.args])
        return s.url or ""


class Connection:
    """One server's session in this process: started on first use, shared, restarted."""

    def __init__(
        self, server: Resolved, on_tools_changed: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self.server = server
        self.name = server.settings.name
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._sessions: dict[asyncio.Task[None], asyncio.Event] = {}
        """Every session task not yet ended (the open one, given-up starts, lost ones),
        with the event that asks it to end: closing waits for them all."""
        self._start_lock: asyncio.Lock | None = None
        self._failures = 0
        self._retry_at = 0.0
        self._last_problem: str | None = None
        self._on_tools_changed = on_tools_changed
        self._relisten: asyncio.Event | None = None
        self.watched: Callable[[], Sequence[str]] = tuple
        """The URIs of the server's mounted resources, whose updates its session listens
        for (the mount sets it)."""
        self.calls: list[InFlight] = []
        """The calls in flight on this connection, oldest first (``_session`` keeps it)."""
        self.listens = True
        """Whether its session listens for the server's changes (a served principal's
        session does not: the operator's hears them for the mount)."""
        _connections.append(self)

    # -- on the sessions' loop ---------------------------------------------------------

    async def client(self) -> Client:
        """The open session, started (or restarted after its backoff) when there is none."""
        if self._client is not None and self._owner is not None and not self._owner.done():
            return self._client
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._client is not None and self._owner is not None and not self._owner.done():
                return self._client
            wait = self._retry_at - time.monotonic()
            if wait > 0 and self._last_problem is not None:
                raise ServerDown(self._last_problem, retry_after=round(wait, 1))
            try:
                self._client = await self._start()
            except ServerDown as down:
                self._failures += 1
                backoff = min(_BACKOFF_MAX, _BACKOFF_FIRST * 2 ** (self._failures - 1))
                self._retry_at = time.monotonic() + backoff
                self._last_problem = down.reason
                raise
            self._failures, self._last_problem = 0, None
            return self._client

    def lost(self, reason: str) -> None:
        """The connection broke during a call: drop it; the next use starts it again."""
        self._last_problem = reason
        self._failures += 1
        self._retry_at = time.monotonic()  # the first restart is immediate
        if self._closing is not None:
            self._closing.set()
        self._client = None

    def ended(self, client: Any) -> None:
        """The session of ``client`` ended (its owning task is over)."""
        if self._client is client:
            self._client = None

    @property
    def started(self) -> bool:
        """Whether a session was ever opened (or is being opened)."""
        return self._start_lock is not None

    def forget(self) -> None:
        """Leave the process-wide list of sessions (one that was never started)."""
        with contextlib.suppress(ValueError):
            _connections.remove(self)

    async def close(self) -> None:
        """Close the session and wait for its transport (and process) to end."""
        self.forget()
        await self.stop()

    async def stop(self) -> None:
        """End every session of this connection and wait until their processes are gone;
        the next use starts a new one."""
        self._client = None
        sessions = dict(self._sessions)
        for closing in sessions.values():
            closing.set()
        if not sessions:
            return
        _done, pending = await asyncio.wait(list(sessions), timeout=_CLOSE_SECONDS)
        await _end(pending)

    async def _start(self) -> Client:
        settings = self.server.settings
        if self.server.problem:
            raise ServerDown(self.server.problem)
        if settings.command is not None and shutil.which(settings.command) is None:
            raise ServerDown(f"command not found: {settings.command}")
        sdk = session()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Client] = loop.create_future()
        closing = asyncio.Event()
        # closed by _own, which outlives this call
        stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        owner = loop.create_task(sdk.own(self, ready, closing, stderr), name=f"mcp-{self.name}")
        self._sessions[owner] = closing
        owner.add_done_callback(lambda task: self._sessions.pop(task, None))
        try:
            return await asyncio.wait_for(
                asyncio.shield(ready), settings.startup_timeout_seconds
            )
        except TimeoutError:
            said = tail(stderr, "; its stderr ends with: ")  # before the session closes it
            closing.set()
            await _end({owner})  # given up: its process (group) ends before it is reported
            raise ServerDown(
                f"no answer within {settings.startup_timeout_seconds:g} s" + said
            ) from None
        except asyncio.CancelledError:
            owner.cancel()  # ends in the background; closing waits for it
            raise
        except ServerDown:
            raise
        finally:
            if ready.done() and not ready.cancelled() and ready.exception() is None:
                self._owner, self._closing = owner, closing

    def relistening(self) -> asyncio.Event:
        """What ``relisten`` sets: cleared here, for the session's listener to wait on."""
        self._relisten = asyncio.Event()
        return self._relisten

    def relisten(self) -> None:
        """The mounted resources changed: the session listens for their updates anew."""
        if self._relisten is not None:
            self._relisten.set()

    async def tools_changed(self) -> None:
        """The server said its tools changed: the mount refreshes its list."""
        if self._on_tools_changed is not None:
            try:
                await self._on_tools_changed()
            except Exception as exc:
                log.warning("MCP server %s: refreshing its tool list failed: %r", self.name, exc)


async def _end(tasks: set[asyncio.Task[None]]) -> None:
    """Cancel session tasks and wait (bounded) while the SDK ends their servers."""
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    _done, left = await asyncio.wait(tasks, timeout=_END_SECONDS)
    for task in left:  # pragma: no cover - only a process that survives SIGKILL
        log.warning("MCP server session %s did not end in %g s", task.get_name(), _END_SECONDS)
