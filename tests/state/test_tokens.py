"""The user's token store (``state/_tokens.py``): a file only its owner can read, written
whole (a writer killed mid-write leaves the last complete file), and read-modify-writes
of several processes that lose nothing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
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


# -- the refresh lock, held from worker threads ----------------------------------------

TAKER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from toolplug.state._tokens import TokenStore
    lock = TokenStore(Path(sys.argv[1])).lock(sys.argv[2])
    started = time.monotonic()
    try:
        lock.acquire(timeout=float(sys.argv[3]))
    except TimeoutError:
        print("timeout", flush=True)
    else:
        print(f"took {time.monotonic() - started:.2f}", flush=True)
        lock.release()
""")


def _taker(directory: Path, key: str, timeout: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", TAKER, str(directory), key, str(timeout)],
        stdout=subprocess.PIPE, text=True,
    )


def test_a_lock_taken_in_one_thread_and_released_in_another_frees_the_other_process(
    tmp_path: Path,
) -> None:
    directory, key = tmp_path / "oauth", "https://a.example/mcp"
    lock = TokenStore(directory).lock(key)
    taking = threading.Thread(target=lock.acquire)
    taking.start()
    taking.join()
    waiting = _taker(directory, key, 0.5)  # while it is held: the other process waits
    out, _ = waiting.communicate(timeout=60)
    assert out.strip() == "timeout"
    waiting = _taker(directory, key, 20)
    time.sleep(0.5)
    releasing = threading.Thread(target=lock.release)
    releasing.start()
    releasing.join()
    out, _ = waiting.communicate(timeout=60)
    assert out.startswith("took "), out
    assert not lock.is_locked


def test_hold_waits_off_the_event_loop_and_its_release_frees_the_lock(tmp_path: Path) -> None:
    directory, key = tmp_path / "oauth", "https://a.example/mcp"
    store = TokenStore(directory)

    async def scenario() -> tuple[int, list[str]]:
        held = await store.hold(key)  # taken on a worker thread
        order: list[str] = []
        second = asyncio.ensure_future(store.hold(key))  # waits for the first
        ticks = 0
        for _ in range(20):  # the loop runs while the second waits
            await asyncio.sleep(0.01)
            ticks += 1
        assert not second.done()
        order.append("first released")
        await held()  # on the loop's thread: not the one that took it
        release = await asyncio.wait_for(second, 10)
        order.append("second held")
        await release()
        return ticks, order

    ticks, order = asyncio.run(scenario())
    assert ticks == 20
    assert order == ["first released", "second held"]
    taker = _taker(directory, key, 5)  # released for other processes too
    out, _ = taker.communicate(timeout=60)
    assert out.startswith("took "), out


def test_a_hold_given_up_while_waiting_leaves_the_lock_free(tmp_path: Path) -> None:
    directory, key = tmp_path / "oauth", "https://a.example/mcp"
    store = TokenStore(directory)

    async def scenario() -> None:
        held = await store.hold(key)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(store.hold(key), 0.2)  # given up while waiting
        await held()
        await asyncio.sleep(0.3)  # the given-up wait takes the lock, then lets it go
        release = await asyncio.wait_for(store.hold(key), 5)
        await release()

    asyncio.run(scenario())
    out, _ = _taker(directory, key, 5).communicate(timeout=60)
    assert out.startswith("took "), out
