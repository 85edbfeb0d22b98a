"""Where the docs skip an example because a test runs it instead."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_SKIP = re.compile(r"<!--\s*skip:\s*(next|start)\s+\"(?P<reason>[^\"]*)\"\s*-->")


def _pages() -> list[Path]:
    """The pages the doc tests cover (the root conftest.py's ``is_doc``)."""
    pages = [ROOT / "README.md", ROOT / "core" / "README.md", *ROOT.glob("plugins/*/README.md")]
    for folder in ("docs", "guidelines"):
        pages.extend((ROOT / folder).rglob("*.md"))
    return sorted(page for page in pages if page.is_file())


def examples_run_by(test_file: str) -> list[str]:
    """``["docs/configuration.md:205"]``: the blocks whose skip reason names ``test_file``
    (``tests/state/test_store.py``) as the test that runs them, at their fence's line."""
    found = []
    for page in _pages():
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            match = _SKIP.search(line)
            if match is None or test_file not in match["reason"]:
                continue
            fence = next(
                (n for n, text in enumerate(lines[number:], number + 1) if text.startswith("```")),
                number,
            )
            found.append(f"{page.relative_to(ROOT).as_posix()}:{fence}")
    return found


def skip_reason(why: str, test_file: str) -> str:
    """``why``, and the examples of the docs that go unrun with the test ``test_file``."""
    where = examples_run_by(test_file)
    if not where:
        return why
    return f"{why}: nothing runs the example at {', '.join(where)} (the docs leave it to this test)"


def line_of(path: str, text: str) -> str:
    """``pyproject.toml:58``: the first line of the repository's file ``path`` holding ``text``."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    number = next((n for n, line in enumerate(lines, 1) if text in line), 1)
    return f"{path}:{number}"
