"""Trust labels of mounted MCP servers' tools, against a real server over stdio
(tests/helpers/mcp_servers.py): untrusted by default, and the configuration's ``trust``
tables for the server, for one of its tools, and ``[tools.NAME]`` on top."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.mcp_servers import stdio_table, write_server
from toolplug import ConfigError, Trust
from toolplug.sources.mcp import mounted, report


@pytest.fixture
def script(tmp_path: Path) -> Path:
    return write_server(tmp_path)


@pytest.fixture
def loaded() -> Iterator[list[toolplug.Registry]]:
    """Registries a test made; closed after it, so no server outlives its test."""
    made: list[toolplug.Registry] = []
    yield made
    for registry in made:
        registry.close()


def _load(tmp_path: Path, tables: str, **options: Any) -> toolplug.Registry:
    config = tmp_path / "toolplug.toml"
    config.write_text(f'cache_dir = "{tmp_path / "cache"}"\n' + tables, encoding="utf-8")
    return toolplug.load(config, **options)


def test_a_mounted_tool_is_untrusted_by_default(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    # even with the server's annotations trusted: add is read-only, which says nothing
    # about who wrote what it returns
    registry = _load(tmp_path, stdio_table("calc", script, extra="trust_annotations = true"))
    loaded.append(registry)
    assert registry.get("calc_add").metadata.annotations.read_only
    assert registry.labels("calc_add") == Trust(
        output="untrusted", private=True, sinks=("a", "b")
    )
    assert registry.labels("calc_erase") == Trust(
        output="untrusted", private=True, sinks=("what",)
    )
    assert not registry.labelled("calc_add")


def test_server_tool_and_tools_tables_apply_key_by_key(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(
        tmp_path,
        stdio_table(
            "calc",
            script,
            # every tool of the server: its own outputs, nothing of the user's
            extra='trust = { output = "trusted", private = false }\n'
            # add sends nothing anywhere; erase's argument changes the world
            "[mcp_servers.calc.tools.add]\ntrust = { sinks = [] }\n"
            '[mcp_servers.calc.tools.erase]\ntrust = { sinks = ["what"] }\n',
        )
        # and the operator's [tools.NAME] table wins over both
        + '[tools.calc_erase]\ntrust = { output = "untrusted" }\n',
    )
    loaded.append(registry)
    assert registry.labels("calc_add") == Trust(output="trusted", sinks=())
    assert registry.labels("calc_erase") == Trust(output="untrusted", sinks=("what",))
    # a tool with no table of its own takes the server's, with the cautious sinks
    assert registry.labels("calc_big") == Trust(output="trusted", sinks=("chars",))
    assert registry.labelled("calc_big")


def test_a_sink_the_remote_tool_does_not_have_keeps_it_unmounted(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(
        tmp_path,
        stdio_table(
            "calc", script, extra='[mcp_servers.calc.tools.add]\ntrust = { sinks = ["c"] }\n'
        ),
    )
    loaded.append(registry)
    assert "calc_add" not in registry.tools
    assert "calc_big" in registry.tools  # the other tools stay
    mounts = mounted(registry)
    assert mounts is not None
    said = "\n".join(report(mounts))
    assert (
        "[mcp_servers.calc.tools.add] trust.sinks names 'c', not a parameter of the "
        "server's 'add' (its parameters: a, b)"
    ) in said


@pytest.mark.parametrize(
    ("tables", "key", "expected"),
    [
        # sinks name one tool's parameters: not a key of the server's table
        ('trust = { sinks = ["a"] }\n', "mcp_servers.calc.trust.sinks", "one of output, private"),
        # an output that is neither
        ('trust = { output = "yes" }\n', "mcp_servers.calc.trust.output",
         '"trusted" or "untrusted"'),
        # a tool's table checks its trust table like [tools.NAME] does
        ('[mcp_servers.calc.tools.add]\ntrust = { private = 1 }\n',
         "mcp_servers.calc.tools.add.trust.private", "a boolean"),
    ],
)
def test_a_bad_trust_table_names_the_file_and_key(
    tmp_path: Path, tables: str, key: str, expected: str
) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text(f'[mcp_servers.calc]\ncommand = "x"\n{tables}', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        toolplug.load(config)
    assert caught.value.key == key
    assert str(caught.value).startswith(f"{config}: {key}: ")
    assert expected in str(caught.value)


def test_doctor_names_the_unlabelled_tools_of_a_server_together(
    tmp_path: Path, script: Path, cli: Callable[..., Any]
) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        + stdio_table(
            "calc",
            script,
            extra='include = ["add", "erase", "big"]\n'
            '[mcp_servers.calc.tools.add]\ntrust = { output = "trusted", sinks = [] }\n',
        ),
        encoding="utf-8",
    )
    doctor = cli("--config", str(config), "doctor")
    assert doctor.code == 0, doctor.err
    part = doctor.out.split("Trust labels:\n", 1)[1].split("\n\n", 1)[0]
    # add is labelled by its table; the other two get the cautious default
    assert part.splitlines() == [
        "  calc_big, calc_erase (MCP server calc): unlabelled, so they get the cautious "
        "default: untrusted output, private, every parameter a sink",
        "    to label them: set [mcp_servers.calc] trust = { output = ..., private = ... } "
        "for all of them, and [mcp_servers.calc.tools.TOOL] trust = { sinks = [...] } for each",
    ]


def test_a_tool_table_names_refs_of_a_mounted_tool(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(
        tmp_path,
        stdio_table(
            "calc",
            script,
            # erase's argument names something the server holds: a ref (and a sink, by the
            # cautious default)
            extra='[mcp_servers.calc.tools.erase]\ntrust = { refs = ["what"] }\n'
            '[mcp_servers.calc.tools.add]\ntrust = { sinks = ["a", "b"], refs = ["a"] }\n',
        ),
    )
    loaded.append(registry)
    assert registry.labels("calc_erase") == Trust(
        output="untrusted", private=True, sinks=("what",), refs=("what",)
    )
    assert registry.labels("calc_add").refs == ("a",)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        # a ref the remote tool does not have
        (
            'trust = { refs = ["c"] }',
            "[mcp_servers.calc.tools.add] trust.refs names 'c', not a parameter of the "
            "server's 'add' (its parameters: a, b)",
        ),
        # a ref its table's sinks do not name
        (
            'trust = { sinks = ["a"], refs = ["b"] }',
            "[mcp_servers.calc.tools.add] trust.refs names 'b', not among its trust.sinks "
            "(a); a ref is a sink whose value names something the service holds",
        ),
        # a destination its table's sinks do not name
        (
            'trust = { sinks = ["a"], destinations = ["b"] }',
            "[mcp_servers.calc.tools.add] trust.destinations names 'b', not among its "
            "trust.sinks (a); a destination is a sink whose value says where the call goes",
        ),
        (
            'trust = { destinations = ["to"] }',
            "[mcp_servers.calc.tools.add] trust.destinations names 'to', not a parameter of "
            "the server's 'add' (its parameters: a, b)",
        ),
    ],
)
def test_a_bad_ref_keeps_the_tool_unmounted(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry], table: str, said: str
) -> None:
    registry = _load(
        tmp_path, stdio_table("calc", script, extra=f"[mcp_servers.calc.tools.add]\n{table}\n")
    )
    loaded.append(registry)
    assert "calc_add" not in registry.tools
    assert "calc_erase" in registry.tools
    mounts = mounted(registry)
    assert mounts is not None
    assert said in "\n".join(report(mounts))
