"""The state backend: the few primitives every feature that keeps state is written against.

The result cache and the rate limits (``_store``), spilled outputs (``_spill``), tasks
(``_tasks``) and the replicas' shared secrets (``serve``) keep their state through one
protocol, ``Backend``, implemented twice (one module each, as httpx's transports are):

- ``MemoryBackend`` (``_memory``): this process's memory, bounded by entries (and, for
  long texts, by characters), each value with its own time to live. Its methods never
  suspend, so the sync ``call`` may run them without an event loop.
- ``RedisBackend`` (``_redis``; ``[calls] store = "redis://..."``, the redis extra): one
  Redis server shared by every process pointed at it. Connections belong to one event
  loop, so every command runs on a home loop it is given (the registry's loop thread).
  A command that cannot reach Redis raises ``Unreachable``.

``SharedBackend`` (``_shared``, beside ``open_backend``) puts the two together the way
every feature needs: Redis while it can be reached; when it cannot, this process's memory
meanwhile (logged once, and stated in the result of each call it served: ``warning``),
while one probe at a time pings Redis in the background; the call after its first answer
uses Redis again. What was written here while Redis was away stays readable here.
redis-py's own options do the rest: a pooled connection the server dropped (it restarted)
is retried once on a fresh connection, and an idle one is checked before use, so a
restart alone costs no fallback.

A feature takes its ``part`` of the backend: its keys under a prefix of its own, and in
memory a region of its own with its own bounds (the cache's entries do not push tasks out).

The primitives: values with a time to live (``get``, ``get_many``, ``set``, with
set-if-absent and set-if-present, ``set_many``, ``delete``), compare-and-set (``swap``),
lists that count what they hold (``append``, ``read_list``), a moving window for rate
limits (``admit``), an ordered index (``index_add``: a member with a score, the lowest
dropped beyond a count or below a score; ``index_newest``), long texts kept in chunks
and read by range (``write_text``, ``read_text``), and bytes likewise (``write_bytes``,
``read_bytes``: parts' images, recordings and files).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Protocol
from urllib.parse import urlsplit

__all__ = ["CHUNK", "Backend", "Unreachable", "safe_url"]

CHUNK: Final = 1 << 20
"""Characters one Redis key of a long text holds."""


class Unreachable(Exception):
    """A shared backend could not be used (Redis down, refused, timed out)."""


class Backend(Protocol):
    """What the features that keep state need from where they keep it."""

    local: bool
    """True when no method ever suspends (the sync ``call`` may then run without a loop)."""

    def part(self, prefix: str, *, entries: int, chars: int = 0) -> Backend:
        """The keys under ``prefix``; in memory a region of its own holding at most
        ``entries`` values and ``chars`` characters of long texts and bytes together (the
        bounds of whoever took it first: the same prefix is the same region)."""

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

    async def write_bytes(self, key: str, data: bytes, ttl: float) -> bool:
        """Keep bytes (a part's: an image, a recording), to be read by range; False as for
        ``write_text``. In memory the very object is kept (no copy, no base64); in Redis
        its raw bytes."""

    async def read_bytes(self, key: str, start: int = 0, end: int | None = None) -> bytes | None:
        """Bytes ``start`` to ``end`` (None: to the last) of what ``write_bytes`` kept, or
        None when it is gone."""

    def warning(self) -> str | None:
        """What the current call's result should say about the backend (it fell back from
        Redis), or None; asked once, when the call has its result."""

    @property
    def problem(self) -> str | None:
        """Why the shared backend cannot be used now, or None."""

    async def aclose(self) -> None:
        """Release connections."""


def safe_url(url: str) -> str:
    """The URL without a password."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.rsplit("@", 1)[1]
        return parts._replace(netloc=f"***@{netloc}").geturl()
    return url
