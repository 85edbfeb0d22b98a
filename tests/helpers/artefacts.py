"""What a failed test leaves for a person to look at: a browser test's screenshot of the
page as it was when the test failed, say, kept under ``.artifacts/`` at the repository's
root (git-ignored), the file named in the failure's report.

A fixture says what to keep with ``keep_on_failure``; tests/conftest.py's
``pytest_runtest_makereport`` calls ``kept`` when the test's own body failed (not its
setup or teardown), before the fixtures are torn down, so the page is still open, and adds
what it kept to the report as a section of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = ROOT / ".artifacts"
_KEEPERS = pytest.StashKey[list[Callable[[], str]]]()


def artefact(node: pytest.Item, kind: str, suffix: str) -> Path:
    """Where ``node``'s artefact of ``kind`` goes: ``.artifacts/KIND/NODE-ID.SUFFIX``."""
    name = re.sub(r"[^\w.-]+", "-", node.nodeid).strip("-")
    folder = ARTEFACTS / kind
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}{suffix}"


def keep_on_failure(node: pytest.Item, keeper: Callable[[], str]) -> None:
    """Have ``keeper`` called if ``node``'s test fails; it keeps its artefact and says
    where, in a line the failure's report shows."""
    node.stash.setdefault(_KEEPERS, []).append(keeper)


def kept(node: pytest.Item) -> list[str]:
    """Call ``node``'s keepers: what each kept, or why it could not."""
    said = []
    for keeper in node.stash.get(_KEEPERS, []):
        try:
            said.append(keeper())
        except Exception as exc:  # a page that crashed: the failure itself still counts
            said.append(f"nothing kept: {type(exc).__name__}: {exc}")
    return said
