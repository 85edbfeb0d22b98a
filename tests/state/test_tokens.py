"""The user's token store (``state/_tokens.py``): a file only its owner can read, written
whole (a writer killed mid-write leaves the last complete file), and read-modify-writes
of several processes that lose nothing."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from toolplug.state._tokens import TokenStore

WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from toolplug.state._tokens import TokenStore
    store = TokenStore(Path(sys.argv[1]))
    for n in range(int(sys.argv[3])):
        store.update(sys.argv[2], n=n, padding="x" * 200_000)
""")


def test_the_file_and_its_directory_are_the_owners_alone(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "oauth")
    store.update("https://a.example/mcp", tokens={"access_token": "secret-a"})
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert store.entry("https://a.example/mcp") == {"tokens": {"access_token": "secret-a"}}
    store.update("https://a.example/mcp", tokens=None)  # None drops a field
    assert store.entry("https://a.example/mcp") == {}
    assert store.forget("https://a.example/mcp") == {}
    assert store.keys() == []


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "oauth"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(directory), key, "15"])
        for key in ("https://a.example/mcp", "https://b.example/mcp")
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    store = TokenStore(directory)
    keys = store.keys()
    assert keys == ["https://a.example/mcp", "https://b.example/mcp"]
    assert {store.entry(k)["n"] for k in keys} == {14}


def test_a_writer_killed_mid_write_leaves_the_last_whole_file(tmp_path: Path) -> None:
    directory = tmp_path / "oauth"
    store = TokenStore(directory)
    store.update("https://kept.example/mcp", tokens={"access_token": "kept"})
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(directory), "k", "100000"])
    time.sleep(1.5)  # it is writing, over and over
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=30)
    # every read sees a whole file: the entry written before, and whatever the killed
    # writer had completed
    assert store.entry("https://kept.example/mcp") == {"tokens": {"access_token": "kept"}}
    assert isinstance(store.entry("k").get("n", 0), int)
    store.update("https://after.example/mcp", ok=True)  # and the store still writes
    assert store.entry("https://after.example/mcp") == {"ok": True}
