"""A 5 MB image returned by a tool: in process, and over MCP stdio and HTTP, against the SDK.

The path a screenshot or chart takes: a tool returns an ``Image`` part, the host receives
the bytes. Timed per call (median of ``--calls`` sequential calls after a warm-up), from
the request sent to the result's image decoded, so base64 on the wire and the copies each
side makes are in the figure. Anchors, in the same round:

- in process: ``await registry.acall`` against the tool's own coroutine (the floor);
- over MCP: the official MCP SDK's ``MCPServer`` returning the same bytes as its own
  ``Image``, over the same transport, to the same official client.

Memory: 200 results of the image held at once in process (``tracemalloc`` peak over the
bytes themselves), so a copy per consumer would show as a multiple of 200 x 5 MB.

    uv run python bench/parts.py --calls 20 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import statistics
import struct
import sys
import tempfile
import time
import tracemalloc
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession

sys.path.insert(0, str(Path(__file__).resolve().parent))
from concurrent_calls import served, stdio

import toolplug
from toolplug import Image, Tool, ToolMetadata, ToolResult, hookimpl

SIZE = 5 * 1024 * 1024


def big_png(size: int = SIZE) -> bytes:
    """A valid PNG of about ``size`` bytes: random pixels, stored uncompressed."""
    width = 1024
    rows = max(1, size // (width * 3 + 1))
    raw = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(rows))

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, rows, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 0))
        + chunk(b"IEND", b"")
    )


PLUGIN = '''
from pathlib import Path
from typing import Any

from toolplug import Image, Tool, ToolMetadata, ToolResult, hookimpl

DATA = Path(__file__).with_name("image.png").read_bytes()


class Picture(Tool):
    metadata = ToolMetadata(
        name="picture", description="Return the picture.", category="utility", parts=("image",)
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success("The picture.", parts=[Image(DATA, "image/png")])


@hookimpl
def register_tools(register: Any) -> None:
    register(Picture)
'''

SDK_SERVER = '''
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image

DATA = Path(__file__).with_name("image.png").read_bytes()
server = MCPServer("anchor")


@server.tool(description="Return the picture.")
async def picture() -> list:
    return ["The picture.", Image(data=DATA, format="png")]


if len(sys.argv) > 1:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
else:
    server.run()
'''


def site(folder: Path, data: bytes) -> dict[str, str]:
    dist_info = folder / "bench_picture-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: bench-picture\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(
        "[toolplug]\npicture = bench_picture\n", encoding="utf-8"
    )
    (folder / "bench_picture.py").write_text(PLUGIN, encoding="utf-8")
    (folder / "anchor_server.py").write_text(SDK_SERVER, encoding="utf-8")
    (folder / "image.png").write_bytes(data)
    (folder / "none.toml").write_text("", encoding="utf-8")
    return {
        **os.environ,
        "PYTHONPATH": str(folder),
        "TOOLPLUG_PLUGINS": "bench-picture",
        "TOOLPLUG_CONFIG": str(folder / "none.toml"),
        "TOOLPLUG_CACHE_DIR": str(folder / "cache"),
    }


def _image_of(result: Any, data: bytes) -> None:
    images = [c for c in result.content if c.type == "image"]
    assert images, result
    assert base64.b64decode(images[0].data) == data


async def per_call(session: ClientSession, data: bytes, calls: int) -> float:
    await session.initialize()
    _image_of(await session.call_tool("picture", {}), data)  # warm
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        _image_of(await session.call_tool("picture", {}), data)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def over_stdio(command: list[str], env: dict[str, str], data: bytes, calls: int) -> float:
    async with stdio(command, env)() as streams, ClientSession(*streams[:2]) as session:
        return await per_call(session, data, calls)


async def over_http(command: list[str], env: dict[str, str], data: bytes, calls: int) -> float:
    from mcp.client.streamable_http import streamable_http_client

    # the SDK client refuses an SSE event over 1 MB by default: this bench lifts that for
    # both servers (a 5 MB image is one event)
    async with served(command, env) as (url, _pid), streamable_http_client(
        url, max_sse_event_size=None
    ) as streams, ClientSession(streams[0], streams[1]) as session:
        return await per_call(session, data, calls)


class _Picture(Tool):
    data: bytes = b""
    metadata = ToolMetadata(
        name="picture", description="Return the picture.", category="utility", parts=("image",)
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success("The picture.", parts=[Image(self.data, "image/png")])


class _Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(_Picture)


async def in_process(calls: int) -> float:
    tools = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("picture", _Plugin())])
    try:
        await tools.acall("picture", {})
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            result = await tools.acall("picture", {})
            times.append(time.perf_counter() - started)
            assert result.ok, result
            assert result.parts, result
        return statistics.median(times)
    finally:
        tools.close()


async def bare(calls: int) -> float:
    tool = _Picture()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await tool.run({}, None)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def memory(count: int = 200) -> tuple[float, float]:
    """Peak MB traced while ``count`` results are held at once, and the image's own MB."""
    tools = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("picture", _Plugin())])
    try:
        await tools.acall("picture", {})
        tracemalloc.start()
        held = await asyncio.gather(*(tools.acall("picture", {}) for _ in range(count)))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert all(r.ok for r in held)
        return peak / 1e6, len(_Picture.data) / 1e6
    finally:
        tools.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    data = big_png()
    _Picture.data = data
    with tempfile.TemporaryDirectory() as folder:
        env = site(Path(folder), data)
        ours = [sys.executable, "-m", "toolplug", "serve"]
        anchor = [sys.executable, str(Path(folder) / "anchor_server.py")]
        calls = options.calls
        ways: dict[str, Callable[[], Awaitable[float]]] = {
            "the tool's coroutine (floor)": lambda: bare(calls),
            "toolplug await registry.acall": lambda: in_process(calls),
            "toolplug serve, stdio": lambda: over_stdio(ours, env, data, calls),
            "MCP SDK MCPServer, stdio": lambda: over_stdio(anchor, env, data, calls),
            "toolplug serve --http": lambda: over_http([*ours, "--http"], env, data, calls),
            "MCP SDK MCPServer, HTTP": lambda: over_http(anchor, env, data, calls),
        }
        times: dict[str, list[float]] = {name: [] for name in ways}
        for round_number in range(options.rounds):
            order = list(ways) if round_number % 2 == 0 else list(reversed(ways))
            for name in order:
                times[name].append(anyio.run(ways[name]))
                print(f"round {round_number + 1}: {name}: {times[name][-1] * 1e3:.1f} ms",
                      file=sys.stderr)
        peak, image = anyio.run(memory)
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"one {len(data) / 1e6:.1f} MB PNG per call, {calls} calls, {options.rounds} rounds\n")
    print("| way | median ms |")
    print("|---|---:|")
    for name, value in median.items():
        print(f"| {name} | {value * 1e3:.2f} |")
    print()
    for ours_name, theirs in (
        ("toolplug serve, stdio", "MCP SDK MCPServer, stdio"),
        ("toolplug serve --http", "MCP SDK MCPServer, HTTP"),
    ):
        print(f"{ours_name} / {theirs}: {median[ours_name] / median[theirs]:.2f}x")
    print(f"\n200 results held at once: peak {peak:.1f} MB traced, the image {image:.1f} MB "
          f"({peak / image:.2f} images)")


if __name__ == "__main__":
    main()
