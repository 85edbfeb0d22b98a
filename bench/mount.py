"""What does mounting an MCP server add, against the official MCP client calling it directly?

Run from the workspace root: ``uv run python bench/mount.py``.

One MCP server, written by this script into a temporary directory (the SDK's ``MCPServer``
with two tools: ``add``, two integers, and ``nap``, which waits 0.5 s), used two ways side
by side in one process: mounted (``[mcp_servers.NAME]``, each tool a toolplug tool named
``NAME_<tool>``, called with ``await registry.acall``), and through the official SDK's
``Client`` held open by the benchmark itself. Each way has its own server process over
stdio; over streamable HTTP both talk to one server on 127.0.0.1. The remote tools carry
no MCP annotations, so the servers are mounted with ``approval = "never"``.

* **one call**: sequential awaited calls of ``add``, in batches, the ways interleaved
  batch by batch, their order alternating by round; median time per call. Goal: the
  mounted call at most 1.15x the direct one. A third way shows what the mount's design
  costs by itself: the same SDK client opened on an event loop of another thread and
  called from this one, as the mount calls its sessions (they live on a loop of their
  own, ``toolplug.sources.mcp._host``).
* **200 concurrent calls** of ``nap`` (``asyncio.gather``) through the one mounted session
  against the direct client; wall time from the first call to the last result, medians.
  Goal: at most 1.2x. Over HTTP a third way is a direct client that also holds open what
  the mount holds: a ``subscriptions/listen`` stream for tool-list changes.
* **``toolplug list``** (``python -m toolplug list`` as a subprocess, with
  ``TOOLPLUG_NO_CACHE=1`` so the command line's output cache does not answer) with three
  mounted servers whose tool lists are cached (a first run fills that cache; the script
  checks no later run asks a server again) against the same command with a configuration
  that mounts nothing; every installed workspace plugin is loaded both times. Wall time,
  and the command's CPU time. Goal: within 1.5x.

Nothing leaves the loopback interface; every loop is bounded; every server is stopped at
the end (the mounted ones by ``registry.close()``).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

import toolplug
from toolplug import Registry

NAP_SECONDS = 0.5

SERVER = '''
"""The MCP server of bench/mount.py: stdio, or streamable HTTP on 127.0.0.1:PORT."""
import asyncio
import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("bench-mount")


@app.tool(description="Add two integers.")
async def add(a: int, b: int) -> int:
    return a + b


@app.tool(description="Wait half a second, then answer.")
async def nap() -> str:
    await asyncio.sleep(0.5)
    return "rested"


if len(sys.argv) > 1:
    app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
else:
    app.run()
'''

Call = Callable[[], Coroutine[Any, Any, Any]]
STDIO_DIRECT = "stdio: MCP SDK Client.call_tool"
STDIO_HOP = "stdio: the same, from another thread's loop (the hop alone)"
STDIO_MOUNTED = "stdio: mounted, await registry.acall"
HTTP_DIRECT = "HTTP: MCP SDK Client.call_tool"
HTTP_HOP = "HTTP: the same, from another thread's loop (the hop alone)"
HTTP_LISTENING = "HTTP: MCP SDK Client.call_tool, a listen stream open"
HTTP_MOUNTED = "HTTP: mounted, await registry.acall"
LIST_BARE = "toolplug list, nothing mounted"
LIST_MOUNTED = "toolplug list, 3 servers mounted"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_http(script: Path, log: Any) -> tuple[subprocess.Popen[bytes], str]:
    """The server on a free loopback port, once it accepts connections; and its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the HTTP server did not start") from None
            time.sleep(0.05)


# -- 1 and 2: calls ----------------------------------------------------------------------


def mounted_call(registry: Registry, name: str, arguments: dict[str, Any], want: str) -> Call:
    async def once() -> None:
        result = await registry.acall(name, arguments)
        assert result.ok, result
        assert result.output == want, result

    return once


def direct_call(client: Client, name: str, arguments: dict[str, Any], want: str) -> Call:
    async def once() -> None:
        result = await client.call_tool(name, arguments)
        assert not result.is_error, result
        assert getattr(result.content[0], "text", None) == want, result

    return once


async def per_call(call: Call, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        await call()
    return (time.perf_counter() - started) / n


async def all_at_once(call: Call, n: int) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(call() for _ in range(n)))
    return time.perf_counter() - started


async def interleaved(
    ways: dict[str, Call], measure: Callable[[Call], Awaitable[float]], rounds: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for number in range(rounds):
        order = list(ways) if number % 2 == 0 else list(reversed(ways))
        for name in order:
            samples[name].append(await measure(ways[name]))
    return samples


class Elsewhere:
    """SDK clients opened, called and closed on the event loop of another thread: the hop
    the mount makes to its sessions' loop, without toolplug."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._closing = asyncio.Event()  # bound to self.loop when first awaited there
        self._owner: concurrent.futures.Future[None] | None = None

    async def open(self, clients: list[Client]) -> None:
        """Enter the clients in one task there (a session belongs to the task that opened it)."""
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        async def own() -> None:
            try:
                async with contextlib.AsyncExitStack() as stack:
                    for client in clients:
                        await stack.enter_async_context(client)
                    ready.set_result(None)
                    await self._closing.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        self._owner = asyncio.run_coroutine_threadsafe(own(), self.loop)
        await asyncio.wait_for(asyncio.wrap_future(ready), 30)

    def call(self, client: Client, name: str, arguments: dict[str, Any], want: str) -> Call:
        there = direct_call(client, name, arguments, want)

        async def once() -> None:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(there(), self.loop))

        return once

    async def close(self) -> None:
        self.loop.call_soon_threadsafe(self._closing.set)
        if self._owner is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.wrap_future(self._owner), 15)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


async def hold_listen(client: Client, ready: asyncio.Event) -> None:
    """A ``subscriptions/listen`` stream for tool-list changes, held open as the mount's is."""
    async with client.listen(tools_list_changed=True) as subscription:
        ready.set()
        async for _event in subscription:
            pass


async def calls(
    registry: Registry, script: Path, url: str, log: Any, options: argparse.Namespace
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    params = StdioServerParameters(command=sys.executable, args=[str(script)])
    add = {"a": 2, "b": 3}
    # The SDK's client as a user writes it. Its server's stderr goes to the log file, as
    # the mounted server's goes to one, so neither writes to the terminal.
    elsewhere = Elsewhere()
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(elsewhere.close)
        over_stdio = await stack.enter_async_context(Client(stdio_client(params, errlog=log)))
        # The same client, used from another thread's loop: the hop alone.
        hop_stdio = Client(stdio_client(params, errlog=log))
        hop_http = None if options.no_http else Client(url)
        await elsewhere.open([hop_stdio] if hop_http is None else [hop_stdio, hop_http])
        single = {
            STDIO_DIRECT: direct_call(over_stdio, "add", add, "5"),
            STDIO_HOP: elsewhere.call(hop_stdio, "add", add, "5"),
            STDIO_MOUNTED: mounted_call(registry, "local_add", add, "5"),
        }
        nap = {
            STDIO_DIRECT: direct_call(over_stdio, "nap", {}, "rested"),
            STDIO_MOUNTED: mounted_call(registry, "local_nap", {}, "rested"),
        }
        if hop_http is not None:
            over_http = await stack.enter_async_context(Client(url))
            # A second direct client with what the mount holds besides its calls: a listen
            # stream for tool-list changes (the server offers them), which keeps one of
            # the HTTP client's pooled connections (100 by default) busy.
            listening = await stack.enter_async_context(Client(url))
            ready = asyncio.Event()
            listener = asyncio.create_task(hold_listen(listening, ready))
            stack.push_async_callback(stop, listener)
            await asyncio.wait_for(ready.wait(), 10)
            single |= {
                HTTP_DIRECT: direct_call(over_http, "add", add, "5"),
                HTTP_HOP: elsewhere.call(hop_http, "add", add, "5"),
                HTTP_MOUNTED: mounted_call(registry, "remote_add", add, "5"),
            }
            nap |= {
                HTTP_DIRECT: direct_call(over_http, "nap", {}, "rested"),
                HTTP_LISTENING: direct_call(listening, "nap", {}, "rested"),
                HTTP_MOUNTED: mounted_call(registry, "remote_nap", {}, "rested"),
            }
        for call in single.values():  # warm up: sessions, imports, compiled validators
            await per_call(call, 20)
        for call in nap.values():
            await call()
        one = await interleaved(
            single, lambda call: per_call(call, options.batch), options.rounds
        )
        print("one call: done", file=sys.stderr)
        many = await interleaved(
            nap, lambda call: all_at_once(call, options.calls), options.concurrent_rounds
        )
        print("concurrent calls: done", file=sys.stderr)
        return one, many


async def stop(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


# -- 3: toolplug list --------------------------------------------------------------------


def list_configs(folder: Path, script: Path) -> tuple[Path, Path]:
    """A configuration mounting three stdio servers, and one mounting none; one cache_dir."""
    servers = "".join(
        f'\n[mcp_servers.{name}]\ncommand = "{sys.executable}"\nargs = ["{script}"]\n'
        for name in ("alpha", "beta", "gamma")
    )
    mounting = folder / "mounting" / "toolplug.toml"
    bare = folder / "bare" / "toolplug.toml"
    for path, body in ((mounting, servers), (bare, "")):
        path.parent.mkdir()
        path.write_text(f'cache_dir = "{folder / "cache"}"\n{body}', encoding="utf-8")
    return mounting, bare


def run_list(config: Path, env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user and system) of the command, and what it printed."""
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "toolplug", "list"],
        env={**env, "TOOLPLUG_CONFIG": str(config)},
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime - cpu.ru_utime + after.ru_stime - cpu.ru_stime
    return elapsed, used, done.stdout


def cli(
    folder: Path, script: Path, runs: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    mounting, bare = list_configs(folder, script)
    base = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPLUG_")}
    env = {**base, "TOOLPLUG_NO_CACHE": "1", "TOOLPLUG_CACHE_DIR": str(folder / "cli-cache")}
    ways = {LIST_BARE: bare, LIST_MOUNTED: mounting}
    # The first run with the servers asks each of them and stores their tool lists.
    _, _, shown = run_list(mounting, env, folder)
    listings = [folder / "cache" / "mcp" / f"{name}.json" for name in ("alpha", "beta", "gamma")]
    stored = [path.stat().st_mtime_ns for path in listings]
    for name, path in zip(("alpha", "beta", "gamma"), listings, strict=True):
        assert '"problem": null' in path.read_text(encoding="utf-8"), name
        assert f"{name}_add" in shown, shown
        assert f"{name}_nap" in shown, shown
    for config in ways.values():  # warm up: file cache, .pyc
        run_list(config, env, folder)
    wall: dict[str, list[float]] = {name: [] for name in ways}
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    for number in range(runs):
        order = list(ways) if number % 2 == 0 else list(reversed(ways))
        for name in order:
            elapsed, used, shown = run_list(ways[name], env, folder)
            wall[name].append(elapsed)
            cpu[name].append(used)
            assert ("alpha_add" in shown) == (name == LIST_MOUNTED), shown
    # The cached lists answered every run: no server was asked again.
    assert [path.stat().st_mtime_ns for path in listings] == stored
    print("toolplug list: done", file=sys.stderr)
    return wall, cpu


# -- the report --------------------------------------------------------------------------


def ratio_table(
    title: str,
    samples: dict[str, list[float]],
    pairs: dict[str, tuple[str, float | None]],
    unit: str,
    scale: float,
) -> None:
    """Medians, ranges, and each way over its anchor (``pairs``: way -> anchor, goal)."""
    median = {name: statistics.median(values) for name, values in samples.items()}
    print(f"{title}\n")
    print(f"| way | median {unit} | min-max {unit} | ratio | goal |")
    print("|---|---:|---:|---:|---|")
    for name, value in median.items():
        low, high = min(samples[name]) * scale, max(samples[name]) * scale
        cells = f"| {name} | {value * scale:.3f} | {low:.3f}-{high:.3f} |"
        if name not in pairs:
            print(f"{cells} (anchor) | |")
            continue
        anchor, goal = pairs[name]
        ratio = value / median[anchor]
        verdict = "" if goal is None else f"<= {goal}x: {'met' if ratio <= goal else 'missed'}"
        print(f"{cells} {ratio:.2f}x | {verdict} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds of sequential calls")
    parser.add_argument("--batch", type=int, default=200, help="sequential calls per batch")
    parser.add_argument("--calls", type=int, default=200, help="concurrent calls")
    parser.add_argument("--concurrent-rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=15, help="rounds of `toolplug list`")
    parser.add_argument("--no-http", action="store_true", help="stdio only")
    options = parser.parse_args()
    for name in ("rounds", "batch", "calls", "concurrent_rounds", "runs"):
        if not 1 <= getattr(options, name) <= 10_000:
            parser.error(f"--{name.replace('_', '-')} must be between 1 and 10000")

    with tempfile.TemporaryDirectory(prefix="toolplug-bench-mount-") as name:
        folder = Path(name)
        script = folder / "bench_server.py"
        script.write_text(SERVER, encoding="utf-8")
        with open(folder / "servers.log", "w", encoding="utf-8") as log:
            http: subprocess.Popen[bytes] | None = None
            url = "http://127.0.0.1:1/mcp"
            if not options.no_http:
                http, url = start_http(script, log)
            try:
                servers: dict[str, Any] = {
                    "local": {"command": sys.executable, "args": [str(script)]},
                }
                if http is not None:
                    servers["remote"] = {"url": url}
                for server in servers.values():
                    server["approval"] = "never"  # no annotations: approval otherwise
                registry = toolplug.load(
                    {"cache_dir": str(folder / "cache-calls"), "mcp_servers": servers},
                    env={"TOOLPLUG_PLUGINS": ""},
                    strict=True,
                )
                try:
                    one, many = asyncio.run(calls(registry, script, url, log, options))
                finally:
                    registry.close()  # the mounted sessions end, and their servers
            finally:
                if http is not None:
                    http.terminate()
                    try:
                        http.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        http.kill()
                        http.wait(timeout=10)
        listing, listing_cpu = cli(folder, script, options.runs)

    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end; "
        f"Python {sys.version.split()[0]}\n"
    )
    ratio_table(
        f"One call of `add`, sequential, {options.batch} per batch, {options.rounds} rounds",
        one,
        {
            STDIO_HOP: (STDIO_DIRECT, None),
            STDIO_MOUNTED: (STDIO_DIRECT, 1.15),
            HTTP_HOP: (HTTP_DIRECT, None),
            HTTP_MOUNTED: (HTTP_DIRECT, 1.15),
        },
        "ms per call",
        1e3,
    )
    ratio_table(
        f"{options.calls} concurrent calls of a {NAP_SECONDS} s tool, "
        f"{options.concurrent_rounds} rounds",
        many,
        {
            STDIO_MOUNTED: (STDIO_DIRECT, 1.2),
            HTTP_LISTENING: (HTTP_DIRECT, None),
            HTTP_MOUNTED: (HTTP_DIRECT, 1.2),
        },
        "s",
        1.0,
    )
    ratio_table(
        f"`python -m toolplug list`, TOOLPLUG_NO_CACHE=1, {options.runs} rounds",
        listing,
        {LIST_MOUNTED: (LIST_BARE, 1.5)},
        "ms per run",
        1e3,
    )
    ratio_table(
        "The same runs, CPU time of the command (user and system)",
        listing_cpu,
        {LIST_MOUNTED: (LIST_BARE, None)},
        "CPU ms per run",
        1e3,
    )

if __name__ == "__main__":
    main()
