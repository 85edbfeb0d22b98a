"""The installed toolplug's version, read from its distribution's metadata in one place."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

__all__ = ["toolplug_version"]


@cache
def toolplug_version() -> str | None:
    """The installed ``toolplug`` distribution's version; None when core runs from a source
    tree that was never installed (the MCP server says ``0`` then, a scaffold asks for any
    version, telemetry and code mode name none)."""
    try:
        return version("toolplug")
    except PackageNotFoundError:  # pragma: no cover - core runs from an installed dist
        return None
