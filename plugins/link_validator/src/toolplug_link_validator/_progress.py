"""A one-line progress bar on stderr for long link checks (standard library only).

A host passes it as ``context={"progress": bar}``; the tool calls ``bar(done, total)``. On
anything that is not a terminal the bar draws nothing, so piped output and logs stay clean.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Final, TextIO

__all__ = ["ProgressBar", "progress_bar"]

_MIN_INTERVAL: Final = 0.1  # seconds between redraws: a bar is for eyes, not for every URL


class ProgressBar:
    """Draws ``checking links [#####.....] 12/40`` in place, on a terminal only.

    Call it as ``bar(done, total)``; it redraws at most ten times a second, always draws the
    final state, and ends the line when ``done == total`` (or on ``close()``).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        label: str = "checking links",
        width: int = 30,
        force: bool = False,
    ) -> None:
        """Args:
        stream: Where to draw (normally ``sys.stderr``).
        label: The text before the bar.
        width: The bar's width in characters.
        force: Draw even when ``stream`` is not a terminal (for tests).
        """
        self.stream = stream
        self.label = label
        self.width = max(1, width)
        self.enabled = force or _is_tty(stream)
        """False when the stream is not a terminal: every call then does nothing."""
        self._last_draw = float("-inf")
        self._open = False

    def __call__(self, done: int, total: int) -> None:
        """Show that ``done`` of ``total`` items are finished."""
        if not self.enabled:
            return
        finished = total > 0 and done >= total
        now = time.monotonic()
        if not finished and now - self._last_draw < _MIN_INTERVAL:
            return
        self._last_draw = now
        self.stream.write("\r" + render(done, total, label=self.label, width=self.width))
        self._open = True
        if finished:
            self.close()
        else:
            self.stream.flush()

    def close(self) -> None:
        """End the bar's line, if one is drawn."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def render(done: int, total: int, *, label: str = "checking links", width: int = 30) -> str:
    """The bar's text for ``done`` of ``total``, e.g. ``checking links [###...] 3/10``."""
    total = max(total, 0)
    done = min(max(done, 0), total) if total else 0
    filled = width if total == 0 else width * done // total
    return f"{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or the stream is closed
        return False


def progress_bar(stream: TextIO | None = None, *, label: str = "checking links") -> ProgressBar:
    """A progress bar on ``stream`` (stderr by default) that draws only on a terminal.

    Example::

        bar = progress_bar()
        result = await registry.acall("link_validator", {"urls": urls}, context={"progress": bar})
    """
    return ProgressBar(sys.stderr if stream is None else stream, label=label)
