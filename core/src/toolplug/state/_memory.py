"""The memory backend: this process's memory, bounded by entries (and, for long texts, by
characters), each value with its own time to live. A feature's ``part`` is a region of its
own with its own bounds. Its methods never suspend, so the sync ``call`` may run them
without an event loop.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["MemoryBackend"]

def _expires(ttl: float | None) -> float:
    return math.inf if ttl is None else time.monotonic() + ttl


def _one(_value: tuple[float, Any]) -> int:
    return 1


def _text_size(value: tuple[float, str | bytes]) -> int:
    return len(value[1]) + 1


_V = TypeVar("_V", bound=tuple[float, Any])


class _Region(Generic[_V]):
    """``(expires, value)`` items, at most ``maxsize`` of them as ``size`` counts them; the
    least recently used go first, an expired one when it is next read. A dict in its own
    order: a few times cheaper than cachetools' ``TLRUCache``, which the spill path felt."""

    __slots__ = ("_items", "_size", "_used", "maxsize")

    def __init__(self, maxsize: int, size: Callable[[_V], int] = _one) -> None:
        self._items: dict[str, _V] = {}
        self._size = size
        self._used = 0
        self.maxsize = max(maxsize, 1)

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> _V | None:
        item = self._items.pop(key, None)
        if item is None:
            return None
        if item[0] <= time.monotonic():
            self._used -= self._size(item)
            return None
        self._items[key] = item  # the most recently used now
        return item

    def __setitem__(self, key: str, item: _V) -> None:
        self.pop(key)
        self._items[key] = item
        self._used += self._size(item)
        items = self._items
        while self._used > self.maxsize:
            self._used -= self._size(items.pop(next(iter(items))))

    def pop(self, key: str, default: None = None) -> _V | None:
        item = self._items.pop(key, None)
        if item is not None:
            self._used -= self._size(item)
        return item


class _Index:
    """An ordered index in memory: members by score, lowest first (kept sorted, so adding
    the newest and dropping the oldest cost a binary search)."""

    __slots__ = ("_order", "_scores")

    def __init__(self) -> None:
        self._order: list[tuple[float, str]] = []
        self._scores: dict[str, float] = {}

    def add(self, member: str, score: float, keep: int, drop_below: float) -> list[str]:
        order, scores = self._order, self._scores
        old = scores.get(member)
        if old is not None:
            del order[bisect.bisect_left(order, (old, member))]
        scores[member] = score
        bisect.insort(order, (score, member))
        below = bisect.bisect_left(order, (drop_below, ""))
        for _, gone in order[:below]:
            del scores[gone]
        del order[:below]
        over = len(order) - keep
        if over <= 0:
            return []
        dropped = [gone for _, gone in order[:over]]
        for gone in dropped:
            del scores[gone]
        del order[:over]
        return dropped

    def newest(self, drop_below: float) -> list[tuple[str, float]]:
        order = self._order
        start = bisect.bisect_left(order, (drop_below, ""))
        return [(member, score) for score, member in reversed(order[start:])]


class MemoryBackend:
    """This process's memory: bounded by entries (and characters of long texts), each value
    with its own time to live. Never suspends."""

    local = True

    def __init__(self, entries: int = 10_000, chars: int = 0) -> None:
        self._values: _Region[tuple[float, str]] = _Region(entries)
        self._indexes: _Region[tuple[float, _Index]] = _Region(entries)
        self._lists: _Region[tuple[float, list[str]]] = _Region(entries)
        # long texts and bytes, bounded together (characters and bytes alike)
        self._texts: _Region[tuple[float, str | bytes]] = _Region(chars, _text_size)
        self._windows: dict[str, deque[float]] = {}
        self._parts: dict[str, MemoryBackend] = {}
        # Calls run on many loops and threads (the sync ``call`` on its own); held for
        # dictionary work only, never across a wait.
        self._lock = threading.Lock()

    def part(self, prefix: str, *, entries: int, chars: int = 0) -> MemoryBackend:
        with self._lock:  # one region per prefix: who takes it again shares it
            found = self._parts.get(prefix)
            if found is None:
                found = self._parts[prefix] = MemoryBackend(entries, chars)
        return found

    def __len__(self) -> int:
        return len(self._values)

    async def get(self, key: str) -> str | None:
        return self.get_now(key)

    def get_now(self, key: str) -> str | None:
        """``get`` for a caller without a loop."""
        with self._lock:
            found = self._values.get(key)
        return found[1] if found is not None else None

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        with self._lock:
            found = [self._values.get(key) for key in keys]
        return [f[1] if f is not None else None for f in found]

    async def set(
        self, key: str, value: str, ttl: float | None, *,
        only_if_absent: bool = False, only_if_present: bool = False,
    ) -> bool:
        with self._lock:
            if only_if_absent or only_if_present:
                present = self._values.get(key) is not None
                if (only_if_absent and present) or (only_if_present and not present):
                    return False
            self._values[key] = (_expires(ttl), value)
        return True

    async def set_many(
        self, values: Mapping[str, str], ttl: float | None, *, only_if_present: bool = False
    ) -> None:
        expires = _expires(ttl)
        with self._lock:
            for key, value in values.items():
                if not only_if_present or self._values.get(key) is not None:
                    self._values[key] = (expires, value)

    async def delete(self, *keys: str) -> None:
        with self._lock:
            for key in keys:
                self._values.pop(key, None)
                self._texts.pop(key, None)

    async def swap(self, key: str, expected: str, value: str, ttl: float | None) -> bool:
        with self._lock:
            found = self._values.get(key)
            if found is None or found[1] != expected:
                return False
            self._values[key] = (_expires(ttl), value)
        return True

    async def append(self, key: str, value: str, ttl: float | None) -> int:
        with self._lock:
            found = self._lists.get(key)
            items = found[1] if found is not None else []
            items.append(value)
            self._lists[key] = (_expires(ttl), items)
            return len(items)

    async def read_list(self, key: str, start: int) -> list[str]:
        with self._lock:
            found = self._lists.get(key)
            return found[1][start:] if found is not None else []

    async def admit(self, key: str, calls: int, per_seconds: float) -> float:
        return self.admit_now(key, calls, per_seconds)

    def admit_now(self, key: str, calls: int, per_seconds: float) -> float:
        """``admit`` for a caller without a loop."""
        with self._lock:
            stamps = self._windows.setdefault(key, deque())
            now = time.monotonic()
            while stamps and now - stamps[0] >= per_seconds:
                stamps.popleft()
            if len(stamps) < calls:
                stamps.append(now)
                return 0.0
            return max(per_seconds - (now - stamps[0]), 0.001)

    async def index_add(
        self, index: str, member: str, score: float, *, keep: int, drop_below: float,
        ttl: float | None,
    ) -> list[str]:
        with self._lock:
            found = self._indexes.get(index)
            ordered = found[1] if found is not None else _Index()
            dropped = ordered.add(member, score, keep, drop_below)
            self._indexes[index] = (_expires(ttl), ordered)
        return dropped

    async def index_newest(self, index: str, *, drop_below: float) -> list[tuple[str, float]]:
        with self._lock:
            found = self._indexes.get(index)
            return found[1].newest(drop_below) if found is not None else []

    async def write_text(self, key: str, text: str, ttl: float) -> bool:
        value = (_expires(ttl), text)
        if _text_size(value) > self._texts.maxsize:
            return False  # larger than this region may hold: not kept
        with self._lock:
            self._texts[key] = value
        return True

    async def read_text(self, key: str, start: int, end: int) -> str | None:
        with self._lock:
            found = self._texts.get(key)
        if found is None or not isinstance(found[1], str):
            return None
        return found[1][start:end]

    async def write_bytes(self, key: str, data: bytes, ttl: float) -> bool:
        value = (_expires(ttl), data)  # the object itself: bytes are immutable
        if _text_size(value) > self._texts.maxsize:
            return False
        with self._lock:
            self._texts[key] = value
        return True

    async def read_bytes(self, key: str, start: int = 0, end: int | None = None) -> bytes | None:
        with self._lock:
            found = self._texts.get(key)
        if found is None or not isinstance(found[1], bytes):
            return None
        data = found[1]
        return data if start == 0 and (end is None or end >= len(data)) else data[start:end]

    def warning(self) -> str | None:
        return None

    @property
    def problem(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None
