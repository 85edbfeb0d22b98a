"""Trust labels on the command line: ``doctor`` names every unlabelled tool and the cautious
default it gets; ``info`` shows the labels in force and who set them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers.cli import Site

NOTES_MODULE = """
from typing import Any

from toolplug import Annotations, Tool, ToolMetadata, ToolResult, provides


class Notes(Tool):
    metadata = ToolMetadata(
        name="notes",
        description="Send a note.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {"to": {"type": "string"}, "text": {"type": "string"}},
        },
        annotations=Annotations(read_only=False, open_world=True),
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success("sent")


register_tools = provides(Notes)
"""


def _env(site: Site, **extra: str) -> dict[str, str]:
    site.add("toolplug-notes", entry_points={"notes": "toolplug_notes"},
             modules={"toolplug_notes": NOTES_MODULE})
    return site.env(
        TOOLPLUG_PLUGINS="toolplug-notes,toolplug-static-links", TOOLPLUG_NO_CACHE="1", **extra
    )


def test_doctor_names_an_unlabelled_tool_and_its_cautious_default(
    site: Site, cli: Callable[..., Any]
) -> None:
    doctor = cli("doctor", env=_env(site))
    assert doctor.code == 0, doctor.err
    part = doctor.out.split("Trust labels:\n", 1)[1].split("\n\n", 1)[0]
    assert part.splitlines() == [
        "  notes: unlabelled, so it gets the cautious default: untrusted output, private, "
        "sinks: text, to",
        "    to label it: its author declares trust=Trust(...) in its metadata; until then, "
        "set [tools.notes] trust = { output = ..., private = ..., sinks = [...] }",
    ]  # static_links declares its labels: not named


def test_a_trust_table_labels_the_tool_for_doctor_and_info(
    site: Site, cli: Callable[..., Any], tmp_path: Path
) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text(
        '[tools.notes]\ntrust = { output = "trusted", private = false, sinks = ["text"] }\n',
        encoding="utf-8",
    )
    env = _env(site, TOOLPLUG_CONFIG=str(config))
    doctor = cli("doctor", env=env)
    assert "Trust labels:\n  every tool is labelled ('toolplug info NAME' shows its labels)\n" in (
        doctor.out
    )
    info = cli("info", "notes", env=env)
    assert (
        "  trust         trusted output, not private, sinks: text "
        "(the configuration's trust table over the tool's own)\n"
    ) in info.out
    record = json.loads(cli("info", "notes", "--json", env=env).out)
    assert record["trust"] == {
        "output": "trusted", "private": False, "sinks": ["text"], "source": "configured",
    }


def test_info_shows_declared_and_default_labels(site: Site, cli: Callable[..., Any]) -> None:
    env = _env(site)
    links = cli("info", "static_links", env=env)
    assert "  trust         trusted output, not private, sinks: none (declared by the tool)\n" in (
        links.out
    )
    notes = json.loads(cli("info", "notes", "--json", env=env).out)
    assert notes["trust"] == {
        "output": "untrusted", "private": True, "sinks": ["text", "to"], "source": "default",
    }
    assert notes["metadata"]["trust"] is None  # what the tool itself declares


def test_info_shows_refs_only_when_a_tool_has_them(
    site: Site, cli: Callable[..., Any], tmp_path: Path
) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text(
        "[tools.notes]\n"
        'trust = { output = "trusted", private = false, sinks = ["to", "text"], refs = ["to"], '
        'destinations = ["to"] }\n',
        encoding="utf-8",
    )
    env = _env(site, TOOLPLUG_CONFIG=str(config))
    info = cli("info", "notes", env=env)
    assert (
        "  trust         trusted output, not private, sinks: to, text, refs: to, "
        "destinations: to (" in info.out
    )
    record = json.loads(cli("info", "notes", "--json", env=env).out)
    assert record["trust"] == {
        "output": "trusted", "private": False, "sinks": ["to", "text"], "refs": ["to"],
        "destinations": ["to"], "source": "configured",
    }
    # a tool without refs: the same record as before refs existed
    links = json.loads(cli("info", "static_links", "--json", env=env).out)
    assert list(links["trust"]) == ["output", "private", "sinks", "source"]
