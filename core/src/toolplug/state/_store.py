"""The result cache and the rate limits, kept in the state backend (``_backend``).

The store answers three questions for the call engine: is there a cached result for this
key, keep this result for so long, and may one more call of this tool start now (if not,
how long until it may). In this process by default, bounded by entries (``[calls]
cache_entries``) and by each entry's time to live, so a long-running server with varied
calls does not grow without end; in Redis when ``[calls] store`` names it, shared by every
process pointed at it, so replicas behind a load balancer allow one rate together and share
one cache. When Redis cannot be reached, calls still run from this process's memory and
say so in their results (``toolplug.state._backend.SharedBackend``).

A result's parts are kept with it, their bytes identical when it comes back. The bytes of
each binary part are kept beside the result's JSON (``Backend.write_bytes``), which names
them: in this process the very ``bytes`` object (no copy, no base64), bounded by ``[calls]
cache_max_mb``; in Redis as raw bytes, one key per part with the result's lifetime. A
result whose parts do not fit is not cached: the tool makes it again.

The rate limit is a moving window: at most N calls in any ``per_seconds`` seconds. The
``limits`` library was considered and not used: its windows are whole seconds, and
``per_seconds`` may be a fraction here.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._metadata import Trust
from toolplug.contract._parts import (
    Audio,
    EmbeddedResource,
    File,
    Image,
    Part,
    ResourceLink,
    Text,
)
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


def cache_key(tool: str, arguments: dict[str, Any], caller: str | None = None) -> str:
    """A stable key for one call: the tool and its arguments, canonical JSON, hashed; with
    ``caller`` (a tool whose answer depends on who calls), that caller's results apart."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)
    if caller is not None:
        text = json.dumps(caller) + "\n" + text  # a JSON string: no argument text is one
        return f"{tool}@:" + hashlib.sha256(text.encode()).hexdigest()
    return f"{tool}:" + hashlib.sha256(text.encode()).hexdigest()


class Store:
    """The result cache and the rate limits of one registry, in its backend."""

    def __init__(self, backend: Backend, *, entries: int, part_bytes: int = 256_000_000) -> None:
        self.backend = backend
        """Where all of the registry's state lives; the features take their parts of it."""
        self.local = backend.local
        """True when no method ever waits (the sync ``call`` may then run without a loop)."""
        self._cache = backend.part("cache:", entries=entries, chars=part_bytes)
        self._rates = backend.part("rate:", entries=entries)

    async def cached(self, key: str) -> ToolResult | None:
        """The result kept under ``key``, or None. A long one is read back in toolplug's
        worker thread: decoding it would hold the event loop."""
        raw = await self._cache.get(key)
        if raw is None:
            return None
        blobs: list[bytes] | None = None
        names = _blob_names(raw)
        if names:
            blobs = []
            for name in names:
                found = await self._cache.read_bytes(name)
                if found is None:
                    return None  # a part's bytes expired or were evicted: a miss
                blobs.append(found)
        if len(raw) >= _OFF_LOOP_TEXT and loop_running():
            work = functools.partial(decode_result, raw) if blobs is None else functools.partial(
                decode_result, raw, blobs
            )
            return await asyncio.get_running_loop().run_in_executor(offload_pool(), work)
        return decode_result(raw) if blobs is None else decode_result(raw, blobs)

    async def keep(
        self, key: str, result: ToolResult, ttl: float, redactor: Redactor | None = None
    ) -> None:
        """Keep ``result`` under ``key`` for ``ttl`` seconds, with ``redactor``'s secrets
        replaced first (the store may be a Redis server); not when its data cannot be JSON:
        the result is the tool's to make again. Large data is redacted and written in
        toolplug's worker thread."""
        blobs: list[bytes] = []
        token = secrets.token_hex(8)  # a result kept again names its own bytes
        if result.data is not None and loop_running() and heavy(result.data):
            encoded = await asyncio.get_running_loop().run_in_executor(
                offload_pool(), _encoded, result, redactor, blobs, f"{key}:part:{token}:"
            )
        else:
            encoded = _encoded(result, redactor, blobs, f"{key}:part:{token}:")
        if encoded is None:
            return
        for number, blob in enumerate(blobs):  # the bytes before the JSON that names them
            if not await self._cache.write_bytes(f"{key}:part:{token}:{number}", blob, ttl):
                return  # more than the cache may hold: not cached
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
    part_bytes: int = 256_000_000,
    home: Callable[[], asyncio.AbstractEventLoop] = asyncio.get_running_loop,
) -> Store:
    """The store a ``[calls] store`` value names (``memory``, or a Redis URL);
    ``part_bytes``: the bytes of cached parts this process holds."""
    return Store(
        open_backend(url, entries=entries, home=home), entries=entries, part_bytes=part_bytes
    )


_PART_TYPES: Final[dict[str, type[Part]]] = {
    "text": Text, "image": Image, "audio": Audio, "file": File,
    "resource_link": ResourceLink, "resource": EmbeddedResource,
}


def encode_result(
    result: ToolResult, blobs: list[bytes] | None = None, prefix: str = ""
) -> str | None:
    """The result as JSON text, or None when its data cannot be JSON. Each binary part's
    bytes go in base64 into the text, or, given ``blobs``, are appended to it (the very
    objects) and the text names them ``prefix`` + their number (``Store.keep``)."""
    try:
        body = asdict(dataclasses.replace(result, trust=None, parts=()))
        if result.trust is not None:  # a pydantic model: asdict leaves it as it is
            body["trust"] = result.trust.model_dump(mode="json")
        if result.parts:
            body["parts"] = [_part_body(p, blobs, prefix) for p in result.parts]
        else:
            del body["parts"]
        return json.dumps(body, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


def _part_body(part: Part, blobs: list[bytes] | None, prefix: str) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": part.kind}
    for spec in dataclasses.fields(part):  # type: ignore[arg-type]
        value = getattr(part, spec.name)
        if isinstance(value, bytes):
            if blobs is None:
                body["base64"] = base64.b64encode(value).decode("ascii")
            else:
                body["blob"] = f"{prefix}{len(blobs)}"
                blobs.append(value)
        elif value is not None:
            body[spec.name] = value
    return body


def _blob_names(raw: bytes | str) -> list[str]:
    """The keys of the parts' bytes a kept result names, in order (cheap: no parse when
    it names none)."""
    marker = '"blob":' if isinstance(raw, str) else b'"blob":'
    if marker not in raw:  # type: ignore[operator]
        return []
    try:
        parts = json.loads(raw).get("parts") or ()
        return [p["blob"] for p in parts if "blob" in p]
    except (ValueError, TypeError, AttributeError):
        return []


def _encoded(
    result: ToolResult, redactor: Redactor | None, blobs: list[bytes] | None = None,
    prefix: str = "",
) -> str | None:
    return encode_result(
        result if redactor is None else redacted_result(result, redactor), blobs, prefix
    )


def decode_result(raw: bytes | str, blobs: list[bytes] | None = None) -> ToolResult | None:
    """A result ``encode_result`` wrote (``blobs``: the parts' bytes it named, in order),
    or None when it cannot be read."""
    try:
        body = json.loads(raw)
        error = body.get("error")
        found = iter(blobs or ())
        return ToolResult(
            output=body.get("output", ""),
            data=body.get("data"),
            citations=tuple(Citation(**c) for c in body.get("citations", ())),
            warnings=tuple(body.get("warnings", ())),
            error=ToolError(**error) if error else None,
            trust=Trust.model_validate(body["trust"]) if body.get("trust") else None,
            parts=tuple(_part(p, found) for p in body.get("parts", ())),
        )
    except (ValueError, TypeError, KeyError, StopIteration):  # another version's: a miss
        return None


def _part(body: dict[str, Any], blobs: Any) -> Part:
    fields = {k: v for k, v in body.items() if k not in ("kind", "base64", "blob")}
    if "blob" in body:
        fields["data"] = next(blobs)
    elif "base64" in body:
        fields["data"] = base64.b64decode(body["base64"], validate=True)
    return _PART_TYPES[body["kind"]](**fields)
