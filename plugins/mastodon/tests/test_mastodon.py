"""The mastodon tool against a loopback server that speaks the endpoints it uses.

Every request goes through toolplug's network guard (a loopback server is reachable only
because the tests allow 127.0.0.1); the guard is also tested with hostile instance URLs.
The server always answers verify_credentials: with the account for ``TOKEN``, with 401 for
any other token.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import toolplug
import toolplug_mastodon
from toolplug import ApprovalRequest, ErrorType
from toolplug.testing import check_plugin

TOKEN = "mstdn-token-0f1e2d3c4b5a"
BAD_TOKEN = "mstdn-token-revoked-99"
LOOPBACK = {"allow": ["127.0.0.1/32"]}
VERIFY = "/api/v1/accounts/verify_credentials"
ACCOUNT = {
    "id": "1",
    "username": "me",
    "acct": "me",
    "display_name": "Me",
    "created_at": "2020-01-01T00:00:00.000Z",
    "source": {"privacy": "public", "sensitive": False, "language": "en", "note": ""},
}


def status(status_id: str, text: str, visibility: str = "public") -> dict[str, Any]:
    """A status as the Mastodon API returns it (the fields Mastodon.py reads)."""
    return {
        "id": status_id,
        "uri": f"https://social.example/users/me/statuses/{status_id}",
        "url": f"https://social.example/@me/{status_id}",
        "created_at": "2026-11-25T10:00:00.000Z",
        "content": f"<p>{text}</p>",
        "visibility": visibility,
        "sensitive": False,
        "spoiler_text": "",
        "account": {
            "id": "1",
            "username": "me",
            "acct": "me",
            "created_at": "2020-01-01T00:00:00.000Z",
        },
        "media_attachments": [],
        "mentions": [],
        "tags": [],
        "emojis": [],
    }


def verify_credentials(request: Request) -> Response:
    """GET /api/v1/accounts/verify_credentials: the account of ``TOKEN``, else 401."""
    if request.headers.get("Authorization") != f"Bearer {TOKEN}":
        return Response(
            json.dumps({"error": "The access token is invalid"}),
            status=401,
            content_type="application/json",
        )
    return Response(json.dumps(ACCOUNT), content_type="application/json")


@pytest.fixture(autouse=True)
def _unverified() -> Iterator[None]:
    """Each test starts as a fresh process would: no (instance, token) checked yet."""
    toolplug_mastodon._verified.clear()
    yield
    toolplug_mastodon._verified.clear()


@pytest.fixture
def server(httpserver_ipv4: HTTPServer) -> Iterator[HTTPServer]:
    httpserver_ipv4.expect_request(VERIFY, method="GET").respond_with_handler(verify_credentials)
    yield httpserver_ipv4
    httpserver_ipv4.check_assertions()


def sent(server: HTTPServer, method: str, path: str) -> int:
    """How many requests the server received with this method and path."""
    return sum(1 for request, _ in server.log if (request.method, request.path) == (method, path))


def load(instance: str, token: str = TOKEN, **extra: Any) -> toolplug.Registry:
    config = {
        "network": extra.pop("network", LOOPBACK),
        "tools": {"mastodon": {"instance_url": instance}},
    }
    return toolplug.load(
        config,
        env={"TOOLPLUG_PLUGINS": "toolplug-mastodon", "MASTODON_ACCESS_TOKEN": token},
        **extra,
    )


def yes(request: ApprovalRequest) -> bool:
    return True


def test_post_sends_the_status_with_the_token(server: HTTPServer) -> None:
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        return Response(
            json.dumps(status("42", request.form["status"], "unlisted")),
            content_type="application/json",
        )

    server.expect_request("/api/v1/statuses", method="POST").respond_with_handler(handler)
    tools = load(server.url_for("/"))
    result = tools.call(
        "mastodon",
        {
            "action": "post",
            "text": "Hello from toolplug",
            "visibility": "unlisted",
            "content_warning": "test",
            "language": "en",
        },
        approver=yes,
    )
    assert result.ok, result.error
    assert result.data == {
        "id": "42",
        "url": "https://social.example/@me/42",
        "visibility": "unlisted",
        "created_at": result.data["created_at"],
        "deleted": False,
    }
    assert result.output == "Posted status 42: https://social.example/@me/42"
    [request] = seen
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.form["status"] == "Hello from toolplug"
    assert request.form["spoiler_text"] == "test"
    assert request.form["visibility"] == "unlisted"
    assert request.form["language"] == "en"
    assert request.headers["Idempotency-Key"]


def test_delete(server: HTTPServer) -> None:
    server.expect_request("/api/v1/statuses/42", method="DELETE").respond_with_json(
        status("42", "gone")
    )
    result = load(server.url_for("/")).call(
        "mastodon", {"action": "delete", "status_id": "42"}, approver=yes
    )
    assert result.ok, result.error
    assert result.data == {"id": "42", "deleted": True}


def test_every_call_needs_approval_and_a_denied_one_sends_nothing(server: HTTPServer) -> None:
    tools = load(server.url_for("/"))
    asked = tools.call("mastodon", {"action": "post", "text": "hi"})
    assert asked.error is not None
    assert asked.error.type == ErrorType.APPROVAL_REQUIRED
    denied = tools.call(
        "mastodon", {"action": "delete", "status_id": "1"}, approver=lambda r: False
    )
    assert denied.error is not None
    assert denied.error.type == "PermissionError"
    assert server.log == []  # nothing reached the instance


@pytest.mark.parametrize(
    ("code", "body", "error_type", "retry"),
    [
        (401, {"error": "The access token is invalid"}, "PermissionError", False),
        (404, {"error": "Record not found"}, "NotFoundError", False),
        (
            422,
            {"error": "Validation failed: Text character limit of 500 exceeded"},
            "ValidationError",
            False,
        ),
        (503, {"error": "down for maintenance"}, "NetworkError", True),
    ],
)
def test_instance_errors_are_structured(
    server: HTTPServer, code: int, body: dict[str, str], error_type: str, retry: bool
) -> None:
    server.expect_request("/api/v1/statuses/7", method="DELETE").respond_with_json(
        body, status=code
    )
    result = load(server.url_for("/"), approver=yes).call(
        "mastodon", {"action": "delete", "status_id": "7"}
    )
    assert result.error is not None
    assert result.error.type == error_type
    assert result.error.retry_possible is retry
    if code != 503:
        assert body["error"] in result.error.message
    assert TOKEN not in result.error.message


def test_rate_limit_says_when_to_retry(server: HTTPServer) -> None:
    reset = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 120))
    server.expect_request("/api/v1/statuses", method="POST").respond_with_json(
        {"error": "Too many requests"},
        status=429,
        headers={
            "X-RateLimit-Limit": "300",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": reset,
        },
    )
    result = load(server.url_for("/"), approver=yes).call(
        "mastodon", {"action": "post", "text": "again"}
    )
    assert result.error is not None
    assert result.error.type == "RateLimitError"
    assert result.error.retry_possible
    assert 60 < result.error.details["retry_after_seconds"] <= 121


@pytest.mark.parametrize(
    "instance",
    [
        "http://169.254.169.254/",  # the cloud metadata service
        "http://10.0.0.5/",
        "http://[::ffff:127.0.0.1]/",
        "http://0x7f000001/",
    ],
)
def test_the_guard_refuses_hostile_instances(instance: str) -> None:
    tools = load(instance, network={}, approver=yes)
    result = tools.call("mastodon", {"action": "post", "text": "hi"})
    assert result.error is not None
    assert result.error.type == "PermissionError", result.error
    assert "allow" in result.error.message


def test_no_redirects_carry_the_token_elsewhere(server: HTTPServer) -> None:
    server.expect_request("/api/v1/statuses", method="POST").respond_with_response(
        Response("", status=307, headers={"Location": "http://127.0.0.1:9/steal"})
    )
    result = load(server.url_for("/"), approver=yes).call(
        "mastodon", {"action": "post", "text": "hi"}
    )
    assert result.error is not None
    assert [(r.method, r.path) for r, _ in server.log] == [
        ("GET", VERIFY),
        ("POST", "/api/v1/statuses"),
    ]  # the 307 was not followed


# --- the credentials check -------------------------------------------------------------


def test_a_good_token_is_checked_then_posts(server: HTTPServer) -> None:
    server.expect_request("/api/v1/statuses", method="POST").respond_with_json(status("5", "hi"))
    result = load(server.url_for("/"), approver=yes).call(
        "mastodon", {"action": "post", "text": "hi"}
    )
    assert result.ok, result.error
    assert [(r.method, r.path) for r, _ in server.log] == [
        ("GET", VERIFY),
        ("POST", "/api/v1/statuses"),
    ]
    assert server.log[0][0].headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    "arguments",
    [
        {"action": "post", "text": "hi"},
        {"action": "delete", "status_id": "42"},
    ],
)
def test_a_bad_token_is_a_permission_error_and_nothing_is_sent(
    server: HTTPServer, arguments: dict[str, str]
) -> None:
    result = load(server.url_for("/"), token=BAD_TOKEN, approver=yes).call("mastodon", arguments)
    assert result.error is not None
    assert result.error.type == "PermissionError"
    assert result.error.retry_possible is False
    message = result.error.message
    assert "The access token is invalid" in message  # what the instance said
    assert "MASTODON_ACCESS_TOKEN" in message  # how to fix it
    assert "read:accounts" in message
    assert BAD_TOKEN not in message
    assert [(r.method, r.path) for r, _ in server.log] == [("GET", VERIFY)]  # no POST, no DELETE


def test_the_check_runs_once_per_instance_and_token(server: HTTPServer) -> None:
    server.expect_request("/api/v1/statuses", method="POST").respond_with_json(status("6", "a"))
    server.expect_request("/api/v1/statuses/6", method="DELETE").respond_with_json(status("6", "a"))
    tools = load(server.url_for("/"), approver=yes)
    assert tools.call("mastodon", {"action": "post", "text": "a"}).ok
    assert tools.call("mastodon", {"action": "delete", "status_id": "6"}).ok
    # another registry in the same process, same instance and token: still checked
    assert (
        load(server.url_for("/"), approver=yes).call("mastodon", {"action": "post", "text": "b"}).ok
    )
    assert sent(server, "GET", VERIFY) == 1
    assert sent(server, "POST", "/api/v1/statuses") == 2


def test_a_failed_check_is_not_remembered(server: HTTPServer) -> None:
    tools = load(server.url_for("/"), token=BAD_TOKEN, approver=yes)
    for _ in range(2):
        result = tools.call("mastodon", {"action": "post", "text": "hi"})
        assert result.error is not None
        assert result.error.type == "PermissionError"
    assert sent(server, "GET", VERIFY) == 2
    assert sent(server, "POST", "/api/v1/statuses") == 0


def test_a_token_refused_after_its_check_is_checked_again(server: HTTPServer) -> None:
    server.expect_oneshot_request("/api/v1/statuses", method="POST").respond_with_json(
        {"error": "The access token was revoked"}, status=401
    )
    server.expect_request("/api/v1/statuses", method="POST").respond_with_json(status("8", "x"))
    tools = load(server.url_for("/"), approver=yes)
    refused = tools.call("mastodon", {"action": "post", "text": "x"})
    assert refused.error is not None
    assert refused.error.type == "PermissionError"
    assert "MASTODON_ACCESS_TOKEN" in refused.error.message
    assert tools.call("mastodon", {"action": "post", "text": "x"}).ok
    assert sent(server, "GET", VERIFY) == 2


@pytest.mark.parametrize(
    ("code", "body", "error_type", "fragment"),
    [
        # a token without read:accounts (or a disabled account)
        (
            403,
            {"error": "This action is outside the authorized scopes"},
            "PermissionError",
            "read:accounts",
        ),
        (404, {"error": "Not Found"}, "NotFoundError", "instance_url"),  # not a Mastodon API
        (503, {"error": "down for maintenance"}, "NetworkError", "the instance failed"),
    ],
)
def test_check_failures_are_structured(
    httpserver_ipv4: HTTPServer, code: int, body: dict[str, str], error_type: str, fragment: str
) -> None:
    httpserver_ipv4.expect_request(VERIFY, method="GET").respond_with_json(body, status=code)
    result = load(httpserver_ipv4.url_for("/"), approver=yes).call(
        "mastodon", {"action": "delete", "status_id": "9"}
    )
    assert result.error is not None
    assert result.error.type == error_type
    assert fragment in result.error.message
    assert [r.method for r, _ in httpserver_ipv4.log] == ["GET"]


def test_missing_arguments_are_refused_before_any_request(server: HTTPServer) -> None:
    tools = load(server.url_for("/"), approver=yes)
    for arguments, field in (({"action": "post"}, "text"), ({"action": "delete"}, "status_id")):
        result = tools.call("mastodon", arguments)
        assert result.error is not None
        assert result.error.type == "ValidationError"
        assert field in result.error.message
    assert server.log == []


def test_delete_makes_the_tool_destructive() -> None:
    meta = toolplug_mastodon.MastodonTool.metadata
    assert meta.annotations.destructive is True
    assert meta.annotations.read_only is False
    assert meta.annotations.open_world is True
    assert toolplug.export_tool(meta, "mcp")["annotations"]["destructiveHint"] is True


@pytest.mark.parametrize(
    ("arguments", "expected", "reason"),
    [
        # a post adds a status: not destructive, and posted twice it is there twice
        (
            {"action": "post", "text": "hi"},
            toolplug.Annotations(read_only=False, destructive=False, idempotent=False),
            "it changes something outside this session (not read-only, open-world)",
        ),
        # a delete removes one for good; deleting it again changes nothing more
        (
            {"action": "delete", "status_id": "1"},
            toolplug.Annotations(read_only=False, destructive=True, idempotent=True),
            "it may destroy or overwrite data (annotated destructive)",
        ),
        # an action the schema refuses: the declared annotations, the worst
        (
            {"action": "boost"},
            toolplug_mastodon.MastodonTool.metadata.annotations,
            "it may destroy or overwrite data (annotated destructive)",
        ),
    ],
)
def test_annotations_for_follow_the_action(
    arguments: dict[str, Any], expected: toolplug.Annotations, reason: str
) -> None:
    assert toolplug_mastodon.MastodonTool.annotations_for(arguments) == expected
    tools = load("http://127.0.0.1:9/")
    try:
        assert tools.needs_approval("mastodon", arguments) == reason  # both always ask
    finally:
        tools.close()


def test_unavailable_without_instance_or_token() -> None:
    tools = toolplug.load({}, env={"TOOLPLUG_PLUGINS": "toolplug-mastodon"})
    found = tools.availability("mastodon")
    assert not found.available
    reasons = " ".join(found.reasons)
    assert "instance_url is not set" in reasons
    assert "MASTODON_ACCESS_TOKEN is not set" in reasons
    assert any("Preferences > Development" in step for step in found.setup)


def test_passes_the_contract_kit(server: HTTPServer) -> None:
    server.expect_request("/api/v1/statuses", method="POST").respond_with_json(status("1", "x"))
    server.expect_request("/api/v1/statuses/109876543210", method="DELETE").respond_with_json(
        status("109876543210", "x")
    )
    check_plugin(
        "toolplug-mastodon",
        config={"network": LOOPBACK, "tools": {"mastodon": {"instance_url": server.url_for("/")}}},
        env={"MASTODON_ACCESS_TOKEN": TOKEN},
    )
