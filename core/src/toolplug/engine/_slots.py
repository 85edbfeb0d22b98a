"""Concurrency limits that hold across event loops and threads, and never block a thread.

``asyncio.Semaphore`` belongs to one event loop, and a registry's calls arrive on several:
the host's loops through ``acall``, and the registry's own loop behind the sync ``call``.
``Slots`` counts under a lock held only for the bookkeeping; a call over the limit awaits a
future of its own loop, which the call that frees a slot completes through
``call_soon_threadsafe``. A freed slot passes straight to the longest waiter (first come,
first served), and a waiter that is cancelled or times out gives back a slot it was handed.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from types import TracebackType

__all__ = ["Slots"]


class Slots:
    """At most ``limit`` holders at once; ``async with slots:`` waits for a turn."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._used = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        self._lock = threading.Lock()

    async def __aenter__(self) -> None:
        with self._lock:
            if self._used < self.limit and not self._waiters:
                self._used += 1
                return
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, waiter))
        try:
            await waiter
        except BaseException:
            with self._lock:
                try:
                    self._waiters.remove((loop, waiter))
                    handed = False
                except ValueError:  # already handed a slot, or about to be
                    handed = waiter.done() and not waiter.cancelled()
            if handed:
                self._release()
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._release()

    def _release(self) -> None:
        with self._lock:
            if not self._waiters:
                self._used -= 1
                return
            loop, waiter = self._waiters.popleft()
        # The slot now belongs to that waiter (the count stays); wake it on its own loop.
        try:
            loop.call_soon_threadsafe(self._hand_over, waiter)
        except RuntimeError:  # its loop is closed: pass the slot on
            self._release()

    def _hand_over(self, waiter: asyncio.Future[None]) -> None:
        if waiter.cancelled():  # it gave up before the wake-up arrived
            self._release()
        else:
            waiter.set_result(None)
