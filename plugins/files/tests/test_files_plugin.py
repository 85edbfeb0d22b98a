"""The files plugin's wiring: discovery, availability, shared defaults, cheap imports."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug import Annotations, ToolResult
from toolplug_files import ReadFileTool, WriteFileTool

Call = Callable[[toolplug.Registry, str, Mapping[str, Any]], ToolResult]


def test_entry_point_registers_both_tools() -> None:
    registry = toolplug.load(config={}, env={})
    for name, cls in (("read_file", ReadFileTool), ("write_file", WriteFileTool)):
        tool = registry.tools[name]
        assert tool.distribution == "toolplug-files"
        assert tool.cls is cls
    assert not [p for p in registry.problems if p.distribution == "toolplug-files"]


def test_both_tools_are_available_and_optional_without_configuration() -> None:
    registry = toolplug.load(config={}, env={})
    for name in ("read_file", "write_file"):
        assert registry.availability(name).available
    offered = [t.name for t in registry.select(optional_only=True, category="utility")]
    assert {"read_file", "write_file"} <= set(offered)


def test_disabled_in_config_is_unavailable() -> None:
    registry = toolplug.load(config={"tools": {"write_file": {"enabled": False}}}, env={})
    found = registry.availability("write_file")
    assert not found.available
    assert "disabled by config" in found.reasons
    assert registry.availability("read_file").available


def test_by_default_both_tools_share_their_roots(tmp_path: Path, call: Call) -> None:
    registry = toolplug.load(
        config={"cache_dir": str(tmp_path / "c"), "state_dir": str(tmp_path / "s")}, env={}
    )
    wrote = call(registry, "write_file", {"path": "notes/a.md", "content": "hello"})
    assert wrote.error is None
    kept = call(registry, "write_file", {"path": "file_state_dir/b.md", "content": "kept"})
    assert kept.error is None
    assert call(registry, "read_file", {"path": "file_cache_dir/notes/a.md"}).output == "hello"
    assert call(registry, "read_file", {"path": "file_state_dir/b.md"}).output == "kept"
    assert (tmp_path / "c" / "tools" / "files" / "notes" / "a.md").read_text() == "hello"
    assert (tmp_path / "s" / "tools" / "files" / "b.md").read_text() == "kept"


def test_both_tools_declare_the_shared_settings() -> None:
    shared = {"cache_dir", "state_dir", "deny_paths", "max_bytes"}
    read = {f.name: f for f in ReadFileTool.metadata.config_fields}
    write = {f.name: f for f in WriteFileTool.metadata.config_fields}
    assert set(read) == shared | {"read_roots"}
    assert set(write) == shared
    assert read["max_bytes"].default == 200_000
    assert write["max_bytes"].default == 1_000_000
    for name in ("cache_dir", "state_dir", "deny_paths"):
        assert read[name] == write[name]


def test_metadata_carries_guidance_and_annotations() -> None:
    for cls in (ReadFileTool, WriteFileTool):
        meta = cls.metadata
        assert meta.category == "utility"
        assert meta.optionality == "optional"
        assert meta.requires_capabilities == ()
        assert meta.guidelines.do
        assert meta.guidelines.do_not
        assert meta.guidelines.common_mistakes
        assert meta.annotations.open_world is False
        assert {"ValidationError", "PermissionError"} <= {e.type for e in meta.errors}
    assert ReadFileTool.metadata.annotations.read_only is True
    assert WriteFileTool.metadata.annotations.destructive is True


def test_entry_module_imports_only_toolplug_and_the_standard_library() -> None:
    import toolplug_files

    source = Path(toolplug_files.__file__).read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    foreign = imported - set(sys.stdlib_module_names) - {"toolplug", "toolplug_files"}
    assert foreign == set()


def test_a_hand_made_context_keeps_the_default_roots_inside_its_directories(
    tmp_path: Path,
) -> None:
    from toolplug import ToolContext

    context = ToolContext(
        tool="write_file", cache_dir=tmp_path / "cache", state_dir=tmp_path / "state"
    )
    result = WriteFileTool().run({"path": "a.md", "content": "x"}, context)
    assert isinstance(result, ToolResult)
    assert result.error is None
    assert (tmp_path / "cache" / "files" / "a.md").read_text(encoding="utf-8") == "x"


def test_passes_the_contract_kit() -> None:
    from toolplug.testing import check_plugin

    check_plugin("toolplug-files")


@pytest.mark.parametrize(
    ("arguments", "expected", "reason"),
    [
        # the default mode, overwrite: it replaces whatever file is at the path
        (
            {"path": "a.md", "content": "x"},
            Annotations(read_only=False, destructive=True, idempotent=True, open_world=False),
            "it may destroy or overwrite data (annotated destructive)",
        ),
        # counted as destructive from the arguments alone, even where no file is there yet
        (
            {"path": "new/never-written.md", "content": "x", "mode": "overwrite"},
            Annotations(read_only=False, destructive=True, idempotent=True, open_world=False),
            "it may destroy or overwrite data (annotated destructive)",
        ),
        # an append only adds, inside the sandbox: nobody need be asked
        (
            {"path": "log.md", "content": "x", "mode": "append"},
            Annotations(read_only=False, destructive=False, idempotent=False, open_world=False),
            None,
        ),
        # a mode the schema refuses: the declared annotations
        (
            {"path": "a.md", "content": "x", "mode": "truncate"},
            WriteFileTool.metadata.annotations,
            "it may destroy or overwrite data (annotated destructive)",
        ),
    ],
)
def test_write_file_annotations_follow_the_mode(
    arguments: dict[str, Any], expected: Annotations, reason: str | None
) -> None:
    assert WriteFileTool.annotations_for(arguments) == expected
    registry = toolplug.load(config={}, env={"TOOLPLUG_PLUGINS": "toolplug-files"})
    try:
        assert registry.needs_approval("write_file", arguments) == reason
    finally:
        registry.close()


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "file_state_dir/contacts.md"},  # a read changes nothing, wherever it reads
        {"path": "file_cache_dir/log.md", "offset": 20000, "max_chars": 10},
    ],
)
def test_read_file_is_read_only_for_every_call(arguments: dict[str, Any]) -> None:
    # one effect whatever the arguments: the declared annotations hold, no refinement
    assert ReadFileTool.annotations_for(arguments) == ReadFileTool.metadata.annotations
    assert ReadFileTool.metadata.annotations.read_only
    registry = toolplug.load(config={}, env={"TOOLPLUG_PLUGINS": "toolplug-files"})
    try:
        assert registry.needs_approval("read_file", arguments) is None
    finally:
        registry.close()


def test_an_append_runs_with_nobody_to_ask_and_an_overwrite_waits(tmp_path: Path) -> None:
    registry = toolplug.load(
        config={"tools": {"write_file": {"cache_dir": str(tmp_path), "state_dir": str(tmp_path)}}},
        env={"TOOLPLUG_PLUGINS": "toolplug-files"},
    )
    try:
        appended = registry.call(
            "write_file", {"path": "log.md", "content": "- one\n", "mode": "append"}
        )
        replaced = registry.call("write_file", {"path": "log.md", "content": "gone"})
    finally:
        registry.close()
    assert appended.ok, appended.error
    assert replaced.error is not None
    assert replaced.error.type == "ApprovalRequiredError"
    assert (tmp_path / "log.md").read_text() == "- one\n"
