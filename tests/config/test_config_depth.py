"""A configuration too deep to read is a ConfigError naming the file, never a bare
RecursionError (issue 26: ``internal error: RecursionError``, exit 1, no file named)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import toolplug
from tests.helpers.measured import measured
from toolplug import ConfigError

CASES = [
    # an array nested 3,000 deep
    "offline = " + "[" * 3000 + "]" * 3000 + "\n",
    # an inline table nested 400 deep
    "[tools.static_links]\nlinks = " + "{a = " * 400 + "1" + "}" * 400 + "\n",
]


@pytest.mark.parametrize("text", CASES, ids=["array", "inline-table"])
def test_a_deep_configuration_is_a_config_error_naming_the_file(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "toolplug.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        toolplug.load(path)
    assert caught.value.file == str(path)
    assert "nested too deeply" in str(caught.value)


def test_the_command_line_exits_2_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "toolplug.toml"
    path.write_text(CASES[0], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "toolplug", "--config", str(path), "list"],
        capture_output=True, text=True, check=False,
        env=measured({"TOOLPLUG_NO_CACHE": "1", "PATH": ""}),
    )
    assert done.returncode == 2, done.stderr
    assert str(path) in done.stderr
    assert "RecursionError" not in done.stderr
