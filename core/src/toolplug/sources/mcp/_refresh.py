"""A refresh of a mounted server's token that failed without the grant being refused
(the authorization server answered 5xx, or did not answer): the reason the call gets,
and how ``_oauth`` tells such a failure from a spent refresh token (``invalid_grant``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "RefreshFailed", "Transient", "cancelling", "error_of", "refreshing", "why_not_refreshed",
]


class Transient(str):
    """A call's reason (``REFUSALS``) for a failure that may pass: the call may be tried
    again (the authorization server failed or could not be reached)."""

    __slots__ = ()


class RefreshFailed(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def refreshing(request: httpx2.Request) -> bool:
    """Whether ``request`` is the SDK's refresh of a token."""
    content = request.content if request.method == "POST" else b""
    return b"grant_type=refresh_token" in content


async def error_of(response: httpx2.Response) -> str | None:
    """The ``error`` of a token endpoint's JSON answer (RFC 6749 5.2), None if it has none."""
    with contextlib.suppress(Exception):
        found = json.loads(await response.aread())
        if isinstance(found, dict) and isinstance(found.get("error"), str):
            return str(found["error"])
    return None


def why_not_refreshed(name: str, status: int | None = None, error: str | None = None) -> str:
    """The reason of a refresh that failed without the grant being refused: the sign-in
    is kept. ``status`` None: the token endpoint could not be reached."""
    if status is None:
        said = "its authorization server could not be reached"
    else:
        said = f"its authorization server answered HTTP {status}"
        if error:
            said += f" ({error})"
    reason = f"could not refresh its sign-in: {said}; the sign-in is kept"
    if status is None or status >= 500 or status == 429:
        return Transient(f"{reason}, a later call tries again")
    return f"{reason}; if it stays refused, run `toolplug login {name}`"
