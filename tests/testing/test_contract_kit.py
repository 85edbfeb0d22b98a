"""The contract kit catches what authors get wrong (issue 15).

Each case is a small tool with one mistake: the kit must name it. The good tools beside
them prove the kit passes what is right.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import Site
from tests.helpers.media import png
from toolplug import (
    Annotations,
    Capability,
    ConfigField,
    ConfigKey,
    EnvVar,
    ErrorSpec,
    Example,
    Guidelines,
    Image,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
)
from toolplug.testing import (
    ContractError,
    LoopbackService,
    check_plugin,
    check_tool,
    concurrent_calls,
)

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
        "annotations": Annotations(read_only=True, idempotent=True, open_world=False),
        "trust": Trust(output="trusted"),
        **extra,
    }
    for key in ("annotations", "trust"):
        if fields[key] is None:  # a tool that declares none
            del fields[key]
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


PNG = png()


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


class Drawing(Tool):
    """Returns a picture: it must say so in metadata.parts."""

    metadata = metadata(
        "drawing", examples=(Example(description="draw", input={}),), parts=()
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("drawn", parts=[Image(PNG)])


def test_parts_an_example_returns_must_be_declared() -> None:
    assert problems(Drawing) == [
        "example 'draw' returned image parts, which metadata.parts does not declare (none): "
        "add them, so hosts and the reference docs know the tool returns them"
    ]

    class Declared(Drawing):
        metadata = Drawing.metadata.model_copy(update={"parts": ("image",)})

    assert problems(Declared) == []


def test_exact_outputs_compares_values() -> None:
    tool = counting({"total": 3}, {"total": 4})
    assert problems(tool) == []
    assert problems(tool, exact_outputs=True) == [
        'example \'count\': data is {"total": 4}, but the example\'s output says {"total": 3}'
    ]


# -- annotations: what the approval policy reads ------------------------------------------


class Unannotated(Tool):
    """Declares no annotations: the approval policy would never gate it."""

    metadata = metadata("unannotated", annotations=None)

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("done")


def test_a_tool_without_annotations_fails_the_kit() -> None:
    assert "annotations" not in Unannotated.metadata.model_fields_set
    found = problems(Unannotated)
    assert len(found) == 1
    assert found[0].startswith("declares no annotations, so the approval policy never asks")
    assert "read_only=..., destructive=..., idempotent=..., open_world=..." in found[0]


def test_annotations_left_at_their_defaults_are_declared() -> None:
    # Annotations() says "neither read-only nor closed-world": gated, so declared enough
    assert problems(counting({"total": 1}, {"total": 1}, annotations=Annotations())) == []


def test_missing_annotations_are_listed_with_the_other_problems() -> None:
    class Careless(Tool):
        metadata = metadata("careless", annotations=None, errors=())

        def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            return ToolResult.success("done")

    found = problems(Careless)
    assert len(found) == 2
    assert found[0] == "declares no errors (metadata.errors)"
    assert found[1].startswith("declares no annotations")


# -- trust labels: what the flow guard reads --------------------------------------------------


class Unlabelled(Tool):
    """Declares no trust labels: the flow guard would have to assume the worst."""

    metadata = metadata("unlabelled", trust=None)

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("done")


def test_a_tool_without_trust_labels_fails_the_kit() -> None:
    assert Unlabelled.metadata.trust is None
    found = problems(Unlabelled)
    assert len(found) == 1
    assert found[0].startswith("declares no trust labels")
    # the message says how to declare them
    assert "trust=Trust(output=" in found[0]
    assert "sinks=" in found[0]
    assert "private=True" in found[0]


def test_declared_trust_labels_pass_the_kit() -> None:
    # untrusted, private, with no sink: a labelled tool, whatever the labels say
    labelled = metadata("labelled", trust=Trust(output="untrusted", private=True))

    class Labelled(Tool):
        metadata = labelled

        def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            return ToolResult.success("done")

    assert problems(Labelled) == []


# -- async tools under load --------------------------------------------------------------------


def sleeper(name: str, sleep: Callable[[], Any]) -> type[Tool]:
    """An async tool whose run calls ``sleep()`` and awaits what it returns, if anything."""
    declared = metadata(name)

    class Sleeper(Tool):
        metadata = declared

        async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            waiting = sleep()
            if waiting is not None:
                await waiting
            return ToolResult.success("done")

    return Sleeper


async def many_steps() -> None:
    for _ in range(200):
        await asyncio.sleep(0)


def compute(seconds: float) -> None:
    """Work on the CPU for ``seconds`` of CPU time (longer on a loaded machine)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


BLOCKING = [
    # a short block on the loop: 24 calls at once wait 10 ms for each other call
    sleeper("blocks_10ms", lambda: time.sleep(0.01)),
    # a long one
    sleeper("blocks_200ms", lambda: time.sleep(0.2)),
    # no sleep, but 10 ms of work on the loop's thread
    sleeper("computes_10ms", lambda: compute(0.01)),
]

AWAITING = [
    # awaits its wait: many calls at once take about as long as one
    sleeper("awaits", lambda: asyncio.sleep(0.01)),
    # waits in the default thread pool, which 24 calls at once fill four times over
    sleeper("threads", lambda: asyncio.to_thread(time.sleep, 0.01)),
    # busy but fair: 200 short steps a call, each giving the loop back
    sleeper("many_steps", many_steps),
]


class SyncSleeps(Tool):
    """A plain def may block: it runs in a worker thread."""

    metadata = metadata("sync_sleeps")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        time.sleep(0.01)
        return ToolResult.success("done")


class WaitsOnItsOwnPool(Tool):
    """Holds a pool thread while it waits for more work in the same pool: a deadlock."""

    metadata = metadata("own_pool")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        loop = asyncio.get_running_loop()

        def outer() -> None:  # in a pool thread, waiting for an inner job of the same pool
            asyncio.run_coroutine_threadsafe(asyncio.to_thread(time.sleep, 0.01), loop).result()

        await asyncio.to_thread(outer)
        return ToolResult.success("done")


def test_concurrent_calls_is_four_times_the_pool_asyncio_to_thread_uses() -> None:
    async def default_pool_size() -> int:
        await asyncio.to_thread(lambda: None)  # makes the loop's default executor
        pool = asyncio.get_running_loop()._default_executor  # type: ignore[attr-defined]
        assert isinstance(pool, ThreadPoolExecutor)
        return int(pool._max_workers)

    assert concurrent_calls() == 4 * asyncio.run(default_pool_size())


@pytest.mark.parametrize(
    ("cpus", "calls"),
    [
        (None, 20),  # the CPU count is unknown: counted as one, a pool of 5
        (1, 20),  # a pool of 5 threads
        (2, 24),  # a small CI machine: a pool of 6
        (28, 128),  # a pool of 32, the most there is
        (96, 128),  # more CPUs do not grow the pool past 32
    ],
)
def test_concurrent_calls_on_machines_of_every_size(
    cpus: int | None, calls: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    assert concurrent_calls() == calls


@pytest.mark.parametrize("tool", AWAITING, ids=lambda t: t.metadata.name)
def test_an_async_tool_that_awaits_passes_under_load(tool: type[Tool]) -> None:
    assert problems(tool) == []


@pytest.mark.parametrize("tool", BLOCKING, ids=lambda t: t.metadata.name)
def test_an_async_tool_that_blocks_the_event_loop_fails_the_kit(tool: type[Tool]) -> None:
    found = problems(tool)
    assert len(found) == 1
    assert found[0].startswith(f"{concurrent_calls()} calls at once stalled the event loop: ")
    assert "over the limit of 4 ms a call: run blocks the event loop (time.sleep" in found[0]
    assert "await asyncio.to_thread(...)" in found[0]  # and how to fix it


def test_the_kit_stops_starting_calls_once_the_loop_stalled_past_its_limit() -> None:
    found = problems(BLOCKING[1])  # here after the first call, which blocked for 200 ms
    pattern = r"a call held it for (\d+) ms on average \((\d+) ms over the 1 call "
    held = re.search(pattern, found[0])
    assert held is not None, found[0]
    assert 100 <= int(held[1]) == int(held[2]) < 1000


def test_a_tool_waiting_on_a_pool_its_calls_filled_fails_without_hanging() -> None:
    started = time.perf_counter()
    found = problems(WaitsOnItsOwnPool)
    assert time.perf_counter() - started < 30
    assert len(found) == 1
    assert found[0].startswith(f"{concurrent_calls()} calls at once: ")  # a few may finish
    assert " finished within " in found[0]
    assert "a thread pool they filled" in found[0]


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


# -- check_plugin: only the real problem -------------------------------------------------------

_BAD_EXAMPLE = '''
from toolplug import Example, Tool, ToolMetadata, ToolResult, hookimpl


class Now(Tool):
    metadata = ToolMetadata(
        name="weather_now",
        description="The weather now in a city.",
        category="reference",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        examples=(Example(description="a city", input={"city": 5}),),
    )

    def run(self, arguments, context):
        return ToolResult.success("sunny")


@hookimpl
def register_tools(register):
    register(Now)
'''


def test_a_bad_example_input_is_the_one_problem_reported(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.add("toolplug-weather-now", entry_points={"weather_now": "weather_now_plugin"},
             modules={"weather_now_plugin": _BAD_EXAMPLE})
    monkeypatch.syspath_prepend(str(site.path))
    try:
        with pytest.raises(ContractError) as raised:
            check_plugin("toolplug-weather-now")
    finally:
        sys.modules.pop("weather_now_plugin", None)
    found = raised.value.problems
    assert len(found) == 1, found
    assert "example" in found[0]
    assert "city" in found[0]
    assert "is it installed" not in " ".join(found)


def test_a_plugin_that_is_not_installed_is_reported_once() -> None:
    with pytest.raises(ContractError) as raised:
        check_plugin("toolplug-not-installed-anywhere")
    (found,) = raised.value.problems
    assert "toolplug-not-installed-anywhere" in found
