"""Fixtures for the url_fetch tests: two loopback servers, registries, a checked call.

Helpers are fixtures (not importable functions) because the suite runs with
``--import-mode=importlib``, where test modules cannot import ``conftest``. Nothing here
reaches beyond 127.0.0.1 (``localhost`` is the same machine under another host name).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

import toolplug

_SECRET = "s3cr3t-Token-7f2c9a"
LOOPBACK_POLICY: dict[str, Any] = {"allow": ["127.0.0.1/32", "localhost"]}
PROFILES: dict[str, Any] = {
    "local": {"scheme": "Bearer", "env": "LOCAL_TOKEN", "hosts": ["127.0.0.1"]},
    "keyed": {"header": "X-Api-Key", "env": "LOCAL_TOKEN", "hosts": ["127.0.0.1"]},
    "elsewhere": {"env": "LOCAL_TOKEN", "hosts": ["api.example.com"]},
    "unset": {"env": "NOT_SET_ANYWHERE", "hosts": ["127.0.0.1"]},
}


@pytest.fixture
def secret() -> str:
    """The value of ``LOCAL_TOKEN``, the secret of the auth profiles configured by ``fetch``."""
    return _SECRET


@pytest.fixture(scope="module")
def _server_127() -> Iterator[HTTPServer]:
    httpd = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    httpd.start()
    try:
        yield httpd
    finally:
        httpd.stop()


@pytest.fixture(scope="module")
def _server_localhost() -> Iterator[HTTPServer]:
    httpd = HTTPServer(host="localhost", port=0, threaded=True)
    httpd.start()
    try:
        yield httpd
    finally:
        httpd.stop()


@pytest.fixture
def server(_server_127: HTTPServer) -> Iterator[HTTPServer]:
    """A threaded HTTP server on 127.0.0.1, emptied after each test."""
    yield _server_127
    _server_127.clear()


@pytest.fixture
def other_server(_server_localhost: HTTPServer) -> Iterator[HTTPServer]:
    """A second server, reached as ``localhost``: another host than 127.0.0.1."""
    yield _server_localhost
    _server_localhost.clear()


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def downloads(cache_dir: Path) -> Path:
    """Where download_path is rooted for the registries ``make_registry`` loads."""
    return cache_dir / "tools" / "url_fetch" / "downloads"


@pytest.fixture
def make_registry(cache_dir: Path) -> Iterator[Callable[..., toolplug.Registry]]:
    """``make_registry(**settings)``: loopback allowed, the auth profiles above configured,
    ``[tools.url_fetch]`` updated with ``settings``."""
    made: list[toolplug.Registry] = []

    def make(**tool_config: Any) -> toolplug.Registry:
        registry = toolplug.load(
            config={
                "network": LOOPBACK_POLICY,
                "cache_dir": str(cache_dir),
                "state_dir": str(cache_dir.parent / "state"),
                "tools": {"url_fetch": {"auth_profiles": PROFILES, **tool_config}},
            },
            env=os.environ,
            # url_fetch needs approval (not read-only, open-world): these tests are about
            # the tool, so the host approves; tests/test_approvals.py tests the gate.
            approver=lambda request: True,
        )
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()


@pytest.fixture
def fetch(
    make_registry: Callable[..., toolplug.Registry],
) -> Callable[..., toolplug.ToolResult]:
    """Call the tool through the registry: ``fetch(url=..., config={...}, env={...}, **args)``.

    The environment secrets are read from is the host's ``env`` (``LOCAL_TOKEN`` = the
    ``secret`` fixture unless ``env`` is given); ``env=None`` passes no ``env``, so the tool
    reads the registry's environment (here the process's).
    """
    default_env = {"LOCAL_TOKEN": _SECRET}

    def run(
        *,
        config: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = default_env,
        **arguments: Any,
    ) -> toolplug.ToolResult:
        registry = make_registry(**dict(config or {}))
        host = None if env is None else {"env": dict(env)}
        return registry.call("url_fetch", dict(arguments), context=host)

    return run
