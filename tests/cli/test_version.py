"""``toolplug --version`` and ``-V``: the installed version, exit 0, in a fresh interpreter."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from tests.helpers.cli import run_cli
from toolplug.cli import main


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_flag_prints_the_installed_version(flag: str) -> None:
    done = run_cli(flag)
    assert done.code == 0, done.err
    assert done.out.startswith(f"toolplug {version('toolplug')} (Python ")
    assert done.err == ""


def test_version_returns_through_main_without_system_exit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a host that calls main() gets the exit code back, as with every other command
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("toolplug ")


def test_version_belongs_to_the_program_not_to_a_command() -> None:
    done = run_cli("list", "--version")
    assert done.code == 2
    assert "unrecognized arguments: --version" in done.err
