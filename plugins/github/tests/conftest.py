"""Fixtures: a loopback fake of the GitHub REST API, registries pointed at it, a checked call.

Every request the fake receives is checked for the headers GitHub requires (token, Accept,
API version, user agent); every result a test gets is scanned for the token and checked
against the tool's ``returns`` schema; every log line is scanned for the token.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pytest_httpserver import HTTPServer

import toolplug
from toolplug import Registry, ToolResult
from toolplug_github import METADATA

TOKEN = "ghp_test_secret_123456"
API_PREFIX = "/api/v3"
ACCEPTS = ("application/vnd.github+json", "application/vnd.github.raw+json")


def assert_no_token(result: ToolResult) -> None:
    """Fail when the token appears anywhere in a result: output, data, warnings, error."""
    texts = [
        json.dumps(result.to_dict(), ensure_ascii=False),
        json.dumps(result.data, ensure_ascii=False, default=repr),
        repr(result),
        result.for_model(),
        *result.warnings,
        *(f"{c.title} {c.url}" for c in result.citations),
    ]
    if result.error is not None:
        texts += [result.error.message, json.dumps(dict(result.error.details), default=repr)]
    for text in texts:
        assert TOKEN not in text
        assert TOKEN[4:] not in text  # not even without its prefix


@pytest.fixture(autouse=True)
def _no_token_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Capture every log record (httpx and httpcore included) and scan it for the token."""
    caplog.set_level(logging.DEBUG)
    yield
    assert TOKEN not in caplog.text


@pytest.fixture
def api(httpserver_ipv4: HTTPServer) -> Iterator[HTTPServer]:
    """The fake GitHub API on 127.0.0.1; checks the headers of every request it received.

    ``httpserver_ipv4`` rather than ``httpserver``: "localhost" may also resolve to ::1,
    which the test network policy (127.0.0.1/32) would refuse.
    """
    yield httpserver_ipv4
    for request, _response in httpserver_ipv4.log:
        assert request.headers.get("Authorization") == f"Bearer {TOKEN}", request.url
        assert request.headers.get("Accept") in ACCEPTS, request.url
        assert request.headers.get("X-GitHub-Api-Version") == "2022-11-28", request.url
        assert request.headers.get("User-Agent", "").startswith("toolplug-github/"), request.url
    httpserver_ipv4.check_assertions()


def api_url(server: HTTPServer) -> str:
    """The ``api_url`` setting for a fake server: its Enterprise-style ``/api/v3`` root."""
    return server.url_for(API_PREFIX).rstrip("/")


@pytest.fixture
def make_registry(
    api: HTTPServer, toolplug_config: Callable[..., dict[str, Any]]
) -> Iterator[Callable[..., Registry]]:
    """Build registries configured for the fake API (closed after the test)."""
    made: list[Registry] = []

    def make(
        *,
        tools: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        network: dict[str, Any] | None = None,
    ) -> Registry:
        table: dict[str, Any] = {"api_url": api_url(api)}
        table.update(tools or {})
        config = toolplug_config(
            network=network if network is not None else {"allow": ["127.0.0.1/32"]},
            tools={"github_api": table},
        )
        registry = toolplug.load(
            config,
            env={"GITHUB_TOKEN": TOKEN, "TOOLPLUG_PLUGINS": "toolplug-github"}
            if env is None
            else env,
        )
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()


_RETURNS = Draft202012Validator(METADATA.returns or {})


@pytest.fixture
def call(make_registry: Callable[..., Registry]) -> Callable[..., ToolResult]:
    """Call github_api through ``Registry.call``; check the result before handing it over."""

    def run(registry: Registry | None = None, /, **arguments: Any) -> ToolResult:
        result = (registry or make_registry()).call("github_api", arguments)
        assert_no_token(result)
        if result.ok:
            errors = [e.message for e in _RETURNS.iter_errors(result.data)]
            assert not errors, errors
        return result

    return run


@pytest.fixture
def token() -> str:
    """The token the fake API expects (and that must never come back)."""
    return TOKEN
