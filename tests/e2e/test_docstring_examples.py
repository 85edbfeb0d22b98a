"""The examples in the core's docstrings run, as the docs' examples do (pydantic-ai's
``tests/test_examples.py`` habit): an example that no longer works fails here."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from types import ModuleType

import pytest

import toolplug

DEPRECATED = {"toolplug.openapi"}
"""Old homes kept for one minor release; importing one warns (tests/sources/openapi)."""


def _modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(toolplug.__path__, prefix="toolplug.")
        if not info.name.endswith("__main__") and info.name not in DEPRECATED
    )


def _examples(module: ModuleType) -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [t for t in finder.find(module, module.__name__) if t.examples]


MODULES = [name for name in _modules() if _examples(importlib.import_module(name))]


def test_the_core_has_docstring_examples() -> None:
    assert len(MODULES) >= 4


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in _examples(module):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
