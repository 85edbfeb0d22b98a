"""The sync/async bridge: awaited work for callers that wait in a thread, and sync tools in
threads for callers that await.

* ``call`` from plain sync code runs the engine's coroutines on the calling thread's own
  event loop (no thread hop); from inside async code (whose loop is busy), on the
  registry's ``LoopThread``.
* A coroutine that cannot suspend (a sync tool, no waits) is ``drive``-n without any loop.
* ``Workers`` runs sync tools in a bounded pool; time spent waiting for a free thread is
  bounded on its own and never counts against the tool's time limit.
* ``limited`` awaits an async tool under its time limit, arming the timer only if the tool
  suspends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Final, TypeVar

__all__ = [
    "LoopThread",
    "QueueTimeout",
    "Workers",
    "await_elsewhere",
    "drive",
    "limited",
    "pause",
    "running_loop",
    "thread_loop",
]

_T = TypeVar("_T")


class QueueTimeout(Exception):
    """Waited longer than allowed for a worker thread or a concurrency slot."""

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"waited {seconds:g} s for {what}")
        self.what = what
        self.seconds = seconds


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
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


_THREAD_LOOPS: Final = threading.local()


def thread_loop() -> asyncio.AbstractEventLoop:
    """The calling thread's own event loop for sync calls, made on its first call."""
    holder: _LoopHolder | None = getattr(_THREAD_LOOPS, "holder", None)
    if holder is None:
        holder = _THREAD_LOOPS.holder = _LoopHolder()
    return holder.loop


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop of this thread, or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class LoopThread:
    """An event loop in a daemon thread of its own: where sync ``call`` runs what awaits
    when its own thread's loop is busy."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="toolplug-loop", daemon=True
        )
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` on the loop (with the caller's context) and wait for it."""
        if threading.current_thread() is self.thread:
            # Called from this loop's own thread (an interceptor calling call.execute()):
            # waiting here would wait for ourselves, so use a short-lived loop elsewhere.
            with concurrent.futures.ThreadPoolExecutor(1, "toolplug") as pool:
                return pool.submit(asyncio.run, coroutine).result()
        context = contextvars.copy_context()
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
        """Stop the loop and its thread."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is self.thread:
            return  # dropped on its own thread: run_forever returns, the loop stays open
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


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

    async def run(self, function: Callable[[], _T], *, limit: float, queue_limit: float) -> _T:
        """``function()`` in a worker thread: at most ``queue_limit`` seconds waiting for a
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
            return context.run(function)

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


def drive(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine that never suspends to its end, without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        result: _T = stop.value
        return result
    coroutine.close()
    raise RuntimeError("toolplug: a call chosen to run without a loop tried to wait")


async def pause(seconds: float, *, inline: bool) -> None:
    """Wait: awaited on a loop; in the sync caller's own thread when there is none."""
    if inline:
        time.sleep(seconds)
    else:
        await asyncio.sleep(seconds)


def await_elsewhere(awaitable: Any, timeout: float) -> Any:
    """An awaitable returned by a sync tool under the sync ``call``: run it to its end."""

    async def bounded() -> Any:
        async with asyncio.timeout(timeout):
            return await awaitable

    if running_loop() is None:
        return asyncio.run(bounded())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="toolplug") as pool:
        return pool.submit(asyncio.run, bounded()).result()
