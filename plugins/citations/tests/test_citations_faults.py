"""The citation list under faults: a corrupt file restored from its last good copy, what
happens when there is none, and a writer killed mid-write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import toolplug


def load(store: Path) -> toolplug.Registry:
    config = {"tools": {"citations": {"store_dir": str(store)}}}
    return toolplug.load(config, env={"TOOLPLUG_PLUGINS": "toolplug-citations"})


def call(registry: toolplug.Registry, **arguments: Any) -> toolplug.ToolResult:
    return registry.call("citations", arguments)


def added(registry: toolplug.Registry, *urls: str) -> None:
    for url in urls:
        result = call(registry, action="add", url=url)
        assert result.error is None, result.error


@pytest.mark.parametrize(
    "damage",
    [
        b'{"version": 1, "citations": [{"id": 1, "ti',  # cut short mid-write by a tool
        b"\x00" * 64,  # zeroed blocks after a crash of the file system
        b'{"version": 1, "citations": {"oops": true}}',  # valid JSON, wrong shape
        b'{"citations": [{"id": 1, "url": "https://a.example", "colour": "red"}]}',
    ],
    ids=["truncated", "zeroed", "wrong-shape", "unknown-field"],
)
@pytest.mark.parametrize("action", ["add", "list"])
def test_a_corrupt_list_is_restored_from_its_last_good_copy(
    tmp_path: Path, damage: bytes, action: str
) -> None:
    registry = load(tmp_path)
    urls = [f"https://example.org/{n}" for n in range(3)]
    added(registry, *urls)
    (tmp_path / "default.json").write_bytes(damage)
    if action == "add":
        result = call(registry, action="add", url="https://example.org/new")
        urls.append("https://example.org/new")
    else:
        result = call(registry, action="list")
    assert result.error is None, result.error
    [warning] = result.warnings
    assert "default.json was unreadable" in warning
    assert "restored from its last good copy default.json.bak (3 citations" in warning
    listed = call(registry, action="list")
    assert listed.warnings == ()  # restored once, then read as usual
    assert [c["url"] for c in listed.data["citations"]] == urls  # nothing acknowledged lost
    [kept] = tmp_path.glob("default.json.corrupt-*")
    assert kept.name in warning
    assert kept.read_bytes() == damage  # the damaged file is kept for a person to look at
    on_disk = json.loads((tmp_path / "default.json").read_text(encoding="utf-8"))
    assert [c["url"] for c in on_disk["citations"]] == urls


def test_with_no_good_copy_the_error_names_the_file_and_is_not_retryable(
    tmp_path: Path,
) -> None:
    registry = load(tmp_path)
    added(registry, "https://example.org/a")
    (tmp_path / "default.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "default.json.bak").write_text("[1, 2", encoding="utf-8")
    result = call(registry, action="add", url="https://example.org/b")
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert result.error.retry_possible is False
    assert str(tmp_path / "default.json") in result.error.message
    assert "fix one of them, or move both away" in result.error.message
    assert (tmp_path / "default.json").read_text(encoding="utf-8") == "{not json"  # untouched
    (tmp_path / "default.json.bak").unlink()
    alone = call(registry, action="list")
    assert alone.error is not None
    assert alone.error.retry_possible is False
    assert "there is no last good copy" in alone.error.message


# Adds citations with long titles, so each write of the list takes a while, until killed.
WRITER = """
import sys
from pathlib import Path
from toolplug_citations._store import Entry, Store

store = Store(Path(sys.argv[1]), "default")
for n in range(100_000):
    store.add([Entry(0, "t" * 20_000, f"https://example.org/{n}")])
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_killed_writers_temporary_file_is_removed_by_a_later_change(tmp_path: Path) -> None:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)])
    try:
        orphans = _frozen_mid_write(writer, tmp_path)
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    registry = load(tmp_path)
    listed = call(registry, action="list")  # the list itself is whole: never torn
    assert listed.error is None, listed.error
    acknowledged = len(listed.data["citations"])
    added(registry, "https://example.org/young")  # a young temporary file may be in use
    assert sorted(p.name for p in tmp_path.glob(".citations-*")) == orphans
    past = time.time() - 3600  # older than the threshold (a few minutes)
    for name in orphans:
        os.utime(tmp_path / name, (past, past))
    added(registry, "https://example.org/later")
    assert list(tmp_path.glob(".citations-*")) == []
    assert len(call(registry, action="list").data["citations"]) == acknowledged + 2


def _frozen_mid_write(writer: subprocess.Popen[bytes], folder: Path) -> list[str]:
    """Freeze ``writer`` (SIGSTOP) while its temporary file exists; the file names."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert writer.poll() is None, "the writer died on its own"
        if list(folder.glob(".citations-*")):
            os.kill(writer.pid, signal.SIGSTOP)
            found = sorted(p.name for p in folder.glob(".citations-*"))
            if found:
                return found
            os.kill(writer.pid, signal.SIGCONT)
        time.sleep(0.001)
    raise AssertionError("the writer never had a temporary file open")
