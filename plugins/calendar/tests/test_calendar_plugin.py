"""The calendar plugin's wiring: discovery, the capability, configuration, cheap imports."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import toolplug
from toolplug_calendar import CalendarTool

Load = Callable[..., toolplug.Registry]


def test_entry_point_registers_the_tool_and_capability() -> None:
    registry = toolplug.load(config={}, env={})
    tool = registry.tools["calendar"]
    assert tool.distribution == "toolplug-calendar"
    assert tool.cls is CalendarTool
    assert "calendar" in registry.capabilities
    assert not [p for p in registry.problems if p.distribution == "toolplug-calendar"]


@pytest.mark.parametrize(
    "config",
    [
        {},  # no [tools.calendar] table at all
        {"tools": {"calendar": {"sources": []}}},  # an empty list
    ],
)
def test_unavailable_without_sources_and_says_how_to_fix(config: dict[str, object]) -> None:
    found = toolplug.load(config=config, env={}).availability("calendar")
    assert not found.available
    assert any("capability 'calendar' is missing" in r for r in found.reasons)
    assert any("no calendar source is configured" in r for r in found.reasons)
    assert any("[tools.calendar]" in step and "sources" in step for step in found.setup)


def test_available_with_a_file_source(load: Load, data: Path) -> None:
    registry = load([{"name": "team", "path": str(data / "team.ics")}])
    assert registry.availability("calendar").available


def test_available_with_a_url_source(load: Load) -> None:
    registry = load([{"name": "team", "url": "https://calendar.example/team.ics"}])
    assert registry.availability("calendar").available


def test_offline_rules_out_url_only_configurations(load: Load, data: Path) -> None:
    url_only = load([{"name": "team", "url": "https://calendar.example/t.ics"}], offline=True)
    found = url_only.availability("calendar")
    assert not found.available
    assert any("offline = true" in r for r in found.reasons)
    mixed = load(
        [
            {"name": "team", "url": "https://calendar.example/t.ics"},
            {"name": "local", "path": str(data / "team.ics")},
        ],
        offline=True,
    )
    assert mixed.availability("calendar").available


@pytest.mark.parametrize(
    ("sources", "settings", "reason"),
    [
        # two sources share a name, so `source` could not pick one
        (
            [{"name": "team", "path": "/a.ics"}, {"name": "team", "url": "https://x.example/b"}],
            {},
            "repeated: team",
        ),
        # a time zone zoneinfo does not know
        ([{"name": "team", "path": "/a.ics"}], {"timezone": "Mars/Olympus"}, "Mars/Olympus"),
    ],
)
def test_unusable_configuration_makes_it_unavailable(
    load: Load, sources: list[dict[str, str]], settings: dict[str, str], reason: str
) -> None:
    found = load(sources, **settings).availability("calendar")
    assert not found.available
    assert any(reason in r for r in found.reasons)


@pytest.mark.parametrize(
    "source",
    [
        {"name": "both", "url": "https://x.example/a.ics", "path": "/a.ics"},  # both
        {"name": "neither"},  # neither url nor path
        {"name": "ftp", "url": "ftp://x.example/a.ics"},  # not http(s) or webcal
        {"name": "typo", "urll": "https://x.example/a.ics"},  # unknown key
    ],
)
def test_configuration_rejects_bad_source_entries(load: Load, source: dict[str, str]) -> None:
    with pytest.raises(toolplug.ConfigError, match=r"tools\.calendar\.sources"):
        load([source])


def test_listing_and_availability_do_not_import_heavy_dependencies(tmp_path: Path) -> None:
    script = (
        "import json, sys, toolplug\n"
        "r = toolplug.load(config={'tools': {'calendar': {'sources': "
        "[{'name': 'a', 'path': '/a.ics'}]}}}, env={'TOOLPLUG_PLUGINS': 'toolplug-calendar'})\n"
        "assert r.availability('calendar').available\n"
        "heavy = ('icalendar', 'recurring_ical_events', 'httpx', 'dateutil', 'x_wr_timezone')\n"
        "print(json.dumps(sorted(m for m in heavy if m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert json.loads(done.stdout) == []


def test_metadata_declares_guidance_errors_and_config() -> None:
    meta = CalendarTool.metadata
    assert meta.category == "research"
    assert meta.optionality == "optional"
    assert meta.requires_capabilities == ("calendar",)
    assert meta.guidelines.do
    assert meta.guidelines.do_not
    assert meta.guidelines.common_mistakes
    assert meta.parameters["properties"]["action"]["enum"] == ["list_events"]
    assert {"ValidationError", "NotFoundError", "ParseError", "PermissionError"} <= {
        e.type for e in meta.errors
    }
    assert {f.name for f in meta.config_fields} == {
        "sources",
        "timezone",
        "description_chars",
        "max_bytes",
    }


def test_example_output_matches_the_returns_schema() -> None:
    from jsonschema import Draft202012Validator

    meta = CalendarTool.metadata
    assert meta.returns is not None
    validator = Draft202012Validator(meta.returns)
    outputs = [e.output for e in meta.examples if e.output is not None]
    assert outputs
    for output in outputs:
        validator.validate(output)


def test_passes_the_contract_kit(tmp_path: Path) -> None:
    from toolplug.testing import check_plugin

    source = Path(__file__).parent / "data" / "team.ics"
    check_plugin(
        "toolplug-calendar",
        config={"tools": {"calendar": {"sources": [{"name": "team", "path": str(source)}]}}},
    )


def test_list_events_is_read_only() -> None:
    # its one action reads the configured source: the declared annotations hold for every
    # call (no per-call refinement), so no call waits for approval
    arguments = {"action": "list_events", "time_min": "2025-03-01T00:00:00Z"}
    hints = CalendarTool.annotations_for(arguments)
    assert hints == CalendarTool.metadata.annotations
    assert (hints.read_only, hints.destructive) == (True, False)
    registry = toolplug.load(config={}, env={"TOOLPLUG_PLUGINS": "toolplug-calendar"})
    try:
        assert registry.needs_approval("calendar", arguments) is None
    finally:
        registry.close()
