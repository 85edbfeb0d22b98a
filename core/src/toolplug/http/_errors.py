"""The network guard's errors: every class is an ``OSError``, so code that already handles socket
errors keeps working; each is also raised by ``toolplug.http``::

    OSError
    └── NetworkError              a guarded request could not be made or completed
        ├── NetworkRefused        (also PermissionError) the policy forbids the URL or an address
        │   └── TooManyRedirects  more redirects than [network] max_redirects, or a loop
        ├── NetworkUnreachable    the host did not resolve, or the connection failed or broke
        └── NetworkTimeout        (also TimeoutError) one phase or the whole fetch took too long
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = [
    "NetworkError",
    "NetworkRefused",
    "NetworkTimeout",
    "NetworkUnreachable",
    "TooManyRedirects",
]


class NetworkError(OSError):
    """A guarded request could not be made or completed; base of the network guard's errors."""

    error_type: ClassVar[str] = "NetworkError"
    """The ``ToolResult`` error type a tool answers with (``toolplug.http.guard_failure``)."""
    retry_possible: ClassVar[bool] = True
    """Whether the same request may succeed later."""

    @property
    def reason(self) -> str:
        """What went wrong in a few words, without the URL (which may itself be secret)."""
        return "the request failed"

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url
        """The URL concerned, with any user name and password removed."""

    def __str__(self) -> str:
        # OSError's own __str__ would print "[Errno None] ..." style text for some arguments.
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        # The constructors take keyword-only context, which the default pickling (class
        # called with self.args) would lose; rebuild from the message and the attributes.
        return (_rebuild_error, (type(self), str(self), dict(self.__dict__)))


def _rebuild_error(cls: type[NetworkError], message: str, state: dict[str, Any]) -> NetworkError:
    error = cls.__new__(cls, message)
    OSError.__init__(error, message)
    error.__dict__.update(state)
    return error


class NetworkRefused(NetworkError, PermissionError):
    """The policy forbids the URL: its scheme, its form, or an address it leads to."""

    error_type: ClassVar[str] = "PermissionError"
    retry_possible: ClassVar[bool] = False

    @property
    def reason(self) -> str:
        """What went wrong in a few words, without the URL (which may itself be secret)."""
        text = f"the network guard refused the request ({self.rule})"
        if self.address is not None:
            text += "; an address on your own network must be listed in [network] allow"
        return text

    def __init__(
        self,
        message: str,
        *,
        url: str,
        rule: str,
        host: str | None = None,
        address: str | None = None,
    ) -> None:
        super().__init__(message, url=url)
        self.rule = rule
        """Short reason, e.g. ``"loopback address"`` or ``"scheme not allowed"``."""
        self.host = host
        """The host as parsed from the URL (canonical form), when there was one."""
        self.address = address
        """The refused address, when an address was the reason."""


class TooManyRedirects(NetworkRefused):
    """The redirects went past ``[network] max_redirects``, or came back to an earlier URL."""

    def __init__(
        self,
        message: str,
        *,
        url: str,
        rule: str,
        redirects: Sequence[tuple[int, str]],
    ) -> None:
        super().__init__(message, url=url, rule=rule)
        self.redirects = list(redirects)
        """``(status, location)`` of every redirect seen, the offending one last."""


class NetworkUnreachable(NetworkError):
    """The host did not resolve, or the connection could not be made or broke mid-response."""

    @property
    def reason(self) -> str:
        """What went wrong in a few words, without the URL (which may itself be secret)."""
        return "the host could not be resolved or reached"

    def __init__(
        self, message: str, *, url: str, host: str | None = None, address: str | None = None
    ) -> None:
        super().__init__(message, url=url)
        self.host = host
        """The host that could not be resolved or reached."""
        self.address = address
        """The address a connection was tried to, when it got that far."""


class NetworkTimeout(NetworkError, TimeoutError):
    """A connect, read, write or pool wait, or the whole fetch, ran past its time limit."""

    error_type: ClassVar[str] = "TimeoutError"

    @property
    def reason(self) -> str:
        """What went wrong in a few words, without the URL (which may itself be secret)."""
        return f"no answer within {self.timeout:g} s ({self.phase})"

    def __init__(self, message: str, *, url: str, timeout: float, phase: str) -> None:
        super().__init__(message, url=url)
        self.timeout = timeout
        """The limit that was exceeded, in seconds."""
        self.phase = phase
        """``"connect"``, ``"read"``, ``"write"``, ``"pool"`` or ``"total"``."""
