"""Capabilities: detectors, host grants and denials, and the reasons a tool is not offered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolplug
from toolplug import (
    Capability,
    CapabilityChecker,
    Check,
    ConfigKey,
    DetectContext,
    EnvVar,
    Package,
    ToolMetadata,
)


def checker(
    caps: list[Capability],
    *,
    env: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
    grants: frozenset[str] = frozenset(),
    denials: frozenset[str] = frozenset(),
) -> CapabilityChecker:
    return CapabilityChecker(
        {c.name: c for c in caps}, DetectContext(env or {}, config or {}), grants, denials
    )


@pytest.mark.parametrize(
    ("detector", "env", "config", "present", "reason"),
    [
        # env var set
        (EnvVar("TOKEN"), {"TOKEN": "x"}, {}, True, None),
        # env var empty counts as unset
        (EnvVar("TOKEN"), {"TOKEN": ""}, {}, False, "environment variable TOKEN is not set"),
        # any of several env vars
        (EnvVar("A", "B"), {"B": "1"}, {}, True, None),
        # a config key with a value
        (ConfigKey("tools.x.url"), {}, {"tools": {"x": {"url": "u"}}}, True, None),
        # an empty list counts as unset
        (ConfigKey("tools.x.items"), {}, {"tools": {"x": {"items": []}}}, False,
         "configuration key tools.x.items is not set: set tools.x.items in the configuration"),
        # an importable package
        (Package("json"), {}, {}, True, None),
        (Package("no_such_pkg_qq", "no-such-pkg"), {}, {}, False,
         "Python package no-such-pkg is not installed: pip install no-such-pkg"),
        # a callable
        (Check(lambda ctx: None if ctx.env("MODE") == "on" else "MODE is not on"), {"MODE": "on"},
         {}, True, None),
        (Check(lambda ctx: None if ctx.env("MODE") == "on" else "MODE is not on"), {}, {}, False,
         "MODE is not on"),
    ],
)
def test_detectors(
    detector: Any, env: dict[str, str], config: dict[str, Any], present: bool, reason: str | None
) -> None:
    state = checker([Capability("c", "d", (detector,))], env=env, config=config).state("c")
    assert state.present is present
    assert state.reason == reason


def test_denial_beats_grant_and_grant_beats_detection() -> None:
    cap = Capability("c", "d", (EnvVar("NOPE"),), setup="export NOPE=1")
    assert checker([cap], grants=frozenset({"c"})).state("c").present
    denied = checker([cap], env={"NOPE": "1"}, grants=frozenset({"c"}), denials=frozenset({"c"}))
    state = denied.state("c")
    assert (state.present, state.source, state.reason) == (False, "denied", "denied by the host")


def test_unknown_capability_and_a_detector_that_raises() -> None:
    def boom(ctx: DetectContext) -> str | None:
        raise RuntimeError("detector bug")

    check = checker([Capability("bad", "d", (Check(boom),))])
    assert check.state("ghost").reason == "no installed plugin provides this capability"
    assert "RuntimeError: detector bug" in str(check.state("bad").reason)
    assert check.errors[0][0] == "bad"


def test_each_capability_is_evaluated_once() -> None:
    calls: list[int] = []

    def count(ctx: DetectContext) -> None:
        calls.append(1)

    check = checker([Capability("c", "d", (Check(count),))])
    for _ in range(5):
        check.state("c")
    assert calls == [1]


def meta(*caps: str) -> ToolMetadata:
    return ToolMetadata(name="t", description="x", category="utility", requires_capabilities=caps,
                        setup_instructions="install the thing")


def test_availability_lists_every_reason_and_setup_step() -> None:
    caps = [Capability("a", "d", (EnvVar("A"),), setup="export A=1"),
            Capability("b", "d", (EnvVar("B"),), setup="export B=1")]
    availability = checker(caps).availability(meta("a", "b"), enabled=False)
    assert not availability.available
    assert availability.reasons == (
        "disabled by config",
        "capability 'a' is missing: environment variable A is not set",
        "capability 'b' is missing: environment variable B is not set",
    )
    assert availability.setup[1:] == ("export A=1", "export B=1", "install the thing")


@given(
    required=st.sets(st.sampled_from(["a", "b", "c", "d"])),
    present=st.sets(st.sampled_from(["a", "b", "c", "d"])),
    denied=st.sets(st.sampled_from(["a", "b", "c", "d"])),
)
def test_available_exactly_when_every_required_capability_is_present(
    required: set[str], present: set[str], denied: set[str]
) -> None:
    caps = [Capability(n, n, (EnvVar(n.upper()),)) for n in "abcd"]
    env = {n.upper(): "1" for n in present}
    check = checker(caps, env=env, denials=frozenset(denied))
    availability = check.availability(meta(*sorted(required)))
    assert availability.available is (required <= present - denied)
    assert len(availability.reasons) == len(required - (present - denied))


def test_network_is_built_in_and_follows_offline_and_denial() -> None:
    assert toolplug.load({}).checker.state("network").present
    offline = toolplug.load({"offline": True}).checker.state("network")
    assert (offline.present, offline.reason) == (False, "offline = true in the configuration")
    denied = toolplug.load({"capabilities": {"deny": ["network"]}}).checker.state("network")
    assert not denied.present
    assert not toolplug.load({}, deny=["network"]).checker.state("network").present


def test_disabled_tool_is_unavailable_and_says_so(cli: Callable[..., Any]) -> None:
    links = {"links": [{"name": "gh", "url": "https://github.com/x"}]}
    registry = toolplug.load({"tools": {"static_links": links}})
    assert registry.availability("static_links").available
    off = toolplug.load({"tools": {"static_links": {**links, "enabled": False}}})
    assert off.availability("static_links").reasons == ("disabled by config",)
    assert off.call("static_links", {}).to_dict() == {
        "error": True, "error_type": "UnavailableError",
        "error_message": "static_links tool is disabled", "retry_possible": False,
        "details": {
            "reasons": ["disabled by config"],
            "setup": [
                "set enabled = true under [tools.static_links] (or remove the line)",
                "Configure the links under [tools.static_links] links = [...].",
            ],
        },
    }


def test_without_network_every_request_is_refused_by_the_guard() -> None:
    from toolplug.http import NetworkRefused, check_url

    links = {"links": [{"name": "gh", "url": "https://github.com/x"}]}
    for registry in (
        toolplug.load({"offline": True, "tools": {"static_links": links}}),
        toolplug.load({"tools": {"static_links": links}}, deny=["network"]),
    ):
        policy = registry.context_for("static_links").network
        assert policy.disabled is not None
        with pytest.raises(NetworkRefused, match="the network is off"):
            check_url("http://127.0.0.1/", policy, resolve=lambda host, port: ["127.0.0.1"])
    online = toolplug.load({"tools": {"static_links": links}}).context_for("static_links")
    assert online.network.disabled is None


# -- availability text names every way out (issue 15) ---------------------------------------


class Convert(toolplug.Tool):
    """A tool with a key (a ConfigKey capability) and a required setting."""

    metadata = ToolMetadata(
        name="currency_convert",
        description="Convert an amount between currencies.",
        category="utility",
        requires_capabilities=("fx_key",),
        config_fields=(
            toolplug.ConfigField(
                name="api_key", type="string", description="key", env_var="FX_API_KEY",
                secret=True,
            ),
            toolplug.ConfigField(
                name="region", type="string", description="region", env_var="FX_REGION",
                required=True,
            ),
        ),
        setup_instructions="pip install toolplug-fx, then see its README.",
    )

    def run(self, arguments: dict[str, Any], context: toolplug.ToolContext) -> toolplug.ToolResult:
        return toolplug.ToolResult.success("1")


class FxPlugin:
    @staticmethod
    @toolplug.hookimpl
    def register_tools(register: Callable[[Any], None]) -> None:
        register(Convert)

    @staticmethod
    @toolplug.hookimpl
    def register_capabilities(register: Callable[[Any], None]) -> None:
        register(Capability("fx_key", "key", (ConfigKey("tools.currency_convert.api_key"),)))


def fx_registry(env: dict[str, str], config: dict[str, Any] | None = None) -> toolplug.Registry:
    return toolplug.load(
        config or {}, env={"TOOLPLUG_PLUGINS": "", **env}, plugins=[("fx", FxPlugin)]
    )


def test_a_config_key_reason_names_the_setting_its_variable_and_the_file_form() -> None:
    availability = fx_registry({"FX_REGION": "eu"}).availability("currency_convert")
    assert availability.reasons == (
        "capability 'fx_key' is missing: configuration key tools.currency_convert.api_key is "
        'not set: set [tools.currency_convert] api_key = { env = "VAR" } or { file = "PATH" }, '
        "or the environment variable FX_API_KEY",
    )


def test_a_missing_required_setting_names_every_way_and_keeps_the_setup_instructions() -> None:
    registry = fx_registry({"FX_API_KEY": "k-123456"})
    availability = registry.availability("currency_convert")
    assert availability.reasons == (
        "required setting tools.currency_convert.region has no value: set "
        '[tools.currency_convert] region (a value, { env = "VAR" } or { file = "PATH" }), '
        "or the environment variable FX_REGION",
    )
    # the tool's own setup_instructions are there whatever made it unavailable
    assert availability.setup[-1] == "pip install toolplug-fx, then see its README."
    result = registry.call("currency_convert", {})
    assert result.error is not None
    assert result.error.details["setup"] == list(availability.setup)


def test_a_disabled_tool_gives_its_reasons_and_setup_in_the_error_details() -> None:
    config = {"tools": {"currency_convert": {"enabled": False}}}
    registry = fx_registry({"FX_API_KEY": "k-123456", "FX_REGION": "eu"}, config)
    error = registry.call("currency_convert", {}).error
    assert error is not None
    assert error.message == "currency_convert tool is disabled"
    assert error.details["reasons"] == ["disabled by config"]
    assert "pip install toolplug-fx, then see its README." in error.details["setup"]


FX_MODULE = """
from toolplug import Capability, ConfigField, ConfigKey, Tool, ToolMetadata, ToolResult, provides

TOOLPLUG_CONTRACT = "1.0"


class Convert(Tool):
    metadata = ToolMetadata(
        name="currency_convert",
        description="Convert an amount between currencies.",
        category="utility",
        requires_capabilities=("fx_key",),
        config_fields=(
            ConfigField(name="api_key", type="string", description="key", env_var="FX_API_KEY",
                        secret=True),
            ConfigField(name="region", type="string", description="region", required=True),
        ),
        setup_instructions="pip install toolplug-fx, then see its README.",
    )

    def run(self, arguments, context):
        return ToolResult.success("1")


register_tools = provides(Convert)
register_capabilities = provides(
    Capability("fx_key", "key", (ConfigKey("tools.currency_convert.api_key"),))
)
"""


def test_info_and_doctor_show_the_setup_instructions_of_a_tool_missing_a_setting(
    site: Any, cli: Callable[..., Any]
) -> None:
    site.add("toolplug-fx", entry_points={"fx": "toolplug_fx"}, modules={"toolplug_fx": FX_MODULE})
    env = site.env(TOOLPLUG_PLUGINS="toolplug-fx", FX_API_KEY="k-123456", TOOLPLUG_NO_CACHE="1")
    info = cli("info", "currency_convert", env=env)
    assert "why not: required setting tools.currency_convert.region has no value" in info.out
    assert "to enable: pip install toolplug-fx, then see its README." in info.out
    doctor = cli("doctor", env=env)
    assert "    to enable: pip install toolplug-fx, then see its README." in doctor.out
    assert "Problems: none" in doctor.out
