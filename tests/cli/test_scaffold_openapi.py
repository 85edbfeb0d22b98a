"""``toolplug new NAME --from-openapi SPEC``: a plugin package of curated operations whose
tools pass the contract kit and call the real API (FastAPI on 127.0.0.1)."""

from __future__ import annotations

import importlib.util
import json
import sys
import tomllib
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import toolplug
from tests.helpers.openapi import fastapi_server
from toolplug import UsageError
from toolplug.cli._scaffold_openapi import new_openapi_plugin
from toolplug.testing import check_tool


def _module(package: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    init = package / "src" / "toolplug_notes" / "__init__.py"
    spec = importlib.util.spec_from_file_location("toolplug_notes", init)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "toolplug_notes", module)
    spec.loader.exec_module(module)
    return module


def test_the_package_offers_the_curated_operations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    with fastapi_server(tmp_path) as url:
        with urllib.request.urlopen(f"{url}/openapi.json") as answer:
            (tmp_path / "notes.json").write_bytes(answer.read())
        made = cli(
            "new", "notes", "--from-openapi", str(tmp_path / "notes.json"), "--dir",
            str(tmp_path / "out"), "--include", "tag:notes", "--exclude", "deleteNote",
            "--auth", "bearer",
        )
        assert made.code == 0, made.err
        assert "3 tool(s)" in made.out
        package = tmp_path / "out" / "toolplug-notes"
        project = tomllib.loads((package / "pyproject.toml").read_text())
        assert project["project"]["entry-points"]["toolplug"] == {"notes": "toolplug_notes"}
        document = json.loads((package / "src/toolplug_notes/operations.json").read_text())
        assert sorted(op["tool"] for op in document["operations"]) == [
            "notes_create_note", "notes_get_note", "notes_list_notes"
        ]
        assert "notes_list_notes" in (package / "README.md").read_text()
        module = _module(package, monkeypatch)
        env = {"NOTES_BASE_URL": url, "NOTES_TOKEN": "t0ken"}
        registry = toolplug.load(
            {"network": {"allow": ["127.0.0.1"]}}, env=env, plugins=[("notes", module)]
        )
        assert registry.get("notes_get_note").metadata.errors  # declared, as the kit asks
        for name in ("notes_create_note", "notes_get_note", "notes_list_notes"):
            check_tool(registry.get(name).cls, run_examples=False)
        got = registry.call("notes_get_note", {"note_id": 3})
        assert got.ok, got.error
        assert got.data["id"] == 3
        assert "not read-only" in (registry.needs_approval("notes_create_note") or "")
        # without the token the tools say how to set it
        unset = toolplug.load({}, env={"NOTES_BASE_URL": url}, plugins=[("notes", module)])
        assert not unset.availability("notes_get_note").available
        assert any("NOTES_TOKEN" in s for s in unset.availability("notes_get_note").setup)


def test_a_selection_that_keeps_nothing_is_a_usage_error(tmp_path: Path) -> None:
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps({
        "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"get": {"operationId": "a", "responses": {"200": {"description": "ok"}}}}},
    }))
    with pytest.raises(UsageError, match=r"no operation of .* matches --include"):
        new_openapi_plugin("tiny", str(spec), tmp_path, include=["tag:none"])
    assert not (tmp_path / "toolplug-tiny").exists()
