"""write_file and read_file under faults: writers in other processes and threads, a directory
swapped for a symlink by another process, and a writer killed with SIGKILL mid-write."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug import ToolResult

Load = Callable[..., toolplug.Registry]
Call = Callable[[toolplug.Registry, str, Mapping[str, Any]], ToolResult]
Roots = dict[str, Path]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes and signals")

# A host process of its own: loads toolplug with the test's roots and runs one job.
HOST = """
import sys, toolplug
cache, state, job, worker = sys.argv[1:5]
shared = {"cache_dir": cache, "state_dir": state}
registry = toolplug.load(
    config={"tools": {"read_file": shared, "write_file": shared}}, env={},
    approver=lambda request: True,
)
if job == "append":
    for n in range(300):
        result = registry.call("write_file", {
            "path": "file_state_dir/log.txt", "content": f"{worker}-{n}\\n", "mode": "append",
        })
        if result.error is not None:
            sys.exit(f"append {n} failed: {result.error}")
elif job == "big":
    while True:
        registry.call("write_file", {"path": "big.txt", "content": worker * 900_000})
"""


def host(roots: Roots, job: str, worker: str) -> subprocess.Popen[bytes]:
    arguments = [str(roots["cache"]), str(roots["state"]), job, worker]
    return subprocess.Popen([sys.executable, "-c", HOST, *arguments])


def test_appends_from_two_processes_lose_no_line(roots: Roots) -> None:
    writers = [host(roots, "append", name) for name in ("a", "b")]
    for writer in writers:
        assert writer.wait(timeout=180) == 0
    lines = (roots["state"] / "log.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 600
    assert sorted(lines) == sorted(f"{w}-{n}" for w in "ab" for n in range(300))
    assert list(roots["state"].glob("*.tmp")) == []


def test_concurrent_acalls_in_one_process_lose_no_line(load: Load, roots: Roots) -> None:
    registry = load()

    async def append_all() -> list[ToolResult]:
        return await asyncio.gather(
            *(
                registry.acall(
                    "write_file",
                    {"path": "log.txt", "content": f"line {n}\n", "mode": "append"},
                    approver=lambda request: True,
                )
                for n in range(50)
            )
        )

    results = asyncio.run(append_all())
    assert [r.error for r in results if r.error is not None] == []
    lines = (roots["cache"] / "log.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(lines) == sorted(f"line {n}" for n in range(50))


# Swaps cache/sub (a directory) and cache/sub.link (a symlink to the outside directory) in
# one atomic step, again and again, until the stop file appears: the classic race against a
# check-then-open sandbox. renameat2(RENAME_EXCHANGE) keeps both names present at all times.
SWAPPER = """
import ctypes, ctypes.util, os, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
here, stop = sys.argv[1], sys.argv[2]
a, b = os.path.join(here, "sub").encode(), os.path.join(here, "sub.link").encode()
swaps = 0
while not os.path.exists(stop):
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        sys.exit(f"renameat2 failed: {os.strerror(ctypes.get_errno())}")
    swaps += 1
print(swaps)
"""


def _renameat2_works(directory: Path) -> bool:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if not hasattr(libc, "renameat2"):
        return False
    (directory / "x").mkdir()
    (directory / "y").symlink_to(directory / "x")
    done: bool = libc.renameat2(-100, bytes(directory / "x"), -100, bytes(directory / "y"), 2) == 0
    (directory / "x").unlink()
    (directory / "y").rmdir()
    return done


def test_a_directory_swapped_for_a_symlink_leaks_nothing(
    load: Load, call: Call, roots: Roots, tmp_path: Path
) -> None:
    if not _renameat2_works(tmp_path):
        pytest.skip("needs renameat2 with RENAME_EXCHANGE (Linux)")
    outside = roots["outside"]
    (outside / "keep.txt").write_text("OUTSIDE\n", encoding="utf-8")
    (roots["cache"] / "sub").mkdir()
    (roots["cache"] / "sub" / "keep.txt").write_text("inside\n", encoding="utf-8")
    (roots["cache"] / "sub.link").symlink_to(outside, target_is_directory=True)
    stop = tmp_path / "stop"
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(roots["cache"]), str(stop)], stdout=subprocess.PIPE
    )
    registry = load()
    written: list[str] = []
    outcomes: dict[str, int] = {}
    try:
        n = 0
        while n < 3000 and not (n >= 300 and {"ok", "PermissionError"} <= outcomes.keys()):
            name = f"sub/f-{n}.txt"
            wrote = call(registry, "write_file", {"path": name, "content": "x"})
            if wrote.error is None:
                written.append(Path(name).name)
            read = call(registry, "read_file", {"path": "sub/keep.txt"})
            for result in (wrote, read):
                kind = "ok" if result.error is None else result.error.type
                outcomes[kind] = outcomes.get(kind, 0) + 1
                if result.error is None:
                    assert "OUTSIDE" not in result.output
                    assert result is wrote or result.output == "inside\n"
                else:
                    assert result.error.type in ("PermissionError", "NotFoundError"), result.error
                    assert "file_cache_dir/sub" in result.error.message, result.error
            n += 1
    finally:
        stop.touch()
        out, _ = swapper.communicate(timeout=30)
    assert swapper.returncode == 0
    assert int(out) > 0
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt", "secret.txt"]
    assert (outside / "keep.txt").read_text(encoding="utf-8") == "OUTSIDE\n"
    inside = {name for _, _, files in os.walk(roots["cache"]) for name in files}
    assert set(written) <= inside  # every acknowledged write is in the root
    assert not [name for name in inside if name.endswith(".tmp")]
    assert {"ok", "PermissionError"} <= outcomes.keys(), outcomes  # the race was run


def test_temporary_files_of_a_killed_writer_are_removed_once_old(
    load: Load, call: Call, roots: Roots
) -> None:
    writer = host(roots, "big", "z")
    try:
        orphans = _stop_mid_write(writer, roots["cache"])
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert orphans
    big = roots["cache"] / "big.txt"
    assert not big.exists() or big.read_text(encoding="utf-8") == "z" * 900_000  # never torn
    registry = load()
    # A temporary file younger than the threshold may belong to a write in flight: kept.
    assert call(registry, "write_file", {"path": "other.txt", "content": "1"}).error is None
    assert sorted(p.name for p in roots["cache"].glob("*.tmp")) == orphans
    past = time.time() - 3600  # older than the threshold (a few minutes)
    for name in orphans:
        os.utime(roots["cache"] / name, (past, past))
    assert call(registry, "write_file", {"path": "other.txt", "content": "2"}).error is None
    assert list(roots["cache"].glob("*.tmp")) == []
    assert (roots["cache"] / "other.txt").read_text(encoding="utf-8") == "2"


def _stop_mid_write(writer: subprocess.Popen[bytes], directory: Path) -> list[str]:
    """Freeze ``writer`` (SIGSTOP) at a moment its temporary file exists; the file names."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert writer.poll() is None, "the writer died on its own"
        if list(directory.glob("*.tmp")):
            os.kill(writer.pid, signal.SIGSTOP)
            found = sorted(p.name for p in directory.glob("*.tmp"))
            if found:
                return found
            os.kill(writer.pid, signal.SIGCONT)
        time.sleep(0.001)
    raise AssertionError("the writer never had a temporary file open")
