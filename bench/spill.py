"""Spilled outputs: the first reply of a 20 MB output, kept whole against cut and dropped,
and reading the kept output back in pages; in process and over ``toolplug serve``.

    uv run python bench/spill.py --rounds 7

Side by side in one run, interleaved round by round:

* in process: ``await registry.acall`` of a tool returning 20 MB of text, with spilling on
  (the default) and off (``[calls] spill_ttl_seconds = 0``, the anchor: the same reply,
  cut, with nothing kept); then ``registry.aread`` in 1 MB pages;
* over MCP: the real ``toolplug serve`` over streamable HTTP on 127.0.0.1, one server
  with spilling on and one with it off, the official SDK client calling each; then
  ``resources/read`` with ``?offset=&length=`` in 1 MB pages.

Goals (issue 27): the first reply within 1.2x of the reply that kept nothing, and reading
back at 50 MB/s or more.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import toolplug
from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

CHARS = 20_000_000
PAGE = 1_000_000

PLUGIN = '''
from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

TEXT = "".join(f"line {i:09d} of a long report\\n" for i in range(%d))


class Report(Tool):
    metadata = ToolMetadata(name="report", description="A very long report.", category="utility")

    async def run(self, arguments, context):
        return ToolResult.success(TEXT)


@hookimpl
def register_tools(register):
    register(Report)
'''
LINE = len("line 000000000 of a long report\n")
LINES = CHARS // LINE
TEXT = "".join(f"line {i:09d} of a long report\n" for i in range(LINES))


class Report(Tool):
    metadata = ToolMetadata(name="report", description="A very long report.", category="utility")

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success(TEXT)


class _Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Report)


def _ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


async def in_process(rounds: int) -> dict[str, Any]:
    plugins = [("report", _Plugin())]
    on = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=plugins)
    off = toolplug.load(
        {"calls": {"spill_ttl_seconds": 0}}, env={"TOOLPLUG_PLUGINS": ""}, plugins=plugins
    )
    first: dict[str, list[float]] = {"kept": [], "dropped": []}
    reads: list[float] = []
    try:
        for number in range(rounds):
            order = [("kept", on), ("dropped", off)]
            for label, registry in order if number % 2 else order[::-1]:
                started = time.perf_counter()
                result = await registry.acall("report", {})
                first[label].append(time.perf_counter() - started)
                assert len(result.for_model()) <= 50_000
                assert (result.spill is not None) == (label == "kept")
            kept = await on.acall("report", {})
            assert kept.spill is not None
            started, offset, total = time.perf_counter(), 0, 0
            while True:
                page = await on.aread(kept.spill, offset=offset, length=PAGE)
                assert page is not None
                total += len(page.text)
                if page.next_offset is None:
                    break
                offset = page.next_offset
            reads.append(total / (time.perf_counter() - started) / 1e6)
            assert total == len(TEXT)
    finally:
        on.close()
        off.close()
    return {"first": {k: _ms(v) for k, v in first.items()}, "mb_s": statistics.median(reads)}


async def _read_back(client: Any, link: str) -> int:
    """Read a kept output over MCP in 1 MB pages, as the ``_meta`` of each says; its size."""
    from mcp import types

    offset, total = 0, 0
    while True:
        answer = await client.read_resource(f"{link}?offset={offset}&length={PAGE}")
        content = answer.contents[0]
        assert isinstance(content, types.TextResourceContents)
        total += len(content.text)
        following = (content.meta or {}).get("toolplug/next_offset")
        if following is None:
            return total
        offset = following


async def mcp_in_memory(rounds: int) -> dict[str, Any]:
    """The server's side alone: ``build_server`` and the SDK client in one process,
    through the SDK's in-memory dispatcher (no HTTP)."""
    from mcp import Client, types

    from toolplug.serve._server import build_server

    plugins = [("report", _Plugin())]
    registries = {
        "kept": toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=plugins),
        "dropped": toolplug.load(
            {"calls": {"spill_ttl_seconds": 0}}, env={"TOOLPLUG_PLUGINS": ""}, plugins=plugins
        ),
    }
    first: dict[str, list[float]] = {"kept": [], "dropped": []}
    reads: list[float] = []
    try:
        async with (
            Client(build_server(registries["kept"])) as kept,
            Client(build_server(registries["dropped"])) as dropped,
        ):
            clients = {"kept": kept, "dropped": dropped}
            link = ""
            for number in range(rounds):
                order = list(clients.items())
                for label, client in order if number % 2 else order[::-1]:
                    started = time.perf_counter()
                    reply = await client.call_tool("report", {})
                    first[label].append(time.perf_counter() - started)
                    links = [b for b in reply.content if isinstance(b, types.ResourceLink)]
                    if label == "kept":
                        link = str(links[0].uri)
                started = time.perf_counter()
                total = await _read_back(kept, link)
                reads.append(total / (time.perf_counter() - started) / 1e6)
    finally:
        for registry in registries.values():
            registry.close()
    return {"first": {k: _ms(v) for k, v in first.items()}, "mb_s": statistics.median(reads)}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(directory: Path, spill: bool) -> tuple[subprocess.Popen[bytes], str]:
    site = directory / "site"
    if not site.exists():
        info = site / "bench_report-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bench-report\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[toolplug]\nreport = bench_report\n")
        (site / "bench_report.py").write_text(PLUGIN % LINES)
    config = directory / f"spill-{spill}.toml"
    config.write_text("" if spill else "[calls]\nspill_ttl_seconds = 0\n")
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "TOOLPLUG_CONFIG": str(config),
        "TOOLPLUG_PLUGINS": "bench-report",
        "TOOLPLUG_CACHE_DIR": str(directory / "cache"),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "toolplug", "serve", "--http", f"127.0.0.1:{port}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("toolplug serve did not start") from None
            time.sleep(0.1)
    return process, f"http://127.0.0.1:{port}/mcp"


async def over_mcp(rounds: int) -> dict[str, Any]:
    from mcp import Client, types

    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        servers = {label: _start(directory, label == "kept") for label in ("kept", "dropped")}
        first: dict[str, list[float]] = {"kept": [], "dropped": []}
        reads: list[float] = []
        try:
            async with (
                Client(servers["kept"][1]) as kept, Client(servers["dropped"][1]) as dropped
            ):
                clients = {"kept": kept, "dropped": dropped}
                kept_links: list[str] = []
                for number in range(rounds):  # the replies first, interleaved, in turns
                    order = list(clients.items())
                    for label, client in order if number % 2 else order[::-1]:
                        started = time.perf_counter()
                        reply = await client.call_tool("report", {})
                        first[label].append(time.perf_counter() - started)
                        links = [b for b in reply.content if isinstance(b, types.ResourceLink)]
                        if label == "kept":
                            kept_links.append(str(links[0].uri))
                        else:
                            assert not links
                # then reading back the newest five: 256 MB of kept outputs hold twelve
                for link in kept_links[-5:]:
                    started = time.perf_counter()
                    total = await _read_back(kept, link)
                    reads.append(total / (time.perf_counter() - started) / 1e6)
                    assert total == LINES * LINE
        finally:
            for process, _ in servers.values():
                process.terminate()
                process.wait(timeout=30)
    return {"first": {k: _ms(v) for k, v in first.items()}, "mb_s": statistics.median(reads)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"a {LINES * LINE / 1e6:.0f} MB output, {args.rounds} rounds, medians")
    print(f"{'path':<13} {'kept ms':>9} {'dropped ms':>11} {'ratio':>7} {'read MB/s':>10}")
    # in process the reply is a reference to the tool's string either way: microseconds
    runs = (("in process", in_process), ("MCP (memory)", mcp_in_memory), ("MCP (HTTP)", over_mcp))
    for name, run in runs:
        figures = asyncio.run(run(args.rounds))
        kept, dropped = figures["first"]["kept"], figures["first"]["dropped"]
        print(
            f"{name:<13} {kept:>9.2f} {dropped:>11.2f} {kept / dropped:>6.2f}x "
            f"{figures['mb_s']:>10.0f}"
        )


if __name__ == "__main__":
    main()
