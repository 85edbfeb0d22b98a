"""The catalog as a whole: every ADR category has a tool, and each new distribution stands
on its own (built as a wheel, installed beside the core alone, it lists only its tools)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import Run
from tests.helpers.venv import clean_env, run, uv_command

WORKSPACE = Path(__file__).resolve().parents[2]
CORE = WORKSPACE / "core"


def test_every_adr_category_has_a_tool(cli: Any) -> None:
    listed: Run = cli("list", "--all", "--json")
    assert listed.code == 0, listed.err
    categories = {tool["category"] for tool in json.loads(listed.out)}
    assert {"research", "reference", "enhance", "publish", "utility"} <= categories


@pytest.mark.slow
@pytest.mark.parametrize(
    ("plugin", "distribution", "tools"),
    [
        ("citations", "toolplug-citations", ["citations"]),
        ("readability", "toolplug-readability", ["readability"]),
        ("mastodon", "toolplug-mastodon", ["mastodon"]),
    ],
)
def test_the_distribution_builds_and_installs_alone(
    tmp_path: Path, plugin: str, distribution: str, tools: list[str]
) -> None:
    uv = uv_command("tests/e2e/test_catalog.py")
    env = clean_env(tmp_path)
    dist = tmp_path / "dist"
    run(
        [
            *uv,
            "build",
            "--wheel",
            "--quiet",
            "--out-dir",
            str(dist),
            str(WORKSPACE / "plugins" / plugin),
        ],
        cwd=tmp_path,
        env=env,
    )
    [wheel] = dist.glob("*.whl")
    assert wheel.name.startswith(distribution.replace("-", "_") + "-0.1.0-")
    venv = tmp_path / "venv"
    run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=tmp_path, env=env)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run(
        [
            *uv,
            "pip",
            "install",
            "--quiet",
            "--refresh-package",
            "toolplug",
            "--python",
            str(python),
            str(CORE),
            str(wheel),
        ],
        cwd=tmp_path,
        env=env,
    )
    listed = json.loads(
        run([str(python), "-m", "toolplug", "list", "--all", "--json"], cwd=tmp_path, env=env)
    )
    assert sorted(tool["name"] for tool in listed) == tools
    assert {tool["distribution"] for tool in listed} == {distribution}
    doctor = run([str(python), "-m", "toolplug", "doctor"], cwd=tmp_path, env=env)
    assert f"{distribution} 0.1.0 ({plugin} = toolplug_{plugin}): loaded" in doctor
