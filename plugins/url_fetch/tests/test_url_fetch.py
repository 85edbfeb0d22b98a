"""url_fetch against real servers on 127.0.0.1: wiring, bodies, refusals and caps."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import toolplug
from toolplug.testing import check_plugin
from toolplug_url_fetch import UrlFetch
from toolplug_url_fetch._rules import REFUSED_HEADERS

Fetch = Callable[..., toolplug.ToolResult]
MakeRegistry = Callable[..., toolplug.Registry]


def error_of(result: toolplug.ToolResult) -> toolplug.ToolError:
    assert result.error is not None, result.output
    return result.error


def echo(request: Request) -> Response:
    """Answers with what it received: method, content type, body, chosen headers."""
    payload = {
        "method": request.method,
        "content_type": request.headers.get("Content-Type"),
        "body": request.get_data(as_text=True),
        "x_trace": request.headers.get("X-Trace"),
    }
    return Response(json.dumps(payload), content_type="application/json")


# --- wiring ------------------------------------------------------------------------------


def test_entry_point_is_discovered() -> None:
    registry = toolplug.load(config={}, env={})
    tool = registry.tools["url_fetch"]
    assert tool.distribution == "toolplug-url-fetch"
    assert tool.cls is UrlFetch
    assert not [p for p in registry.problems if p.distribution == "toolplug-url-fetch"]


def test_contract() -> None:
    # Examples are not run: they name public hosts, and the tests stay on loopback.
    check_plugin("toolplug-url-fetch", run_examples=False)


def test_available_with_network_and_explains_offline() -> None:
    assert toolplug.load(config={}, env={}).availability("url_fetch").available
    found = toolplug.load(config={"offline": True}, env={}).availability("url_fetch")
    assert not found.available
    assert any("offline" in reason for reason in found.reasons)


def test_entry_module_imports_no_http_client() -> None:
    code = (
        "import sys, toolplug_url_fetch\n"
        "heavy = [m for m in ('httpx', 'anyio', 'httpcore') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_auth_profiles_config_is_checked() -> None:
    bad = {"auth_profiles": {"gh": {"env": "GH", "hosts": "api.github.com"}}}
    with pytest.raises(toolplug.ConfigError, match="auth_profiles"):
        toolplug.load(config={"tools": {"url_fetch": bad}}, env={})


# --- bodies ------------------------------------------------------------------------------


def test_text_is_decoded_with_its_charset(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/page").respond_with_data(
        "<p>café</p>".encode("iso-8859-1"), content_type="text/html; charset=ISO-8859-1"
    )
    result = fetch(url=server.url_for("/page"))
    assert result.ok, result.error
    data = result.data
    assert data["text"] == "<p>café</p>"
    assert (data["status"], data["ok"], data["binary"]) == (200, True, False)
    assert (data["content_type"], data["charset"]) == ("text/html", "iso8859-1")
    assert data["bytes"] == 11
    assert not data["truncated"]
    assert result.output.startswith(f"HTTP 200 OK from {server.url_for('/page')}")
    assert result.output.endswith("<p>café</p>")


def test_data_matches_the_returns_schema(server: HTTPServer, fetch: Fetch) -> None:
    from jsonschema import Draft202012Validator

    server.expect_request("/t").respond_with_data("text", content_type="text/plain")
    server.expect_request("/b").respond_with_data(b"\x00\x01", content_type="image/png")
    schema = UrlFetch.metadata.returns
    assert schema is not None
    validator = Draft202012Validator(schema)
    for result in (
        fetch(url=server.url_for("/t")),
        fetch(url=server.url_for("/b")),
        fetch(url=server.url_for("/b"), download_path="b.png"),
    ):
        assert result.ok, result.error
        validator.validate(result.data)


def test_post_json_body_is_echoed(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/echo", method="POST").respond_with_handler(echo)
    sent = {"title": "Ünïcode", "tags": ["a", "b"], "n": 3, "ok": True}
    result = fetch(
        url=server.url_for("/echo"), method="POST", body=sent, headers={"X-Trace": "abc"}
    )
    assert result.ok, result.error
    echoed = json.loads(result.data["text"])
    assert echoed["method"] == "POST"
    assert echoed["content_type"] == "application/json"
    assert json.loads(echoed["body"]) == sent
    assert echoed["x_trace"] == "abc"


def test_text_body_and_own_content_type(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/echo").respond_with_handler(echo)
    plain = json.loads(fetch(url=server.url_for("/echo"), method="PUT", body="hi").data["text"])
    assert plain == {
        "method": "PUT",
        "content_type": "text/plain; charset=utf-8",
        "body": "hi",
        "x_trace": None,
    }
    csv = fetch(
        url=server.url_for("/echo"),
        method="PATCH",
        body="a,b",
        headers={"content-type": "text/csv"},
    )
    assert json.loads(csv.data["text"])["content_type"] == "text/csv"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_body_with_get_or_delete_is_refused(server: HTTPServer, fetch: Fetch, method: str) -> None:
    error = error_of(fetch(url=server.url_for("/x"), method=method, body={"a": 1}))
    assert error.type == "ValidationError"
    assert f"{method} requests carry no body" in error.message
    assert len(server.log) == 0


def test_binary_body_is_described_not_dumped(server: HTTPServer, fetch: Fetch) -> None:
    # labelled image/png, but its first bytes are no PNG's: described, not attached
    png = b"\x00\x00\x00\x00\x00\x00\x00\x00" + bytes(range(256)) * 4
    server.expect_request("/img").respond_with_data(png, content_type="image/png")
    result = fetch(url=server.url_for("/img"))
    assert result.ok, result.error
    assert result.data["binary"] is True
    assert result.data["text"] is None
    assert result.data["sha256"] == hashlib.sha256(png).hexdigest()
    assert result.data["bytes"] == len(png)
    assert "Binary body not shown: image/png, 1032 bytes" in result.output
    assert result.parts == ()


def test_unlabelled_bytes_are_sniffed(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/blob").respond_with_response(
        Response(b"\x00\x01\x02binary", headers={"Content-Type": ""})
    )
    assert fetch(url=server.url_for("/blob")).data["binary"] is True


def test_error_status_is_returned_as_data(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/gone").respond_with_data("not here", status=404)
    result = fetch(url=server.url_for("/gone"))
    assert result.ok, result.error
    assert (result.data["status"], result.data["ok"], result.data["text"]) == (
        404,
        False,
        "not here",
    )
    assert result.output.startswith("HTTP 404 Not Found")
    assert "the server answered HTTP 404" in result.warnings


def test_redirects_are_followed_and_recorded(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/old").respond_with_response(
        Response("", status=301, headers={"Location": "/new"})
    )
    server.expect_request("/new").respond_with_data("moved here")
    result = fetch(url=server.url_for("/old"))
    assert result.data["final_url"] == server.url_for("/new")
    assert result.data["redirects"] == [{"status": 301, "url": server.url_for("/new")}]
    assert "Redirected: 301 -> " in result.output


# --- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REFUSED_HEADERS))
def test_refused_headers_are_named(server: HTTPServer, fetch: Fetch, name: str) -> None:
    spelled = name.title()  # any case is refused
    error = error_of(fetch(url=server.url_for("/x"), headers={spelled: "v"}))
    assert error.type == "ValidationError"
    assert repr(spelled) in error.message
    assert len(server.log) == 0


def test_brief_list_of_refused_headers_is_covered() -> None:
    required = {
        "authorization",
        "cookie",
        "proxy-authorization",
        "host",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",
        "content-length",
        "x-api-key",
        "set-cookie",
    }
    assert required <= set(REFUSED_HEADERS)


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Evil": "a\r\nInjected: 1"},  # header injection
        {"bad name": "v"},  # not a header token
        {"X-A": "1", "x-a": "2"},  # the same header twice
    ],
)
def test_malformed_headers_are_refused(
    server: HTTPServer, fetch: Fetch, headers: dict[str, str]
) -> None:
    assert error_of(fetch(url=server.url_for("/x"), headers=headers)).type == "ValidationError"
    assert len(server.log) == 0


def test_private_address_is_refused_by_the_guard(fetch: Fetch) -> None:
    error = error_of(fetch(url="http://10.0.0.1/admin"))
    assert error.type == "PermissionError"
    assert "10.0.0.1 is a private address" in error.message
    assert not error.retry_possible


def test_redirect_to_refused_address(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/out").respond_with_response(
        Response("", status=302, headers={"Location": "http://169.254.169.254/latest"})
    )
    error = error_of(fetch(url=server.url_for("/out")))
    assert error.type == "PermissionError"
    assert "169.254.169.254" in error.message


def test_credentials_in_the_url_are_refused(server: HTTPServer, fetch: Fetch) -> None:
    url = server.url_for("/x").replace("http://", "http://me:hunter22@")
    error = error_of(fetch(url=url))
    assert error.type == "ValidationError"
    assert "hunter22" not in error.message
    assert len(server.log) == 0


def test_non_http_scheme_is_refused(fetch: Fetch) -> None:
    error = error_of(fetch(url="file:///etc/passwd"))
    assert error.type == "PermissionError"
    assert "only http and https" in error.message


def test_unreachable_port_is_a_retryable_network_error(fetch: Fetch) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = error_of(fetch(url=f"http://127.0.0.1:{port}/"))
    assert error.type == "NetworkError"
    assert error.retry_possible


# --- caps --------------------------------------------------------------------------------


def test_max_bytes_truncates_and_flags(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/long").respond_with_data("x" * 100, content_type="text/plain")
    result = fetch(url=server.url_for("/long"), max_bytes=10)
    assert result.data["text"] == "x" * 10
    assert result.data["truncated"] is True
    assert "Truncated: only the first 10 bytes were read" in result.output
    assert "the body was truncated at max_bytes" in result.warnings


def test_max_bytes_is_capped_by_config(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/long").respond_with_data("y" * 100, content_type="text/plain")
    result = fetch(url=server.url_for("/long"), max_bytes=1000, config={"max_bytes": 25})
    assert result.data["bytes"] == 25
    assert result.data["truncated"] is True
    assert any("above the configured max_bytes; 25 was used" in w for w in result.warnings)
    # Without an argument, the configured cap applies too.
    assert fetch(url=server.url_for("/long"), config={"max_bytes": 7}).data["bytes"] == 7


@pytest.fixture
def slow_server(server: HTTPServer) -> Iterator[HTTPServer]:
    """The server with a /slow endpoint that answers only when the test is over."""
    release, finished = threading.Event(), threading.Event()

    def slow(request: Request) -> Response:
        release.wait(5)
        finished.set()
        return Response("late")

    server.expect_request("/slow").respond_with_handler(slow)
    yield server
    release.set()
    finished.wait(5)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not server.log:
        time.sleep(0.01)


def test_timeout_is_a_retryable_timeout_error(slow_server: HTTPServer, fetch: Fetch) -> None:
    started = time.perf_counter()
    error = error_of(fetch(url=slow_server.url_for("/slow"), timeout_seconds=0.3))
    assert time.perf_counter() - started < 2
    assert error.type == "TimeoutError"
    assert error.retry_possible


def test_timeout_is_capped_by_config(slow_server: HTTPServer, fetch: Fetch) -> None:
    started = time.perf_counter()
    error = error_of(
        fetch(
            url=slow_server.url_for("/slow"),
            timeout_seconds=30,
            config={"max_timeout_seconds": 0.3},
        )
    )
    assert error.type == "TimeoutError"
    assert time.perf_counter() - started < 2


def test_timeout_cap_warns_when_it_applies(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/quick").respond_with_data("ok")
    result = fetch(
        url=server.url_for("/quick"), timeout_seconds=30, config={"max_timeout_seconds": 5}
    )
    assert result.ok
    assert any("5 s was used" in w for w in result.warnings)


def test_registry_defaults(make_registry: MakeRegistry) -> None:
    meta = UrlFetch.metadata
    defaults = {f.name: f.default for f in meta.config_fields}
    assert defaults == {
        "max_timeout_seconds": 60.0,
        "max_bytes": 2_000_000,
        "max_download_bytes": 50_000_000,
        "auth_profiles": {},
    }
    assert meta.parameters["properties"]["method"]["enum"] == [
        "GET",
        "POST",
        "PUT",
        "PATCH",
        "DELETE",
    ]
    assert make_registry().tool_config("url_fetch")["max_bytes"] == 2_000_000
