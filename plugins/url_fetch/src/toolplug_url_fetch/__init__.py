"""Guarded HTTP requests and downloads for toolplug agents: the ``url_fetch`` tool.

This entry module imports only ``toolplug`` and the standard library, so listing and
prompting never pay for the HTTP client; it is imported when the tool runs.
"""

from __future__ import annotations

from collections.abc import Callable

from toolplug import Tool, hookimpl
from toolplug_url_fetch._tool import UrlFetch

__all__ = ["UrlFetch", "register_tools"]


@hookimpl
def register_tools(register: Callable[[type[Tool]], None]) -> None:
    """Register the ``url_fetch`` tool."""
    register(UrlFetch)
