"""Wiring: discovery, availability and why not, the contract, cheap imports."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import toolplug
from toolplug import Registry
from toolplug.testing import check_plugin, check_tool
from toolplug_rss_feed import RssFeedTool

MakeRegistry = Callable[..., Registry]


def test_entry_point_is_discovered(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    assert registry.problems == []
    tool = registry.tools["rss_feed"]
    assert tool.distribution == "toolplug-rss-feed"
    assert tool.cls is RssFeedTool
    assert tool.metadata.requires_capabilities == ("network",)


def test_plugin_passes_the_contract_without_running_examples() -> None:
    check_plugin("toolplug-rss-feed", run_examples=False)


def test_examples_fail_cleanly_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    # No name resolves: the fetch example gets a NetworkError and nothing leaves the machine.
    def no_dns(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "no name resolution in tests")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    check_tool(RssFeedTool, network=True)  # the network is faked away above


def test_available_with_the_network(make_registry: MakeRegistry) -> None:
    availability = make_registry().availability("rss_feed")
    assert availability.available, availability.reasons


def test_offline_makes_it_unavailable(toolplug_config: Callable[..., dict[str, Any]]) -> None:
    registry = toolplug.load(
        toolplug_config(offline=True), env={"TOOLPLUG_PLUGINS": "toolplug-rss-feed"}
    )
    availability = registry.availability("rss_feed")
    assert not availability.available
    assert availability.reasons == (
        "capability 'network' is missing: offline = true in the configuration",
    )


def test_bad_feed_config_is_a_config_error(make_registry: MakeRegistry) -> None:
    with pytest.raises(toolplug.ConfigError, match="feeds"):
        make_registry(feeds=["not a url"])


def test_entry_module_imports_no_heavy_dependency() -> None:
    code = (
        "import sys, toolplug_rss_feed, toolplug\n"
        "toolplug.load({}, env={'TOOLPLUG_PLUGINS': 'toolplug-rss-feed'}).availability("
        "'rss_feed')\n"
        "heavy = sorted(m for m in ('feedparser', 'httpx', 'anyio') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == ""
