"""What ``toolplug lock`` writes of the mounted servers (their tools' digests) and the
definitions that drifted from it, which ``toolplug doctor`` and ``list`` report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from toolplug.sources.mcp import _catalog
from toolplug.sources.mcp._mount import Mounted, mounted

if TYPE_CHECKING:
    from toolplug.runtime._registry import Registry

__all__ = ["lock", "report_drift"]


def lock(registry: Registry) -> tuple[Path, dict[str, int], list[str]]:
    """Write ``toolplug.lock``: the digest of every tool each mounted server lists now.

    Returns the lock file, how many tools each server has locked, and the servers that
    were not reached (their entries are kept as they were).
    """
    path = _catalog.lock_path(registry.config.path)
    mounts = mounted(registry)
    if mounts is None:
        return path, {}, []
    try:
        entries = _catalog.read_lock(path)
    except ValueError:
        entries = {}
    entries = {k: v for k, v in entries.items() if k in registry.config.mcp_servers}
    fields = _catalog.read_lock_fields(path)
    counts: dict[str, int] = {}
    down: list[str] = []
    for server in mounts.servers.values():
        if server.problem is not None:
            down.append(server.name)
            continue
        entries[server.name] = server.digests()
        fields[server.name] = server.field_digests()
        counts[server.name] = len(entries[server.name])
    _catalog.write_lock(path, entries, fields)
    return path, counts, down


def report_drift(mounts: Mounted) -> list[str]:
    """Each mounted tool whose definition differs from the recorded one:
    ``calc: 'add' differs from toolplug.lock (its description changed)``."""
    return [
        f"{server.name}: {_catalog.drift_text(server, remote)}"
        for server in mounts.servers.values()
        if server.locked is not None
        for remote in server.drifted
    ]
