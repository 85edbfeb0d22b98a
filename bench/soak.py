"""Soak: 50 MCP clients against one ``toolplug serve --http`` for a bounded time.

Each client is the official MCP SDK's client over streamable HTTP, in its own session,
looping until the time is up over a fixed mix: a plain ``def`` tool, an async tool, bad
arguments (a ``ValidationError`` result), an unknown tool (a ``NotFoundError`` result),
and malformed JSON-RPC POSTed raw into its session (not JSON, positional params, a null
id, a batch: each must get HTTP 400 and the error JSON-RPC names). Every outcome is checked
against what it must be; anything else is an unexpected error and is reported.

Reported: calls and requests per second, p50 and p99 latency per kind, the server's
resident memory (RSS, from /proc, sampled every second) at start (after every client has
initialized), at each quarter of the run, at its peak and at the end, and the errors. The
goal: no unexpected error, and memory flat after warm-up (the last three quarters within
a few MiB). Everything stays on 127.0.0.1.

    uv run python bench/soak.py                 # 150 s
    uv run python bench/soak.py --seconds 10    # a quick look
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

PLUGIN = '''
import asyncio
import hashlib
from typing import Any

from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

NUMBER = {"type": "integer", "minimum": 0, "maximum": 1000}


class Digest(Tool):
    metadata = ToolMetadata(
        name="digest",
        description="Hash a text a few hundred times (a plain def tool: about 1 ms).",
        category="utility",
        parameters={"type": "object", "properties": {"text": {"type": "string"}, "n": NUMBER},
                    "required": ["text", "n"], "additionalProperties": False},
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        value = arguments["text"].encode()
        for _ in range(arguments["n"]):
            value = hashlib.sha256(value).digest()
        return ToolResult.success(value.hex(), {"hex": value.hex()})


class Pause(Tool):
    metadata = ToolMetadata(
        name="pause",
        description="Wait a few milliseconds on the event loop, then echo the text.",
        category="utility",
        parameters={"type": "object", "properties": {"text": {"type": "string"}},
                    "required": ["text"]},
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        await asyncio.sleep(0.005)
        return ToolResult.success(arguments["text"])


@hookimpl
def register_tools(register: Any) -> None:
    register(Digest)
    register(Pause)
'''

MALFORMED: list[tuple[str, bytes, Any, int]] = [
    # (kind, body, id the answer must carry, JSON-RPC error code)
    ("not JSON", b"hello from nowhere", None, -32700),
    ("positional params", b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":[1]}',
     41, -32602),
    ("null id", b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None, -32600),
    ("batch", b'[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]', None, -32600),
]
CALLS: list[tuple[str, str, dict[str, Any], str | None]] = [
    # (kind, tool, arguments, the error type the result must carry, or None for a success)
    ("digest (def)", "digest", {"text": "soak", "n": 300}, None),
    ("pause (async)", "pause", {"text": "soak"}, None),
    ("digest (def)", "digest", {"text": "again", "n": 300}, None),
    ("bad arguments", "digest", {"text": 5, "n": -1}, "ValidationError"),
    ("pause (async)", "pause", {"text": "more"}, None),
    ("unknown tool", "digestt", {}, "NotFoundError"),
]
MIB = 1024 * 1024
QUARTERS = [("start", 0.0), ("25%", 0.25), ("50%", 0.5), ("75%", 0.75), ("end", 1.0)]


def site(folder: Path) -> dict[str, str]:
    """The soak tools installed as a distribution, and the environment that finds them."""
    dist_info = folder / "soak_tools-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: soak-tools\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text("[toolplug]\nsoak = soak_tools\n", encoding="utf-8")
    (folder / "soak_tools.py").write_text(PLUGIN, encoding="utf-8")
    (folder / "none.toml").write_text("", encoding="utf-8")
    return {
        **os.environ,
        "PYTHONPATH": str(folder),
        "TOOLPLUG_PLUGINS": "soak-tools",
        "TOOLPLUG_CONFIG": str(folder / "none.toml"),
        "TOOLPLUG_CACHE_DIR": str(folder / "cache"),
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def rss(pid: int) -> int:
    """The process's resident memory in bytes (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class Tally:
    """Latencies per kind, and every outcome that was not what it had to be."""

    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.unexpected: Counter[str] = Counter()
        self.resent = 0

    def wrong(self, kind: str, what: str) -> None:
        self.unexpected[f"{kind}: {what[:160]}"] += 1


async def malformed(raw: httpx.AsyncClient, url: str, step: int, tally: Tally) -> None:
    """One malformed message, POSTed raw: the screen answers it before any session."""
    kind, body, request_id, code = MALFORMED[(step // 7) % len(MALFORMED)]
    started = time.perf_counter()
    try:
        answer = await raw.post(url, content=body, headers=HEADERS)
    except httpx.TransportError:
        # uvicorn closes a keep-alive connection after 5 idle seconds; a POST sent on it
        # at that moment is lost (the client's race, not an answer). Counted, sent again.
        tally.resent += 1
        answer = await raw.post(url, content=body, headers=HEADERS)
    tally.latency[f"malformed: {kind}"].append(time.perf_counter() - started)
    try:
        error = answer.json()
        ok = (answer.status_code, error["id"], error["error"]["code"]) == (400, request_id, code)
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        tally.wrong(f"malformed: {kind}", f"{answer.status_code} {answer.text}")


async def call(session: ClientSession, step: int, tally: Tally) -> None:
    kind, tool, arguments, error_type = CALLS[step % len(CALLS)]
    started = time.perf_counter()
    try:
        result = await session.call_tool(tool, arguments)
    except Exception as exc:  # a protocol error: never expected here
        tally.wrong(kind, f"{type(exc).__name__}: {exc}")
        return
    tally.latency[kind].append(time.perf_counter() - started)
    text = getattr(result.content[0], "text", "") if result.content else ""
    if error_type is None:
        if result.is_error:
            tally.wrong(kind, text)
        return
    # An error result's fields are in its _meta (the text is prose for the model).
    error = (result.meta or {}).get("toolplug/error") or {}
    found = error.get("error_type", text) if result.is_error else "a success"
    if found != error_type:
        tally.wrong(kind, f"expected {error_type}, got {found}")


HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def soak(url: str, pid: int, clients: int, seconds: float) -> dict[str, Any]:
    """Every client initializes, then all loop together for ``seconds``."""
    tally = Tally()
    samples: list[tuple[float, int]] = []
    joined = 0
    everyone, done = anyio.Event(), anyio.Event()
    clock: dict[str, float] = {}

    async def one(offset: int) -> None:
        nonlocal joined
        async with (
            streamable_http_client(url) as (read, write, *_),
            ClientSession(read, write) as session,
            httpx.AsyncClient(timeout=60) as raw,
        ):
            await session.initialize()
            await session.list_tools()
            joined += 1
            if joined == clients:
                clock["start"] = time.monotonic()
                clock["deadline"] = clock["start"] + seconds
                everyone.set()
            await everyone.wait()
            step = offset * 3
            while time.monotonic() < clock["deadline"]:
                step += 1
                if step % 7 == 0:
                    await malformed(raw, url, step, tally)
                else:
                    await call(session, step, tally)

    async def sample() -> None:
        await everyone.wait()
        while not done.is_set():
            samples.append((time.monotonic(), rss(pid)))
            with anyio.move_on_after(1):
                await done.wait()

    async with anyio.create_task_group() as outer:
        outer.start_soon(sample)
        async with anyio.create_task_group() as group:
            for i in range(clients):
                group.start_soon(one, i)
        clock["end"] = time.monotonic()
        samples.append((clock["end"], rss(pid)))
        done.set()
    return {"tally": tally, "samples": samples, "elapsed": clock["end"] - clock["start"],
            "start": clock["start"]}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def report(outcome: dict[str, Any], clients: int, seconds: float) -> None:
    tally: Tally = outcome["tally"]
    elapsed: float = outcome["elapsed"]
    samples: list[tuple[float, int]] = outcome["samples"]
    every = [v for values in tally.latency.values() for v in values]
    print(f"{clients} clients, {seconds:g} s asked, {elapsed:.1f} s run: "
          f"{len(every):,} requests, {len(every) / elapsed:.0f} per second, "
          f"p50 {percentile(every, 0.5) * 1000:.1f} ms, "
          f"p99 {percentile(every, 0.99) * 1000:.1f} ms")
    print("\n| kind | requests | p50 ms | p99 ms |\n|---|---:|---:|---:|")
    for kind in sorted(tally.latency):
        values = tally.latency[kind]
        print(f"| {kind} | {len(values):,} | {statistics.median(values) * 1000:.1f} | "
              f"{percentile(values, 0.99) * 1000:.1f} |")
    start = outcome["start"]

    def at(share: float) -> float:
        moment = start + share * elapsed
        return min(samples, key=lambda s: abs(s[0] - moment))[1] / MIB

    peak = max(value for _, value in samples) / MIB
    marks = ", ".join(f"{label} {at(share):.1f}" for label, share in QUARTERS)
    print(f"\nserver RSS MiB: {marks}, peak {peak:.1f}")
    unexpected = sum(tally.unexpected.values())
    print(f"unexpected outcomes: {unexpected}; raw POSTs sent again after the server closed "
          f"an idle keep-alive connection under them: {tally.resent}")
    for what, count in tally.unexpected.most_common(10):
        print(f"  {count} x {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=150)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = site(Path(folder))
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "toolplug", "serve", "--http", f"127.0.0.1:{port}"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, cwd=folder,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("the server did not start") from None
                    time.sleep(0.1)
            url = f"http://127.0.0.1:{port}/mcp"
            outcome = anyio.run(soak, url, server.pid, args.clients, args.seconds)
        finally:
            server.terminate()
            server.wait(timeout=30)
    report(outcome, args.clients, args.seconds)


if __name__ == "__main__":
    main()
