"""The state backend: the few primitives every feature that keeps state is written against.

The result cache and the rate limits (``_store``), spilled outputs (``_spill``), tasks
(``_tasks``) and the replicas' shared secrets (``serve``) keep their state through one
protocol, ``Backend``, implemented twice:

- ``MemoryBackend``: this process's memory, bounded by entries (and, for long texts, by
  characters), each value with its own time to live. Its methods never suspend, so the
  sync ``call`` may run them without an event loop.
- ``RedisBackend`` (``[calls] store = "redis://..."``, ``pip install "toolplug[redis]"``):
  one Redis server shared by every process pointed at it. Connections belong to one event
  loop, so every command runs on a home loop it is given (the registry's loop thread).
  A command that cannot reach Redis raises ``Unreachable``.

``SharedBackend`` puts the two together the way every feature needs: Redis while it can be
reached; when it cannot, this process's memory meanwhile (logged once, and stated in the
result of each call it served: ``warning``), while one probe at a time pings Redis in the
background; the call after its first answer uses Redis again. What was written here while
Redis was away stays readable here. redis-py's own options do the rest: a pooled
connection the server dropped (it restarted) is retried once on a fresh connection, and
an idle one is checked before use, so a restart alone costs no fallback.

A feature takes its ``part`` of the backend: its keys under a prefix of its own, and in
memory a region of its own with its own bounds (the cache's entries do not push tasks out).

The primitives: values with a time to live (``get``, ``get_many``, ``set``, with
set-if-absent and set-if-present, ``set_many``, ``delete``), compare-and-set (``swap``),
lists that count what they hold (``append``, ``read_list``), a moving window for rate
limits (``admit``), an ordered index (``index_add``: a member with a score, the lowest
dropped beyond a count or below a score; ``index_newest``), and long texts kept in chunks
and read by range (``write_text``, ``read_text``).
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import contextlib
import contextvars
import functools
import importlib
import logging
import math
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar
from urllib.parse import urlsplit

from toolplug.contract._errors import ConfigError

__all__ = [
    "Backend",
    "MemoryBackend",
    "RedisBackend",
    "SharedBackend",
    "Unreachable",
    "open_backend",
    "safe_url",
]

log = logging.getLogger("toolplug")

_T = TypeVar("_T")

CHUNK: Final = 1 << 20
"""Characters one Redis key of a long text holds."""
_PROBE_SECONDS: Final = 0.25
"""While Redis cannot be reached, how long between two probes of it."""
_SOCKET_SECONDS: Final = 1.0
"""How long a connect or a reply may take: an unreachable store must not hold calls long."""
_HEALTH_CHECK_SECONDS: Final = 5

_FELL_BACK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "toolplug_store_fell_back", default=False
)
"""Whether the backend served the current call from this process's memory instead of Redis
(each call's own flag: replicas and concurrent calls see different outcomes)."""


@dataclass(frozen=True)
class _Sdk:
    """What the Redis backend uses of redis-py."""

    Redis: Any
    Retry: Any
    ExponentialBackoff: Any
    DroppedError: type[Exception]
    RedisError: type[Exception]


@functools.cache
def _sdk() -> _Sdk:
    """redis-py, imported once, on first use: the memory backend never needs it (and
    importing it brings OpenTelemetry's instrumentation along where that is installed)."""
    aioredis = importlib.import_module("redis.asyncio")
    backoff = importlib.import_module("redis.backoff")
    return _Sdk(
        aioredis.Redis, aioredis.retry.Retry, backoff.ExponentialBackoff,
        aioredis.ConnectionError, aioredis.RedisError,
    )


def _installed() -> bool:
    try:
        _sdk()
    except ImportError:
        return False
    return True


class Unreachable(Exception):
    """A shared backend could not be used (Redis down, refused, timed out)."""


class Backend(Protocol):
    """What the features that keep state need from where they keep it."""

    local: bool
    """True when no method ever suspends (the sync ``call`` may then run without a loop)."""

    def part(self, prefix: str, *, entries: int, chars: int = 0) -> Backend:
        """The keys under ``prefix``; in memory a region of its own holding at most
        ``entries`` values and ``chars`` characters of long texts (the bounds of whoever
        took it first: the same prefix is the same region)."""

    async def get(self, key: str) -> str | None:
        """The value under ``key``, or None."""

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """``get`` of each key, in one round trip."""

    async def set(
        self, key: str, value: str, ttl: float | None, *,
        only_if_absent: bool = False, only_if_present: bool = False,
    ) -> bool:
        """Keep ``value`` for ``ttl`` seconds (None: until evicted); False when the
        condition kept it from being written."""

    async def set_many(
        self, values: Mapping[str, str], ttl: float | None, *, only_if_present: bool = False
    ) -> None:
        """``set`` of each key, in one round trip."""

    async def delete(self, *keys: str) -> None:
        """Drop the keys."""

    async def swap(self, key: str, expected: str, value: str, ttl: float | None) -> bool:
        """Compare-and-set: write ``value`` only if ``key`` still holds ``expected``."""

    async def append(self, key: str, value: str, ttl: float | None) -> int:
        """Add ``value`` at the end of the list under ``key`` (kept ``ttl`` seconds from
        now); the list's length with it: a counter and a log in one."""

    async def read_list(self, key: str, start: int) -> list[str]:
        """The items of the list under ``key`` from ``start`` (0 the first) on."""

    async def admit(self, key: str, calls: int, per_seconds: float) -> float:
        """A moving window: take one of ``calls`` slots per ``per_seconds``; 0.0, or the
        seconds until one frees up."""

    async def index_add(
        self, index: str, member: str, score: float, *, keep: int, drop_below: float,
        ttl: float | None,
    ) -> list[str]:
        """Put ``member`` in the ordered index; drop members scored below ``drop_below`` and
        the lowest beyond ``keep``. The members dropped for the count."""

    async def index_newest(self, index: str, *, drop_below: float) -> list[tuple[str, float]]:
        """The members with their scores, highest first (those below ``drop_below`` left out)."""

    async def write_text(self, key: str, text: str, ttl: float) -> bool:
        """Keep a long text, to be read by range; False when not every process sharing the
        backend can read it (it fell back to memory, or it was too large to keep)."""

    async def read_text(self, key: str, start: int, end: int) -> str | None:
        """Characters ``start`` to ``end`` of a text ``write_text`` kept, or None when it is
        gone."""

    def warning(self) -> str | None:
        """What the current call's result should say about the backend (it fell back from
        Redis), or None; asked once, when the call has its result."""

    @property
    def problem(self) -> str | None:
        """Why the shared backend cannot be used now, or None."""

    async def aclose(self) -> None:
        """Release connections."""


# -- in memory -----------------------------------------------------------------------


def _expires(ttl: float | None) -> float:
    return math.inf if ttl is None else time.monotonic() + ttl


def _one(_value: tuple[float, Any]) -> int:
    return 1


def _text_size(value: tuple[float, str]) -> int:
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
        self._texts: _Region[tuple[float, str]] = _Region(chars, _text_size)
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
        return found[1][start:end] if found is not None else None

    def warning(self) -> str | None:
        return None

    @property
    def problem(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None


# -- in Redis ------------------------------------------------------------------------

# A moving window in one atomic step, on the Redis server's clock (replicas' clocks may
# differ): drop the stamps older than the window, then either add one or say how long
# until the oldest leaves. Times are in microseconds.
_ADMIT: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + 1)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(math.ceil(tonumber(oldest[2]) + window - now), 1)
"""

# Compare-and-set: the write happens only if the key still reads as expected.
_SWAP: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] == '' then redis.call('SET', KEYS[1], ARGV[2])
else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1
"""

# Add to a sorted set; drop those below a score and the lowest beyond a count (returned).
_INDEX_ADD: Final = """
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
local dropped = {}
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #old, 2 do dropped[#dropped + 1] = old[i] end
end
if ARGV[5] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
return dropped
"""


def _ms(ttl: float | None) -> int | None:
    return None if ttl is None else max(int(ttl * 1000), 1)


def _text(raw: Any) -> str | None:
    if raw is None:
        return None
    return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)


class _Connection:
    """One Redis client, made on first use, and the loop every command of it runs on."""

    def __init__(self, url: str, home: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self.url = url
        self.home = home
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            # One retry, on a fresh connection, when a pooled one was dropped by the server
            # (it restarted); none on a timeout: a frozen server would hold every call
            # for a multiple of the socket limit, and the fallback answers meanwhile.
            sdk = _sdk()
            dropped = sdk.DroppedError
            retry = sdk.Retry(sdk.ExponentialBackoff(cap=0.05, base=0.01), 1, (dropped,))
            self._client = sdk.Redis.from_url(
                self.url,
                socket_connect_timeout=_SOCKET_SECONDS,
                socket_timeout=_SOCKET_SECONDS,
                retry=retry,
                retry_on_error=[dropped],
                health_check_interval=_HEALTH_CHECK_SECONDS,
            )
        return self._client

    async def run(self, work: Callable[[Any], Coroutine[Any, Any, _T]]) -> _T:
        """``work(client)`` on the home loop (the caller's loop waits, unblocked); a Redis
        that cannot be used raises ``Unreachable``."""
        try:
            home = self.home()
            if asyncio.get_running_loop() is home:
                return await work(self.client())
            coroutine = work(self.client())
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, home))
        except (_sdk().RedisError, OSError) as exc:
            raise Unreachable(f"{type(exc).__name__}: {exc}") from exc

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> concurrent.futures.Future[None]:
        """Start ``coroutine`` on the home loop, not waiting for it."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.home())

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # already gone: nothing to release
                await self.run(lambda _c: client.aclose())


class RedisBackend:
    """Values, windows, indexes and texts in a Redis server, shared by every process that
    uses it. Raises ``Unreachable`` when Redis cannot be used."""

    local = False

    def __init__(
        self, url: str, *, prefix: str = "toolplug:",
        home: Callable[[], asyncio.AbstractEventLoop] = asyncio.get_running_loop,
        connection: _Connection | None = None,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self._connection = connection or _Connection(url, home)

    def part(self, prefix: str, *, entries: int, chars: int = 0) -> RedisBackend:
        return RedisBackend(self.url, prefix=self.prefix + prefix, connection=self._connection)

    @property
    def safe_url(self) -> str:
        """The URL without its password."""
        return safe_url(self.url)

    async def ping(self) -> None:
        """Nothing when Redis answers; raises ``Unreachable`` otherwise."""
        await self._connection.run(lambda client: client.ping())

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> concurrent.futures.Future[None]:
        """Start ``coroutine`` on the loop Redis commands run on, not waiting for it."""
        return self._connection.spawn(coroutine)

    async def get(self, key: str) -> str | None:
        return _text(await self._connection.run(lambda c: c.get(self.prefix + key)))

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        if not keys:
            return []
        names = [self.prefix + k for k in keys]
        return [_text(r) for r in await self._connection.run(lambda c: c.mget(names))]

    async def set(
        self, key: str, value: str, ttl: float | None, *,
        only_if_absent: bool = False, only_if_present: bool = False,
    ) -> bool:
        name, px = self.prefix + key, _ms(ttl)

        async def work(client: Any) -> Any:
            return await client.set(name, value, px=px, nx=only_if_absent, xx=only_if_present)

        return bool(await self._connection.run(work))

    async def set_many(
        self, values: Mapping[str, str], ttl: float | None, *, only_if_present: bool = False
    ) -> None:
        if not values:
            return
        px = _ms(ttl)

        async def work(client: Any) -> None:
            async with client.pipeline(transaction=False) as pipe:
                for key, value in values.items():
                    pipe.set(self.prefix + key, value, px=px, xx=only_if_present)
                await pipe.execute()

        await self._connection.run(work)

    async def delete(self, *keys: str) -> None:
        if keys:
            names = [self.prefix + k for k in keys]
            await self._connection.run(lambda c: c.delete(*names))

    async def swap(self, key: str, expected: str, value: str, ttl: float | None) -> bool:
        px = _ms(ttl)
        args = (expected, value, "" if px is None else px)
        found = await self._connection.run(lambda c: c.eval(_SWAP, 1, self.prefix + key, *args))
        return bool(found)

    async def append(self, key: str, value: str, ttl: float | None) -> int:
        name, px = self.prefix + key, _ms(ttl)

        async def work(client: Any) -> Any:
            async with client.pipeline(transaction=True) as pipe:
                pipe.rpush(name, value)
                if px is not None:
                    pipe.pexpire(name, px)
                return (await pipe.execute())[0]

        return int(await self._connection.run(work))

    async def read_list(self, key: str, start: int) -> list[str]:
        found = await self._connection.run(lambda c: c.lrange(self.prefix + key, start, -1))
        return [t for t in map(_text, found) if t is not None]

    async def admit(self, key: str, calls: int, per_seconds: float) -> float:
        window, name = int(per_seconds * 1_000_000), self.prefix + key

        async def work(client: Any) -> Any:
            return await client.eval(_ADMIT, 1, name, calls, window, secrets.token_hex(8))

        return int(await self._connection.run(work)) / 1_000_000

    async def index_add(
        self, index: str, member: str, score: float, *, keep: int, drop_below: float,
        ttl: float | None,
    ) -> list[str]:
        px = _ms(ttl)
        args = (member, repr(score), keep, repr(drop_below), "" if px is None else px)
        name = self.prefix + index
        dropped = await self._connection.run(lambda c: c.eval(_INDEX_ADD, 1, name, *args))
        return [t for t in map(_text, dropped or ()) if t is not None]

    async def index_newest(self, index: str, *, drop_below: float) -> list[tuple[str, float]]:
        name = self.prefix + index

        async def work(client: Any) -> Any:
            return await client.zrevrangebyscore(name, "+inf", drop_below, withscores=True)

        found = await self._connection.run(work)
        return [(_text(m) or "", float(s)) for m, s in found]

    async def write_text(self, key: str, text: str, ttl: float) -> bool:
        name, px = self.prefix + key, _ms(ttl)

        async def work(client: Any) -> None:
            async with client.pipeline(transaction=False) as pipe:
                for number, start in enumerate(range(0, max(len(text), 1), CHUNK)):
                    pipe.set(f"{name}:{number}", text[start : start + CHUNK], px=px)
                await pipe.execute()

        await self._connection.run(work)
        return True

    async def read_text(self, key: str, start: int, end: int) -> str | None:
        if start >= end:
            exists = await self._connection.run(lambda c: c.exists(f"{self.prefix}{key}:0"))
            return "" if exists else None
        first, last = start // CHUNK, (end - 1) // CHUNK
        names = [f"{self.prefix}{key}:{n}" for n in range(first, last + 1)]
        chunks = await self._connection.run(lambda c: c.mget(names))
        if any(chunk is None for chunk in chunks):
            return None  # expired while being read
        text = "".join(_text(c) or "" for c in chunks)
        offset = start - first * CHUNK
        return text[offset : offset + (end - start)]

    def warning(self) -> str | None:
        return None

    @property
    def problem(self) -> str | None:
        return None

    async def aclose(self) -> None:
        await self._connection.aclose()


# -- Redis, with this process's memory while it cannot be reached --------------------


@dataclass
class _Health:
    """Whether Redis can be used now: shared by every part of one backend."""

    problem: str | None = None
    probe: concurrent.futures.Future[None] | None = None


class SharedBackend:
    """Redis, and this process's memory meanwhile when Redis cannot be reached (each call
    served so says it in its result)."""

    local = False

    def __init__(
        self, primary: RedisBackend, spare: MemoryBackend, health: _Health | None = None
    ) -> None:
        self.primary = primary
        self.spare = spare
        self._health = health or _Health()

    def part(self, prefix: str, *, entries: int, chars: int = 0) -> SharedBackend:
        return SharedBackend(
            self.primary.part(prefix, entries=entries, chars=chars),
            self.spare.part(prefix, entries=entries, chars=chars),
            self._health,
        )

    @property
    def safe_url(self) -> str:
        """The Redis URL without its password."""
        return self.primary.safe_url

    @property
    def problem(self) -> str | None:
        return self._health.problem

    async def ping(self) -> str | None:
        """None when Redis answers, else why not (for ``toolplug doctor``)."""
        try:
            await self.primary.ping()
        except Unreachable as exc:
            return str(exc)
        return None

    def _usable(self) -> bool:
        if self._health.problem is None:
            return True
        _FELL_BACK.set(True)
        return False

    def _failed(self, exc: Unreachable) -> None:
        _FELL_BACK.set(True)
        health = self._health
        if health.problem is None:
            health.problem = str(exc)
            log.error(
                "the shared store %s cannot be reached (%s); rate limits and the cache are "
                "per process until it can",
                self.safe_url,
                health.problem,
            )
        if health.probe is None or health.probe.done():
            health.probe = self.primary.spawn(self._until_reachable())

    async def _until_reachable(self) -> None:
        """Ping Redis until it answers, then end the fallback (on the home loop)."""
        while True:
            await asyncio.sleep(_PROBE_SECONDS)
            try:
                await self.primary.ping()
            except Unreachable:
                continue
            log.warning("the shared store %s is reachable again", self.safe_url)
            self._health.problem = None
            return

    def warning(self) -> str | None:
        if not _FELL_BACK.get():
            return None
        _FELL_BACK.set(False)  # asked once per call: the next call starts afresh
        return (
            f"the shared store {self.safe_url} cannot be reached: rate limits and the "
            "result cache hold for this process only"
        )

    async def get(self, key: str) -> str | None:
        if self._usable():
            try:
                found = await self.primary.get(key)
            except Unreachable as exc:
                self._failed(exc)
            else:
                if found is not None:
                    return found
        return await self.spare.get(key)  # what was written here while Redis was away

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        found: list[str | None] = [None] * len(keys)
        if self._usable():
            try:
                found = await self.primary.get_many(keys)
            except Unreachable as exc:
                self._failed(exc)
        if all(f is not None for f in found):
            return found
        here = await self.spare.get_many(keys)
        return [f if f is not None else h for f, h in zip(found, here, strict=True)]

    async def set(
        self, key: str, value: str, ttl: float | None, *,
        only_if_absent: bool = False, only_if_present: bool = False,
    ) -> bool:
        if self._usable():
            try:
                return await self.primary.set(
                    key, value, ttl, only_if_absent=only_if_absent,
                    only_if_present=only_if_present,
                )
            except Unreachable as exc:
                self._failed(exc)
        return await self.spare.set(
            key, value, ttl, only_if_absent=only_if_absent, only_if_present=only_if_present
        )

    async def set_many(
        self, values: Mapping[str, str], ttl: float | None, *, only_if_present: bool = False
    ) -> None:
        if self._usable():
            try:
                await self.primary.set_many(values, ttl, only_if_present=only_if_present)
                return
            except Unreachable as exc:
                self._failed(exc)
        await self.spare.set_many(values, ttl, only_if_present=only_if_present)

    async def delete(self, *keys: str) -> None:
        await self.spare.delete(*keys)
        if self._usable():
            try:
                await self.primary.delete(*keys)
            except Unreachable as exc:
                self._failed(exc)

    async def swap(self, key: str, expected: str, value: str, ttl: float | None) -> bool:
        if self._usable():
            try:
                if await self.primary.swap(key, expected, value, ttl):
                    return True
            except Unreachable as exc:
                self._failed(exc)
        return await self.spare.swap(key, expected, value, ttl)

    async def append(self, key: str, value: str, ttl: float | None) -> int:
        if self._usable():
            try:
                return await self.primary.append(key, value, ttl)
            except Unreachable as exc:
                self._failed(exc)
        return await self.spare.append(key, value, ttl)

    async def read_list(self, key: str, start: int) -> list[str]:
        if self._usable():
            try:
                return await self.primary.read_list(key, start)
            except Unreachable as exc:
                self._failed(exc)
        return await self.spare.read_list(key, start)

    async def admit(self, key: str, calls: int, per_seconds: float) -> float:
        if self._usable():
            try:
                return await self.primary.admit(key, calls, per_seconds)
            except Unreachable as exc:
                self._failed(exc)
        return await self.spare.admit(key, calls, per_seconds)

    async def index_add(
        self, index: str, member: str, score: float, *, keep: int, drop_below: float,
        ttl: float | None,
    ) -> list[str]:
        if self._usable():
            try:
                return await self.primary.index_add(
                    index, member, score, keep=keep, drop_below=drop_below, ttl=ttl
                )
            except Unreachable as exc:
                self._failed(exc)
        return await self.spare.index_add(
            index, member, score, keep=keep, drop_below=drop_below, ttl=ttl
        )

    async def index_newest(self, index: str, *, drop_below: float) -> list[tuple[str, float]]:
        found: list[tuple[str, float]] = []
        if self._usable():
            try:
                found = await self.primary.index_newest(index, drop_below=drop_below)
            except Unreachable as exc:
                self._failed(exc)
        here = await self.spare.index_newest(index, drop_below=drop_below)
        if not here:
            return found
        merged = dict(found)
        merged.update(here)
        return sorted(merged.items(), key=lambda item: item[1], reverse=True)

    async def write_text(self, key: str, text: str, ttl: float) -> bool:
        if self._usable():
            try:
                return await self.primary.write_text(key, text, ttl)
            except Unreachable as exc:
                self._failed(exc)
        await self.spare.write_text(key, text, ttl)
        return False

    async def read_text(self, key: str, start: int, end: int) -> str | None:
        here = await self.spare.read_text(key, start, end)  # kept here while Redis was away
        if here is not None or not self._usable():
            return here
        try:
            return await self.primary.read_text(key, start, end)
        except Unreachable as exc:
            self._failed(exc)
            return None

    async def aclose(self) -> None:
        probe = self._health.probe
        if probe is not None:
            probe.cancel()
        await self.primary.aclose()


def open_backend(
    url: str,
    *,
    entries: int,
    home: Callable[[], asyncio.AbstractEventLoop] = asyncio.get_running_loop,
) -> MemoryBackend | SharedBackend:
    """The backend a ``[calls] store`` value names: ``memory``, or a Redis URL."""
    if url == "memory":
        return MemoryBackend(entries)
    if not _installed():
        raise ConfigError(
            "the Redis store needs the redis package",
            key="calls.store",
            expected='pip install "toolplug[redis]"',
        )
    return SharedBackend(RedisBackend(url, home=home), MemoryBackend(entries))


def safe_url(url: str) -> str:
    """The URL without a password."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.rsplit("@", 1)[1]
        return parts._replace(netloc=f"***@{netloc}").geturl()
    return url
