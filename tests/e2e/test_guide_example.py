"""The author's guide is proven: its example plugin is a real distribution that passes.

``examples/weather`` is the ``toolplug-weather`` distribution of guidelines/README.md (the doc
tests check that the guide's code blocks are its files). Here it is built into a wheel as the
guide says, installed into a fresh virtual environment beside this workspace's core, and its
own tests run there; ruff and strict mypy pass on it with the workspace's settings.
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers.venv import clean_env, run, uv_command

WORKSPACE = Path(__file__).resolve().parents[2]
EXAMPLE = WORKSPACE / "examples" / "weather"
CORE = WORKSPACE / "core"


def test_the_example_is_its_own_distribution_with_an_entry_point() -> None:
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text("utf-8"))
    assert project["project"]["name"] == "toolplug-weather"
    assert project["project"]["entry-points"]["toolplug"] == {"weather": "toolplug_weather"}
    members = tomllib.loads((WORKSPACE / "pyproject.toml").read_text("utf-8"))
    # not a workspace member: the tests install it the way a user does, from its wheel
    assert "examples/*" not in members["tool"]["uv"]["workspace"]["members"]
    source = (EXAMPLE / "src" / "toolplug_weather" / "__init__.py").read_text("utf-8")
    assert 'TOOLPLUG_CONTRACT = "1.0"' in source


@pytest.mark.slow
def test_the_example_builds_installs_and_passes_its_tests(tmp_path: Path) -> None:
    uv = uv_command("tests/e2e/test_guide_example.py")
    env = clean_env(tmp_path)
    source = tmp_path / "weather"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("__pycache__", "dist"))
    run(
        [*uv, "build", "--wheel", "--quiet", "--out-dir", str(tmp_path / "dist")],
        cwd=source,
        env=env,
    )
    wheels = sorted((tmp_path / "dist").glob("toolplug_weather-*.whl"))
    assert [w.name for w in wheels] == ["toolplug_weather-0.1.0-py3-none-any.whl"]
    venv = tmp_path / "venv"
    run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=tmp_path, env=env)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # The core from this clone, not from an index: how the guide tests against an unreleased
    # core. uv keys its cache of local builds on pyproject.toml alone; refresh so that edited
    # sources are built again.
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
            f"{CORE}[http,testing]",
            f"{wheels[0]}[test]",
        ],
        cwd=tmp_path,
        env=env,
    )
    shutil.rmtree(source / "src")  # the tests must import the installed wheel
    report = run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=source, env=env
    )
    assert "12 passed" in report, report
    doctor = run([str(python), "-m", "toolplug", "doctor", "--strict"], cwd=tmp_path, env=env)
    assert "toolplug-weather 0.1.0 (weather = toolplug_weather): loaded" in doctor


@pytest.mark.slow
def test_the_example_passes_ruff_and_strict_mypy(tmp_path: Path) -> None:
    config = str(WORKSPACE / "pyproject.toml")
    run([sys.executable, "-m", "ruff", "check", "--config", config, str(EXAMPLE)], cwd=WORKSPACE)
    run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "mypy"),
            str(EXAMPLE / "src"),
            str(EXAMPLE / "tests"),
        ],
        cwd=WORKSPACE,  # the workspace's mypy settings, with the example's src on mypy_path
    )


def test_the_guide_shows_the_prompt_section_the_example_renders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from toolplug.render._prompt import render_optional_tools

    init = EXAMPLE / "src" / "toolplug_weather" / "__init__.py"
    spec = importlib.util.spec_from_file_location("toolplug_weather", init)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "toolplug_weather", module)
    spec.loader.exec_module(module)
    rendered = render_optional_tools([module.WeatherForecastTool.metadata])
    guide = (WORKSPACE / "guidelines" / "README.md").read_text("utf-8")
    shown = guide.split("```markdown\n", 1)[1].split("\n```\n", 1)[0]
    assert shown.startswith("### weather_forecast\n")
    assert shown in rendered
