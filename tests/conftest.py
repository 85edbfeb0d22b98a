"""Shared fixtures: isolated configuration, fake installed distributions, CLI runners.

What test modules import (classes, functions, strategies) lives in ``tests/helpers/``: a test
module never imports another test module or this file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from pathlib import Path

import pytest

from tests.helpers.artefacts import kept
from tests.helpers.cli import Run, Site, run_cli


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in an empty working directory with no toolplug configuration.

    ``TOOLPLUG_PLUGINS`` stays: the root conftest.py selects the catalog with it, so that the
    plugins under test are the same whatever else is installed.
    """
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name in list(os.environ):
        if name == "TOOLPLUG_PLUGINS":
            continue
        if name.startswith("TOOLPLUG_") or name == "GITHUB_TOKEN":
            monkeypatch.delenv(name)
    monkeypatch.setenv("TOOLPLUG_CACHE_DIR", str(tmp_path / "metadata-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    # never the user's own keyring ([oauth] store = "auto"): keyring's fail backend, which
    # "auto" passes by; a test that wants a real one sets it (tests/state/test_tokens_keyring.py)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """An empty site directory for hand-made distributions."""
    path = tmp_path / "site"
    path.mkdir()
    return Site(path)


@pytest.fixture
def cli() -> Callable[..., Run]:
    """``cli("list", "--json", env=...)``: the command line in a fresh interpreter."""
    return run_cli


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A test whose body failed keeps what its fixtures asked to keep (a screenshot of the
    browser's page, tests/helpers/artefacts.py), and its report says where."""
    report = yield
    if report.when == "call" and report.failed:
        said = kept(item)
        if said:
            report.sections.append(("artefacts kept", "\n".join(said)))
    return report
