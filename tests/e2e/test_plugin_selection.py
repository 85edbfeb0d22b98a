"""The suite tests the catalog, whatever else is installed beside it.

The root conftest.py selects the catalog's distributions with ``TOOLPLUG_PLUGINS`` when the
variable is not set. Here one more plugin is installed (a distribution on ``PYTHONPATH``, as
``pip install -e`` of a ``toolplug new`` package makes one), and a fresh pytest runs tests
that count or show the catalog: README.md's doc tests, whose ``toolplug list --all`` would
gain a row, and the fuzz test that counts the catalog's tools.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.cli import Run, Site

ROOT = Path(__file__).resolve().parents[2]

EXTRA = """
from typing import Any

from toolplug import Tool, ToolMetadata, ToolResult, hookimpl


class CountWords(Tool):
    metadata = ToolMetadata(
        name="extra_word_count",
        description="Count the words of a text.",
        category="utility",
        usage_hint="Use to count words.",
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success("0")


@hookimpl
def register_tools(register: Any) -> None:
    register(CountWords)
"""

CATALOG_TESTS = ("README.md", "tests/e2e/test_fuzz_calls.py::test_every_catalog_tool_is_fuzzed")


def pytest_run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # The outer run's options (CI's coverage and its floor) are not this run's: a few tests
    # cannot reach the floor, and coverage is the outer run's to measure.
    env = {k: v for k, v in env.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CATALOG_TESTS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_an_extra_installed_plugin_changes_nothing_the_suite_checks(
    site: Site, cli: Callable[..., Run]
) -> None:
    modules = {"extra_words": EXTRA}
    site.add("toolplug-extra-words", entry_points={"words": "extra_words"}, modules=modules)
    env = site.env()  # no TOOLPLUG_PLUGINS: the root conftest.py chooses
    assert "TOOLPLUG_PLUGINS" not in env
    listed = cli("list", env=env)
    assert "extra_word_count" in listed.out, listed  # installed, and found by discovery

    pinned = pytest_run(env)
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr

    # The same run told to load the extra plugin too: this is what the pin keeps out.
    selection = f"{os.environ['TOOLPLUG_PLUGINS']},toolplug-extra-words"
    unpinned = pytest_run({**env, "TOOLPLUG_PLUGINS": selection})
    assert unpinned.returncode == 1, unpinned.stdout
    assert "extra_word_count" in unpinned.stdout  # README's listing gained a row
    assert "assert 14 == 13" in unpinned.stdout  # and the catalog a tool

