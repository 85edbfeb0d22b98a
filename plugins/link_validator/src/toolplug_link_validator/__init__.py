"""Concurrent link checking for toolplug agents: the ``link_validator`` tool.

This entry module imports only ``toolplug`` and the standard library, so listing and
prompting never pay for the HTTP client; the checker is imported when the tool runs.
"""

from __future__ import annotations

from toolplug import provides
from toolplug_link_validator._progress import ProgressBar, progress_bar
from toolplug_link_validator._tool import LinkValidator

__all__ = ["LinkValidator", "ProgressBar", "progress_bar", "register_tools"]


register_tools = provides(LinkValidator)
