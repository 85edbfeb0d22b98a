"""Wiring: discovery, availability and why not, the contract, cheap imports."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import toolplug
from toolplug import DetectContext, Registry
from toolplug.testing import check_plugin, check_tool, concurrent_calls
from toolplug_web_search import BACKEND_CAPABILITY, WebSearchTool, backend_problem

MakeRegistry = Callable[..., Registry]


def test_entry_point_is_discovered(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    assert registry.problems == []
    tool = registry.tools["web_search"]
    assert tool.distribution == "toolplug-web-search"
    assert tool.cls is WebSearchTool
    assert "web_search_backend" in registry.capabilities


def test_plugin_passes_the_contract_without_running_examples() -> None:
    check_plugin("toolplug-web-search", run_examples=False)


def test_examples_run_and_match_returns(fake_ddgs: Any) -> None:
    # The examples run against the fake ddgs: nothing leaves the machine.
    fake_ddgs.rows = [{"title": "T", "href": "https://t.example/", "body": "snippet"}]
    # ddgs is faked: nothing leaves the machine. The kit grants no capability, so it gets the
    # plugin's own backend capability to detect.
    check_tool(WebSearchTool, network=True, capabilities=[BACKEND_CAPABILITY])
    # every example, then a warm-up, a timed call and the calls the kit makes at once
    assert len(fake_ddgs.calls) == len(WebSearchTool.metadata.examples) + 2 + concurrent_calls()


def test_ddgs_backend_is_available_by_default(make_registry: MakeRegistry) -> None:
    availability = make_registry().availability("web_search")
    assert availability.available, availability.reasons


def test_searxng_without_url_is_unavailable_with_reason(make_registry: MakeRegistry) -> None:
    availability = make_registry(backend="searxng").availability("web_search")
    assert not availability.available
    assert availability.reasons == (
        "capability 'web_search_backend' is missing: backend 'searxng' needs searxng_url, "
        "which is not set",
    )
    assert any("searxng_url" in step for step in availability.setup)


def test_searxng_with_url_is_available(make_registry: MakeRegistry) -> None:
    registry = make_registry(backend="searxng", searxng_url="http://127.0.0.1:9/")
    assert registry.availability("web_search").available


def test_offline_makes_it_unavailable(
    toolplug_config: Callable[..., dict[str, Any]],
) -> None:
    registry = toolplug.load(
        toolplug_config(offline=True), env={"TOOLPLUG_PLUGINS": "toolplug-web-search"}
    )
    availability = registry.availability("web_search")
    assert not availability.available
    assert any("'network'" in reason for reason in availability.reasons)
    result = registry.call("web_search", {"query": "x"})
    assert result.error is not None


class NoPackages(DetectContext):
    """A detection context in which no package can be imported."""

    def has_package(self, name: str) -> bool:
        return False


@pytest.mark.parametrize(
    ("config", "packages", "expected"),
    [
        # the default backend with ddgs installed
        ({}, True, None),
        # the default backend without ddgs
        ({}, False, "backend 'ddgs' needs the Python package ddgs, which is not installed"),
        # searxng needs no package, only its URL
        ({"backend": "searxng", "searxng_url": "http://s.example"}, False, None),
        ({"backend": "searxng"}, True, "backend 'searxng' needs searxng_url, which is not set"),
        ({"backend": "bing"}, True, "unknown backend 'bing'; expected one of ddgs, searxng"),
    ],
)
def test_backend_problem(config: dict[str, Any], packages: bool, expected: str | None) -> None:
    kind = DetectContext if packages else NoPackages
    ctx = kind({}, {"tools": {"web_search": config}})
    assert backend_problem(ctx) == expected


def test_missing_ddgs_makes_the_tool_unavailable(
    make_registry: MakeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = DetectContext.has_package
    monkeypatch.setattr(
        DetectContext, "has_package", lambda self, name: name != "ddgs" and real(self, name)
    )
    registry = make_registry()
    availability = registry.availability("web_search")
    assert not availability.available
    assert availability.reasons == (
        "capability 'web_search_backend' is missing: backend 'ddgs' needs the Python package "
        "ddgs, which is not installed",
    )
    assert any("pip install ddgs" in step for step in availability.setup)
    result = registry.call("web_search", {"query": "x"})
    assert result.error is not None
    assert result.error.type == "UnavailableError"


def test_unknown_backend_is_a_config_error(make_registry: MakeRegistry) -> None:
    with pytest.raises(toolplug.ConfigError, match="backend"):
        make_registry(backend="bing")


def test_entry_module_imports_no_heavy_dependency() -> None:
    code = (
        "import sys, toolplug_web_search, toolplug\n"
        "toolplug.load({}, env={'TOOLPLUG_PLUGINS': 'toolplug-web-search'}).availability("
        "'web_search')\n"
        "heavy = sorted(m for m in ('ddgs', 'httpx', 'primp', 'lxml') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == ""
