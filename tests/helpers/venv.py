"""Fresh virtual environments for the tests that build and install distributions with uv."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.docs import skip_reason
from tests.helpers.measured import unmeasured


def run(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command; its stdout, or a failed assertion that shows both of its outputs."""
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def uv_command(test_file: str) -> list[str]:
    """How to run uv here (the program on PATH, or the ``uv`` module).

    Without uv the test ``test_file`` (``tests/cli/test_scaffold.py``) is skipped, and the
    reason names the examples of the docs that it runs in their place.
    """
    found = shutil.which("uv")
    if found:
        return [found]
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    pytest.skip(
        skip_reason("uv is needed to build a plugin into a fresh virtual environment", test_file)
    )


def clean_env(tmp_path: Path) -> dict[str, str]:
    """This environment without the workspace's interpreter, pytest, coverage or toolplug
    settings: a fresh virtual environment has no coverage to measure itself with."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "CONDA_PREFIX")
    env = unmeasured({
        k: v
        for k, v in os.environ.items()
        if k not in drop and not k.startswith(("PYTEST_", "TOOLPLUG_", "COV_CORE_"))
    })
    env["TOOLPLUG_CACHE_DIR"] = str(tmp_path / "toolplug-cache")
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
