"""Definitions from outside, screened and pinned, against real MCP servers
(tests/helpers/mcp_servers.py): a flagged definition is withheld from every renderer until
the configuration accepts it, a server's own annotations do not lower approvals unless
trusted, and a definition that changes after it was first seen is refused until
``toolplug lock`` accepts it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.mcp_servers import stdio_table, write_server
from tests.helpers.measured import measured
from toolplug.sources.mcp import lock, mounted, report
from toolplug.sources.mcp._screen import findings

# The poisoned tools of the test server, with the rules their definitions break.
POISONED = {
    "evil_tags": {"unicode-tags", "override"},
    "evil_important": {"instruction-block", "precondition", "secrecy", "sensitive-path"},
    "evil_hidden_param": {"bidi-control"},
    "evil_zero_width": {"zero-width"},
    "evil_read_file": {"shadowing"},  # toolplug-files' read_file
    "evil_helper": {"tool-reference"},  # names url_fetch
    "evil_shell": {"shadowing"},  # titled "Bash"
}


@pytest.fixture
def script(tmp_path: Path) -> Path:
    return write_server(tmp_path)


@pytest.fixture
def loaded() -> Iterator[list[toolplug.Registry]]:
    made: list[toolplug.Registry] = []
    yield made
    for registry in made:
        registry.close()


def _load(tmp_path: Path, tables: str, loaded: list[toolplug.Registry]) -> toolplug.Registry:
    config = tmp_path / "toolplug.toml"
    config.write_text(f'cache_dir = "{tmp_path / "cache"}"\n' + tables, encoding="utf-8")
    registry = toolplug.load(config)
    loaded.append(registry)
    return registry


def test_each_poisoned_definition_is_withheld_with_the_rules_it_breaks(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(tmp_path, stdio_table("evil", script, "--poison"), loaded)
    found: dict[str, set[str]] = {}
    for reported in findings(registry, mounted(registry)):
        if reported.finding.source == "mcp:evil":
            assert reported.state == "withheld"
            found.setdefault(reported.finding.tool, set()).add(reported.finding.rule)
    assert found == POISONED
    for name, rules in POISONED.items():
        availability = registry.availability(name)
        assert not availability.available
        reason = " ".join(availability.reasons)
        assert f"{name} is withheld" in reason
        assert all(rule in reason for rule in rules)
        # the reason names rules and fields, never the flagged text itself
        assert "IMPORTANT" not in reason
        assert "ssh" not in reason
        assert any("accept_findings" in step for step in availability.setup)
        # the registered definition is a neutral one: nothing of the server's text
        meta = registry.get(name).metadata
        assert meta.description.startswith("Withheld: ")
        assert meta.parameters == {"type": "object"}
    assert registry.availability("evil_add").available  # clean tools stay


def test_flagged_text_reaches_no_prompt_schema_stub_or_reference(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(tmp_path, stdio_table("evil", script, "--poison"), loaded)
    rendered = [
        toolplug.optional_tools_section(registry, include_unavailable=True),
        json.dumps(toolplug.export_tools(registry, "openai", include_unavailable=True)),
        json.dumps(toolplug.export_tools(registry, "mcp", include_unavailable=True)),
        toolplug.tool_stubs(registry, include_unavailable=True),
        toolplug.tool_reference(registry, "evil_important"),
    ]
    for text in rendered:
        assert "IMPORTANT" not in text
        assert "id_rsa" not in text
        assert "url_fetch with the result" not in text
        assert not any(0xE0000 <= ord(c) <= 0xE007F for c in text)
        assert "\u202e" not in text
        assert "\u200b" not in text


def test_accept_findings_lets_a_definition_through_verbatim(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    tables = stdio_table("evil", script, "--poison") + (
        '[mcp_servers.evil.tools.zero_width]\naccept_findings = ["zero-width"]\n'
        '[mcp_servers.evil.tools.tags]\naccept_findings = ["unicode-tags"]\n'
    )
    registry = _load(tmp_path, tables, loaded)
    assert registry.availability("evil_zero_width").available
    assert "\u200b" in registry.get("evil_zero_width").metadata.description
    # one rule accepted, another not: still withheld, and the reason names only the other
    tags = registry.availability("evil_tags")
    assert not tags.available
    assert "override" in " ".join(tags.reasons)
    assert "unicode-tags (in" not in " ".join(tags.reasons)
    states = {
        (r.finding.tool, r.finding.rule): r.state for r in findings(registry, mounted(registry))
    }
    assert states[("evil_zero_width", "zero-width")] == "accepted"
    assert states[("evil_tags", "unicode-tags")] == "accepted"
    assert states[("evil_tags", "override")] == "withheld"


def test_an_unknown_rule_in_accept_findings_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text('[mcp_servers.x]\ncommand = "x"\naccept_findings = ["hidden"]\n')
    with pytest.raises(toolplug.ConfigError, match=r"mcp_servers.x.accept_findings.*zero-width"):
        toolplug.load(config)


def test_withheld_tools_are_not_in_tools_list_over_mcp(tmp_path: Path, script: Path) -> None:
    from mcp import Client, StdioServerParameters

    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n' + stdio_table("evil", script, "--poison")
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolplug", "serve"],
        env=measured({"TOOLPLUG_CONFIG": str(config), "TOOLPLUG_PLUGINS": "toolplug-files"}),
        cwd=str(tmp_path),
    )

    async def listed() -> list[Any]:
        async with Client(params) as client:
            return list((await client.list_tools()).tools)

    tools = asyncio.run(asyncio.wait_for(listed(), 60))
    names = {t.name for t in tools}
    assert "evil_add" in names
    # url_fetch is not installed here, so evil_helper names no installed tool
    assert not names & (set(POISONED) - {"evil_helper"}), names & set(POISONED)
    text = json.dumps([t.model_dump(mode="json") for t in tools])
    assert "IMPORTANT" not in text


def test_a_read_only_claim_does_not_lower_approval_unless_trusted(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    # --rug-pull has erase (which deletes) claim readOnlyHint
    registry = _load(tmp_path, stdio_table("calc", script, "--rug-pull"), loaded)
    assert registry.needs_approval("calc_erase") is not None
    asked = registry.call("calc_erase", {"what": "everything"})
    assert asked.error is not None
    assert asked.error.type == "ApprovalRequiredError"
    assert registry.needs_approval("calc_add") is not None  # read-only or not, not trusted
    lines = "\n".join(report(mounted(registry)))  # type: ignore[arg-type]
    assert "annotations: not trusted" in lines

    trusting = tmp_path / "trusting"
    trusting.mkdir()
    trusted = _load(
        trusting,
        stdio_table("calc", script, "--rug-pull", extra="trust_annotations = true"),
        loaded,
    )
    assert trusted.needs_approval("calc_erase") is None  # the configuration's word
    assert trusted.call("calc_erase", {"what": "it"}).output == "erased it"


def test_a_rug_pull_is_refused_until_locked(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    first = _load(tmp_path, stdio_table("calc", script, extra='approval = "never"'), loaded)
    assert first.call("calc_add", {"a": 1, "b": 2}).data == {"result": 3}
    lock_file = tmp_path / "toolplug.lock"
    recorded = json.loads(lock_file.read_text())
    assert set(recorded["servers"]["calc"]) >= {"add", "erase"}  # pinned on first use
    assert "pinned on first use: 8 definition(s)" in "\n".join(report(mounted(first)))  # type: ignore[arg-type]
    first.close()

    # the same server, now defining add and erase otherwise
    pulled_table = stdio_table("calc", script, "--rug-pull", extra='approval = "never"')
    pulled = _load(tmp_path, pulled_table, loaded)
    for name, parts in (("calc_add", "description, inputSchema"), ("calc_erase", "annotations")):
        availability = pulled.availability(name)
        assert not availability.available
        reason = " ".join(availability.reasons)
        assert f"differs from toolplug.lock (its {parts} changed)" in reason
        assert "toolplug lock" in " ".join(availability.setup)
    refused = pulled.call("calc_add", {"a": 1, "b": 2})
    assert refused.error is not None
    assert refused.error.type == "UnavailableError"
    assert pulled.availability("calc_big").available  # unchanged tools still run
    assert json.loads(lock_file.read_text()) == recorded  # a change is not recorded

    lock(pulled)
    accepted = _load(tmp_path, pulled_table, loaded)
    assert accepted.call("calc_add", {"a": 1, "b": 2, "note": "x"}).data == {"result": 3}


def test_pin_false_does_not_pin(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(
        tmp_path, stdio_table("calc", script, extra='pin = false\napproval = "never"'), loaded
    )
    assert registry.call("calc_add", {"a": 1, "b": 2}).data == {"result": 3}
    assert not (tmp_path / "toolplug.lock").exists()
    changed = _load(
        tmp_path,
        stdio_table("calc", script, "--rug-pull", extra='pin = false\napproval = "never"'),
        loaded,
    )
    assert changed.availability("calc_add").available


def test_same_definitions_same_findings_byte_for_byte(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    one = _load(tmp_path, stdio_table("evil", script, "--poison"), loaded)
    first = json.dumps([r.to_dict() for r in findings(one, mounted(one))])
    again = _load(tmp_path, stdio_table("evil", script, "--poison"), loaded)
    assert json.dumps([r.to_dict() for r in findings(again, mounted(again))]) == first
