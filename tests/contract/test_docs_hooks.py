"""Every hook is documented in docs/hooks.md with its exact signature and an example."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from toolplug.contract import _hooks

DOCS = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"


def hookspecs() -> list[str]:
    return sorted(
        name for name, func in vars(_hooks).items()
        if inspect.isfunction(func) and hasattr(func, "toolplug_spec")
    )


def test_there_are_hooks() -> None:
    assert hookspecs() == [
        "approve_call", "embed_texts", "register_capabilities", "register_prompts",
        "register_resources", "register_tools", "tool_call",
    ]


@pytest.mark.parametrize("name", hookspecs())
def test_hook_is_documented_with_signature_and_example(name: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)
    section = next((s for s in sections if s.startswith(name + "\n")), None)
    assert section is not None, f"docs/hooks.md has no '## {name}' section"
    func = getattr(_hooks, name)
    signature = inspect.signature(func)
    params = ", ".join(f"{p.name}: {p.annotation}" for p in signature.parameters.values())
    documented = f"def {name}({params}) -> {signature.return_annotation}"
    assert documented in section, f"signature of {name} is not documented as:\n{documented}"
    assert "@hookimpl" in section, f"no example for {name}"
