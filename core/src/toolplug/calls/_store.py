"""Where the result cache and the rate limits live: in this process, or in Redis.

Both stores answer the same three questions for the call engine: is there a cached result
for this key, keep this result for so long, and may one more call of this tool start now
(if not, how long until it may). The in-process store is the default; it is bounded by
entries (``[calls] cache_entries``) and by each entry's time to live, so a long-running
server with varied calls does not grow without end. The Redis store (``[calls] store =
"redis://..."``, ``pip install "toolplug[redis]"``) is shared by every process pointed at
it, so replicas behind a load balancer allow one rate together and share one cache.

When Redis cannot be reached, calls still run: the store logs the problem once and uses
the in-process store meanwhile (the limit then holds per process), and every call it
serves that way says so in its result's warnings. One probe at a time pings Redis in the
background; the call after the first answer uses Redis again. redis-py's own options do
the rest: a pooled connection that the server dropped (it restarted) is retried once on a
fresh connection (``Retry`` on ``ConnectionError``), and a connection idle for a while is
checked before use (``health_check_interval``), so a restart alone costs no fallback.

The rate limit is a moving window: at most N calls in any ``per_seconds`` seconds. The
``limits`` library was considered and not used: its windows are whole seconds, and
``per_seconds`` may be a fraction here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import hashlib
import json
import logging
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from typing import Any, Final, Protocol, TypeVar

from cachetools import TLRUCache

from toolplug.contract._metadata import Trust
from toolplug.contract._tool import Citation, ToolError, ToolResult

__all__ = ["MemoryStore", "RedisStore", "Store", "decode_result", "encode_result", "open_store"]

log = logging.getLogger("toolplug")

_T = TypeVar("_T")

_PROBE_SECONDS: Final = 0.25
"""While Redis cannot be reached, how long between two probes of it."""
_SOCKET_SECONDS: Final = 1.0
"""How long a connect or a reply may take: an unreachable store must not hold calls long."""
_HEALTH_CHECK_SECONDS: Final = 5
"""A pooled connection idle for longer is pinged before its next command."""

_FELL_BACK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "toolplug_store_fell_back", default=False
)
"""Whether the store served the current call from this process's memory instead of Redis
(each call's own flag: replicas and concurrent calls see different outcomes)."""


class Store(Protocol):
    """What the call engine needs from a store."""

    local: bool
    """True when no method ever waits (the sync ``call`` may then run without a loop)."""

    async def cached(self, key: str) -> ToolResult | None:
        """The result kept under ``key``, or None."""

    async def keep(self, key: str, result: ToolResult, ttl: float) -> None:
        """Keep ``result`` under ``key`` for ``ttl`` seconds."""

    async def admit(self, tool: str, calls: int, per_seconds: float) -> float:
        """Take a slot of ``tool``'s rate limit: 0.0, or the seconds until one frees up."""

    def warning(self) -> str | None:
        """What the current call's result should say about the store (it fell back from
        Redis), or None; asked once, when the call has its result."""

    async def aclose(self) -> None:
        """Release connections."""


def cache_key(tool: str, arguments: dict[str, Any]) -> str:
    """A stable key for one call: the tool and its arguments, canonical JSON, hashed."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)
    return f"{tool}:" + hashlib.sha256(text.encode()).hexdigest()


class MemoryStore:
    """The default store: this process's memory, bounded by entries and time to live."""

    local = True

    def __init__(self, entries: int = 10_000) -> None:
        # Each entry carries its own time to live: tools have different cache_ttl_seconds.
        self._cache: TLRUCache[str, tuple[float, ToolResult]] = TLRUCache(
            maxsize=entries, ttu=lambda _key, value, now: now + value[0], timer=time.monotonic
        )
        self._windows: dict[str, deque[float]] = {}
        self._lock = threading.Lock()  # held only for dictionary work, never across a wait

    async def cached(self, key: str) -> ToolResult | None:
        return self.cached_now(key)

    def cached_now(self, key: str) -> ToolResult | None:
        with self._lock:
            hit = self._cache.get(key)
        return hit[1] if hit is not None else None

    async def keep(self, key: str, result: ToolResult, ttl: float) -> None:
        with self._lock:
            self._cache[key] = (ttl, result)

    async def admit(self, tool: str, calls: int, per_seconds: float) -> float:
        return self.admit_now(tool, calls, per_seconds)

    def admit_now(self, tool: str, calls: int, per_seconds: float) -> float:
        with self._lock:
            stamps = self._windows.setdefault(tool, deque())
            now = time.monotonic()
            while stamps and now - stamps[0] >= per_seconds:
                stamps.popleft()
            if len(stamps) < calls:
                stamps.append(now)
                return 0.0
            return max(per_seconds - (now - stamps[0]), 0.001)

    def warning(self) -> str | None:
        return None

    def __len__(self) -> int:
        return len(self._cache)

    async def aclose(self) -> None:
        return None


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


class RedisStore:
    """Cache and rate limits in a Redis server, shared by every process that uses it."""

    local = False

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolplug:",
        entries: int = 10_000,
        home: Callable[[], asyncio.AbstractEventLoop] = asyncio.get_running_loop,
    ) -> None:
        import redis.asyncio

        self.url = url
        self._prefix = prefix
        self._fallback = MemoryStore(entries)
        # Connections belong to one event loop, and hosts' loops come and go (asyncio.run
        # per request): all Redis I/O runs on one home loop, the registry's own thread.
        self._home = home
        self._client_instance: Any = None
        self._problem: str | None = None  # set while the fallback is in force
        self._probe: concurrent.futures.Future[None] | None = None
        self._errors = (redis.exceptions.RedisError, OSError)

    def _client(self) -> Any:
        if self._client_instance is None:
            import redis.asyncio
            from redis.asyncio.retry import Retry
            from redis.backoff import ExponentialBackoff
            from redis.exceptions import ConnectionError as DroppedError

            # One retry, on a fresh connection, when a pooled one was dropped by the server
            # (it restarted); none on a timeout: a frozen server would hold every call
            # for a multiple of the socket limit, and the fallback answers meanwhile.
            retry = Retry(ExponentialBackoff(cap=0.05, base=0.01), 1, (DroppedError,))
            self._client_instance = redis.asyncio.Redis.from_url(
                self.url,
                socket_connect_timeout=_SOCKET_SECONDS,
                socket_timeout=_SOCKET_SECONDS,
                retry=retry,
                retry_on_error=[DroppedError],
                health_check_interval=_HEALTH_CHECK_SECONDS,
            )
        return self._client_instance

    async def _at_home(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Await ``coroutine`` on the home loop (the caller's loop waits, unblocked)."""
        home = self._home()
        if asyncio.get_running_loop() is home:
            return await coroutine
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, home))

    def _usable(self) -> bool:
        if self._problem is None:
            return True
        _FELL_BACK.set(True)
        return False

    def _failed(self, exc: BaseException) -> None:
        _FELL_BACK.set(True)
        if self._problem is None:
            self._problem = f"{type(exc).__name__}: {exc}"
            log.error(
                "the shared store %s cannot be reached (%s); rate limits and the cache are "
                "per process until it can",
                _safe_url(self.url),
                self._problem,
            )
        if self._probe is None or self._probe.done():
            home = self._home()
            self._probe = asyncio.run_coroutine_threadsafe(self._until_reachable(), home)

    async def _until_reachable(self) -> None:
        """Ping Redis until it answers, then end the fallback (on the home loop)."""
        while True:
            await asyncio.sleep(_PROBE_SECONDS)
            try:
                await self._client().ping()
            except self._errors:
                continue
            log.warning("the shared store %s is reachable again", _safe_url(self.url))
            self._problem = None
            return

    def warning(self) -> str | None:
        if not _FELL_BACK.get():
            return None
        _FELL_BACK.set(False)  # asked once per call: the next call starts afresh
        return (
            f"the shared store {_safe_url(self.url)} cannot be reached: rate limits and the "
            "result cache hold for this process only"
        )

    @property
    def safe_url(self) -> str:
        """The store's URL without its password."""
        return _safe_url(self.url)

    @property
    def problem(self) -> str | None:
        """Why Redis could not be used last time, or None."""
        return self._problem

    async def ping(self) -> str | None:
        """None when Redis answers, else why not (for ``toolplug doctor``)."""
        try:
            await self._at_home(self._client().ping())
        except self._errors as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    @property
    def prefix(self) -> str:
        """What every key of this store starts with."""
        return self._prefix

    async def run(self, work: Callable[[Any], Coroutine[Any, Any, _T]]) -> _T:
        """``work(client)`` on the home loop, with this store's Redis client; its errors
        (``errors``) are the caller's to handle."""
        return await self._at_home(work(self._client()))

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        """What a Redis command raises when the server cannot be used."""
        return self._errors

    async def cached(self, key: str) -> ToolResult | None:
        if not self._usable():
            return await self._fallback.cached(key)
        try:
            raw = await self._at_home(self._get(key))
        except self._errors as exc:
            self._failed(exc)
            return await self._fallback.cached(key)
        return decode_result(raw) if raw is not None else None

    async def keep(self, key: str, result: ToolResult, ttl: float) -> None:
        encoded = encode_result(result)
        if encoded is None:  # data that JSON cannot carry: keep it here only
            await self._fallback.keep(key, result, ttl)
            return
        if not self._usable():
            await self._fallback.keep(key, result, ttl)
            return
        try:
            await self._at_home(self._set(key, encoded, ttl))
        except self._errors as exc:
            self._failed(exc)
            await self._fallback.keep(key, result, ttl)

    async def admit(self, tool: str, calls: int, per_seconds: float) -> float:
        if not self._usable():
            return await self._fallback.admit(tool, calls, per_seconds)
        try:
            wait = await self._at_home(self._eval(tool, calls, per_seconds))
        except self._errors as exc:
            self._failed(exc)
            return await self._fallback.admit(tool, calls, per_seconds)
        return int(wait) / 1_000_000

    async def _get(self, key: str) -> Any:
        return await self._client().get(self._prefix + "cache:" + key)

    async def _set(self, key: str, encoded: str, ttl: float) -> None:
        await self._client().set(self._prefix + "cache:" + key, encoded, px=max(int(ttl * 1000), 1))

    async def _eval(self, tool: str, calls: int, per_seconds: float) -> Any:
        return await self._client().eval(
            _ADMIT,
            1,
            self._prefix + "rate:" + tool,
            calls,
            int(per_seconds * 1_000_000),
            secrets.token_hex(8),
        )

    async def aclose(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
        client, self._client_instance = self._client_instance, None
        if client is not None:
            with contextlib.suppress(Exception):  # already gone: nothing to release
                await self._at_home(client.aclose())


def open_store(
    url: str,
    *,
    entries: int,
    home: Callable[[], asyncio.AbstractEventLoop] = asyncio.get_running_loop,
) -> Store:
    """The store a ``[calls] store`` value names."""
    if url == "memory":
        return MemoryStore(entries)
    try:
        import redis.asyncio  # noqa: F401
    except ImportError:
        from toolplug.contract._errors import ConfigError

        raise ConfigError(
            "the Redis store needs the redis package",
            key="calls.store",
            expected='pip install "toolplug[redis]"',
        ) from None
    return RedisStore(url, entries=entries, home=home)


def _safe_url(url: str) -> str:
    """The URL without a password."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.rsplit("@", 1)[1]
        return parts._replace(netloc=f"***@{netloc}").geturl()
    return url


def encode_result(result: ToolResult) -> str | None:
    """The result as JSON text, or None when its data cannot be JSON."""
    try:
        body = asdict(dataclasses.replace(result, trust=None))
        if result.trust is not None:  # a pydantic model: asdict leaves it as it is
            body["trust"] = result.trust.model_dump(mode="json")
        return json.dumps(body, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


def decode_result(raw: bytes | str) -> ToolResult | None:
    """A result ``encode_result`` wrote, or None when it cannot be read."""
    try:
        body = json.loads(raw)
        error = body.get("error")
        return ToolResult(
            output=body.get("output", ""),
            data=body.get("data"),
            citations=tuple(Citation(**c) for c in body.get("citations", ())),
            warnings=tuple(body.get("warnings", ())),
            error=ToolError(**error) if error else None,
            trust=Trust.model_validate(body["trust"]) if body.get("trust") else None,
        )
    except (ValueError, TypeError):  # written by another version: a miss, not a failure
        return None
