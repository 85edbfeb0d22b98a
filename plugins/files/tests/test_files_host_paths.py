"""What the model reads names the roots by their aliases only: the host's absolute paths
(the working directory, the home directory, the roots as resolved) go to the operator's
log, the ``toolplug.files`` logger, and never into a result's output, data or error."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug import ToolResult

Load = Callable[..., toolplug.Registry]
Call = Callable[[toolplug.Registry, str, Mapping[str, Any]], ToolResult]
Roots = dict[str, Path]


def read_by_the_model(result: ToolResult) -> str:
    """Everything of a result that reaches the model (and so its provider)."""
    return json.dumps(
        {"output": result.output, "data": result.data, "error": result.to_dict(),
         "warnings": list(result.warnings)},
        default=str,
    )


def assert_no_host_path(result: ToolResult, *places: Path) -> None:
    text = read_by_the_model(result)
    for place in places:
        for spelling in {str(place), str(place.resolve())}:
            assert spelling not in text, f"{spelling} reached the model: {text}"


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="toolplug.files")
    return caplog


def test_a_write_names_its_file_by_alias_and_logs_where_it_is(
    load: Load, call: Call, roots: Roots, tmp_path: Path, logged: pytest.LogCaptureFixture
) -> None:
    result = call(load(), "write_file", {"path": "todo.md", "content": "- milk\n"})
    assert result.ok, result.error
    assert result.data == {
        "path": "file_cache_dir/todo.md",
        "mode": "overwrite",
        "bytes_written": 7,
        "size_bytes": 7,
        "created": True,
    }
    assert_no_host_path(result, tmp_path)
    assert str((roots["cache"] / "todo.md").resolve()) in logged.text  # the operator's


def test_a_read_names_its_file_by_alias_and_logs_where_it_is(
    load: Load, call: Call, roots: Roots, tmp_path: Path, logged: pytest.LogCaptureFixture
) -> None:
    (roots["state"] / "contacts.md").write_text("Ada\n", encoding="utf-8")
    result = call(load(), "read_file", {"path": str(roots["state"] / "contacts.md")})
    assert result.ok, result.error
    assert result.data is not None
    assert result.data["path"] == "file_state_dir/contacts.md"
    assert_no_host_path(result, tmp_path)
    assert str((roots["state"] / "contacts.md").resolve()) in logged.text


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
def test_a_refusal_lists_the_roots_by_alias(
    load: Load, call: Call, roots: Roots, logged: pytest.LogCaptureFixture, tool: str
) -> None:
    tmp_path = roots["cache"].parent
    library = tmp_path / "library"
    library.mkdir()
    arguments = {"path": "/etc/passwd", "content": "x"} if tool == "write_file" else {
        "path": "/etc/passwd"
    }
    result = call(load(read={"read_roots": [str(library)]}), tool, arguments)
    assert result.error is not None
    assert result.error.type == "PermissionError"
    roots_named = "file_cache_dir, file_state_dir"
    if tool == "read_file":
        roots_named += ", 1 read root"
    assert f"'/etc/passwd' is outside the sandbox roots ({roots_named})" in result.error.message
    assert_no_host_path(result, tmp_path)
    assert f"file_cache_dir ({roots['cache']})" in logged.text  # the operator's log has them


def test_a_symlink_out_names_neither_its_target_nor_the_root(
    load: Load, call: Call, roots: Roots, tmp_path: Path, logged: pytest.LogCaptureFixture
) -> None:
    (roots["cache"] / "shared").symlink_to(roots["outside"], target_is_directory=True)
    result = call(load(), "read_file", {"path": "shared/secret.txt"})
    assert result.error is not None
    assert result.error.message == (
        "file_cache_dir/shared/secret.txt is refused: a symlink inside the root points "
        "outside it (file_cache_dir/shared -> outside the sandbox)"
    )
    assert_no_host_path(result, tmp_path)
    assert str(roots["outside"].resolve()) in logged.text


def test_an_absolute_deny_entry_is_not_quoted(
    load: Load, call: Call, roots: Roots, tmp_path: Path
) -> None:
    (roots["state"] / "secrets").mkdir()
    (roots["state"] / "secrets" / "key.txt").write_text("k", encoding="utf-8")
    registry = load(deny_paths=[str(roots["state"] / "secrets")])
    result = call(registry, "read_file", {"path": "file_state_dir/secrets/key.txt"})
    assert result.error is not None
    assert result.error.message == (
        "file_state_dir/secrets/key.txt is refused: it matches deny_paths entry "
        "(an absolute path)"
    )
    assert_no_host_path(result, tmp_path)


def test_a_read_root_is_named_as_configured(
    load: Load, call: Call, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a read root configured under ~ is shown with ~, as the model addresses it: not the
    # home directory it resolves to
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "notes").mkdir(parents=True)
    (tmp_path / "home" / "notes" / "a.md").write_text("hi", encoding="utf-8")
    registry = load(read={"read_roots": ["~/notes"]})
    result = call(registry, "read_file", {"path": "~/notes/a.md"})
    assert result.ok, result.error
    assert result.data is not None
    assert result.data["path"] == "~/notes/a.md"
    assert_no_host_path(result, tmp_path)
