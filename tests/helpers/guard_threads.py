"""Where the flow guard's checks ran, for the tests that hold a framework's approval flow
(or the MCP server's) to checking a conversation that read a long page off the event loop,
as the engine's own check does (``FlowGuard.long``, ``FlowGuard.check_off_loop``)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.helpers.guard import PAGES
from toolplug.trust import _guard

NEWS = "https://news.example/today"
_FILLER = "Markets were calm and the weather held across the region this week. "


def long_news(monkeypatch: pytest.MonkeyPatch, chars: int = 200_000) -> None:
    """The news page with its injected comment after ``chars`` characters of plain text:
    long enough that a check of a short post after it searches more than the guard does on
    the loop."""
    filler = _FILLER * (chars // len(_FILLER))
    monkeypatch.setitem(PAGES, NEWS, filler + PAGES[NEWS])


class CheckThreads:
    """The name of the thread each of the guard's checks of ``tool`` ran in, in order,
    installed over ``FlowGuard.check``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tool: str = "post") -> None:
        self.threads: list[str] = []
        check = _guard.FlowGuard.check

        def checking(guard: _guard.FlowGuard, name: str, *args: Any) -> Any:
            if name == tool:
                self.threads.append(threading.current_thread().name)
            return check(guard, name, *args)

        monkeypatch.setattr(_guard.FlowGuard, "check", checking)

    @property
    def on_the_loop(self) -> list[str]:
        """The checks that ran in another thread than the guard's workers."""
        return [name for name in self.threads if not name.startswith("toolplug-offload")]
