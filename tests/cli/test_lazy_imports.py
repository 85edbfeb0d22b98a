"""Listing, prompting, explaining and exporting import no tool's heavy dependencies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = [
    "httpx", "httpcore", "feedparser", "ddgs", "icalendar", "recurring_ical_events", "mcp",
    # the frameworks of toolplug.integrations
    "pydantic_ai", "agents",
    # the status line, drawn only on a terminal when something is slow (tests/cli/test_progress.py)
    "rich",
]

SCRIPT = """
import json, sys
from toolplug.cli import main
code = main(sys.argv[1:])
print("\\n@@MODULES@@" + json.dumps(sorted(sys.modules)))
raise SystemExit(code)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--all"],
        ["list", "--json"],
        ["prompt"],
        ["info", "web_search"],
        ["doctor"],
        ["plugins"],
        ["schema", "--format", "openai", "--all"],
    ],
)
def test_no_heavy_imports(args: list[str], tmp_path: Path) -> None:
    Path("toolplug.toml").write_text(
        '[tools.static_links]\nlinks = [{ name = "gh", url = "https://github.com/x" }]\n'
        '[tools.calendar]\nsources = [{ name = "team", url = "https://example.org/a.ics" }]\n',
        encoding="utf-8",
    )
    env = {**os.environ, "TOOLPLUG_NO_CACHE": "1", "GITHUB_TOKEN": "ghp_x_for_listing"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *args],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.split("@@MODULES@@")[1])
    loaded = sorted({m.split(".")[0] for m in modules} & set(HEAVY))
    assert loaded == [], f"toolplug {' '.join(args)} imported {loaded}"
