"""An API's parsed description, cached on disk like a mounted server's tool list.

Reading and converting a description of a thousand operations takes most of a second, so
``toolplug list`` and ``prompt`` read ``<cache_dir>/openapi/NAME.cache`` instead: the
converted operations, keyed by what decides them (a file's path, size and modification
time, or a URL; the converter's version). A description read from a URL is trusted for
``spec_ttl_seconds``; one that could not be read is tried again after ``RETRY_SECONDS``,
its last known operations kept, unavailable, with the reason.

The file is ``marshal`` data (plain dicts, lists and strings; it loads several times faster
than JSON), behind a header naming the format and the interpreter's version: another
version's file is read as absent and written again.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = [
    "RETRY_SECONDS",
    "Parsed",
    "collector_paused",
    "listing_path",
    "now",
    "read_parsed",
    "write_parsed",
]

RETRY_SECONDS: Final = 30.0
_HEADER: Final = f"toolplug-openapi-2 {sys.version_info[0]}.{sys.version_info[1]}\n".encode()


@dataclass
class Parsed:
    """One API's converted description as last read, and whether it could be read."""

    key: str
    stored: float
    description: dict[str, Any] = field(default_factory=dict)
    """What ``_convert.convert`` made of it (empty when it was never read)."""
    problem: str | None = None
    """Why it could not be read when it was last tried."""
    checked: list[str] = field(default_factory=list)
    """Digests of its schemas that passed JSON Schema's meta-schema when they were first
    registered (``toolplug.contract._metadata.vouch``): later loads skip that check."""
    checked_ids: list[str] = field(default_factory=list)
    """The ``operation_id`` of each operation whose schemas are among ``checked``."""

    def fresh(self, ttl: float, now: float) -> bool:
        """Whether it can be used without reading the description again."""
        age = now - self.stored
        return 0 <= age < (min(ttl, RETRY_SECONDS) if self.problem else ttl)

    def expires(self, ttl: float) -> float:
        """When it stops being fresh (seconds since the epoch)."""
        return self.stored + (min(ttl, RETRY_SECONDS) if self.problem else ttl)

    @property
    def operations(self) -> list[dict[str, Any]]:
        """The converted operations."""
        return list(self.description.get("operations") or [])


def listing_path(cache_dir: Path, api: str) -> Path:
    """Where an API's parsed description is kept."""
    return cache_dir / "openapi" / f"{api}.cache"


def read_parsed(cache_dir: Path, api: str) -> Parsed | None:
    """The stored description of an API, or None (absent or unreadable)."""
    try:
        data = listing_path(cache_dir, api).read_bytes()
        if not data.startswith(_HEADER):
            return None
        with collector_paused():  # a million containers, none of them garbage
            raw = marshal.loads(data[len(_HEADER):])
        return Parsed(
            key=str(raw["key"]),
            stored=float(raw["stored"]),
            description=dict(raw.get("description") or {}),
            problem=raw.get("problem"),
            checked=[str(d) for d in raw.get("checked") or []],
            checked_ids=[str(d) for d in raw.get("checked_ids") or []],
        )
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None


def write_parsed(cache_dir: Path, api: str, parsed: Parsed) -> Path | None:
    """Store a parsed description (atomically); None when the cache cannot be written."""
    path = listing_path(cache_dir, api)
    body = {
        "key": parsed.key,
        "stored": parsed.stored,
        "description": _compact(parsed.description),
        "problem": parsed.problem,
        "checked": sorted(parsed.checked),
        "checked_ids": sorted(parsed.checked_ids),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_bytes(_HEADER + marshal.dumps(body))
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            temporary.unlink()
        return None
    return path


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a great many objects that are not garbage
    are made: each collection it would start walks them all, and costs more than making
    them (reading GitHub's description took 2-6x longer with it running)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _compact(description: dict[str, Any]) -> dict[str, Any]:
    """The description as stored: each operation's tags and argument specs as tuples, which
    the cyclic garbage collector stops tracking once it has seen them (a list it tracks
    as long as it lives: GitHub's description has some 6,000)."""
    operations = description.get("operations")
    if not operations:
        return description
    compact = []
    for given in operations:
        op = dict(given)
        if isinstance(op.get("tags"), list):
            op["tags"] = tuple(op["tags"])
        if isinstance(op.get("args"), dict):
            op["args"] = {k: tuple(v) if isinstance(v, list) else v for k, v in op["args"].items()}
        compact.append(op)
    return {**description, "operations": compact}


def now() -> float:
    """Seconds since the epoch (a function, so a test can see the clock it reads)."""
    return time.time()
