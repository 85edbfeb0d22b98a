"""The habits of the repository hold: what the fast hooks, CONTRIBUTING.md and the file-size
baseline say matches what ``.ci/run`` and the tree do."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _ci_runs(command: str) -> bool:
    """Whether .ci/run runs ``uv run ...`` (through its own uv) with these words."""
    words = command.removeprefix("uv run ").strip()
    return any(
        f'"${{uv[@]}}" run {words}' in line and not line.lstrip().startswith("#")
        for line in CI.splitlines()
    )


def test_every_pre_commit_hook_is_a_check_of_ci() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    entries = [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]
    assert entries
    assert [e for e in entries if not _ci_runs(e)] == []


def test_every_check_contributing_names_is_run_by_ci() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    table = text.split("## The checks", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^\| [^|]+ \| `([^`]+)` \|", table, flags=re.MULTILINE)
    assert len(commands) >= 6
    missing = [c for c in commands if not _ci_runs(c)]
    assert missing == []


def test_the_size_baseline_only_names_files_over_the_ceiling_at_their_size() -> None:
    """A baseline entry is a file over the default at exactly its size: a split that shrank a
    file tightens its entry (``uv run loq tighten``), so the ceiling never grows back."""
    config = tomllib.loads((ROOT / "loq.toml").read_text(encoding="utf-8"))
    ceiling = config["default_max_lines"]
    for rule in config.get("rules", []):
        path = ROOT / rule["path"]
        assert path.is_file(), f"loq.toml names {rule['path']}, which does not exist"
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines > ceiling, f"{rule['path']} is under {ceiling} lines: drop its rule"
        assert rule["max_lines"] == lines, f"{rule['path']}: run `uv run loq tighten`"


def test_the_changelog_has_an_unreleased_section() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "\n## Unreleased\n" in text


# split, so this file's own line is no exception; C901 may be listed with PLR09xx
_EXCEPTION = "noqa: " + r"(?:(?:C901|PLR09\d\d),?\s*)++"


def test_the_complexity_ceiling_is_on_and_each_exception_gives_its_reason() -> None:
    """McCabe 15 (pydantic-ai's habit): a function past it says why on its ``def`` line."""
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]
    assert "C90" in lint["lint"]["select"]
    assert lint["lint"]["mccabe"]["max-complexity"] == 15
    bare = [
        f"{path.relative_to(ROOT)}:{number}"
        for top in ("core", "plugins", "tests", "bench")
        for path in (ROOT / top).rglob("*.py")
        if ".venv" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(_EXCEPTION + r"(?!\s*-\s*\w)", line)
    ]
    assert bare == [], "write `# noqa: C901 - reason` (or `C901, PLR0912 - reason`)"


def test_ci_measures_coverage_against_a_floor() -> None:
    report = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert report["tool"]["coverage"]["report"]["fail_under"] >= 70
    assert 'PYTEST_ADDOPTS="--cov' in CI
