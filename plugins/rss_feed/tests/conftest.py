"""Fixtures: a loopback feed server, registries with only this plugin, the test feeds."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

import toolplug
from toolplug import Registry

FEEDS = Path(__file__).parent / "feeds"
LOOPBACK: dict[str, Any] = {"allow": ["127.0.0.1/32"]}
ONLY_THIS_PLUGIN = {"TOOLPLUG_PLUGINS": "toolplug-rss-feed"}


@pytest.fixture
def server(httpserver_ipv4: HTTPServer) -> Iterator[HTTPServer]:
    """pytest-httpserver on 127.0.0.1; a request no handler expected fails the test."""
    yield httpserver_ipv4
    httpserver_ipv4.check_assertions()


@pytest.fixture
def make_registry(
    toolplug_config: Callable[..., dict[str, Any]],
) -> Iterator[Callable[..., Registry]]:
    """``make_registry(network=..., **rss_feed_settings)``: only this plugin, isolated dirs."""
    made: list[Registry] = []

    def make(*, network: dict[str, Any] | None = None, **settings: Any) -> Registry:
        config = toolplug_config(
            network=LOOPBACK if network is None else network,
            tools={"rss_feed": settings} if settings else {},
        )
        registry = toolplug.load(config, env=ONLY_THIS_PLUGIN)
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()


@pytest.fixture
def feed() -> Callable[[str], bytes]:
    """``feed("rss20")``: the bytes of a test feed document in tests/feeds/."""

    def read(name: str) -> bytes:
        return (FEEDS / f"{name}.xml").read_bytes()

    return read
