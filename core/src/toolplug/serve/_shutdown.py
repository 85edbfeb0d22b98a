"""The end of serving: calls in flight answer within a grace period, or get an error.

On SIGTERM or SIGINT a transport stops taking requests and calls ``Drain.drain``: the calls
in flight have ``grace`` seconds to finish and answer as usual; each one still running then
is cancelled and answered with a JSON-RPC error (``SHUTTING_DOWN``) that says so, so every
client reads an answer instead of a stream cut short. New calls that arrive meanwhile are
refused with the same error; other requests (listing tools, a client cancelling a call)
are still answered. Each transport says when its answers are out (``idle``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Final, TypeVar

import anyio
from mcp.shared.exceptions import MCPError

__all__ = ["SHUTTING_DOWN", "Drain"]

log = logging.getLogger("toolplug")

_T = TypeVar("_T")

SHUTTING_DOWN: Final = -32000
"""The JSON-RPC error code of a request refused or cancelled by shutdown: the MCP SDK's
code for a connection that is closing, which clients already treat as such."""
_SETTLE_SECONDS: Final = 2.0
"""After cancelling, how long the cancelled calls' errors have to reach their clients."""
_POLL_SECONDS: Final = 0.05


class Drain:
    """The calls in flight on one server, and their orderly end.

    Args:
        grace: Seconds calls in flight may take to finish after shutdown begins.
    """

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.closing = False
        self._calls: dict[Hashable, anyio.CancelScope | None] = {}
        self._answers_seen = False
        self._hurried = False
        self._hurry: anyio.Event | None = None

    def watch_answers(self) -> None:
        """The transport reports each answer it writes (``answered``): a call counts as in
        flight until its answer is out, not only until its handler returns."""
        self._answers_seen = True

    async def call(self, key: Hashable, name: str, work: Callable[[], Awaitable[_T]]) -> _T:
        """Run one call's ``work`` as in flight under ``key``.

        Raises:
            MCPError: the server is shutting down, and the call was refused or cancelled.
        """
        if self.closing:
            raise MCPError(code=SHUTTING_DOWN, message=self.refusal())
        scope = anyio.CancelScope()
        self._calls[key] = scope
        try:
            with scope:
                return await work()
        finally:
            if self._answers_seen and not scope.cancel_called:
                self._calls[key] = None  # finished: in flight until ``answered``
            else:
                self._calls.pop(key, None)
        # Reached only when the drain cancelled this call (a client's own cancellation is
        # not caught by this scope).
        raise MCPError(
            code=SHUTTING_DOWN,
            message=(
                f"the server is shutting down: the call of {name} was still running after "
                f"the {self.grace:g} s grace period and was cancelled; call it again once the "
                "server is back"
            ),
        )

    def answered(self, key: Hashable) -> None:
        """The answer to the request under ``key`` has been written."""
        if self._calls.get(key, ...) is None:
            del self._calls[key]

    def refusal(self) -> str:
        """Why a call that arrives during shutdown is refused."""
        return "the server is shutting down and takes no new calls; call again once it is back"

    def hurry(self) -> None:
        """Stop waiting out the grace period (a second signal): cancel what still runs."""
        self._hurried = True
        if self._hurry is not None:
            self._hurry.set()

    async def drain(self, idle: Callable[[], bool] = lambda: True) -> None:
        """Refuse new calls, give those in flight the grace period, then cancel the rest
        and give their errors a moment to reach the clients.

        Args:
            idle: The transport's own say: True when it has no answer left to send.
        """
        self.closing = True
        self._hurry = anyio.Event()
        if self._hurried:
            self._hurry.set()

        def done() -> bool:
            return not self._calls and idle()

        with anyio.move_on_after(self.grace):
            while not done() and not self._hurried:
                with anyio.move_on_after(_POLL_SECONDS):
                    await self._hurry.wait()
        running = [scope for scope in self._calls.values() if scope is not None]
        if running:
            log.warning(
                "shutting down: cancelling %d call(s) still running after the %g s grace period",
                len(running),
                self.grace,
            )
            for scope in running:
                scope.cancel()
        with anyio.move_on_after(_SETTLE_SECONDS):
            while not done():
                await anyio.sleep(_POLL_SECONDS)

