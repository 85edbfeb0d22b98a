"""The installed plugins (sources/_plugins.py): every kind of broken plugin is isolated,
named, and never stops the others; ``TOOLPLUG_PLUGINS`` selects distributions.

The broken plugins are real installed distributions (dist-info directories with entry
points and modules on ``PYTHONPATH``), loaded by a fresh interpreter through the CLI, and
in-process through ``toolplug.load``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug.sources._plugins import ENTRY_POINT_GROUP, InstalledPlugins

GOOD_TOOL = """
from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

class Ping(Tool):
    metadata = ToolMetadata(name="{name}", description="Answer pong.", category="utility")
    def run(self, arguments, context):
        return ToolResult.success("pong from {dist}")

@hookimpl
def register_tools(register):
    register(Ping)
"""

# Each entry: distribution name -> (entry point value, modules, text doctor must show).
BROKEN: dict[str, tuple[str, dict[str, str], str]] = {
    # the module raises while being imported
    "bad-import": (
        "bad_import_mod",
        {"bad_import_mod": "raise RuntimeError('boom at import')\n"},
        "RuntimeError: boom at import",
    ),
    # the entry point names a module that does not exist
    "missing-module": ("no_such_module_xyz", {}, "ModuleNotFoundError"),
    # a hook raises
    "raising-hook": (
        "raising_hook_mod",
        {
            "raising_hook_mod": """
        from toolplug import hookimpl
        @hookimpl
        def register_tools(register):
            raise ValueError("hook exploded")
        """
        },
        "hook register_tools raised ValueError: hook exploded",
    ),
    # register() of something that is not a tool class
    "not-a-tool": (
        "not_a_tool_mod",
        {
            "not_a_tool_mod": """
        from toolplug import hookimpl
        @hookimpl
        def register_tools(register):
            register("just a string")
        """
        },
        "expected a toolplug.Tool subclass",
    ),
    # metadata that breaks the contract when built at import time
    "bad-metadata": (
        "bad_metadata_mod",
        {
            "bad_metadata_mod": """
        from toolplug import Tool, ToolMetadata, hookimpl
        class Bad(Tool):
            metadata = ToolMetadata(name="Bad Name!", description="x", category="utility")
        @hookimpl
        def register_tools(register):
            register(Bad)
        """
        },
        "field name",
    ),
    # a parameters schema that is not valid JSON Schema
    "bad-schema": (
        "bad_schema_mod",
        {
            "bad_schema_mod": """
        from toolplug import Tool, ToolMetadata, ToolResult, hookimpl
        class BadSchema(Tool):
            metadata = ToolMetadata(
                name="bad_schema", description="x", category="utility",
                parameters={"type": "object", "properties": {"q": {"type": "strnig"}}})
            def run(self, arguments, context):
                return ToolResult.success("")
        @hookimpl
        def register_tools(register):
            register(BadSchema)
        """
        },
        "not a valid JSON Schema 2020-12 at properties/q/type",
    ),
    # a second distribution registering a tool name already taken
    "zz-duplicate": (
        "zz_duplicate_mod",
        {"zz_duplicate_mod": GOOD_TOOL.format(name="ping", dist="zz-duplicate")},
        "tool name 'ping' is already registered by aa-good; that one is kept",
    ),
    # a hookimpl whose name is not a toolplug hook
    "unknown-hook": (
        "unknown_hook_mod",
        {
            "unknown_hook_mod": """
        from toolplug import hookimpl
        @hookimpl
        def register_widgets(register):
            pass
        """
        },
        "implements register_widgets, which is not a toolplug hook",
    ),
}


@pytest.fixture
def broken_site(site: Any) -> Any:
    """A site with one good plugin and one plugin of every broken kind."""
    site.add(
        "aa-good",
        entry_points={"good": "aa_good_mod"},
        modules={"aa_good_mod": GOOD_TOOL.format(name="ping", dist="aa-good")},
    )
    for dist, (value, modules, _) in BROKEN.items():
        site.add(dist, entry_points={dist.replace("-", "_"): value}, modules=modules)
    return site


def test_doctor_names_every_broken_plugin_and_keeps_the_good_one(
    broken_site: Any, cli: Callable[..., Any]
) -> None:
    result = cli("doctor", env=broken_site.env())
    assert result.code == 0, result.err
    for dist, (_, _, expected) in BROKEN.items():
        lines = [
            line
            for line in result.out.splitlines()
            if line.strip().startswith("[") and dist in line
        ]
        assert lines, f"doctor does not name {dist}:\n{result.out}"
        assert any(expected in line for line in lines), f"{dist}: {lines}"
    assert "ping: available" in result.out
    # the real catalog plugins still load beside the broken ones
    assert "static_links:" in result.out


def test_good_tool_still_callable_when_others_are_broken(
    broken_site: Any, cli: Callable[..., Any]
) -> None:
    listed = cli("list", "--json", "--all", env=broken_site.env())
    assert listed.code == 0, listed.err
    records = {r["name"]: r for r in json.loads(listed.out)}
    # the duplicate from zz-duplicate is ignored; the first in sorted order wins
    assert records["ping"]["distribution"] == "aa-good"
    assert "bad_schema" not in records


def test_strict_mode_turns_problems_into_exit_2(broken_site: Any, cli: Callable[..., Any]) -> None:
    for args, env in (
        (("--strict", "list"), broken_site.env()),
        (("list", "--strict"), broken_site.env()),
        (("prompt",), broken_site.env(TOOLPLUG_STRICT="1")),
        (("doctor", "--strict"), broken_site.env()),
    ):
        result = cli(*args, env=env)
        assert result.code == 2, (args, result.out, result.err)
        assert "strict mode" in result.err
        assert "Traceback" not in result.err


def test_plugins_command_reports_hooks_and_problems(
    broken_site: Any, cli: Callable[..., Any]
) -> None:
    result = cli("plugins", "--json", env=broken_site.env())
    assert result.code == 0, result.err
    records = {r["distribution"]: r for r in json.loads(result.out)}
    assert records["aa-good"]["hooks"] == ["register_tools"]
    assert records["aa-good"]["tools"] == ["ping"]
    assert records["bad-import"]["loaded"] is False
    assert any("boom at import" in p for p in records["bad-import"]["problems"])
    assert records["toolplug"]["builtin"] is True
    assert records["toolplug"]["hooks"] == ["register_capabilities"]  # tool_call: the engine's


def test_selection_env_loads_only_named_distributions(
    broken_site: Any, cli: Callable[..., Any]
) -> None:
    result = cli(
        "list",
        "--json",
        "--all",
        env=broken_site.env(TOOLPLUG_PLUGINS="aa_good, toolplug-static-links"),
    )
    assert result.code == 0, result.err
    assert [r["name"] for r in json.loads(result.out)] == ["ping", "static_links"]
    none = cli("plugins", "--json", env=broken_site.env(TOOLPLUG_PLUGINS=""))
    assert [r["name"] for r in json.loads(none.out)] == ["toolplug"]
    missing = cli("doctor", env=broken_site.env(TOOLPLUG_PLUGINS="not-installed"))
    assert "TOOLPLUG_PLUGINS names 'not-installed'" in missing.out


def test_static_links_entry_point_is_discovered() -> None:
    registry = toolplug.load()
    tool = registry.tools["static_links"]
    assert tool.distribution == "toolplug-static-links"
    assert tool.plugin == "toolplug-static-links/static_links"
    names = [p.distribution or "" for p in registry.plugins]
    assert names[0] == "toolplug"
    assert names[1:] == sorted(names[1:])


def test_discovery_order_is_stable_across_processes(cli: Callable[..., Any]) -> None:
    first = cli("plugins", "--json")
    second = cli("plugins", "--json", env={**__import__("os").environ, "PYTHONHASHSEED": "123"})
    assert first.code == second.code == 0
    assert first.out == second.out


def test_entry_points_of_this_workspace_are_all_found() -> None:
    registry = toolplug.load()
    found = {p.distribution for p in registry.plugins if p.loaded}
    root = Path(__file__).resolve().parents[2]
    for pyproject in sorted(root.glob("plugins/*/pyproject.toml")):
        import tomllib

        dist = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
        assert dist in found, f"{dist} is not discovered (is it installed? {sys.prefix})"


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        (None, None),  # plugins from before contract versions: nothing to check
        ('"1.0"', None),  # an older minor of this core's major: minors only add
        ('"1.1"', None),  # the minor before the URL, address and path sink kinds
        ('"1.2"', None),  # the contract of this core
        ('"1.7"', "written for toolplug contract 1.7, but this toolplug implements 1.2: "
                  "upgrade toolplug (pip install -U toolplug)"),  # a newer minor
        ('"2.0"', "written for toolplug contract 2.0, but this toolplug implements 1.2: "
                  "upgrade toolplug"),  # a newer major
        ('"0.9"', "written for toolplug contract 0.9, but this toolplug implements 1.2: "
                  "install a release of the plugin written for contract 1.x"),  # an older major
        ("1.0", "TOOLPLUG_CONTRACT is 1.0; expected a string such as '1.2'"),  # not a string
    ],
)
def test_a_plugin_for_another_contract_is_reported(
    site: Any, cli: Callable[..., Any], declared: str | None, problem: str | None
) -> None:
    head = f"TOOLPLUG_CONTRACT = {declared}\n" if declared else ""
    body = "from toolplug import provides\nregister_tools = provides()\n"
    site.add(
        "toolplug-old",
        entry_points={"old": "toolplug_old"},
        modules={"toolplug_old": head + body},
    )
    env = site.env(TOOLPLUG_PLUGINS="toolplug-old", TOOLPLUG_NO_CACHE="1")
    doctor, plugins = cli("doctor", env=env), cli("plugins", env=env)
    strict = cli("plugins", "--strict", env=env)
    if problem is None:
        assert "[contract]" not in doctor.out + plugins.out
        assert strict.code == 0
        return
    line = f"[contract] toolplug-old (entry point old = toolplug_old): {problem}"
    assert line in doctor.out
    assert line in plugins.out
    assert (doctor.code, plugins.code, strict.code) == (0, 0, 2)


class _Host:
    @toolplug.hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        """Nothing to register: the plugin only has to be offered."""


def test_the_source_offers_each_selected_entry_point_then_the_hosts_plugins() -> None:
    host = _Host()
    source = InstalledPlugins(
        {"TOOLPLUG_PLUGINS": "toolplug_static_links, not-installed"}, plugins=[("host", host)]
    )
    offered = source.offered()
    assert [o.info.name for o in offered] == ["toolplug-static-links/static_links", "host"]
    links = offered[0].info
    assert (links.distribution, links.entry_point) == (
        "toolplug-static-links", "static_links = toolplug_static_links"
    )
    assert links.metadata_dir is not None
    assert links.metadata_dir.endswith(".dist-info")
    assert source.plugins()[1] == ("host", host)
    assert [(p.kind, p.plugin) for p in source.problems()] == [("selection", "not-installed")]
    assert source.offered() is offered  # each entry point is imported once


def test_an_entry_point_that_cannot_be_imported_is_offered_with_its_problem() -> None:
    broken = importlib_metadata.EntryPoint("broken", "no_such_module_xyz", ENTRY_POINT_GROUP)
    source = InstalledPlugins({}, entry_points=lambda: [broken])
    (offer,) = source.offered()
    assert offer.plugin is None
    assert source.plugins() == []
    assert offer.problem is not None
    assert offer.problem.describe() == (
        "[import] unknown/broken (entry point broken = no_such_module_xyz): could not be "
        "imported: ModuleNotFoundError: No module named 'no_such_module_xyz'"
    )
    registry = toolplug.load({}, sources=[], env={"TOOLPLUG_PLUGINS": ""})
    try:
        assert registry.sources == ()  # the installed plugins are not a host's source
    finally:
        registry.close()
