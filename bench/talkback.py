"""Tools that talk back over ``toolplug serve --http``: what progress costs, and a question.

**Progress.** 200 calls in flight at once of a tool that works 100 steps of 5 ms and
reports progress after each (``context.report_progress``): once by a client that asked for
progress (a progress token: each report may become a ``notifications/progress`` on the
call's stream), once by the same client not asking (the reports go nowhere). Timed from
the first call sent to the last result received. The anchor, in the same round: the
official MCP SDK's ``MCPServer`` with the same tool written for it (``ctx.report_progress``
after each step), asked the same two ways. The figure is the ratio with progress over
without, per server; the issue asks for toolplug's to be within 1.1x.

**A question.** One call of a tool that asks its user (``context.ask``) over streamable
HTTP with a client that answers by elicitation: the HTTP requests the client made for it,
against a call of the same tool that does not ask (the difference is the question's round
trips), and the server's threads while 50 questions wait at once, against before.

    uv run python bench/talkback.py --calls 200 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from concurrent_calls import open_pool_client, served

STEPS = 100
STEP_SECONDS = 0.005

PLUGIN = f'''
import asyncio
from typing import Any

from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

FORM = {{"type": "object", "properties": {{"name": {{"type": "string"}}}}, "required": ["name"]}}


class Steps(Tool):
    metadata = ToolMetadata(
        name="steps", description="Work {STEPS} steps, reporting each.", category="utility"
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        for step in range(1, {STEPS} + 1):
            await asyncio.sleep({STEP_SECONDS})
            context.report_progress(step, {STEPS})
        return ToolResult.success("done")


class Ask(Tool):
    metadata = ToolMetadata(
        name="ask", description="Ask the user a name (or not).", category="utility",
        parameters={{"type": "object", "properties": {{"ask": {{"type": "boolean"}}}}}},
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        if not arguments.get("ask"):
            return ToolResult.success("hello")
        answer = await context.ask("Your name?", FORM)
        return ToolResult.success("hello " + str(answer.content.get("name")))


@hookimpl
def register_tools(register: Any) -> None:
    register(Steps)
    register(Ask)
'''

SDK_SERVER = f'''
import asyncio
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("anchor")


@server.tool(description="Work {STEPS} steps, reporting each.")
async def steps(ctx: Context) -> str:
    for step in range(1, {STEPS} + 1):
        await asyncio.sleep({STEP_SECONDS})
        await ctx.report_progress(step, {STEPS})
    return "done"


server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
'''


def site(folder: Path, interval: float | None = None) -> dict[str, str]:
    dist_info = folder / "bench_talk-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: bench-talk\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text("[toolplug]\ntalk = bench_talk\n", encoding="utf-8")
    (folder / "bench_talk.py").write_text(PLUGIN, encoding="utf-8")
    (folder / "anchor_server.py").write_text(SDK_SERVER, encoding="utf-8")
    chosen = "" if interval is None else f"[serve]\nprogress_interval_seconds = {interval}\n"
    (folder / "none.toml").write_text(chosen, encoding="utf-8")
    return {
        **os.environ,
        "PYTHONPATH": str(folder),
        "TOOLPLUG_PLUGINS": "bench-talk",
        "TOOLPLUG_CONFIG": str(folder / "none.toml"),
        "TOOLPLUG_CACHE_DIR": str(folder / "cache"),
    }


async def many(url: str, calls: int, *, progress: bool) -> tuple[float, int, int]:
    """Seconds for ``calls`` concurrent calls of ``steps``, asking for progress or not; the
    progress notifications heard, and by how many of the calls."""
    heard: dict[int, int] = {}

    async with open_pool_client() as client, streamable_http_client(
        url, http_client=client
    ) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        await session.call_tool("steps", {})  # warm

        async def one(call: int) -> None:
            async def note(progress: float, total: float | None, message: str | None) -> None:
                heard[call] = heard.get(call, 0) + 1

            result = await session.call_tool(
                "steps", {}, progress_callback=note if progress else None
            )
            assert not result.is_error, result

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for call in range(calls):
                group.start_soon(one, call)
        elapsed = time.perf_counter() - started
    if progress:
        assert heard, "no progress notification arrived"
    return elapsed, sum(heard.values()), len(heard)


def progress_figures(env: dict[str, str], folder: Path, calls: int, rounds: int) -> None:
    servers = {
        "toolplug serve --http": [sys.executable, "-m", "toolplug", "serve", "--http"],
        "MCP SDK MCPServer": [sys.executable, str(folder / "anchor_server.py")],
    }
    times: dict[tuple[str, bool], list[float]] = {}
    heard: dict[str, list[tuple[int, int]]] = {}
    for round_number in range(rounds):
        order = list(servers.items())
        if round_number % 2:
            order.reverse()
        for name, command in order:

            async def both(
                command: list[str] = command, name: str = name, turn: int = round_number
            ) -> None:
                async with served(command, env) as (url, _pid):
                    for progress in (False, True) if turn % 2 else (True, False):
                        elapsed, notes, reached = await many(url, calls, progress=progress)
                        times.setdefault((name, progress), []).append(elapsed)
                        if progress:
                            heard.setdefault(name, []).append((notes, reached))

            anyio.run(both)
    print(f"{calls} concurrent calls, {STEPS} progress reports each, median of {rounds} rounds")
    for name in servers:
        quiet = statistics.median(times[(name, False)])
        loud = statistics.median(times[(name, True)])
        print(f"  {name:24} without {quiet:6.3f} s  with {loud:6.3f} s  ratio {loud / quiet:.2f}x")
        notes, reached = heard[name][len(heard[name]) // 2]
        print(f"  {'':24} heard {notes} progress notification(s), by {reached} of the calls")


async def question(url: str, pid: int, waiting: int) -> None:
    """The HTTP requests one asking call takes beyond a plain one, and the server's threads
    while ``waiting`` questions are unanswered."""
    import httpx2

    requests = 0
    release = asyncio.Event()

    async def count(request: Any) -> None:
        nonlocal requests
        requests += 1

    async def answer(context: Any, params: Any) -> types.ElicitResult:
        await release.wait()
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with httpx2.AsyncClient(
        event_hooks={"request": [count]}, timeout=httpx2.Timeout(30, read=300),
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=None),
    ) as client, streamable_http_client(url, http_client=client) as streams, ClientSession(
        streams[0], streams[1], elicitation_callback=answer
    ) as session:
        await session.initialize()
        release.set()
        await session.call_tool("ask", {"ask": True})  # warm
        before = requests
        await session.call_tool("ask", {})
        plain = requests - before
        before = requests
        result = await session.call_tool("ask", {"ask": True})
        asking = requests - before
        assert "Ada" in str(result.content), result
        print(f"  one call: {plain} HTTP request(s); asking: {asking} ({asking - plain} more)")

        release.clear()
        threads_before = len(os.listdir(f"/proc/{pid}/task"))
        async with anyio.create_task_group() as group:
            for _ in range(waiting):
                group.start_soon(session.call_tool, "ask", {"ask": True})
            await anyio.sleep(1.0)  # every question asked and waiting
            threads_waiting = len(os.listdir(f"/proc/{pid}/task"))
            release.set()
        print(f"  server threads: {threads_before} idle, {threads_waiting} with {waiting} "
              "questions waiting")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-question", action="store_true")
    parser.add_argument(
        "--interval", type=float, default=None,
        help="[serve] progress_interval_seconds (default: toolplug's own)",
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        env = site(folder, options.interval)
        progress_figures(env, folder, options.calls, options.rounds)
        if not options.skip_question:
            print("a question over MCP (elicitation, streamable HTTP)")

            async def asked() -> None:
                command = [sys.executable, "-m", "toolplug", "serve", "--http"]
                async with served(command, env) as (url, pid):
                    await question(url, pid, 50)

            anyio.run(asked)


if __name__ == "__main__":
    main()
