"""One mapping from the guard's errors to tool results, shared by every network plugin."""

from __future__ import annotations

import pytest

from toolplug.http import (
    NetworkError,
    NetworkRefused,
    NetworkTimeout,
    NetworkUnreachable,
    TooManyRedirects,
    guard_failure,
)

SECRET_URL = "https://calendar.example/private-abc123/basic.ics"


@pytest.mark.parametrize(
    ("exc", "error_type", "retry", "reason"),
    [
        # a refused address: not retryable, and says where to allow it
        (NetworkRefused(f"refused {SECRET_URL}: ...", url=SECRET_URL, rule="private address",
                        address="10.0.0.5"),
         "PermissionError", False,
         "the network guard refused the request (private address); an address on your own "
         "network must be listed in [network] allow"),
        # a refused scheme: no allow hint, it would not help
        (NetworkRefused("refused ftp://x/", url="ftp://x/", rule="scheme not allowed"),
         "PermissionError", False, "the network guard refused the request (scheme not allowed)"),
        # too many redirects is a refusal too
        (TooManyRedirects("loop", url=SECRET_URL, rule="redirect loop", redirects=[]),
         "PermissionError", False, "the network guard refused the request (redirect loop)"),
        # a timeout: retryable, names the limit and the phase
        (NetworkTimeout("slow", url=SECRET_URL, timeout=2.5, phase="read"),
         "TimeoutError", True, "no answer within 2.5 s (read)"),
        # unreachable: retryable
        (NetworkUnreachable("gone", url=SECRET_URL, host="calendar.example"),
         "NetworkError", True, "the host could not be resolved or reached"),
        # anything else from the guard
        (NetworkError("odd", url=SECRET_URL), "NetworkError", True, "the request failed"),
    ],
)
def test_type_retry_and_a_reason_without_the_url(
    exc: NetworkError, error_type: str, retry: bool, reason: str
) -> None:
    assert exc.reason == reason
    assert "abc123" not in exc.reason
    failure = guard_failure(exc, f"source 'team': {exc.reason}")
    assert (failure.type, failure.retry_possible) == (error_type, retry)
    assert failure.message == f"source 'team': {reason}"
    assert guard_failure(exc).message == str(exc)  # the guard's own text by default
