"""Status lines for work that may take seconds: what a load is waiting for, in words.

Asking mounted MCP servers for their tools and parsing an OpenAPI description can take
seconds; each says what it is doing through ``status(text)``. Nothing is shown unless the
caller installed a ``Display`` with ``showing`` (the command line does when stderr is a
terminal), so a host's ``toolplug.load()`` stays silent.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Protocol

__all__ = ["Display", "showing", "status"]


class Display(Protocol):
    """Where status lines go: one line, replaced by the next, cleared when work ends."""

    def show(self, text: str) -> None:
        """Show ``text`` (in place of what was shown)."""

    def clear(self) -> None:
        """Show nothing."""


_display: ContextVar[Display | None] = ContextVar("toolplug_display", default=None)


@contextlib.contextmanager
def showing(display: Display) -> Iterator[None]:
    """Send the status lines of the work inside to ``display``; cleared at the end."""
    token = _display.set(display)
    try:
        yield
    finally:
        _display.reset(token)
        display.clear()


@contextlib.contextmanager
def status(text: str) -> Iterator[Callable[[str], None]]:
    """Say ``text`` while the work inside runs; yields a function that says something else
    (from any thread). The line is cleared when the work ends."""
    display = _display.get()
    if display is None:
        yield _quiet
        return
    display.show(text)
    try:
        yield display.show
    finally:
        display.clear()


def _quiet(_text: str) -> None:
    """Says nothing: no display is installed."""
