"""Redis while it can be reached, this process's memory meanwhile: ``SharedBackend``, and
``open_backend``, which opens the backend a ``[calls] store`` value names.

A fallback is logged once and stated in the result of each call it served; one probe at a
time pings Redis in the background, and the call after its first answer uses Redis again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from toolplug.contract._errors import ConfigError
from toolplug.state._backend import Unreachable
from toolplug.state._memory import MemoryBackend
from toolplug.state._redis import RedisBackend, redis_installed

__all__ = ["SharedBackend", "open_backend"]

log = logging.getLogger("toolplug")


_PROBE_SECONDS: Final = 0.25
"""While Redis cannot be reached, how long between two probes of it."""


_FELL_BACK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "toolplug_store_fell_back", default=False
)
"""Whether the backend served the current call from this process's memory instead of Redis
(each call's own flag: replicas and concurrent calls see different outcomes)."""


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

    async def write_bytes(self, key: str, data: bytes, ttl: float) -> bool:
        if self._usable():
            try:
                return await self.primary.write_bytes(key, data, ttl)
            except Unreachable as exc:
                self._failed(exc)
        await self.spare.write_bytes(key, data, ttl)
        return False

    async def read_bytes(self, key: str, start: int = 0, end: int | None = None) -> bytes | None:
        here = await self.spare.read_bytes(key, start, end)  # kept here while Redis was away
        if here is not None or not self._usable():
            return here
        try:
            return await self.primary.read_bytes(key, start, end)
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
    if not redis_installed():
        raise ConfigError(
            "the Redis store needs the redis package",
            key="calls.store",
            expected='pip install "toolplug[redis]"',
        )
    return SharedBackend(RedisBackend(url, home=home), MemoryBackend(entries))
