"""Guarded HTTP requests and downloads for toolplug agents: the ``url_fetch`` tool.

This entry module imports only ``toolplug`` and the standard library, so listing and
prompting never pay for the HTTP client; it is imported when the tool runs.
"""

from __future__ import annotations

from toolplug import provides
from toolplug_url_fetch._tool import UrlFetch

__all__ = ["UrlFetch", "register_tools"]


register_tools = provides(UrlFetch)
