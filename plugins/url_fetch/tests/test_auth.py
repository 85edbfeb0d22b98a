"""Auth profiles: the secret goes only to its hosts, never follows a redirect, never shows."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import toolplug

Fetch = Callable[..., toolplug.ToolResult]


def error_of(result: toolplug.ToolResult) -> toolplug.ToolError:
    assert result.error is not None, result.output
    return result.error


def everything(result: toolplug.ToolResult) -> str:
    """Every text a host or model could see from a result."""
    return json.dumps(
        {"dict": result.to_dict(), "warnings": list(result.warnings), "model": result.for_model()},
        ensure_ascii=False,
    )


def reflect_headers(request: Request) -> Response:
    """Echoes the credential headers it received (as a careless API might)."""
    seen = {
        "authorization": request.headers.get("Authorization"),
        "x_api_key": request.headers.get("X-Api-Key"),
    }
    return Response(json.dumps(seen), content_type="application/json")


def test_profile_header_reaches_its_host_and_is_redacted(
    secret: str, server: HTTPServer, fetch: Fetch
) -> None:
    server.expect_request("/me").respond_with_handler(reflect_headers)
    result = fetch(url=server.url_for("/me"), auth_profile="local")
    assert result.ok, result.error
    request = server.log[0][0]
    assert request.headers.get("Authorization") == f"Bearer {secret}"
    # The server reflected it; the tool shows *** instead.
    assert json.loads(result.data["text"])["authorization"] == "Bearer ***"
    assert secret not in everything(result)


def test_custom_header_profile(secret: str, server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/me").respond_with_handler(reflect_headers)
    result = fetch(url=server.url_for("/me"), auth_profile="keyed")
    assert server.log[0][0].headers.get("X-Api-Key") == secret
    assert server.log[0][0].headers.get("Authorization") is None
    assert secret not in everything(result)


@pytest.mark.parametrize(
    "profile_and_header",
    [
        ("local", "Authorization"),  # the guard alone would strip this one
        ("keyed", "X-Api-Key"),  # and not this one: the tool's redirect hook must
    ],
)
def test_secret_does_not_follow_a_redirect_to_another_host(
    secret: str,
    server: HTTPServer,
    other_server: HTTPServer,
    fetch: Fetch,
    profile_and_header: tuple[str, str],
) -> None:
    profile, header = profile_and_header
    other_server.expect_request("/landing").respond_with_handler(reflect_headers)
    elsewhere = f"http://localhost:{other_server.port}/landing"
    server.expect_request("/start").respond_with_response(
        Response("", status=302, headers={"Location": elsewhere})
    )
    result = fetch(url=server.url_for("/start"), auth_profile=profile)
    assert result.ok, result.error
    assert result.data["final_url"] == elsewhere
    assert server.log[0][0].headers.get(header) is not None  # sent to 127.0.0.1
    ((landing, _),) = other_server.log
    assert landing.headers.get(header) is None  # never to localhost
    assert landing.headers.get("Authorization") is None
    assert landing.headers.get("X-Api-Key") is None
    assert secret not in everything(result)


def test_secret_follows_a_redirect_on_the_same_host(
    secret: str, server: HTTPServer, fetch: Fetch
) -> None:
    server.expect_request("/a").respond_with_response(
        Response("", status=307, headers={"Location": "/b"})
    )
    server.expect_request("/b").respond_with_handler(reflect_headers)
    fetch(url=server.url_for("/a"), auth_profile="keyed")
    assert [entry[0].headers.get("X-Api-Key") for entry in server.log] == [secret, secret]


def test_secret_stays_off_after_coming_back(
    secret: str, server: HTTPServer, other_server: HTTPServer, fetch: Fetch
) -> None:
    back = server.url_for("/back")
    other_server.expect_request("/bounce").respond_with_response(
        Response("", status=302, headers={"Location": back})
    )
    server.expect_request("/start").respond_with_response(
        Response(
            "", status=302, headers={"Location": f"http://localhost:{other_server.port}/bounce"}
        )
    )
    server.expect_request("/back").respond_with_handler(reflect_headers)
    fetch(url=server.url_for("/start"), auth_profile="keyed")
    assert [entry[0].headers.get("X-Api-Key") for entry in server.log] == [secret, None]


def test_unknown_profile_names_profile_and_host(server: HTTPServer, fetch: Fetch) -> None:
    error = error_of(fetch(url=server.url_for("/x"), auth_profile="nope"))
    assert error.type == "PermissionError"
    assert "'nope'" in error.message
    assert "'127.0.0.1'" in error.message
    assert len(server.log) == 0


def test_host_outside_the_profile_is_refused(secret: str, server: HTTPServer, fetch: Fetch) -> None:
    result = fetch(url=server.url_for("/x"), auth_profile="elsewhere")
    error = error_of(result)
    assert error.type == "PermissionError"
    assert "'elsewhere'" in error.message
    assert "'127.0.0.1'" in error.message
    assert "api.example.com" in error.message
    assert secret not in everything(result)
    assert len(server.log) == 0


def test_host_match_ignores_case(secret: str, server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/x").respond_with_data("ok")
    config = {"auth_profiles": {"p": {"env": "LOCAL_TOKEN", "hosts": ["LOCALHOST"]}}}
    url = f"http://LocalHost:{server.port}/x"
    # localhost resolves to 127.0.0.1 (where the server is) and perhaps ::1 (tried first).
    result = fetch(url=url, auth_profile="p", config=config)
    assert result.ok, result.error
    assert server.log[0][0].headers.get("Authorization") == secret


def test_unset_environment_variable(server: HTTPServer, fetch: Fetch) -> None:
    error = error_of(fetch(url=server.url_for("/x"), auth_profile="unset"))
    assert error.type == "UnavailableError"
    assert "NOT_SET_ANYWHERE" in error.message
    assert len(server.log) == 0


def test_secret_from_the_process_environment(
    server: HTTPServer, fetch: Fetch, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.expect_request("/x").respond_with_data("ok")
    monkeypatch.setenv("LOCAL_TOKEN", "from-os-environ")
    result = fetch(url=server.url_for("/x"), auth_profile="local", env=None)
    assert result.ok, result.error
    assert server.log[0][0].headers.get("Authorization") == "Bearer from-os-environ"


def test_user_header_may_not_shadow_the_profile_header(server: HTTPServer, fetch: Fetch) -> None:
    config = {
        "auth_profiles": {"p": {"header": "X-Token", "env": "LOCAL_TOKEN", "hosts": ["127.0.0.1"]}}
    }
    error = error_of(
        fetch(
            url=server.url_for("/x"), auth_profile="p", headers={"x-token": "mine"}, config=config
        )
    )
    assert error.type == "ValidationError"
    assert "X-Token" in error.message


def test_secret_is_absent_from_every_output_and_error(
    secret: str, server: HTTPServer, fetch: Fetch
) -> None:
    release = threading.Event()

    def slow(request: Request) -> Response:
        release.wait(3)
        return Response("late")

    # A server that puts the secret everywhere it can: body, headers, redirect location.
    def leaky(request: Request) -> Response:
        value = request.headers.get("Authorization", "")
        return Response(
            f"you sent {value}",
            content_type="text/plain",
            headers={"X-Echo": value, "Set-Cookie": f"session={value}"},
        )

    server.expect_request("/leak").respond_with_handler(leaky)
    server.expect_request("/hop").respond_with_response(
        Response("", status=302, headers={"Location": f"/leak?token={secret}"})
    )
    server.expect_request("/missing").respond_with_data(f"no {secret} here", status=404)
    server.expect_request("/slow").respond_with_handler(slow)
    results = [
        fetch(url=server.url_for("/leak"), auth_profile="local"),
        fetch(url=server.url_for("/hop"), auth_profile="local"),
        fetch(url=server.url_for("/missing"), auth_profile="local"),
        fetch(url=server.url_for("/missing"), auth_profile="local", download_path="m.txt"),
        fetch(url=server.url_for("/leak"), auth_profile="local", download_path="l.txt"),
        fetch(url=server.url_for("/slow"), auth_profile="local", timeout_seconds=0.2),
        fetch(url=server.url_for("/leak"), auth_profile="elsewhere"),
        fetch(url=server.url_for("/leak"), auth_profile="local", method="GET", body="x"),
    ]
    release.set()
    time.sleep(0.1)
    assert results[0].ok
    assert "you sent Bearer ***" in results[0].output
    assert results[0].data["headers"]["x-echo"] == "Bearer ***"
    assert results[1].data["final_url"].endswith("token=***")
    assert [r.error.type for r in results if r.error] == [
        "NotFoundError",
        "TimeoutError",
        "PermissionError",
        "ValidationError",
    ]
    for result in results:
        assert secret not in everything(result)
