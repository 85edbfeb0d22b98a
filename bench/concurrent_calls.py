"""200 concurrent calls of a 0.5 s async tool: in process, over MCP stdio and HTTP.

The path agent hosts and MCP clients take: many calls of an async tool in flight at
once. Each way is timed from the first call sent to the last result received; start-up
and ``initialize`` are not counted. Anchors, run in the same round as toolplug:

- in process: a bare ``asyncio.gather`` of the tool's coroutine (the floor, 0.5 s);
- over MCP: the official MCP SDK's own ``MCPServer`` serving an equivalent tool
  (``async def nap() -> str: await asyncio.sleep(0.5)``), over the same transport, with
  the same official client.

Rounds alternate the order of the ways; medians are reported.

    uv run python bench/concurrent_calls.py --calls 200 --rounds 3
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
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import toolplug
from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

NAP_SECONDS = 0.5

PLUGIN = '''
import asyncio
from typing import Any

from toolplug import Tool, ToolMetadata, ToolResult, hookimpl


class Nap(Tool):
    metadata = ToolMetadata(
        name="nap", description="Wait half a second, then answer.", category="utility"
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        await asyncio.sleep(0.5)
        return ToolResult.success("rested")


@hookimpl
def register_tools(register: Any) -> None:
    register(Nap)
'''

SDK_SERVER = '''
import asyncio
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("anchor")


@server.tool(description="Wait half a second, then answer.")
async def nap() -> str:
    await asyncio.sleep(0.5)
    return "rested"


if len(sys.argv) > 1:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
else:
    server.run()
'''


class Nap(Tool):
    metadata = ToolMetadata(
        name="nap", description="Wait half a second, then answer.", category="utility"
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        await asyncio.sleep(NAP_SECONDS)
        return ToolResult.success("rested")


class NapPlugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Nap)


def site(folder: Path) -> dict[str, str]:
    """The nap plugin installed as a distribution, and the environment that finds it."""
    dist_info = folder / "bench_nap-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: bench-nap\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text("[toolplug]\nnap = bench_nap\n", encoding="utf-8")
    (folder / "bench_nap.py").write_text(PLUGIN, encoding="utf-8")
    (folder / "anchor_server.py").write_text(SDK_SERVER, encoding="utf-8")
    (folder / "none.toml").write_text("", encoding="utf-8")
    return {
        **os.environ,
        "PYTHONPATH": str(folder),
        "TOOLPLUG_PLUGINS": "bench-nap",
        "TOOLPLUG_CONFIG": str(folder / "none.toml"),
        "TOOLPLUG_CACHE_DIR": str(folder / "cache"),
    }


Transport = Callable[[], AbstractAsyncContextManager[Any]]


async def over_mcp(transport: Transport, calls: int) -> float:
    """Seconds from the first call to the last result, all calls in flight at once."""
    async with transport() as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        await session.call_tool("nap", {})  # warm: imports and compiled validators
        results: list[Any] = []

        async def one() -> None:
            result = await session.call_tool("nap", {})
            assert not result.is_error, result
            results.append(result)

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(one)
        elapsed = time.perf_counter() - started
        assert len(results) == calls
        return elapsed


def stdio(command: list[str], env: dict[str, str]) -> Transport:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    return lambda: stdio_client(params, errlog=sys.stderr)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def open_pool_client() -> Any:
    """The MCP client's HTTP client, its connection pool sized for every call at once.

    The default one (``create_mcp_http_client``) keeps httpx's pool of 100 connections, so
    of 200 calls the second hundred wait for a connection in the client: that measures the
    client, not the server. Same timeouts as the default.
    """
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=None),
    )


@asynccontextmanager
async def served(command: list[str], env: dict[str, str]) -> AsyncIterator[tuple[str, int]]:
    """An MCP server over streamable HTTP started on a free port (``command`` a script,
    given the port, or ``toolplug serve --http``, given the address): its URL and process
    id, until the block ends. Shared by the benches that measure over HTTP."""
    port = free_port()
    process = subprocess.Popen(
        [*command, str(port)] if command[-1].endswith(".py") else [*command, f"127.0.0.1:{port}"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"{command} did not start") from None
                await anyio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", process.pid
    finally:
        process.terminate()
        process.wait(timeout=15)


async def over_http(
    command: list[str], env: dict[str, str], calls: int, *, open_pool: bool = False
) -> float:
    async with served(command, env) as (url, _pid):
        if not open_pool:
            return await over_mcp(lambda: streamable_http_client(url), calls)
        async with open_pool_client() as client:
            return await over_mcp(lambda: streamable_http_client(url, http_client=client), calls)


async def in_process(calls: int) -> float:
    tools = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("nap", NapPlugin())])
    await tools.acall("nap", {})
    started = time.perf_counter()
    results = await asyncio.gather(*(tools.acall("nap", {}) for _ in range(calls)))
    elapsed = time.perf_counter() - started
    assert all(r.ok for r in results)
    tools.close()
    return elapsed


async def bare(calls: int) -> float:
    tool = Nap()
    started = time.perf_counter()
    await asyncio.gather(*(tool.run({}, None) for _ in range(calls)))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    calls = options.calls

    with tempfile.TemporaryDirectory() as folder:
        env = site(Path(folder))
        toolplug_cmd = [sys.executable, "-m", "toolplug", "serve"]
        anchor_cmd = [sys.executable, str(Path(folder) / "anchor_server.py")]
        ways: dict[str, Callable[[], Awaitable[float]]] = {
            "bare asyncio.gather (floor)": lambda: bare(calls),
            "toolplug await registry.acall": lambda: in_process(calls),
            "toolplug serve, stdio": lambda: over_mcp(stdio(toolplug_cmd, env), calls),
            "MCP SDK MCPServer, stdio": lambda: over_mcp(stdio(anchor_cmd, env), calls),
            "toolplug serve --http": lambda: over_http([*toolplug_cmd, "--http"], env, calls),
            "MCP SDK MCPServer, HTTP": lambda: over_http(anchor_cmd, env, calls),
            "toolplug serve --http, open pool": lambda: over_http(
                [*toolplug_cmd, "--http"], env, calls, open_pool=True
            ),
            "MCP SDK MCPServer, HTTP, open pool": lambda: over_http(
                anchor_cmd, env, calls, open_pool=True
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in ways}
        for round_number in range(options.rounds):
            order = list(ways)
            if round_number % 2:
                order.reverse()
            for name in order:
                times[name].append(anyio.run(ways[name]))
                print(f"round {round_number + 1}: {name}: {times[name][-1]:.3f} s", file=sys.stderr)

    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{calls} concurrent calls of a {NAP_SECONDS} s async tool, {options.rounds} rounds\n")
    print("| way | median s | x floor |")
    print("|---|---:|---:|")
    floor = median["bare asyncio.gather (floor)"]
    for name, value in median.items():
        print(f"| {name} | {value:.3f} | {value / floor:.2f} |")
    print()
    for ours, theirs in (
        ("toolplug serve, stdio", "MCP SDK MCPServer, stdio"),
        ("toolplug serve --http", "MCP SDK MCPServer, HTTP"),
        ("toolplug serve --http, open pool", "MCP SDK MCPServer, HTTP, open pool"),
    ):
        print(f"{ours} / {theirs}: {median[ours] / median[theirs]:.2f}x")


if __name__ == "__main__":
    main()
