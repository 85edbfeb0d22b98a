"""Fixtures for the calendar plugin: the ICS fixtures, a loopback server, loading and calling.

Helpers are fixtures (not importable functions) because the suite runs with
``--import-mode=importlib``, where test modules cannot import ``conftest``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

import toolplug
from toolplug import ToolResult

_DATA = Path(__file__).parent / "data"


@pytest.fixture
def data() -> Path:
    """The directory of ICS fixtures."""
    return _DATA


@pytest.fixture
def ics_server() -> Iterator[HTTPServer]:
    """An HTTP server on 127.0.0.1 (not "localhost", which may also mean ::1)."""
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    try:
        yield server
    finally:
        server.clear()
        server.stop()


@pytest.fixture
def serve(ics_server: HTTPServer) -> Callable[[str, str], str]:
    """``serve(url_path, fixture_name)``: serve a fixture file; returns its URL."""

    def publish(path: str, fixture: str) -> str:
        body = (_DATA / fixture).read_bytes()
        ics_server.expect_request(path).respond_with_data(body, content_type="text/calendar")
        return f"http://127.0.0.1:{ics_server.port}{path}"

    return publish


def _load(
    sources: list[dict[str, str]],
    *,
    network: Mapping[str, Any] | None = None,
    offline: bool = False,
    **settings: Any,
) -> toolplug.Registry:
    config: dict[str, Any] = {
        "network": dict({"allow": ["127.0.0.1/32"]} if network is None else network),
        "tools": {"calendar": {"sources": sources, **settings}},
    }
    if offline:
        config["offline"] = True
    return toolplug.load(config=config, env={})


@pytest.fixture
def load() -> Callable[..., toolplug.Registry]:
    """``load(sources, network=..., offline=..., **settings)``: a configured registry.

    Loopback (127.0.0.1/32) is allowed unless ``network`` replaces the policy.
    """
    return _load


def _call(registry: toolplug.Registry, arguments: Mapping[str, Any]) -> ToolResult:
    return registry.call("calendar", dict(arguments))


@pytest.fixture
def call() -> Callable[[toolplug.Registry, Mapping[str, Any]], ToolResult]:
    """``call(registry, arguments)``: the calendar tool through ``registry.call``.

    The call path validates the arguments and fills in defaults, as for a model's call.
    """
    return _call
