"""read_file and write_file against real directories: the sandbox, caps, modes, atomicity."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug import ToolResult
from toolplug_files import ReadFileTool, WriteFileTool

Load = Callable[..., toolplug.Registry]
Call = Callable[[toolplug.Registry, str, Mapping[str, Any]], ToolResult]
Roots = dict[str, Path]
Use = Callable[..., ToolResult]


def ok(result: ToolResult) -> dict[str, Any]:
    assert result.error is None, result.error
    assert isinstance(result.data, dict)
    return result.data


def refused(result: ToolResult, error_type: str, *fragments: str) -> str:
    assert result.error is not None, result.output
    assert result.error.type == error_type, result.error
    for fragment in fragments:
        assert fragment in result.error.message
    return result.error.message


def leftovers(directory: Path) -> list[str]:
    """Temporary files write_file may have left behind."""
    return sorted(p.name for p in directory.rglob("*.tmp"))


# --- reading --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("notes.md", "cache"),  # relative: under the cache root
        ("file_cache_dir/notes.md", "cache"),
        ("file_state_dir/notes.md", "state"),
        ("file_cache_dir//notes.md", "cache"),  # a doubled slash after the alias
        ("sub/../notes.md", "cache"),  # `..` that stays inside
    ],
)
def test_read_paths_that_stay_inside(
    load: Load, call: Call, roots: Roots, path: str, where: str
) -> None:
    (roots[where] / "notes.md").write_text("in " + where, encoding="utf-8")
    result = call(load(), "read_file", {"path": path})
    data = ok(result)
    assert result.output == "in " + where
    assert data["path"] == f"file_{where}_dir/notes.md"
    assert "absolute_path" not in data  # the host's paths are the operator's (the log)
    assert data["truncated"] is False
    assert data["binary"] is False


def test_read_an_absolute_path_inside_a_root(load: Load, call: Call, roots: Roots) -> None:
    (roots["state"] / "a.txt").write_text("abs", encoding="utf-8")
    result = call(load(), "read_file", {"path": str(roots["state"] / "a.txt")})
    assert ok(result)["path"] == "file_state_dir/a.txt"


def test_read_roots_are_readable_but_not_writable(
    load: Load, call: Call, roots: Roots, tmp_path: Path
) -> None:
    library = tmp_path / "library"
    library.mkdir()
    (library / "ref.md").write_text("reference", encoding="utf-8")
    registry = load(read={"read_roots": [str(library)]})
    result = call(registry, "read_file", {"path": str(library / "ref.md")})
    assert ok(result)["path"] == str(library / "ref.md")
    assert result.output == "reference"
    write = call(registry, "write_file", {"path": str(library / "ref.md"), "content": "x"})
    refused(write, "PermissionError", "outside the sandbox roots", "writes go only under")
    assert (library / "ref.md").read_text(encoding="utf-8") == "reference"


@pytest.mark.parametrize(
    ("setup", "path", "expected"),
    [
        (None, "missing.md", "there is no file at file_cache_dir/missing.md"),
        ("dir", "folder", "file_cache_dir/folder is a directory"),
        (None, "file_cache_dir/a.md/b.md", "there is no file"),  # a file used as a directory
        ("fifo", "pipe", "is not a regular file"),  # opened without blocking, then refused
    ],
)
def test_read_what_is_not_a_file(
    use: Use, roots: Roots, setup: str | None, path: str, expected: str
) -> None:
    (roots["cache"] / "folder").mkdir()
    (roots["cache"] / "a.md").write_text("a", encoding="utf-8")
    if setup == "fifo":
        os.mkfifo(roots["cache"] / "pipe")
    refused(use("read_file", {"path": path}), "NotFoundError", expected)


def test_a_binary_file_over_max_bytes_is_described_not_dumped(
    load: Load, call: Call, roots: Roots
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    (roots["cache"] / "logo.png").write_bytes(png)
    result = call(load(read={"max_bytes": 1000}), "read_file", {"path": "logo.png"})
    data = ok(result)
    assert data["binary"] is True
    assert data["content"] is None
    assert data["size_bytes"] == len(png)
    assert result.parts == ()  # a cut picture is no picture
    assert result.output == (
        f"file_cache_dir/logo.png is a binary file ({len(png)} bytes, PNG image), over "
        "read_file max_bytes (1000); its bytes are not shown: a cut file is no file"
    )


def test_invalid_utf8_without_nul_bytes_is_binary_too(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "latin1.txt").write_bytes("café au lait".encode("latin-1"))
    data = ok(call(load(), "read_file", {"path": "latin1.txt"}))
    assert data["binary"] is True


def test_a_read_past_max_bytes_is_cut_and_flagged(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "long.txt").write_text("0123456789" * 3, encoding="utf-8")
    result = call(load(read={"max_bytes": 12}), "read_file", {"path": "long.txt"})
    data = ok(result)
    assert result.output == "012345678901"
    assert (data["truncated"], data["bytes_read"], data["size_bytes"]) == (True, 12, 30)
    assert result.warnings == (
        "file_cache_dir/long.txt is 30 bytes; only the first 12 were read (read_file max_bytes)",
    )


def test_a_cut_through_a_character_drops_the_half(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "e.txt").write_text("ééééé", encoding="utf-8")  # 10 bytes
    result = call(load(read={"max_bytes": 5}), "read_file", {"path": "e.txt"})
    data = ok(result)
    assert result.output == "éé"
    assert data["binary"] is False
    assert data["truncated"] is True


def test_a_file_exactly_at_max_bytes_is_whole(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "ten.txt").write_text("0123456789", encoding="utf-8")
    result = call(load(read={"max_bytes": 10}), "read_file", {"path": "ten.txt"})
    assert ok(result)["truncated"] is False
    assert result.warnings == ()


def test_an_empty_file(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "empty.txt").write_bytes(b"")
    result = call(load(), "read_file", {"path": "empty.txt"})
    assert ok(result)["content"] == ""
    assert result.output == "(file_cache_dir/empty.txt is empty)"


# --- refusals, for both tools ---------------------------------------------------------------

TOOLS = ["read_file", "write_file"]


def arguments(tool: str, path: str) -> dict[str, str]:
    return {"path": path} if tool == "read_file" else {"path": path, "content": "pwned"}


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",  # relative, climbing out of the cache root
        "file_cache_dir/../outside/secret.txt",  # climbing out through the alias
        "file_state_dir/../../outside/secret.txt",
        "notes/../../outside/secret.txt",
        "~/.ssh/id_rsa",  # the home directory is not a root
    ],
)
def test_escapes_with_dotdot_are_refused(
    load: Load, call: Call, roots: Roots, tool: str, path: str
) -> None:
    refused(call(load(), tool, arguments(tool, path)), "PermissionError", "outside the sandbox")
    assert (roots["outside"] / "secret.txt").read_text() == "top secret\n"


@pytest.mark.parametrize("tool", TOOLS)
def test_absolute_paths_outside_are_refused(
    load: Load, call: Call, roots: Roots, tool: str
) -> None:
    target = str(roots["outside"] / "secret.txt")
    message = refused(
        call(load(), tool, arguments(tool, target)),
        "PermissionError",
        "is outside the sandbox roots (file_cache_dir, file_state_dir)",
    )
    assert repr(target) in message  # the path the model wrote, and no root's
    assert (roots["outside"] / "secret.txt").read_text() == "top secret\n"
    refused(call(load(), tool, arguments(tool, "/etc/passwd")), "PermissionError", "outside")


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("file_cache_dir", "file_cache_dir alone names the directory itself"),
        ("file_cache_dir/", "file_cache_dir alone names the directory itself"),
        ("file_state_dir//", "file_state_dir alone names the directory itself"),
        ("notes\x00.md", "contains a NUL byte"),
        ("file_state_dir/a\x00/../b", "contains a NUL byte"),
    ],
)
def test_malformed_paths_are_validation_errors(
    load: Load, call: Call, tool: str, path: str, fragment: str
) -> None:
    refused(call(load(), tool, arguments(tool, path)), "ValidationError", fragment)


@pytest.mark.parametrize("tool", TOOLS)
def test_an_empty_path_is_a_validation_error(load: Load, call: Call, tool: str) -> None:
    refused(call(load(), tool, arguments(tool, "")), "ValidationError")


def test_a_planted_symlink_to_a_file_outside_is_refused_for_reading(
    load: Load, call: Call, roots: Roots
) -> None:
    (roots["cache"] / "leak.txt").symlink_to(roots["outside"] / "secret.txt")
    message = refused(
        call(load(), "read_file", {"path": "leak.txt"}),
        "PermissionError",
        "file_cache_dir/leak.txt is refused: a symlink inside the root points outside it",
    )
    assert "top secret" not in message


def test_a_planted_symlink_to_a_file_outside_is_refused_for_writing(
    load: Load, call: Call, roots: Roots
) -> None:
    (roots["cache"] / "leak.txt").symlink_to(roots["outside"] / "secret.txt")
    refused(
        call(load(), "write_file", {"path": "leak.txt", "content": "pwned"}),
        "PermissionError",
        "a symlink inside the root points outside it",
    )
    assert (roots["outside"] / "secret.txt").read_text() == "top secret\n"
    assert (roots["cache"] / "leak.txt").is_symlink()
    assert leftovers(roots["cache"]) == []


@pytest.mark.parametrize("tool", TOOLS)
def test_a_symlinked_parent_directory_is_refused(
    load: Load, call: Call, roots: Roots, tool: str
) -> None:
    (roots["state"] / "shared").symlink_to(roots["outside"], target_is_directory=True)
    for path in ("file_state_dir/shared/secret.txt", "file_state_dir/shared/new/deep.txt"):
        refused(
            call(load(), tool, arguments(tool, path)),
            "PermissionError",
            "a symlink inside the root points outside it",
            "file_state_dir/shared -> outside the sandbox",
        )
    assert sorted(p.name for p in roots["outside"].iterdir()) == ["secret.txt"]
    assert (roots["outside"] / "secret.txt").read_text() == "top secret\n"


def test_a_symlink_that_stays_inside_is_followed(load: Load, call: Call, roots: Roots) -> None:
    (roots["state"] / "real.md").write_text("original", encoding="utf-8")
    (roots["cache"] / "pointer.md").symlink_to(roots["state"] / "real.md")
    registry = load()
    read = call(registry, "read_file", {"path": "pointer.md"})
    assert read.output == "original"
    assert ok(read)["path"] == "file_cache_dir/pointer.md"
    ok(call(registry, "write_file", {"path": "pointer.md", "content": "updated"}))
    assert (roots["state"] / "real.md").read_text(encoding="utf-8") == "updated"
    assert (roots["cache"] / "pointer.md").is_symlink()


def test_a_root_that_is_itself_a_symlink_works(call: Call, roots: Roots, tmp_path: Path) -> None:
    link = tmp_path / "cache-link"
    link.symlink_to(roots["cache"], target_is_directory=True)
    registry = toolplug.load(
        config={"tools": {name: {"cache_dir": str(link)} for name in TOOLS}}, env={}
    )
    ok(call(registry, "write_file", {"path": "x.md", "content": "via link"}))
    assert (roots["cache"] / "x.md").read_text(encoding="utf-8") == "via link"
    read = call(registry, "read_file", {"path": str(link / "x.md")})
    assert ok(read)["path"] == "file_cache_dir/x.md"


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(
    "case",
    [
        (".env", "project/.env", True),  # a bare name matches any part of the path
        (".env", "project/env.txt", False),
        ("*.pem", "keys/server.pem", True),  # a pattern without '/' as well
        ("*.pem", "keys/server.pem.txt", False),
        ("private", "private/notes.md", True),  # a directory name covers what is inside
        ("file_state_dir/secrets", "file_state_dir/secrets/a.txt", True),  # alias path
        ("file_state_dir/secrets", "file_state_dir/secrets2.txt", False),
        ("file_state_dir/secrets", "secrets/a.txt", False),  # same name, other root
        ("drafts/*.key", "drafts/deep/x.key", True),  # a relative glob, from the root
        ("drafts/*.key", "other/x.key", False),
    ],
    ids=lambda case: f"{case[0]}:{case[1]}",
)
def test_deny_paths(use: Use, roots: Roots, tool: str, case: tuple[str, str, bool]) -> None:
    entry, path, denied = case
    where = roots["state"] if path.startswith("file_state_dir/") else roots["cache"]
    file = where / path.removeprefix("file_state_dir/")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("data", encoding="utf-8")
    result = use(tool, arguments(tool, path), deny_paths=[entry])
    if denied:
        refused(result, "PermissionError", f"matches deny_paths entry {entry!r}")
        assert file.read_text(encoding="utf-8") == "data"
    else:
        ok(result)


@pytest.mark.parametrize("tool", TOOLS)
def test_deny_paths_with_an_absolute_path(load: Load, call: Call, roots: Roots, tool: str) -> None:
    (roots["cache"] / "vault").mkdir()
    (roots["cache"] / "vault" / "a.txt").write_text("data", encoding="utf-8")
    registry = load(deny_paths=[str(roots["cache"] / "vault")])
    refused(call(registry, tool, arguments(tool, "vault/a.txt")), "PermissionError", "deny_paths")
    refused(call(registry, tool, arguments(tool, "vault/new.txt")), "PermissionError", "deny")


@pytest.mark.parametrize("tool", TOOLS)
def test_deny_paths_match_the_resolved_path_behind_a_symlink(
    load: Load, call: Call, roots: Roots, tool: str
) -> None:
    (roots["cache"] / ".env").write_text("TOKEN=abc", encoding="utf-8")
    (roots["cache"] / "settings.txt").symlink_to(roots["cache"] / ".env")
    result = call(load(deny_paths=[".env"]), tool, arguments(tool, "settings.txt"))
    message = refused(result, "PermissionError", "matches deny_paths entry '.env'")
    assert "TOKEN" not in message
    assert (roots["cache"] / ".env").read_text(encoding="utf-8") == "TOKEN=abc"


# --- writing --------------------------------------------------------------------------------


def test_write_creates_parent_directories(load: Load, call: Call, roots: Roots) -> None:
    result = call(load(), "write_file", {"path": "a/b/c/note.md", "content": "# Note\n"})
    data = ok(result)
    assert (roots["cache"] / "a" / "b" / "c" / "note.md").read_text(encoding="utf-8") == "# Note\n"
    assert data == {
        "path": "file_cache_dir/a/b/c/note.md",
        "mode": "overwrite",
        "bytes_written": 7,
        "size_bytes": 7,
        "created": True,
    }
    assert result.output == "Created file_cache_dir/a/b/c/note.md (7 bytes)."


def test_overwrite_replaces_and_append_adds(load: Load, call: Call, roots: Roots) -> None:
    registry = load()
    log = roots["state"] / "log.md"
    ok(call(registry, "write_file", {"path": "file_state_dir/log.md", "content": "one\n"}))
    second = call(
        registry,
        "write_file",
        {"path": "file_state_dir/log.md", "content": "two\n", "mode": "append"},
    )
    assert ok(second)["size_bytes"] == 8
    assert ok(second)["created"] is False
    assert second.output == "Appended 4 bytes to file_state_dir/log.md; it now holds 8 bytes."
    assert log.read_text(encoding="utf-8") == "one\ntwo\n"
    third = call(registry, "write_file", {"path": "file_state_dir/log.md", "content": "fresh"})
    assert third.output == "Replaced the content of file_state_dir/log.md (5 bytes)."
    assert log.read_text(encoding="utf-8") == "fresh"
    assert leftovers(roots["state"]) == []


def test_append_to_a_missing_file_creates_it(load: Load, call: Call, roots: Roots) -> None:
    result = call(load(), "write_file", {"path": "new.md", "content": "x", "mode": "append"})
    assert ok(result)["created"] is True
    assert (roots["cache"] / "new.md").read_text(encoding="utf-8") == "x"


def test_content_over_max_bytes_is_refused(load: Load, call: Call, roots: Roots) -> None:
    registry = load(write={"max_bytes": 10})
    # "é" is two bytes in UTF-8: the cap counts bytes, not characters.
    too_big = call(registry, "write_file", {"path": "big.md", "content": "é" * 6})
    refused(too_big, "ValidationError", "content is 12 bytes", "at most 10 bytes (max_bytes)")
    assert not (roots["cache"] / "big.md").exists()
    ok(call(registry, "write_file", {"path": "big.md", "content": "é" * 5}))
    assert (roots["cache"] / "big.md").read_text(encoding="utf-8") == "é" * 5


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("folder", "file_cache_dir/folder is a directory"),  # an existing directory
        ("folder/", "ends with '/'"),  # a trailing slash means a directory
        ("a.md/b.md", "a part of the path is a file"),  # a file used as a directory
    ],
)
def test_write_needs_a_file_path(use: Use, roots: Roots, path: str, fragment: str) -> None:
    (roots["cache"] / "folder").mkdir()
    (roots["cache"] / "a.md").write_text("a", encoding="utf-8")
    refused(use("write_file", {"path": path, "content": "x"}), "ValidationError", fragment)
    assert (roots["cache"] / "a.md").read_text(encoding="utf-8") == "a"


def test_write_keeps_an_existing_files_permissions(load: Load, call: Call, roots: Roots) -> None:
    target = roots["cache"] / "private.md"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    ok(call(load(), "write_file", {"path": "private.md", "content": "new"}))
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_new_file_gets_the_umask_permissions(load: Load, call: Call, roots: Roots) -> None:
    previous = os.umask(0o027)
    try:
        ok(call(load(), "write_file", {"path": "fresh.md", "content": "x"}))
    finally:
        os.umask(previous)
    assert stat.S_IMODE((roots["cache"] / "fresh.md").stat().st_mode) == 0o640


@pytest.mark.parametrize("mode", ["overwrite", "append"])
@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(
    use: Use, roots: Roots, monkeypatch: pytest.MonkeyPatch, mode: str, failing: str
) -> None:
    target = roots["cache"] / "report.md"
    target.write_text("the original\n", encoding="utf-8")

    def disk_full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, disk_full)
    result = use("write_file", {"path": "report.md", "content": "half of it", "mode": mode})
    monkeypatch.undo()
    refused(
        result,
        "ExecutionError",
        "writing file_cache_dir/report.md failed; the file was left as it was",
        "No space left on device",
    )
    assert target.read_text(encoding="utf-8") == "the original\n"
    assert sorted(p.name for p in roots["cache"].iterdir()) == ["report.md"]


def test_unknown_mode_is_a_validation_error(load: Load, call: Call) -> None:
    result = call(load(), "write_file", {"path": "a.md", "content": "x", "mode": "prepend"})
    refused(result, "ValidationError", "mode")


def test_write_then_read_round_trip(load: Load, call: Call) -> None:
    registry = load()
    text = "Grüße, 世界 🌍\nline two\n"
    ok(call(registry, "write_file", {"path": "file_state_dir/notes/u.md", "content": text}))
    read = call(registry, "read_file", {"path": "file_state_dir/notes/u.md"})
    assert read.output == text
    assert ok(read)["size_bytes"] == len(text.encode("utf-8"))


def test_results_match_the_declared_returns_schema(load: Load, call: Call) -> None:
    from jsonschema import Draft202012Validator

    registry = load()
    wrote = ok(call(registry, "write_file", {"path": "s.md", "content": "abc"}))
    Draft202012Validator(WriteFileTool.metadata.returns or {}).validate(wrote)
    read = ok(call(registry, "read_file", {"path": "s.md"}))
    Draft202012Validator(ReadFileTool.metadata.returns or {}).validate(read)


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(
    "case",
    [
        ("~nosuchuser/notes.txt", "PermissionError", "no home directory"),  # unknown user
        ("~nosuchuser", "PermissionError", "no home directory"),
        ("~", "PermissionError", "outside the sandbox roots"),  # the home directory itself
        ("~/notes.txt", "PermissionError", "outside the sandbox roots"),
        ("C:\\Windows\\win.ini", "ValidationError", "Windows"),  # a drive letter
        ("\\\\server\\share\\x.txt", "ValidationError", "Windows"),  # a UNC path
        ("notes\\today.md", "ValidationError", "Windows"),  # backslashes as separators
        ("file:///etc/passwd", "ValidationError", "a URL"),
        ("x" * 300, "ValidationError", "use a shorter path"),  # a name over NAME_MAX
        ("a/" * 3000 + "b", "ValidationError", "use a shorter path"),  # a path over PATH_MAX
    ],
    ids=lambda case: repr(case[0][:24]),
)
def test_odd_spellings_are_clean_refusals(
    load: Load, call: Call, roots: Roots, tool: str, case: tuple[str, str, str]
) -> None:
    path, error_type, fragment = case
    message = refused(call(load(), tool, arguments(tool, path)), error_type, fragment)
    assert repr(path[:40])[:-1] in message or "path:" in message
    assert sorted(p.name for p in roots["outside"].iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("path", ["..%2f..%2foutside%2fsecret.txt", "%2e%2e/outside/secret.txt"])
def test_url_encoded_dots_are_names_not_escapes(
    load: Load, call: Call, roots: Roots, path: str
) -> None:
    registry = load()
    refused(call(registry, "read_file", {"path": path}), "NotFoundError", "there is no file")
    ok(call(registry, "write_file", {"path": path, "content": "inside"}))
    assert (roots["cache"] / path).read_text(encoding="utf-8") == "inside"
    assert (roots["outside"] / "secret.txt").read_text() == "top secret\n"
