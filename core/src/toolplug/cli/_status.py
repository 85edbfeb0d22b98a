"""The status line of a command on a terminal: what it is waiting for (``mounting calc...``).

Drawn with rich, imported on the first line shown, so that a command with nothing slow to
do, an answer from the output cache, or output to a pipe or file never loads it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any

from toolplug.runtime import _progress

__all__ = ["on_terminal"]


class _Terminal:
    """A ``Display`` on stderr: one spinner line, replaced in place, gone when cleared."""

    def __init__(self) -> None:
        self._status: Any = None
        self._lock = threading.Lock()  # lines come from the sessions' thread too

    def show(self, text: str) -> None:
        from rich.console import Console
        from rich.text import Text

        with self._lock:
            if self._status is None:
                self._status = Console(stderr=True).status(Text(text))
                self._status.start()
            else:
                self._status.update(Text(text))

    def clear(self) -> None:
        with self._lock:
            if self._status is not None:
                self._status.stop()
                self._status = None


def on_terminal() -> contextlib.AbstractContextManager[None]:
    """Status lines of the work inside, on stderr when it is a terminal; else none."""
    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    return _progress.showing(_Terminal())
