from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolplug
from toolplug.testing import LoopbackService, check_plugin

KEY = "wk_test_0123456789"
ENV = {"TOOLPLUG_PLUGINS": "toolplug-weather", "WEATHER_API_KEY": KEY}
OSLO = {"days": [{"date": "2025-01-01", "summary": "snow", "min_c": -8, "max_c": -3}]}


def settings(service: LoopbackService) -> dict[str, Any]:
    """The configuration of a test: the forecast API is the loopback service."""
    return service.config(tools={"weather_forecast": {"base_url": service.url_for("/v1")}})


@pytest.fixture
def make_registry(
    toolplug_service: LoopbackService,
) -> Iterator[Callable[..., toolplug.Registry]]:
    made: list[toolplug.Registry] = []

    def make(env: dict[str, str] | None = None) -> toolplug.Registry:
        registry = toolplug.load(settings(toolplug_service), env=ENV if env is None else env)
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()


def test_contract(toolplug_service: LoopbackService) -> None:
    toolplug_service.server.expect_request("/v1/forecast").respond_with_json(OSLO)
    # network=True runs the examples, many calls at once included, against the service
    check_plugin(
        "toolplug-weather",
        network=True,
        env={"WEATHER_API_KEY": KEY},
        config=settings(toolplug_service),
    )


def test_entry_point_is_discovered(make_registry: Callable[..., toolplug.Registry]) -> None:
    registry = make_registry()
    assert registry.problems == []
    assert registry.tools["weather_forecast"].distribution == "toolplug-weather"
    assert registry.availability("weather_forecast").available


def test_unavailable_without_key_says_why(make_registry: Callable[..., toolplug.Registry]) -> None:
    availability = make_registry(env={"TOOLPLUG_PLUGINS": "toolplug-weather"}).availability(
        "weather_forecast"
    )
    assert not availability.available
    assert availability.reasons == (
        "capability 'weather_key' is missing: configuration key "
        "tools.weather_forecast.api_key is not set: set [tools.weather_forecast] api_key = "
        '{ env = "VAR" } or { file = "PATH" }, or the environment variable WEATHER_API_KEY',
    )
    assert any("WEATHER_API_KEY" in step for step in availability.setup)


def test_forecast(
    toolplug_service: LoopbackService, make_registry: Callable[..., toolplug.Registry]
) -> None:
    toolplug_service.server.expect_request(
        "/v1/forecast", query_string="q=Oslo&days=1", headers={"Authorization": f"Bearer {KEY}"}
    ).respond_with_json(OSLO)
    result = make_registry().call("weather_forecast", {"location": "Oslo", "days": 1})
    assert result.ok, result.error
    assert result.output == "2025-01-01: snow, -8 to -3 °C"


def test_default_days_filled(
    toolplug_service: LoopbackService, make_registry: Callable[..., toolplug.Registry]
) -> None:
    toolplug_service.server.expect_request(
        "/v1/forecast", query_string="q=Lyon&days=3"
    ).respond_with_json({"days": []})
    assert make_registry().call("weather_forecast", {"location": "Lyon"}).ok


@pytest.mark.parametrize(
    ("status", "error_type", "retry"),
    [
        (404, "NotFoundError", False),  # unknown place
        (401, "PermissionError", False),  # key rejected
        (429, "RateLimitError", True),  # quota used up
        (503, "NetworkError", True),  # the service is down for now
        (200, "ParseError", False),  # an answer that is not a forecast
    ],
)
def test_errors(
    toolplug_service: LoopbackService,
    make_registry: Callable[..., toolplug.Registry],
    status: int,
    error_type: str,
    retry: bool,
) -> None:
    toolplug_service.server.expect_request("/v1/forecast").respond_with_data("nope", status=status)
    result = make_registry().call("weather_forecast", {"location": "Atlantis"})
    assert result.error is not None
    assert (result.error.type, result.error.retry_possible) == (error_type, retry)
    assert KEY not in result.error.message


def test_refused_without_allow(
    toolplug_config: Callable[..., dict[str, Any]], toolplug_service: LoopbackService
) -> None:
    config = toolplug_config(  # no [network] allow: the guard refuses loopback
        tools={"weather_forecast": {"base_url": toolplug_service.url_for("/v1")}}
    )
    registry = toolplug.load(config, env=ENV)
    result = registry.call("weather_forecast", {"location": "Oslo"})
    registry.close()
    assert result.error is not None
    assert result.error.type == "PermissionError"


def test_listing_imports_no_http_client() -> None:
    code = (
        "import sys, toolplug\n"
        "registry = toolplug.load({}, env={'TOOLPLUG_PLUGINS': 'toolplug-weather'})\n"
        "toolplug.optional_tools_section(registry)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'httpx', 'httpcore'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
