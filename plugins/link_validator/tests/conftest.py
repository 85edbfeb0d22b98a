"""Fixtures for the link_validator tests: loopback servers, registries, a checked call.

Helpers are fixtures (not importable functions) because the suite runs with
``--import-mode=importlib``, where test modules cannot import ``conftest``. Nothing here
reaches beyond 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

import toolplug

LOOPBACK_POLICY: dict[str, Any] = {"allow": ["127.0.0.1/32", "localhost"]}


@pytest.fixture(scope="module")
def _threaded_server() -> Iterator[HTTPServer]:
    httpd = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    httpd.start()
    try:
        yield httpd
    finally:
        httpd.stop()


@pytest.fixture
def server(_threaded_server: HTTPServer) -> Iterator[HTTPServer]:
    """A threaded HTTP server on 127.0.0.1 (so concurrent requests really overlap), emptied
    of handlers and log after each test."""
    yield _threaded_server
    _threaded_server.clear()


@pytest.fixture
def make_registry(tmp_path: Path) -> Iterator[Callable[..., toolplug.Registry]]:
    """``make_registry(**settings)``: loopback allowed, ``[tools.link_validator]`` = settings."""
    made: list[toolplug.Registry] = []

    def make(**tool_config: Any) -> toolplug.Registry:
        registry = toolplug.load(
            config={
                "network": LOOPBACK_POLICY,
                "cache_dir": str(tmp_path / "cache"),
                "state_dir": str(tmp_path / "state"),
                "tools": {"link_validator": tool_config},
            },
            env={},
        )
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()


@pytest.fixture
def check(
    make_registry: Callable[..., toolplug.Registry],
) -> Callable[..., toolplug.ToolResult]:
    """Call the tool through the registry: ``check(urls, host={...}, config={...}, **args)``.

    ``host`` becomes the call's context (``context.host`` in the tool); ``config`` the
    ``[tools.link_validator]`` table.
    """

    def run(
        urls: list[str],
        *,
        host: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        **arguments: Any,
    ) -> toolplug.ToolResult:
        registry = make_registry(**dict(config or {}))
        return registry.call("link_validator", {"urls": urls, **arguments}, context=host)

    return run
