"""How fast does ``toolplug console`` answer its history page over a large record?

Run from the workspace root: ``uv run python bench/console.py``.

A SQLite record of ``--events`` recorded calls (100,000 by default: 50 tools, one a
second, written as the recorder writes them, in batches) in a temporary folder, and
``toolplug console`` serving it, started as a user starts it (a subprocess on a free
loopback port). One httpx client on a kept-alive connection asks each page ``--requests``
times after one warm-up request: the history unfiltered (the 100 newest), filtered by a
tool and a kind, by a time (``since=2h``), by a tool nothing matched, one conversation's
timeline (its 100 events, of 1,000 conversations), and the approvals page. Reported as a
markdown table of the median and the slowest answer of each, in milliseconds,
client-side (the whole HTTP round trip on loopback).

The goal (issue 47): the history page answers within 100 ms with 100,000 recorded calls.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from toolplug.state._events import RecordEvent
from toolplug.state._record import SqliteStore

PAGES: tuple[tuple[str, dict[str, str]], ...] = (
    ("/history", {}),
    ("/history", {"tool": "tool7", "kind": "call"}),
    ("/history", {"since": "2h"}),
    ("/history", {"tool": "absent"}),
    ("/conversations/conv7", {}),
    ("/", {}),
)


def fill(path: Path, events: int) -> None:
    store = SqliteStore(path)
    store.open()
    now = time.time()
    batch: list[RecordEvent] = []
    for n in range(events):
        batch.append(RecordEvent(
            kind="call", time=now - events + n, tool=f"tool{n % 50}", status="ok",
            principal="principal:ada", size=120, duration_ms=1.5,
            conversation=f"conv{n % 1000}", labels=["untrusted"] if n % 3 == 0 else [],
        ))
        if len(batch) == 5000:
            store.write(batch)
            batch = []
    if batch:
        store.write(batch)
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=50)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        fill(base / "record.sqlite3", options.events)
        config = base / "toolplug.toml"
        config.write_text(
            f'state_dir = "{base / "state"}"\n[approvals]\ninbox = true\n'
            f'store = "sqlite:{base / "approvals.db"}"\n'
            f'[record]\nenabled = true\nstore = "{base / "record.sqlite3"}"\n',
            encoding="utf-8",
        )
        with subprocess.Popen(
            [sys.executable, "-m", "toolplug", "console", "--port", "0", "--config",
             str(config)], stdout=subprocess.PIPE, text=True,
        ) as process:
            try:
                assert process.stdout is not None
                found = re.search(r"http://\S+/", process.stdout.readline())
                assert found, "the console did not start"
                print(f"{options.events:,} recorded calls, {options.requests} requests a page\n")
                print("| page | median ms | slowest ms | rows |")
                print("|---|---|---|---|")
                with httpx.Client(base_url=found.group(0), timeout=30) as client:
                    for path, params in PAGES:
                        client.get(path, params=params)
                        took = []
                        for _ in range(options.requests):
                            start = time.perf_counter()
                            answer = client.get(path, params=params)
                            took.append((time.perf_counter() - start) * 1000)
                            assert answer.status_code == 200, answer.text
                        shown = path + ("?" + "&".join(f"{k}={v}" for k, v in params.items())
                                        if params else "")
                        print(f"| `{shown}` | {statistics.median(took):.1f} | {max(took):.1f} "
                              f"| {answer.text.count('<tr><td>')} |")
            finally:
                process.terminate()
                process.wait(10)


if __name__ == "__main__":
    main()
