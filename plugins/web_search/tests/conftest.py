"""Fixtures: a loopback SearXNG stand-in, registries with only this plugin, a fake ddgs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
from pytest_httpserver import HTTPServer

import toolplug
from toolplug import Registry

LOOPBACK: dict[str, Any] = {"allow": ["127.0.0.1/32"]}
ONLY_THIS_PLUGIN = {"TOOLPLUG_PLUGINS": "toolplug-web-search"}

MakeRegistry = Callable[..., Registry]


@pytest.fixture
def server(httpserver_ipv4: HTTPServer) -> Iterator[HTTPServer]:
    """pytest-httpserver on 127.0.0.1; a request no handler expected fails the test."""
    yield httpserver_ipv4
    httpserver_ipv4.check_assertions()


@pytest.fixture
def make_registry(
    toolplug_config: Callable[..., dict[str, Any]],
) -> Iterator[MakeRegistry]:
    """``make_registry(network=..., **web_search_settings)``: only this plugin, isolated dirs."""
    made: list[Registry] = []

    def make(*, network: dict[str, Any] | None = None, **settings: Any) -> Registry:
        config = toolplug_config(
            network=LOOPBACK if network is None else network,
            tools={"web_search": settings} if settings else {},
        )
        registry = toolplug.load(config, env=ONLY_THIS_PLUGIN)
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()


class FakeDDGS:
    """Stands in for ``ddgs.DDGS``: records every call, answers with ``rows`` or ``error``."""

    rows: ClassVar[list[dict[str, Any]]] = []
    error: ClassVar[BaseException | None] = None
    calls: ClassVar[list[dict[str, Any]]] = []
    inits: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        FakeDDGS.inits.append(kwargs)

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        FakeDDGS.calls.append({"query": query, **kwargs})
        if FakeDDGS.error is not None:
            raise FakeDDGS.error
        return list(FakeDDGS.rows)


@pytest.fixture
def fake_ddgs(monkeypatch: pytest.MonkeyPatch) -> type[FakeDDGS]:
    """Replace the ``DDGS`` name the ddgs backend uses; reset what the fake records."""
    from toolplug_web_search import _ddgs

    FakeDDGS.rows = []
    FakeDDGS.error = None
    FakeDDGS.calls = []
    FakeDDGS.inits = []
    monkeypatch.setattr(_ddgs, "DDGS", FakeDDGS)
    return FakeDDGS
