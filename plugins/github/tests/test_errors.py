"""Every error path: GitHub's statuses, rate limits, the network guard, broken answers."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from pytest_httpserver import HTTPServer

from toolplug import Registry, ToolResult

REPO = "/api/v3/repos/octo/hello"


def failed(result: ToolResult, error_type: str) -> str:
    """The message of a failed result of the given type."""
    assert result.error is not None, result.output
    assert result.error.type == error_type, result.error
    return result.error.message


def test_404_names_what_was_missing(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(f"{REPO}/contents/docs/nope.md").respond_with_json(
        {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, status=404
    )
    result = call(action="get_file", owner="octo", repo="hello", path="docs/nope.md", ref="dev")
    message = failed(result, "NotFoundError")
    assert "'docs/nope.md'" in message
    assert "octo/hello" in message
    assert "'dev'" in message
    assert "private" in message  # a 404 may also mean "not visible to this token"
    assert result.error is not None
    assert not result.error.retry_possible


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"action": "get_readme", "owner": "octo", "repo": "hello"}, "no README in octo/hello"),
        ({"action": "list_releases", "owner": "octo", "repo": "hello"},
         "no repository octo/hello"),
        ({"action": "get_issue", "owner": "octo", "repo": "hello", "issue_number": 5},
         "no issue or pull request #5 in octo/hello"),
    ],
)
def test_404_for_each_action(
    api: HTTPServer,
    call: Callable[..., ToolResult],
    arguments: dict[str, object],
    fragment: str,
) -> None:
    api.expect_request(re.compile(r"/api/v3/repos/octo/hello/.*")).respond_with_json(
        {"message": "Not Found"}, status=404
    )
    assert fragment in failed(call(**arguments), "NotFoundError")


def test_410_gone_issue_is_not_found(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(f"{REPO}/issues/8").respond_with_json(
        {"message": "This issue was deleted"}, status=410
    )
    message = failed(call(action="get_issue", owner="octo", repo="hello", issue_number=8),
                     "NotFoundError")
    assert "This issue was deleted" in message


def test_401_says_how_to_fix_the_token(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(f"{REPO}/readme").respond_with_json(
        {"message": "Bad credentials"}, status=401
    )
    result = call(action="get_readme", owner="octo", repo="hello")
    message = failed(result, "PermissionError")
    assert "401" in message
    assert "Bad credentials" in message
    assert "GITHUB_TOKEN" in message
    assert "fine-grained token" in message
    assert result.error is not None
    assert not result.error.retry_possible


def test_403_single_sign_on(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    sso = "https://github.com/orgs/acme/sso?authorization_request=AbC123"
    api.expect_request(f"{REPO}/readme").respond_with_json(
        {"message": "Resource protected by organization SAML enforcement."},
        status=403,
        headers={"X-GitHub-SSO": f"required; url={sso}"},
    )
    result = call(action="get_readme", owner="octo", repo="hello")
    message = failed(result, "PermissionError")
    assert "single sign-on" in message
    assert sso in message
    assert result.error is not None
    assert result.error.details["sso_url"] == sso


def test_403_missing_permission(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(f"{REPO}/issues/4").respond_with_json(
        {"message": "Resource not accessible by personal access token"},
        status=403,
        headers={"X-Accepted-GitHub-Permissions": "issues=read; pull_requests=read"},
    )
    message = failed(
        call(action="get_issue", owner="octo", repo="hello", issue_number=4), "PermissionError"
    )
    assert "Resource not accessible by personal access token" in message
    assert "issues=read" in message


def test_403_without_hints_explains_scopes(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    api.expect_request(f"{REPO}/readme").respond_with_json({"message": "Forbidden"}, status=403)
    message = failed(call(action="get_readme", owner="octo", repo="hello"), "PermissionError")
    assert "Contents" in message
    assert "Metadata" in message
    assert "repo scope" in message


def test_primary_rate_limit(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    reset = int(time.time()) + 600
    api.expect_request(f"{REPO}/readme").respond_with_json(
        {"message": "API rate limit exceeded for user ID 1."},
        status=403,
        headers={
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(reset),
            "x-ratelimit-resource": "core",
        },
    )
    result = call(action="get_readme", owner="octo", repo="hello")
    message = failed(result, "RateLimitError")
    when = datetime.fromtimestamp(reset, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "primary rate limit" in message
    assert when in message
    assert "5000" in message
    assert result.error is not None
    assert result.error.retry_possible
    details = result.error.details
    assert details["kind"] == "primary"
    assert details["reset_at"] == when
    assert 590 <= details["retry_after_seconds"] <= 601
    assert details["resource"] == "core"


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_rate_limit_with_retry_after(
    api: HTTPServer, call: Callable[..., ToolResult], status: int
) -> None:
    api.expect_request("/api/v3/search/code").respond_with_json(
        {"message": "You have exceeded a secondary rate limit."},
        status=status,
        headers={"Retry-After": "42", "x-ratelimit-remaining": "17"},
    )
    before = time.time()
    result = call(action="search_code", query="foo")
    message = failed(result, "RateLimitError")
    assert "secondary rate limit" in message
    assert "42 s" in message
    assert result.error is not None
    assert result.error.retry_possible
    details = result.error.details
    assert details["kind"] == "secondary"
    assert details["retry_after_seconds"] == 42
    reset = datetime.strptime(details["reset_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before + 40 <= reset.timestamp() <= time.time() + 43
    assert details["reset_at"] in message


def test_secondary_rate_limit_without_headers_waits_a_minute(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    api.expect_request(f"{REPO}/readme").respond_with_json(
        {"message": "You have exceeded a secondary rate limit"}, status=403
    )
    result = call(action="get_readme", owner="octo", repo="hello")
    failed(result, "RateLimitError")
    assert result.error is not None
    assert result.error.details["retry_after_seconds"] == 60


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_error_is_a_retryable_network_error(
    api: HTTPServer, call: Callable[..., ToolResult], status: int
) -> None:
    api.expect_request(f"{REPO}/readme").respond_with_data("upstream broke", status=status)
    result = call(action="get_readme", owner="octo", repo="hello")
    message = failed(result, "NetworkError")
    assert str(status) in message
    assert result.error is not None
    assert result.error.retry_possible


def test_retries_configured_in_core_recover_from_a_500(
    api: HTTPServer, make_registry: Callable[..., Registry], call: Callable[..., ToolResult]
) -> None:
    # retry_possible=True lets the core's bounded retries do their job.
    api.expect_oneshot_request(f"{REPO}/readme").respond_with_data("oops", status=500)
    api.expect_request(f"{REPO}/readme").respond_with_json(
        {"type": "file", "path": "README.md", "encoding": "base64", "content": "b2s=", "size": 2}
    )
    registry = make_registry(tools={"retries": 1, "retry_backoff_seconds": 0.01})
    result = call(registry, action="get_readme", owner="octo", repo="hello")
    assert result.ok, result.error
    assert len(api.log) == 2


def test_422_search_is_a_validation_error(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    api.expect_request("/api/v3/search/code").respond_with_json(
        {"message": "Validation Failed",
         "errors": [{"message": "Must include at least one user, organization, or repository"}]},
        status=422,
    )
    message = failed(call(action="search_code", query="foo"), "ValidationError")
    assert "Must include at least one user" in message


def test_not_json_is_a_parse_error(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(f"{REPO}/readme").respond_with_data(
        "<html>login</html>", content_type="text/html"
    )
    message = failed(call(action="get_readme", owner="octo", repo="hello"), "ParseError")
    assert "api_url" in message


def test_refused_address_is_a_permission_error(
    api: HTTPServer, make_registry: Callable[..., Registry], call: Callable[..., ToolResult]
) -> None:
    registry = make_registry(network={})  # loopback is not allowed by default
    result = call(registry, action="get_readme", owner="octo", repo="hello")
    message = failed(result, "PermissionError")
    assert "127.0.0.1" in message
    assert "[network] allow" in message
    assert result.error is not None
    assert not result.error.retry_possible
    assert len(api.log) == 0


def test_unreachable_api_is_a_retryable_network_error(
    make_registry: Callable[..., Registry], call: Callable[..., ToolResult]
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    registry = make_registry(tools={"api_url": f"http://127.0.0.1:{port}/api/v3"})
    result = call(registry, action="get_readme", owner="octo", repo="hello")
    failed(result, "NetworkError")
    assert result.error is not None
    assert result.error.retry_possible
