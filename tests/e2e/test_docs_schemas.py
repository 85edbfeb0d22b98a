"""Every Python example in docs/schemas.md runs, as written, against the installed catalog.

The tool search examples stand in for the provider's response with the items its API
returns, so they run without a network or a key; everything else is the real code path.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schemas.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def examples() -> list[str]:
    return BLOCK.findall(DOCS.read_text(encoding="utf-8"))


def test_the_three_tool_search_modes_have_an_example() -> None:
    code = "\n".join(examples())
    for needle in ('"anthropic", task=', '"openai-responses", task=', "toolplug.ToolSearch("):
        assert needle in code


@pytest.mark.parametrize("code", examples(), ids=lambda code: code.splitlines()[-1][:40])
def test_example_runs(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, str(DOCS), "exec"), {"__name__": "docs_example"})
    capsys.readouterr()
