"""Concurrent link checking for toolplug agents: the ``link_validator`` tool.

This entry module imports only ``toolplug`` and the standard library, so listing and
prompting never pay for the HTTP client; the checker is imported when the tool runs.
"""

from __future__ import annotations

from toolplug import provides
from toolplug_link_validator._progress import ProgressBar, progress_bar
from toolplug_link_validator._tool import LinkValidator

__all__ = ["TOOLPLUG_CONTRACT", "LinkValidator", "ProgressBar", "progress_bar", "register_tools"]

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""


register_tools = provides(LinkValidator)
