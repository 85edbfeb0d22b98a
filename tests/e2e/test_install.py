"""docs/install.md's way of using toolplug from a clone: build every wheel, then install the
core with an extra and a plugin from that folder into a fresh virtual environment."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.helpers.venv import clean_env, run, uv_command

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "install.md"


def _commands() -> list[list[str]]:
    """The commands of the page's ``sh`` blocks, in order."""
    blocks = re.findall(r"```sh\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [shlex.split(line) for block in blocks for line in block.splitlines() if line.strip()]


def test_the_page_builds_then_installs_with_find_links() -> None:
    build, install = _commands()
    assert build[:3] == ["uv", "build", "--all-packages"]
    assert install[:2] == ["pip", "install"]
    assert "--find-links" in install


@pytest.mark.slow
def test_installing_from_a_clone_as_the_page_says(tmp_path: Path) -> None:
    uv = uv_command("tests/e2e/test_install.py")
    env = clean_env(tmp_path)
    build, install = _commands()
    out = build.index("--out-dir") + 1
    build[out] = str(tmp_path / "wheels")
    run([*uv, *build[1:], "--quiet"], cwd=ROOT, env=env)
    venv = tmp_path / "venv"
    run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=tmp_path, env=env)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    links = install.index("--find-links") + 1
    install[links] = str(tmp_path / "wheels")
    # The page's pip line, through uv and its cache (as tests/e2e/test_catalog.py installs).
    run([*uv, "pip", *install[1:], "--quiet", "--python", str(python)], cwd=tmp_path, env=env)
    env["TOOLPLUG_PLUGINS"] = "toolplug-files"
    listing = run([str(python), "-m", "toolplug", "list"], cwd=tmp_path, env=env)
    assert {line.split()[0] for line in listing.splitlines()[1:]} == {"read_file", "write_file"}
    run([str(python), "-c", "import toolplug.integrations.pydantic_ai"], cwd=tmp_path, env=env)


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
"""The pages a newcomer installs from; docs/tools/ is generated and says only the name."""


def _installs_toolplug(page: Path) -> bool:
    """Whether a fenced block of ``page`` runs ``pip install`` of toolplug or its plugins."""
    blocks = re.findall(r"```\w*\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return any(
        re.match(r"\$?\s*(uv )?pip install .*toolplug", line.strip())
        for block in blocks
        for line in block.splitlines()
    )


@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if p != PAGE and "tools" not in p.relative_to(ROOT).parts and
     _installs_toolplug(p)],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_a_page_that_installs_toolplug_links_the_way_from_a_clone(page: Path) -> None:
    """Until a release is on an index, ``pip install toolplug...`` alone fails: a page that
    shows it points to docs/install.md's --find-links."""
    assert "install.md" in page.read_text(encoding="utf-8")
