"""The sync/async bridge: the one way between callers that wait in a thread and the
engine's coroutines, and the one way sync tools reach threads.

* ``Bridge.run`` is what every sync twin uses (``call``, ``wait``, ``ToolCall.execute``,
  ``Task.result``, ``Registry.read``, the llm integration), as pydantic-ai's ``run_sync``
  is. From plain sync code the coroutine runs on the calling thread's own event loop (no
  thread hop); from code whose thread already runs a loop, on the registry's one
  ``LoopThread``.
* The one fast path: a call from plain sync code (no loop in the thread) that the engine
  found unable to wait (a sync tool, the in-process store, no interceptors, no
  concurrency limit) is stepped to its end with no loop at all (``run(..., loopless=
  True)``). No loop runs an engine coroutine then, and only then, so the pipeline runs the
  sync tool in the caller's thread and ``pause`` sleeps there when they find no running
  loop: no step of the pipeline carries a flag.
* ``Workers`` runs sync tools in a bounded pool; time spent waiting for a free thread is
  bounded on its own and never counts against the tool's time limit.
* ``limited`` awaits an async tool under its time limit, arming the timer only if the tool
  suspends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import os
import threading
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, Final, TypeVar

__all__ = [
    "Bridge",
    "LoopThread",
    "QueueTimeout",
    "Workers",
    "limited",
    "loop_running",
    "offload_pool",
    "pause",
    "settled",
]

_T = TypeVar("_T")

_offload: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None
"""The pool ``offload_pool`` made, and the process it was made in."""
_OFFLOAD_LOCK: Final = threading.Lock()


def offload_pool() -> concurrent.futures.ThreadPoolExecutor:
    """toolplug's own threads for its CPU work moved off the event loop: the flow guard's
    reading and checking of long results, the output budget's measuring and cutting of
    large data. Made on first use in each process (a forked child has none of its parent's
    threads), apart from the loop's default pool (``asyncio.to_thread``), where work a tool
    put may be waiting for this very call to end. Two threads: the work holds the GIL
    between hand-overs, so more would only take turns."""
    global _offload  # noqa: PLW0603 - one pool per process, made on first use
    found = _offload
    if found is None or found[0] != os.getpid():
        with _OFFLOAD_LOCK:
            if _offload is None or _offload[0] != os.getpid():
                _offload = (
                    os.getpid(),
                    concurrent.futures.ThreadPoolExecutor(
                        2, thread_name_prefix="toolplug-offload"
                    ),
                )
            found = _offload
    return found[1]


class QueueTimeout(Exception):
    """Waited longer than allowed for a worker thread or a concurrency slot."""

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"waited {seconds:g} s for {what}")
        self.what = what
        self.seconds = seconds


def loop_running() -> bool:
    """Whether an event loop runs in this thread (asyncio's own check, without the
    exception ``get_running_loop`` raises: that costs more than a whole fast call)."""
    return asyncio._get_running_loop() is not None


class _LoopHolder:
    """One thread's event loop for sync calls, shared by every registry; closed when the
    thread ends (its thread-locals are dropped then, outside any garbage cycle)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        loop = self.loop
        if loop.is_running() or loop.is_closed():
            return
        try:
            loop.run_until_complete(_wound_down())
        finally:
            loop.close()


class _Holder(threading.local):
    holder: _LoopHolder | None = None


_HOLDER: Final = _Holder()


def _thread_loop() -> asyncio.AbstractEventLoop:
    """The calling thread's own event loop for sync calls, made on its first call."""
    holder = _HOLDER.holder
    if holder is None:
        holder = _HOLDER.holder = _LoopHolder()
    return holder.loop


class Bridge:
    """The one bridge of one registry's engine: its sync callers' door into the engine's
    coroutines, its loop thread (made on first use, at most one) and its worker threads."""

    def __init__(self, workers: int) -> None:
        self.workers = Workers(workers)
        self._thread: LoopThread | None = None
        self._lock = threading.Lock()

    def run(self, coroutine: Coroutine[Any, Any, _T], *, loopless: bool = False) -> _T:
        """Run one of the engine's coroutines to its end for a caller that waits in its
        thread. ``loopless``: the caller found that it cannot wait and that no loop runs
        in this thread (the fast path), so it is stepped here with no loop."""
        if loopless:
            return _stepped(coroutine)
        if not loop_running():  # this thread's own loop: no hop to another thread
            return _thread_loop().run_until_complete(coroutine)
        # Sync code called from async code: this thread's loop is busy running that code.
        return self.thread().run(coroutine)

    def thread(self) -> LoopThread:
        """The registry's loop thread, started on first use."""
        thread = self._thread
        if thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = LoopThread()
                thread = self._thread
        return thread

    def started(self) -> LoopThread | None:
        """The loop thread if it was started, else None."""
        return self._thread

    def close(self) -> None:
        """Stop the loop thread and let the worker threads end."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop()
        self.workers.close()


def _stepped(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine that cannot suspend to its end in this thread, with no loop."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        result: _T = stop.value
        return result
    coroutine.close()
    raise RuntimeError("toolplug: a call chosen to run without a loop tried to wait")


async def pause(seconds: float) -> None:
    """Wait: awaited on a loop; in the caller's own thread on the fast path."""
    if not loop_running():
        time.sleep(seconds)
    else:
        await asyncio.sleep(seconds)


async def settled(awaitable: Awaitable[_T], timeout: float, bridge: Bridge) -> _T:
    """An awaitable a sync tool returned, awaited under its time limit (on the fast path,
    run to its end through the bridge, as any sync caller's)."""

    async def bounded() -> _T:
        async with asyncio.timeout(timeout):
            return await awaitable

    if not loop_running():
        return bridge.run(bounded())
    return await bounded()


class LoopThread:
    """An event loop in a daemon thread of its own: where the bridge runs what a sync
    caller waits for when the caller's own thread's loop is busy (``Bridge.thread``)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="toolplug-loop", daemon=True
        )
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` on the loop (with the caller's context) and wait for it."""
        context = contextvars.copy_context()
        if threading.current_thread() is self.thread:
            # Called on this loop's own thread (a sync interceptor's call.execute()):
            # waiting here would wait for ourselves, so a short-lived thread runs it on a
            # loop of its own. The one place toolplug starts a loop on another thread.
            with concurrent.futures.ThreadPoolExecutor(1, "toolplug") as pool:
                return pool.submit(context.run, asyncio.run, coroutine).result()
        done: concurrent.futures.Future[_T] = concurrent.futures.Future()
        holder: list[asyncio.Task[_T]] = []

        def start() -> None:
            task = self.loop.create_task(coroutine, context=context)
            holder.append(task)
            task.add_done_callback(lambda t: _settle(done, t))

        self.loop.call_soon_threadsafe(start)
        try:
            return done.result()
        except BaseException:  # KeyboardInterrupt in the caller: stop the call too
            if holder and not done.done():
                self.loop.call_soon_threadsafe(holder[0].cancel)
            raise

    def stop(self) -> None:
        """End what is left on the loop (as ``asyncio.run`` does: tasks cancelled and
        awaited, async generators finalized), then stop the loop and its thread."""
        if self.loop.is_closed():
            return
        if threading.current_thread() is self.thread:
            self.loop.stop()  # dropped on its own thread: run_forever returns, the loop stays open
            return
        if self.thread.is_alive():
            ending = asyncio.run_coroutine_threadsafe(_wound_down(), self.loop)
            with contextlib.suppress(BaseException):
                ending.result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


async def _wound_down() -> None:
    """Cancel every other task of the running loop and wait for their ends, then finalize
    its async generators: what ``asyncio.run`` does before it closes its loop."""
    current = asyncio.current_task()
    left = [task for task in asyncio.all_tasks() if task is not current]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


def _settle(done: concurrent.futures.Future[Any], task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        done.cancel()
    elif task.exception() is not None:
        done.set_exception(task.exception())
    else:
        done.set_result(task.result())


class Workers:
    """A bounded pool of threads for sync tools, made on first use."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    async def run(
        self, function: Callable[..., _T], *args: Any, limit: float, queue_limit: float
    ) -> _T:
        """``function(*args)`` in a worker thread: at most ``queue_limit`` seconds waiting for a
        free thread (``QueueTimeout``), then at most ``limit`` seconds running
        (``TimeoutError``; the thread is abandoned, not stopped)."""
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = concurrent.futures.ThreadPoolExecutor(
                        self.size, thread_name_prefix="toolplug-tool"
                    )
                pool = self._pool
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        began: asyncio.Future[None] = loop.create_future()

        def work() -> _T:
            loop.call_soon_threadsafe(_wake, began)  # before the result: callbacks keep order
            return context.run(function, *args)

        done = loop.run_in_executor(pool, work)
        try:
            try:
                async with asyncio.timeout(queue_limit):
                    await began
            except TimeoutError:
                raise QueueTimeout(
                    f"a free worker thread (all {self.size} busy)", queue_limit
                ) from None
            async with asyncio.timeout(limit):
                return await done
        except BaseException:
            done.cancel()  # still queued: it never runs; running: abandoned
            raise

    def close(self) -> None:
        """Let the threads end; queued work is cancelled, running work is abandoned."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def limited(coroutine: Any, timeout: float) -> Any:
    """Await a tool's coroutine under its time limit, arming the timer only if it waits.

    Most calls that return at once never suspend: their first step runs here directly,
    and the timer (a third of an immediate call's cost) is armed only when the coroutine
    does suspend, with the deadline counted from the start.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        first = coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    except BaseException:
        coroutine.close()
        raise
    async with asyncio.timeout_at(started + timeout):
        return await _resumed(coroutine, first)


@types.coroutine
def _resumed(coroutine: Any, first: Any) -> Generator[Any, Any, Any]:
    """Go on with a coroutine whose first step already ran (what ``await`` would do)."""
    value = first
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:
            try:
                value = coroutine.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                value = coroutine.send(sent)
            except StopIteration as stop:
                return stop.value
