"""What a mounted server offers: its tool list, cached on disk, pinned in a lock file.

Listing and prompting must not start every server on every command, so each server's
answer to ``tools/list`` (and to ``prompts/list``, ``resources/list`` and
``resources/templates/list``, where it declares them) is kept in
``<cache_dir>/mcp/NAME.json``, keyed by what decides it (the command, arguments,
environment, URL and headers, hashed: no secret is written), and trusted for
``list_ttl_seconds``. A server that could not be reached is tried again after
``RETRY_SECONDS``; until then its last known tools stay listed, unavailable, with the reason.

``toolplug.lock`` beside the configuration holds a digest of each mounted tool's
definition (name, title, description, schemas, annotations), and one of each of those
parts, so that a change can be named. ``toolplug lock`` writes it; with ``pin =
"first-use"`` (the default) a load records each definition it sees for the first time. A
pinned tool whose definition differs from its digest is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from toolplug.sources.mcp._mount import MountedServer

__all__ = [
    "LOCK_FILE",
    "RETRY_SECONDS",
    "Listing",
    "config_key",
    "definition_digest",
    "drift_text",
    "field_digests",
    "lock_path",
    "read_listing",
    "read_lock",
    "read_lock_fields",
    "tool_name",
    "write_listing",
    "write_lock",
]

LOCK_FILE: Final = "toolplug.lock"
RETRY_SECONDS: Final = 30.0
"""How long a server that could not be reached is left alone by listing commands."""
_DEFINITION_KEYS: Final = (
    "name", "title", "description", "inputSchema", "outputSchema", "annotations"
)


@dataclass
class Listing:
    """One server's tools as last seen, and whether it answered."""

    key: str
    stored: float
    """When it was asked (seconds since the epoch)."""
    server: dict[str, Any] = field(default_factory=dict)
    """The server's ``name`` and ``version``, as it reported them."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The ``tools/list`` entries, as JSON."""
    problem: str | None = None
    """Why the server could not be reached when it was last asked."""
    prompts: list[dict[str, Any]] = field(default_factory=list)
    """The ``prompts/list`` entries, as JSON (none when the server declares no prompts)."""
    resources: list[dict[str, Any]] = field(default_factory=list)
    """The ``resources/list`` entries, as JSON."""
    templates: list[dict[str, Any]] = field(default_factory=list)
    """The ``resources/templates/list`` entries, as JSON."""

    def fresh(self, ttl: float, now: float) -> bool:
        """Whether it can be used without asking the server again."""
        age = now - self.stored
        return 0 <= age < (min(ttl, RETRY_SECONDS) if self.problem else ttl)

    def expires(self, ttl: float) -> float:
        """When it stops being fresh (seconds since the epoch)."""
        return self.stored + (min(ttl, RETRY_SECONDS) if self.problem else ttl)


def config_key(material: Mapping[str, Any]) -> str:
    """A digest of what decides a server's answer (values hashed, never stored)."""
    text = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def definition_digest(tool: Mapping[str, Any]) -> str:
    """A digest of what a model and its approver read of a tool."""
    definition = {k: tool[k] for k in _DEFINITION_KEYS if tool.get(k) is not None}
    text = json.dumps(definition, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def field_digests(tool: Mapping[str, Any]) -> dict[str, str]:
    """A short digest of each part of a tool's definition (what a change is named by)."""
    return {
        key: hashlib.sha256(
            json.dumps(tool[key], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            .encode("utf-8")
        ).hexdigest()[:16]
        for key in _DEFINITION_KEYS
        if tool.get(key) is not None
    }


def changed_parts(before: Mapping[str, str], tool: Mapping[str, Any]) -> list[str]:
    """The parts of a definition that differ from the recorded ``field_digests``."""
    now = field_digests(tool)
    return sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))


def _listing_path(cache_dir: Path, server: str) -> Path:
    return cache_dir / "mcp" / f"{server}.json"


def read_listing(cache_dir: Path, server: str) -> Listing | None:
    """The stored listing of a server, or None (absent or unreadable)."""
    try:
        raw = json.loads(_listing_path(cache_dir, server).read_text(encoding="utf-8"))
        return Listing(
            key=str(raw["key"]),
            stored=float(raw["stored"]),
            server=dict(raw.get("server") or {}),
            tools=[dict(t) for t in raw.get("tools") or []],
            problem=raw.get("problem"),
            prompts=[dict(p) for p in raw.get("prompts") or []],
            resources=[dict(r) for r in raw.get("resources") or []],
            templates=[dict(t) for t in raw.get("templates") or []],
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_listing(
    cache_dir: Path, server: str, listing: Listing, *, redact: Callable[[Any], Any] | None = None
) -> Path | None:
    """Store a listing (atomically), readable by its owner only; None when the cache cannot
    be written. ``redact`` (``Redactor.redact_data``) takes the configured secrets out of
    every string first: a reason may quote the server's stderr, which may print them."""
    path = _listing_path(cache_dir, server)
    body = {
        "key": listing.key,
        "stored": listing.stored,
        "server": listing.server,
        "tools": listing.tools,
        "problem": listing.problem,
        "prompts": listing.prompts,
        "resources": listing.resources,
        "templates": listing.templates,
    }
    if redact is not None:
        body = {k: v if k in ("key", "stored") else redact(v) for k, v in body.items()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(descriptor, "w", encoding="utf-8") as out:
            out.write(json.dumps(body, sort_keys=True))
        os.chmod(temporary, 0o600)  # a temporary left over from before, with wider rights
        os.replace(temporary, path)
    except OSError:
        return None
    return path


def lock_path(config_path: Path | None) -> Path:
    """``toolplug.lock`` beside the configuration file (or in the working directory)."""
    return (config_path.parent if config_path else Path.cwd()) / LOCK_FILE


def read_lock(path: Path) -> dict[str, dict[str, str]]:
    """The digests recorded per server and tool; empty when there is no lock file."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a lock file toolplug can read ({exc})") from None
    servers = raw.get("servers") if isinstance(raw, dict) else None
    if not isinstance(servers, dict):
        raise ValueError(f"{path}: not a lock file toolplug can read (no servers table)")
    return {
        str(server): {str(tool): str(digest) for tool, digest in dict(tools).items()}
        for server, tools in servers.items()
    }


def read_lock_fields(path: Path) -> dict[str, dict[str, dict[str, str]]]:
    """The digests of each part of each recorded definition; empty when there are none."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    fields = raw.get("fields") if isinstance(raw, dict) else None
    if not isinstance(fields, dict):
        return {}
    return {
        str(server): {
            str(tool): {str(k): str(v) for k, v in dict(parts).items()}
            for tool, parts in dict(tools).items()
            if isinstance(parts, dict)
        }
        for server, tools in fields.items()
        if isinstance(tools, dict)
    }


def write_lock(
    path: Path,
    servers: Mapping[str, Mapping[str, str]],
    fields: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
) -> None:
    """Write the lock file (sorted, so the same tools give the same bytes)."""
    body: dict[str, Any] = {
        "about": "Digests of mounted MCP tools' definitions: recorded on first use, "
        "accepted by 'toolplug lock'.",
        "version": 1,
        "servers": {s: dict(sorted(t.items())) for s, t in sorted(servers.items())},
    }
    if fields:
        body["fields"] = {
            s: {t: dict(sorted(p.items())) for t, p in sorted(tools.items())}
            for s, tools in sorted(fields.items())
            if s in servers
        }
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def tool_name(prefix: str, remote: str) -> str:
    """The toolplug name of a remote tool: the prefix and the name, made a valid tool name
    (lower case, letters, digits and ``_``, a letter first, at most 64 characters)."""
    base = re.sub(r"[^a-z0-9_]+", "_", remote.lower()).strip("_") or "tool"
    name = prefix + base
    if not name[0].isalpha():
        name = "t_" + name
    return name[:64]


def now() -> float:
    """Seconds since the epoch (a function, so a test can see the clock it reads)."""
    return time.time()


def drift_text(server: MountedServer, remote: str) -> str:
    """``'add' differs from toolplug.lock (its description, inputSchema changed)``."""
    assert server.locked is not None
    if remote not in server.locked:
        return f"{remote!r} is not in toolplug.lock"
    before = server.locked_fields.get(remote)
    tools = server.listing.tools if server.listing else []
    now = next((t for t in tools if t.get("name") == remote), None)
    if before is None or now is None:
        return f"{remote!r} differs from toolplug.lock"
    parts = ", ".join(changed_parts(before, now))
    return f"{remote!r} differs from toolplug.lock (its {parts} changed)"
