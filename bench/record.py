"""What does the record (``[record] enabled = true``) add to a call, on the user's path?

Run from the workspace root: ``uv run python bench/record.py``.

Two registries in one process, the same async tool that returns at once with
web_search-shaped arguments, one with the record on (SQLite in a temporary folder, the
default ``flush_seconds``), one with it off. Each round awaits ``--batches`` batches of
``--concurrent`` calls at once (``asyncio.gather`` of ``registry.acall``, each with a
principal and a call id, as a served call has), first with one registry then the other,
the order alternating round by round so machine noise hits both alike.

Reported, as medians over the rounds, in a markdown table (``bench/versus.py`` compares
its figures with another checkout's):

- the wall time per call on the caller's loop, record off and on, their ratio and the
  difference in microseconds: the cost on the user's path (the event's tuple and a
  ``deque`` append on the loop; the writer thread, redacting and writing in batches,
  competes for the interpreter meanwhile, and that is counted too);
- the same with the writer's remaining work included: the round timed until ``aflush``
  returns, every event of the round committed (an upper bound: no caller waits for it);
- the process's CPU time per call (the loop and the writer thread together), off and on.

The goal (issue 47): at most 10 us added per ``acall``.

``--count N --way on|off`` makes N calls (batches of ``--concurrent``) with one registry
and flushes, nothing more: a process to run under ``valgrind --tool=callgrind
--separate-threads=yes``, once with N=1000 and once with N=3000, the difference over 2,000
a call's instructions in each thread (the loop's, the writer's), start-up cancelled out.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import toolplug
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult, hookimpl

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
        "api_key": {"type": "string"},
    },
    "required": ["query"],
}
ARGUMENTS: dict[str, Any] = {"query": "python release notes", "max_results": 3,
                             "api_key": "sk-bench-0000"}


class Search(Tool):
    metadata = ToolMetadata(
        name="asearch", description="Search.", category="research", parameters=SCHEMA
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success(arguments["query"])


class Bench:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(Search)


def registry(record: dict[str, Any]) -> toolplug.Registry:
    return toolplug.load(
        {"record": record}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", Bench())]
    )


async def one_round(reg: toolplug.Registry, batches: int, concurrent: int) -> dict[str, float]:
    """Per-call seconds of one round: wall on the loop, wall with the flush, CPU."""
    calls = batches * concurrent
    cpu, wall = time.process_time(), time.perf_counter()
    for b in range(batches):
        await asyncio.gather(*(
            reg.acall("asearch", ARGUMENTS,
                      context={"client": "principal:ada", "call_id": f"c{b}-{n}"})
            for n in range(concurrent)
        ))
    path = time.perf_counter() - wall
    record = reg.record
    if record is not None:
        assert await record.aflush(), record.failed
    flushed = time.perf_counter() - wall
    return {"path": path / calls, "flushed": flushed / calls,
            "cpu": (time.process_time() - cpu) / calls}


async def main(rounds: int, batches: int, concurrent: int) -> None:
    with tempfile.TemporaryDirectory(prefix="toolplug-bench-record-") as folder:
        store = str(Path(folder) / "record.sqlite3")
        ways = {"off": registry({}), "on": registry({"enabled": True, "store": store})}
        try:
            for reg in ways.values():  # warm: schemas compiled, the writer started
                await one_round(reg, 2, concurrent)
            seen: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
            for r in range(rounds):
                order = list(ways) if r % 2 == 0 else list(reversed(ways))
                for name in order:
                    seen[name].append(await one_round(ways[name], batches, concurrent))
            on_record = ways["on"].record
            assert on_record is not None
            stored = len(on_record.query(limit=None, tool="asearch"))
            expected = (rounds * batches + 2) * concurrent
            assert stored == expected, (stored, expected)
            assert on_record.dropped == 0
        finally:
            for reg in ways.values():
                reg.close()
    us = {name: {key: statistics.median(r[key] for r in runs) * 1e6 for key in runs[0]}
          for name, runs in seen.items()}
    print(f"{rounds} rounds x {batches} batches x {concurrent} concurrent acalls per way; "
          f"{expected} events recorded, 0 dropped")
    print(f"\n| per call (median of {rounds} rounds) | off | on | on/off | added |")
    print("|---|---:|---:|---:|---:|")  # a markdown table: bench/versus.py reads its cells
    for key, what in (("path", "wall on the loop (the user's path)"),
                      ("flushed", "wall, the round's events committed (`aflush`)"),
                      ("cpu", "process CPU (loop + writer thread)")):
        off, on = us["off"][key], us["on"][key]
        print(f"| {what} | {off:.2f} us | {on:.2f} us | {on / off:.2f}x | {on - off:+.2f} us |")


async def count(calls: int, way: str, concurrent: int) -> None:
    with tempfile.TemporaryDirectory(prefix="toolplug-bench-record-") as folder:
        store = str(Path(folder) / "record.sqlite3")
        reg = registry({"enabled": True, "store": store} if way == "on" else {})
        try:
            await one_round(reg, 1, concurrent)  # warm, as main's rounds are
            await one_round(reg, calls // concurrent, concurrent)
        finally:
            reg.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--concurrent", type=int, default=100)
    parser.add_argument("--count", type=int, default=0,
                        help="make this many calls with one registry, nothing more")
    parser.add_argument("--way", choices=("on", "off"), default="on")
    args = parser.parse_args()
    if args.count:
        asyncio.run(count(args.count, args.way, args.concurrent))
    else:
        asyncio.run(main(args.rounds, args.batches, args.concurrent))
