"""The Redis backend: one Redis server shared by every process pointed at it
(``[calls] store = "redis://..."``, ``pip install "toolplug[redis]"``).

Connections belong to one event loop, so every command runs on a home loop it is given
(the registry's loop thread). A command that cannot reach Redis raises ``Unreachable``.
redis-py is imported on first use only (``redis_installed``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import importlib
import secrets
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from toolplug.state._backend import CHUNK, Unreachable, safe_url

__all__ = ["RedisBackend", "redis_installed"]

_T = TypeVar("_T")


_SOCKET_SECONDS: Final = 1.0
"""How long a connect or a reply may take: an unreachable store must not hold calls long."""


_HEALTH_CHECK_SECONDS: Final = 5


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


def redis_installed() -> bool:
    try:
        _sdk()
    except ImportError:
        return False
    return True


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

    async def write_bytes(self, key: str, data: bytes, ttl: float) -> bool:
        name, px = self.prefix + key, _ms(ttl)
        # raw bytes in one key (a Redis string holds 512 MB; a part is bounded far below)
        await self._connection.run(lambda c: c.set(name, data, px=px))
        return True

    async def read_bytes(self, key: str, start: int = 0, end: int | None = None) -> bytes | None:
        name = self.prefix + key
        if start == 0 and end is None:
            found = await self._connection.run(lambda c: c.get(name))
            return bytes(found) if found is not None else None
        if end is not None and start >= end:
            exists = await self._connection.run(lambda c: c.exists(name))
            return b"" if exists else None
        last = -1 if end is None else end - 1

        async def work(client: Any) -> Any:
            async with client.pipeline(transaction=False) as pipe:
                pipe.exists(name)
                pipe.getrange(name, start, last)
                return await pipe.execute()

        exists, found = await self._connection.run(work)
        return bytes(found) if exists else None

    def warning(self) -> str | None:
        return None

    @property
    def problem(self) -> str | None:
        return None

    async def aclose(self) -> None:
        await self._connection.aclose()
