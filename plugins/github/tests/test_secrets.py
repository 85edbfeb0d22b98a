"""The token goes to the configured API host only, and never comes back in any output."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator

import pytest
from pytest_httpserver import HTTPServer

from toolplug import Registry, ToolResult

REPO = "/api/v3/repos/octo/hello"
README = {"type": "file", "path": "README.md", "encoding": "base64", "content": "b2s=", "size": 2}


@pytest.fixture
def elsewhere() -> Iterator[HTTPServer]:
    """A second server on another loopback address: another host, not the API."""
    server = HTTPServer(host="127.0.0.2", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def both_allowed(make_registry: Callable[..., Registry]) -> Registry:
    """A registry whose network policy reaches the API (127.0.0.1) and 127.0.0.2."""
    return make_registry(network={"allow": ["127.0.0.1/32", "127.0.0.2/32"]})


def test_redirect_to_another_host_does_not_carry_the_token(
    api: HTTPServer,
    elsewhere: HTTPServer,
    both_allowed: Registry,
    call: Callable[..., ToolResult],
    token: str,
) -> None:
    api.expect_request(f"{REPO}/readme").respond_with_data(
        "", status=302, headers={"Location": elsewhere.url_for("/moved/readme")}
    )
    elsewhere.expect_request("/moved/readme").respond_with_json(README)
    result = call(both_allowed, action="get_readme", owner="octo", repo="hello")
    assert result.ok, result.error
    assert result.data["content"] == "ok"
    (request, _), = elsewhere.log
    assert "Authorization" not in request.headers
    assert token not in str(request.headers)
    assert token not in request.url


def test_userinfo_trick_in_a_redirect_does_not_carry_the_token(
    api: HTTPServer,
    elsewhere: HTTPServer,
    both_allowed: Registry,
    call: Callable[..., ToolResult],
    token: str,
) -> None:
    # "http://127.0.0.1:PORT@127.0.0.2:PORT2/": the part before @ is user info, not the host.
    port = api.url_for("/").split(":")[2].split("/")[0]
    target = elsewhere.url_for("/moved/readme").replace("http://", f"http://127.0.0.1:{port}@")
    api.expect_request(f"{REPO}/readme").respond_with_data(
        "", status=301, headers={"Location": target}
    )
    elsewhere.expect_request("/moved/readme").respond_with_json(README)
    result = call(both_allowed, action="get_readme", owner="octo", repo="hello")
    assert result.ok, result.error
    (request, _), = elsewhere.log
    assert not request.headers.get("Authorization", "").startswith("Bearer")
    assert token not in str(request.headers)


def test_redirect_within_the_api_keeps_the_token(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    # A renamed repository answers 301 to its new address on the same API host; the api
    # fixture checks that the second request carries the token as well.
    api.expect_request(f"{REPO}/readme").respond_with_data(
        "", status=301, headers={"Location": api.url_for("/api/v3/repositories/42/readme")}
    )
    api.expect_request("/api/v3/repositories/42/readme").respond_with_json(README)
    result = call(action="get_readme", owner="octo", repo="hello")
    assert result.ok, result.error
    assert len(api.log) == 2


def test_token_echoed_by_the_server_is_scrubbed_from_errors(
    api: HTTPServer, call: Callable[..., ToolResult], token: str
) -> None:
    api.expect_request(f"{REPO}/readme").respond_with_json(
        {"message": f"Bad credentials: Bearer {token}"},
        status=403,
        headers={"X-GitHub-SSO": f"required; url=https://github.com/orgs/a/sso?t={token}"},
    )
    result = call(action="get_readme", owner="octo", repo="hello")  # the fixture scans it
    assert result.error is not None
    assert "Bearer ***" in result.error.message


def test_token_in_file_content_is_scrubbed(
    api: HTTPServer, call: Callable[..., ToolResult], token: str
) -> None:
    raw = f"GITHUB_TOKEN={token}\n".encode()
    api.expect_request(f"{REPO}/contents/.env").respond_with_json(
        {"type": "file", "path": ".env", "size": len(raw), "encoding": "base64",
         "content": base64.b64encode(raw).decode(), "sha": "1"}
    )
    result = call(action="get_file", owner="octo", repo="hello", path=".env")
    assert result.ok, result.error
    assert result.data["content"] == "GITHUB_TOKEN=***\n"


def test_token_with_a_line_break_fails_without_showing_it(
    api: HTTPServer, make_registry: Callable[..., Registry], call: Callable[..., ToolResult]
) -> None:
    bad = "ghp_broken_token\nX-Evil: 1"
    registry = make_registry(env={"GITHUB_TOKEN": bad, "TOOLPLUG_PLUGINS": "toolplug-github"})
    result = call(registry, action="get_readme", owner="octo", repo="hello")
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert "ghp_broken_token" not in result.error.message
    assert "GITHUB_TOKEN" in result.error.message
    assert len(api.log) == 0
