"""The contract kit catches what authors get wrong (issue 15).

Each case is a small tool with one mistake: the kit must name it. The good tools beside
them prove the kit passes what is right.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

import toolplug
from toolplug import (
    Capability,
    ConfigField,
    ConfigKey,
    EnvVar,
    ErrorSpec,
    Example,
    Guidelines,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
)
from toolplug.testing import ContractError, LoopbackService, check_tool, concurrent_calls

RETURNS = {
    "type": "object",
    "properties": {"total": {"type": "integer"}, "items": {"type": "array"}},
    "required": ["total"],
}


def metadata(name: str, **extra: Any) -> ToolMetadata:
    fields: dict[str, Any] = {
        "name": name,
        "description": "Does one thing.",
        "category": "utility",
        "usage_hint": "Use it when it helps.",
        "guidelines": Guidelines(do=("It helps.",), do_not=("It does not help.",)),
        "errors": (ErrorSpec(type="NotFoundError", when="nothing is there"),),
        "examples": (Example(description="the usual call", input={}),),
        "parameters": {"type": "object", "properties": {}},
        **extra,
    }
    return ToolMetadata(**fields)


def problems(cls: type[Tool], **options: Any) -> list[str]:
    try:
        check_tool(cls, **options)
    except ContractError as exc:
        return exc.problems
    return []


# -- env= : examples run in an empty environment, capabilities are detected ------------------

KEYED = Capability("fx_key", "a key", (ConfigKey("tools.keyed.api_key"),), setup="export FX_KEY")
SEEN: list[str | None] = []


class Keyed(Tool):
    metadata = metadata(
        "keyed",
        requires_capabilities=("fx_key",),
        config_fields=(
            ConfigField(
                name="api_key", type="string", description="k", env_var="FX_KEY", secret=True
            ),
        ),
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        SEEN.append(context.config.get("api_key"))
        return ToolResult.success("ok", {"total": 1})


def test_a_capability_the_kit_environment_lacks_is_reported_not_granted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FX_KEY", "from-the-process")  # never leaks into the kit
    SEEN.clear()
    found = problems(Keyed, capabilities=[KEYED])
    assert len(found) == 1
    assert "its examples cannot run: it is unavailable in the kit's environment" in found[0]
    assert "configuration key tools.keyed.api_key is not set" in found[0]
    assert "FX_KEY" in found[0]  # the reason says how to supply it
    assert SEEN == []  # the tool never ran without its key


def test_env_supplies_what_a_capability_needs() -> None:
    SEEN.clear()
    assert problems(Keyed, capabilities=[KEYED], env={"FX_KEY": "k-0123"}) == []
    assert set(SEEN) == {"k-0123"}


def test_a_capability_nobody_provides_is_not_granted_either() -> None:
    found = problems(Keyed)  # check_tool without the plugin's capabilities
    assert "no installed plugin provides this capability" in found[0]


class NeedsEnvVar(Tool):
    metadata = metadata("needs_env", requires_capabilities=("token",))

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("ok")


def test_an_env_var_detector_sees_only_env(monkeypatch: pytest.MonkeyPatch) -> None:
    token = Capability("token", "t", (EnvVar("KIT_TOKEN"),))
    monkeypatch.setenv("KIT_TOKEN", "set-in-the-process")
    assert (
        "environment variable KIT_TOKEN is not set"
        in problems(NeedsEnvVar, capabilities=[token])[0]
    )
    assert problems(NeedsEnvVar, capabilities=[token], env={"KIT_TOKEN": "x"}) == []


# -- example outputs ---------------------------------------------------------------------------


def counting(output: Any, data: Any, **extra: Any) -> type[Tool]:
    class Counting(Tool):
        metadata = metadata(
            "counting",
            returns=RETURNS,
            examples=(Example(description="count", input={}, output=output),),
            **extra,
        )

        def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            return ToolResult.success("counted", data)

    return Counting


@pytest.mark.parametrize(
    ("output", "data", "expected"),
    [
        # right, and illustrative values are fine
        ({"total": 3}, {"total": 7, "items": []}, []),
        # the declared output breaks returns, whatever the tool does
        (
            {"total": "3"},
            {"total": 3},
            [
                "example 'count': output does not match returns at total: '3' is not of type "
                "'integer'"
            ],
        ),
        # the declared output shows a key the tool never returns
        (
            {"total": 3, "count": 3},
            {"total": 3},
            ["example 'count': output.count is in the example's output, not in the data"],
        ),
        # the same key with another JSON type, inside a list
        (
            {"total": 1, "items": [{"id": 1}]},
            {"total": 1, "items": [{"id": "a"}]},
            [
                "example 'count': output.items[0].id is number in the example's output, but the "
                "tool returned string"
            ],
        ),
        # the data itself breaks returns
        (
            None,
            {"total": None},
            [
                "example 'count': data does not match returns at total: None is not of type "
                "'integer'"
            ],
        ),
    ],
)
def test_example_outputs_are_checked(output: Any, data: Any, expected: list[str]) -> None:
    assert problems(counting(output, data)) == expected


def test_exact_outputs_compares_values() -> None:
    tool = counting({"total": 3}, {"total": 4})
    assert problems(tool) == []
    assert problems(tool, exact_outputs=True) == [
        'example \'count\': data is {"total": 4}, but the example\'s output says {"total": 3}'
    ]


# -- async tools under load --------------------------------------------------------------------


class Awaits(Tool):
    """Awaits its I/O: many calls at once take about as long as one."""

    metadata = metadata("awaits")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(0.05)
        return ToolResult.success("done")


class BlocksTheLoop(Tool):
    """Sleeps with time.sleep in an async run: every call waits for the one before."""

    metadata = metadata("blocks")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        time.sleep(0.2)  # the mistake: a blocking call on the event loop
        return ToolResult.success("done")


class SyncSleeps(Tool):
    """A plain def may block: it runs in a worker thread."""

    metadata = metadata("sync_sleeps")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        time.sleep(0.01)
        return ToolResult.success("done")


def test_concurrent_calls_is_four_times_the_default_pool() -> None:
    import os

    assert concurrent_calls() == 4 * min(32, (os.cpu_count() or 1) + 4) >= 20


def test_an_async_tool_that_awaits_passes_under_load() -> None:
    assert problems(Awaits) == []


def test_an_async_tool_that_blocks_the_event_loop_fails_the_kit() -> None:
    found = problems(BlocksTheLoop)
    assert len(found) == 1
    assert f"{concurrent_calls()} calls at once" in found[0]
    assert "blocks the event loop" in found[0]


def test_a_sync_tool_is_not_called_concurrently_by_the_kit() -> None:
    assert problems(SyncSleeps) == []


# -- the loopback service ----------------------------------------------------------------------


class Fetches(Tool):
    metadata = metadata(
        "fetches",
        requires_capabilities=("network",),
        errors=(ErrorSpec(type="PermissionError", when="the guard refused"),),
        config_fields=(ConfigField(name="base_url", type="string", description="where"),),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        from toolplug.http import NetworkError, fetch, guard_failure

        try:
            response = await fetch(
                "GET", context.config["base_url"] + "/v1/ping", policy=context.network
            )
        except NetworkError as exc:
            return guard_failure(exc).to_result()
        return ToolResult.success(response.text())


def test_the_loopback_service_is_reachable_through_the_guard(
    toolplug_service: LoopbackService,
) -> None:
    toolplug_service.server.expect_request("/v1/ping").respond_with_data("pong")
    config = toolplug_service.config(tools={"fetches": {"base_url": toolplug_service.url}})
    assert config["network"]["allow"] == ["127.0.0.1/32"]

    class Plugin:
        @staticmethod
        @toolplug.hookimpl
        def register_tools(register: Callable[[Any], None]) -> None:
            register(Fetches)

    registry = toolplug.load(config, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("p", Plugin)])
    try:
        assert registry.call("fetches", {}).output == "pong"
    finally:
        registry.close()
    # and the kit runs a network tool's examples against it, many calls at once included
    check_tool(Fetches, network=True, config=config)
    refused = toolplug.load(
        {"tools": {"fetches": {"base_url": toolplug_service.url}}},
        env={"TOOLPLUG_PLUGINS": ""},
        plugins=[("p", Plugin)],
    )
    try:
        error = refused.call("fetches", {}).error
        assert error is not None
        assert error.type == "PermissionError"  # without the service's allow entry
    finally:
        refused.close()
