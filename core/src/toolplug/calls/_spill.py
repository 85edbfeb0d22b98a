"""Spilled outputs: the whole of a result that the output budget cut, kept to be read on.

When a result does not fit its call's output budget, the engine keeps its whole text (and
its whole data, as JSON, when the data was cut too) here before cutting it, and the cut
result names where the rest is: ``ToolResult.spill``, a ``toolplug://results/ID`` URI
(``.../ID/data`` for the data). ``read`` returns any range of it; over MCP, ``toolplug
serve`` offers it as a resource. A spill is kept for ``[calls] spill_ttl_seconds`` and
belongs to the client that made the call: ``owner`` (``context={"client": ...}``) must
match to read it. The ID is 128 random bits, so it cannot be guessed either.

In the in-process store by default, bounded in characters and in count (the oldest go
first); in Redis when ``[calls] store`` names it, so any replica can serve the reads, in
chunks, each key with the spill's lifetime. While Redis cannot be reached the spill is
kept in this process, and the result says so.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from toolplug.calls._store import Store

__all__ = ["SCHEME", "Page", "Spills", "parse_uri"]

SCHEME: Final = "toolplug://results/"
"""Where spilled outputs are named."""
_CHUNK: Final = 1 << 20  # characters a Redis key holds
_PARTS: Final = ("output", "data")


@dataclass(frozen=True)
class Page:
    """A range of a spilled output."""

    text: str
    offset: int
    total: int
    """The characters the whole part has."""

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts, or None after the last."""
        end = self.offset + len(self.text)
        return end if end < self.total else None


@dataclass(frozen=True)
class Entry:
    """What is known of one spill without reading it."""

    id: str
    tool: str
    sizes: dict[str, int]
    expires: float
    """Seconds since the epoch."""


def parse_uri(uri: str) -> tuple[str, str] | None:
    """``(id, part)`` of a spill URI (``part`` is ``output`` or ``data``), or None."""
    if not uri.startswith(SCHEME):
        return None
    rest = uri[len(SCHEME):].split("?", 1)[0]
    spill_id, _, part = rest.partition("/")
    part = part or "output"
    if not spill_id or part not in _PARTS or not spill_id.isalnum():
        return None
    return spill_id, part


class Spills:
    """Spilled outputs of one registry's calls, in its store."""

    def __init__(self, store: Store, *, ttl: float, max_chars: int, max_count: int) -> None:
        self._store = store
        self.ttl = ttl
        self._max_chars = max_chars
        self._max_count = max_count
        self._local: OrderedDict[str, tuple[Entry, str | None, dict[str, str]]] = OrderedDict()
        self._local_chars = 0
        # Calls run on many loops and threads (the sync ``call`` on its own); held for
        # dictionary work only, never across I/O.
        self._lock = threading.Lock()

    # -- keeping ------------------------------------------------------------------------

    async def keep(
        self, tool: str, output: str, data: Any, owner: str | None
    ) -> tuple[str, bool] | None:
        """Keep a result's whole text (and data, when given); its URI, and whether only this
        process holds it. None when it is larger than the store may hold."""
        parts = {"output": output}
        if data is not None:
            with contextlib.suppress(TypeError, ValueError):  # data JSON cannot carry: cut
                parts["data"] = json.dumps(data, ensure_ascii=False)
        sizes = {k: len(v) for k, v in parts.items()}
        if sum(sizes.values()) > self._max_chars:
            return None
        spill_id = secrets.token_hex(16)
        entry = Entry(spill_id, tool, sizes, time.time() + self.ttl)
        local_only = True
        redis = _redis(self._store)
        if redis is not None and redis._usable():
            try:
                await redis._at_home(self._put_redis(redis, entry, owner, parts))
                local_only = False
            except redis._errors as exc:
                redis._failed(exc)
        if local_only:
            self._put_local(entry, owner, parts)
        return SCHEME + spill_id, local_only and redis is not None

    def _put_local(self, entry: Entry, owner: str | None, parts: dict[str, str]) -> None:
        with self._lock:
            self._expire_local()
            self._local[entry.id] = (entry, owner, parts)
            self._local_chars += sum(entry.sizes.values())
            while self._local and (
                self._local_chars > self._max_chars or len(self._local) > self._max_count
            ):
                _, (old, _, _) = self._local.popitem(last=False)
                self._local_chars -= sum(old.sizes.values())

    def _expire_local(self) -> None:
        """Drop what expired (with ``_lock`` held)."""
        now = time.time()
        for spill_id in [k for k, (e, _, _) in self._local.items() if e.expires <= now]:
            entry, _, _ = self._local.pop(spill_id)
            self._local_chars -= sum(entry.sizes.values())

    async def _put_redis(
        self, redis: Any, entry: Entry, owner: str | None, parts: dict[str, str]
    ) -> None:
        client, prefix = redis._client(), redis._prefix + "spill:"
        ttl_ms = max(int(self.ttl * 1000), 1)
        index = prefix + "index:" + (owner or "")
        meta = {"tool": entry.tool, "sizes": entry.sizes, "expires": entry.expires, "owner": owner}
        async with client.pipeline(transaction=False) as pipe:
            for part, text in parts.items():
                for number, start in enumerate(range(0, max(len(text), 1), _CHUNK)):
                    key = f"{prefix}{entry.id}:{part}:{number}"
                    pipe.set(key, text[start : start + _CHUNK], px=ttl_ms)
            pipe.set(prefix + entry.id, json.dumps(meta), px=ttl_ms)
            pipe.zadd(index, {entry.id: entry.expires})
            pipe.zremrangebyscore(index, "-inf", time.time())
            pipe.zremrangebyrank(index, 0, -self._max_count - 1)  # the oldest beyond the bound
            pipe.pexpire(index, ttl_ms)
            await pipe.execute()

    # -- reading ------------------------------------------------------------------------

    async def read(
        self, uri: str, *, owner: str | None, offset: int = 0, length: int | None = None
    ) -> Page | None:
        """A range of a spill, or None when there is no such spill for this owner (never
        kept, expired, evicted, or another client's)."""
        parsed = parse_uri(uri)
        if parsed is None or offset < 0 or (length is not None and length < 0):
            return None
        spill_id, part = parsed
        with self._lock:
            self._expire_local()
            local = self._local.get(spill_id)
        if local is not None:
            _, kept_for, parts = local
            if kept_for != owner or part not in parts:
                return None
            text = parts[part]
            end = len(text) if length is None else offset + length
            return Page(text[offset:end], min(offset, len(text)), len(text))
        redis = _redis(self._store)
        if redis is None or not redis._usable():
            return None
        try:
            reading = self._read_redis(redis, spill_id, part, owner, (offset, length))
            page: Page | None = await redis._at_home(reading)
        except redis._errors as exc:
            redis._failed(exc)
            return None
        return page

    async def _read_redis(
        self, redis: Any, spill_id: str, part: str, owner: str | None,
        span: tuple[int, int | None],
    ) -> Page | None:
        offset, length = span
        client, prefix = redis._client(), redis._prefix + "spill:"
        raw = await client.get(prefix + spill_id)
        if raw is None:
            return None
        meta = json.loads(raw)
        total = meta["sizes"].get(part)
        if meta.get("owner") != owner or total is None:
            return None
        end = total if length is None else min(total, offset + length)
        if offset >= end:
            return Page("", min(offset, total), total)
        first, last = offset // _CHUNK, (end - 1) // _CHUNK
        keys = [f"{prefix}{spill_id}:{part}:{n}" for n in range(first, last + 1)]
        chunks = await client.mget(keys)
        if any(chunk is None for chunk in chunks):
            return None  # expired while being read
        text = "".join(c.decode("utf-8") if isinstance(c, bytes) else c for c in chunks)
        start = offset - first * _CHUNK
        return Page(text[start : start + (end - offset)], offset, total)

    async def listing(self, owner: str | None) -> list[Entry]:
        """The spills this owner may read, newest first."""
        with self._lock:
            self._expire_local()
            found = [e for e, kept_for, _ in self._local.values() if kept_for == owner]
        redis = _redis(self._store)
        if redis is not None and redis._usable():
            try:
                found += await redis._at_home(self._list_redis(redis, owner))
            except redis._errors as exc:
                redis._failed(exc)
        return sorted(found, key=lambda e: e.expires, reverse=True)

    async def _list_redis(self, redis: Any, owner: str | None) -> list[Entry]:
        client, prefix = redis._client(), redis._prefix + "spill:"
        index = prefix + "index:" + (owner or "")
        await client.zremrangebyscore(index, "-inf", time.time())
        ids = [i.decode() if isinstance(i, bytes) else i for i in await client.zrange(index, 0, -1)]
        if not ids:
            return []
        metas = await client.mget([prefix + i for i in ids])
        entries = []
        for spill_id, raw in zip(ids, metas, strict=True):
            if raw is not None:
                meta = json.loads(raw)
                entries.append(Entry(spill_id, meta["tool"], meta["sizes"], meta["expires"]))
        return entries


def _redis(store: Store) -> Any:
    """The store when it is the Redis one, else None."""
    return None if getattr(store, "local", True) else store

