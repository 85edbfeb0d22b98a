"""Why a mounted server cannot be reached: the error both halves of mounting raise."""

from __future__ import annotations

from typing import Any, Final

__all__ = ["ServerDown", "tail"]

_STDERR_TAIL: Final = 600
"""Characters of a server's stderr quoted in a reason."""


class ServerDown(Exception):
    """The server cannot be reached now; ``reason`` says why in words."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def tail(stderr: Any, lead: str) -> str:
    """The end of a server's stderr after ``lead``, on one line (empty: nothing)."""
    try:
        stderr.flush()
        stderr.seek(0)
        text = stderr.read().strip()
    except (OSError, ValueError):
        return ""
    if not text:
        return ""
    return lead + " ".join(text[-_STDERR_TAIL:].split())
