"""The longest stall another task on the event loop saw: a probe task that ticks
(``await asyncio.sleep(0)``) all the while, for ``bench/guard_large.py`` and
``bench/guard_data.py``."""

from __future__ import annotations

import asyncio
import time
from types import TracebackType


class Probe:
    """Ticks on the running loop while open; ``take()`` is the longest gap between two of
    its ticks since the last ``take()`` (or since it started), in seconds."""

    def __init__(self) -> None:
        self._longest = 0.0
        self._running = True
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Probe:
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0.002)  # ticking, its first gaps forgotten
        self._longest = 0.0
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._running = False
        if self._task is not None:
            await self._task

    async def take(self) -> float:
        """The longest gap so far, counted after one more tick (which ends the last gap),
        and the count started afresh."""
        await asyncio.sleep(0)
        longest, self._longest = self._longest, 0.0
        return longest

    async def _tick(self) -> None:
        last = time.perf_counter()
        while self._running:
            await asyncio.sleep(0)
            now = time.perf_counter()
            self._longest = max(self._longest, now - last)
            last = now
