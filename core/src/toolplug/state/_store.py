"""The result cache and the rate limits, kept in the state backend (``_backend``).

The store answers three questions for the call engine: is there a cached result for this
key, keep this result for so long, and may one more call of this tool start now (if not,
how long until it may). In this process by default, bounded by entries (``[calls]
cache_entries``) and by each entry's time to live, so a long-running server with varied
calls does not grow without end; in Redis when ``[calls] store`` names it, shared by every
process pointed at it, so replicas behind a load balancer allow one rate together and share
one cache. When Redis cannot be reached, calls still run from this process's memory and
say so in their results (``toolplug.state._backend.SharedBackend``).

The rate limit is a moving window: at most N calls in any ``per_seconds`` seconds. The
``limits`` library was considered and not used: its windows are whole seconds, and
``per_seconds`` may be a fraction here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._metadata import Trust
from toolplug.contract._tool import Citation, ToolError, ToolResult
from toolplug.state._backend import Backend
from toolplug.state._shared import open_backend
from toolplug.trust._redaction import redacted_result
from toolplug.utilities._bridge import loop_running, offload_pool
from toolplug.utilities._limits import heavy

if TYPE_CHECKING:
    from toolplug.trust._redaction import Redactor

__all__ = ["Store", "cache_key", "decode_result", "encode_result", "open_store"]

_OFF_LOOP_TEXT: Final = 64 * 1024
"""A kept result this long or longer is decoded in a worker thread (about 0.5 ms inline,
as long as the guard lets a result's text take on the loop)."""


def cache_key(tool: str, arguments: dict[str, Any]) -> str:
    """A stable key for one call: the tool and its arguments, canonical JSON, hashed."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)
    return f"{tool}:" + hashlib.sha256(text.encode()).hexdigest()


class Store:
    """The result cache and the rate limits of one registry, in its backend."""

    def __init__(self, backend: Backend, *, entries: int) -> None:
        self.backend = backend
        """Where all of the registry's state lives; the features take their parts of it."""
        self.local = backend.local
        """True when no method ever waits (the sync ``call`` may then run without a loop)."""
        self._cache = backend.part("cache:", entries=entries)
        self._rates = backend.part("rate:", entries=entries)

    async def cached(self, key: str) -> ToolResult | None:
        """The result kept under ``key``, or None. A long one is read back in toolplug's
        worker thread: decoding it would hold the event loop."""
        raw = await self._cache.get(key)
        if raw is None:
            return None
        if len(raw) >= _OFF_LOOP_TEXT and loop_running():
            return await asyncio.get_running_loop().run_in_executor(
                offload_pool(), decode_result, raw
            )
        return decode_result(raw)

    async def keep(
        self, key: str, result: ToolResult, ttl: float, redactor: Redactor | None = None
    ) -> None:
        """Keep ``result`` under ``key`` for ``ttl`` seconds, with ``redactor``'s secrets
        replaced first (the store may be a Redis server); not when its data cannot be JSON:
        the result is the tool's to make again. Large data is redacted and written in
        toolplug's worker thread."""
        if result.data is not None and loop_running() and heavy(result.data):
            encoded = await asyncio.get_running_loop().run_in_executor(
                offload_pool(), _encoded, result, redactor
            )
        else:
            encoded = _encoded(result, redactor)
        if encoded is not None:
            await self._cache.set(key, encoded, ttl)

    async def admit(self, tool: str, calls: int, per_seconds: float) -> float:
        """Take a slot of ``tool``'s rate limit: 0.0, or the seconds until one frees up."""
        return await self._rates.admit(tool, calls, per_seconds)

    def warning(self) -> str | None:
        """What the current call's result should say about the backend (it fell back from
        Redis), or None; asked once, when the call has its result."""
        return self.backend.warning()

    async def aclose(self) -> None:
        """Release connections."""
        await self.backend.aclose()


def open_store(
    url: str,
    *,
    entries: int,
    home: Callable[[], asyncio.AbstractEventLoop] = asyncio.get_running_loop,
) -> Store:
    """The store a ``[calls] store`` value names (``memory``, or a Redis URL)."""
    return Store(open_backend(url, entries=entries, home=home), entries=entries)


def encode_result(result: ToolResult) -> str | None:
    """The result as JSON text, or None when its data cannot be JSON."""
    try:
        body = asdict(dataclasses.replace(result, trust=None))
        if result.trust is not None:  # a pydantic model: asdict leaves it as it is
            body["trust"] = result.trust.model_dump(mode="json")
        return json.dumps(body, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


def _encoded(result: ToolResult, redactor: Redactor | None) -> str | None:
    return encode_result(result if redactor is None else redacted_result(result, redactor))


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
