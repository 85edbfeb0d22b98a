"""Fixtures for the files plugin: sandbox roots in tmp_path, loading, and calling.

Helpers are fixtures (not importable functions) because the suite runs with
``--import-mode=importlib``, where test modules cannot import ``conftest``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug import ToolResult


@pytest.fixture
def roots(tmp_path: Path) -> dict[str, Path]:
    """Empty ``cache`` and ``state`` roots, and an ``outside`` directory with ``secret.txt``."""
    found = {name: tmp_path / name for name in ("cache", "state", "outside")}
    for directory in found.values():
        directory.mkdir()
    (found["outside"] / "secret.txt").write_text("top secret\n", encoding="utf-8")
    return found


def _registry(
    roots: dict[str, Path], read: Mapping[str, Any], write: Mapping[str, Any]
) -> toolplug.Registry:
    shared = {"cache_dir": str(roots["cache"]), "state_dir": str(roots["state"])}
    return toolplug.load(
        config={"tools": {"read_file": {**shared, **read}, "write_file": {**shared, **write}}},
        env={},
        # write_file needs approval (destructive): these tests are about the sandbox, so
        # the host approves; tests/test_approvals.py tests the gate.
        approver=lambda request: True,
    )


@pytest.fixture
def load(roots: dict[str, Path]) -> Callable[..., toolplug.Registry]:
    """``load(read={...}, write={...}, **both)``: both tools rooted in ``roots``.

    Keyword settings apply to both tools; ``read`` and ``write`` add per-tool ones.
    """

    def build(
        read: Mapping[str, Any] | None = None,
        write: Mapping[str, Any] | None = None,
        **both: Any,
    ) -> toolplug.Registry:
        return _registry(roots, {**both, **(read or {})}, {**both, **(write or {})})

    return build


def _call(registry: toolplug.Registry, name: str, arguments: Mapping[str, Any]) -> ToolResult:
    return registry.call(name, dict(arguments), approver=lambda request: True)


@pytest.fixture
def call() -> Callable[[toolplug.Registry, str, Mapping[str, Any]], ToolResult]:
    """``call(registry, tool, arguments)``: through ``registry.call``, as a model's call goes."""
    return _call


@pytest.fixture
def use(
    load: Callable[..., toolplug.Registry],
) -> Callable[..., ToolResult]:
    """``use(tool, arguments, **settings)``: load with ``settings`` (as ``load``) and call once."""

    def run(tool: str, arguments: Mapping[str, Any], **settings: Any) -> ToolResult:
        return load(**settings).call(tool, dict(arguments))

    return run
