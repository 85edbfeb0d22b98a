"""One strict base model: every table of ``toolplug.toml`` toolplug checks itself stands on
``StrictTable`` (contract/_settings.py), and no other module writes that configuration again
(there were three copies named ``_Table`` and four more written out by hand)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

from pydantic import BaseModel

import toolplug
from toolplug.contract._settings import StrictTable

CORE = Path(__file__).resolve().parents[2] / "core" / "src" / "toolplug"
HOME = "contract/_settings.py"


def _writes_strict_config(path: Path) -> bool:
    """Whether ``path`` calls ``ConfigDict(..., strict=True, ...)``."""
    return any(
        isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "ConfigDict"
        and any(k.arg == "strict" for k in node.keywords)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
    )


def test_only_the_base_writes_the_strict_configuration() -> None:
    writers = sorted(
        path.relative_to(CORE).as_posix()
        for path in CORE.rglob("*.py")
        if _writes_strict_config(path)
    )
    assert writers == [HOME], "subclass StrictTable instead of writing its model_config"


def test_every_strict_model_of_the_core_is_a_strict_table() -> None:
    strict = {
        model
        for info in pkgutil.walk_packages(toolplug.__path__, prefix="toolplug.")
        if info.name != "toolplug.openapi"  # deprecated: importing it warns
        for model in vars(importlib.import_module(info.name)).values()
        if isinstance(model, type) and issubclass(model, BaseModel)
        and model.model_config.get("strict")
    }
    assert strict, "the walk found no model"
    assert {m.__qualname__ for m in strict if not issubclass(m, StrictTable)} == set()


def test_the_base_forbids_unknown_keys_and_infinities() -> None:
    assert StrictTable.model_config["extra"] == "forbid"
    assert StrictTable.model_config["allow_inf_nan"] is False
