"""Spilled outputs: the whole of a result that the output budget cut, kept to be read on.

When a result does not fit its call's output budget, the engine keeps its whole text (and
its whole data, as JSON, when the data was cut too; and the parts the budget may cut,
whole: a text part's text, a binary part's bytes) here before cutting it, and the cut
result names where the rest is: ``ToolResult.spill``, a ``toolplug://results/ID`` URI
(``.../ID/data`` for the data, ``.../ID/parts/N`` for the part at index N: its bytes, read
by byte range, with its MIME type). ``read`` returns any range of it; over MCP, ``toolplug
serve`` offers it as a resource. A spill is kept for ``[calls] spill_ttl_seconds`` and
belongs to the client that made the call: ``owner`` (``context={"client": ...}``) must
match to read it. The ID is 128 random bits, so it cannot be guessed either.

Kept in the registry's state backend (``toolplug.state._backend``): this process's memory
by default, bounded in characters and in count (the oldest go first); Redis when ``[calls]
store`` names it, so any replica can serve the reads, in chunks, each key with the spill's
lifetime, at most the count listed per owner. While Redis cannot be reached the spill is
kept in this process, and the result says so.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from toolplug.contract._parts import Part
    from toolplug.state._backend import Backend

__all__ = ["SCHEME", "Page", "Spills", "mime_of", "parse_uri"]

SCHEME: Final = "toolplug://results/"
"""Where spilled outputs are named."""
_PARTS: Final = ("output", "data")
_PART: Final = re.compile(r"^parts/(0|[1-9][0-9]{0,5})$")
_MIME: Final = {"output": "text/plain", "data": "application/json"}


@dataclass(frozen=True)
class Page:
    """A range of a spilled output."""

    text: str
    offset: int
    total: int
    """The characters the whole part has (bytes, for a binary part)."""
    data: bytes | None = None
    """A binary part's bytes in this range (``text`` is then empty)."""
    mime_type: str | None = None
    """What the spilled part is: ``text/plain`` for the output and text parts,
    ``application/json`` for the data, a binary part's own type."""

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts, or None after the last."""
        end = self.offset + (len(self.data) if self.data is not None else len(self.text))
        return end if end < self.total else None


@dataclass(frozen=True)
class Entry:
    """What is known of one spill without reading it."""

    id: str
    tool: str
    sizes: dict[str, int]
    expires: float
    """Seconds since the epoch."""
    types: dict[str, str] = field(default_factory=dict)
    """The MIME type of each kept part (``parts/N``); the output and data have theirs."""


def parse_uri(uri: str) -> tuple[str, str] | None:
    """``(id, part)`` of a spill URI (``part`` is ``output``, ``data`` or ``parts/N``), or
    None."""
    if not uri.startswith(SCHEME):
        return None
    rest = uri[len(SCHEME):].split("?", 1)[0]
    spill_id, _, part = rest.partition("/")
    part = part or "output"
    if not spill_id or not spill_id.isalnum():
        return None
    if part not in _PARTS and not _PART.match(part):
        return None
    return spill_id, part


def mime_of(part: str, types: dict[str, str]) -> str:
    """The MIME type a spilled part is read as."""
    return types.get(part) or _MIME.get(part, "text/plain")


class Spills:
    """Spilled outputs of one registry's calls, in its backend."""

    def __init__(self, backend: Backend, *, ttl: float, max_chars: int, max_count: int) -> None:
        # In memory: at most max_count spills (their descriptions; the oldest go first) and
        # max_chars characters of their texts. In Redis: max_count listed per owner, each
        # key for the spill's lifetime.
        self._backend = backend.part(
            "spill:", entries=max_count, chars=max_chars + 2 * len(_PARTS)
        )
        self.ttl = ttl
        self._max_chars = max_chars
        self._max_count = max_count

    # -- keeping ------------------------------------------------------------------------

    async def keep(
        self, tool: str, output: str, data: Any, owner: str | None,
        *, data_text: str | None = None, parts: Mapping[int, Part] | None = None,
    ) -> tuple[str, bool] | None:
        """Keep a result's whole text (and data, when given); its URI, and whether only this
        process holds it though the backend is shared. None when it is larger than the
        store may hold. ``data_text``: the data as JSON already (large data is written off
        the event loop), else it is written here. ``parts``: the result's parts the budget
        may cut, by index (``spillable_parts``): a text part's text, a binary one's bytes
        (the object itself, in memory)."""
        kept: dict[str, str | bytes] = {"output": output}
        if data_text is not None:
            kept["data"] = data_text
        elif data is not None:
            with contextlib.suppress(TypeError, ValueError):  # data JSON cannot carry: cut
                kept["data"] = json.dumps(data, ensure_ascii=False)
        types: dict[str, str] = {}
        for index, part in sorted((parts or {}).items()):
            text, blob = getattr(part, "text", None), getattr(part, "data", None)
            name = f"parts/{index}"
            if isinstance(text, str):
                kept[name] = text
                types[name] = getattr(part, "mime_type", None) or "text/plain"
            elif isinstance(blob, bytes):
                kept[name] = blob
                types[name] = getattr(part, "mime_type", None) or "application/octet-stream"
        sizes = {k: len(v) for k, v in kept.items()}
        if sum(sizes.values()) > self._max_chars:
            return None
        spill_id = secrets.token_hex(16)
        now = time.time()
        entry = Entry(spill_id, tool, sizes, now + self.ttl, types)
        backend, ttl = self._backend, self.ttl
        shared = True
        binary = []
        for key, value in kept.items():
            if isinstance(value, bytes):
                binary.append(key)
                wrote = await backend.write_bytes(f"{spill_id}:{key}", value, ttl)
            else:
                wrote = await backend.write_text(f"{spill_id}:{key}", value, ttl)
            shared = wrote and shared
        meta = {"tool": tool, "sizes": sizes, "expires": entry.expires, "owner": owner,
                "types": types, "binary": binary}
        await backend.set(spill_id, json.dumps(meta), ttl)
        await backend.index_add(
            _index(owner), spill_id, entry.expires, keep=self._max_count, drop_below=now,
            ttl=ttl,
        )
        return SCHEME + spill_id, not shared

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
        raw = await self._backend.get(spill_id)
        if raw is None:
            return None
        meta = json.loads(raw)
        total = meta["sizes"].get(part)
        if meta.get("owner") != owner or total is None or meta["expires"] <= time.time():
            return None
        end = total if length is None else min(total, offset + length)
        start = min(offset, total)
        mime = mime_of(part, meta.get("types") or {})
        if part in (meta.get("binary") or ()):
            whole = start == 0 and end == total
            blob = await self._backend.read_bytes(
                f"{spill_id}:{part}", start, None if whole else max(end, start)
            )
            if blob is None:
                return None
            return Page("", start, total, data=blob, mime_type=mime)
        text = await self._backend.read_text(f"{spill_id}:{part}", start, max(end, start))
        if text is None:
            return None  # expired or evicted while being read
        return Page(text, start, total, mime_type=mime)

    async def listing(self, owner: str | None) -> list[Entry]:
        """The spills this owner may read, newest first."""
        now = time.time()
        ids = [i for i, _ in await self._backend.index_newest(_index(owner), drop_below=now)]
        entries = []
        for spill_id, raw in zip(ids, await self._backend.get_many(ids), strict=True):
            if raw is not None:
                meta = json.loads(raw)
                entries.append(Entry(
                    spill_id, meta["tool"], meta["sizes"], meta["expires"],
                    meta.get("types") or {},
                ))
        return entries


def _index(owner: str | None) -> str:
    """The index of one owner's spills."""
    return "index:" + (owner or "")
