"""``toolplug serve`` ends cleanly: every call in flight gets an answer or an error it reads.

The real server (``python -m toolplug serve``) in a subprocess, the official SDK's client,
and a real signal. Tools report their process id in a mark file when they start, so the
test knows both that the calls are in flight and which process to signal (the SDK's stdio
client does not say). The grace period is short where the test waits it out; the
assertions are about which call got which answer, never about how long anything took.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.helpers.serve import (
    CONFIG,
    TIMEOUT,
    child_env,
    free_port,
    http_server,
    stdio_params,
    text_of,
)

NAP_TOOLS = r'''
import asyncio
import os
from pathlib import Path
from typing import Any

from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

MARKS = Path(os.environ["MCP_TEST_MARKS"])


class Nap(Tool):
    metadata = ToolMetadata(
        name="nap",
        description="Sleep for the given seconds, then say so.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}},
            "required": ["seconds", "label"],
        },
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        (MARKS / arguments["label"]).write_text(str(os.getpid()), encoding="utf-8")
        await asyncio.sleep(arguments["seconds"])
        return ToolResult.success(f"slept {arguments['seconds']} s ({arguments['label']})")


@hookimpl
def register_tools(register: Any) -> None:
    register(Nap)
'''

NAP_CONFIG = CONFIG + """
[tools.nap]
timeout_seconds = 120
"""

SHUTTING_DOWN = -32000


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    monkeypatch.setenv("MCP_TEST_MARKS", str(folder))
    return folder


def server_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        **child_env(tmp_path, ("mcp_nap_tools", NAP_TOOLS), NAP_CONFIG),
    }


async def started(marks: Path, *labels: str) -> int:
    """The server's process id, once every labelled call has started."""
    for label in labels:
        while not (marks / label).exists() or not (marks / label).read_text():
            await anyio.sleep(0.02)
    return int((marks / labels[0]).read_text(encoding="utf-8"))


def gone(pid: int) -> bool:
    """Whether the process has ended (a zombie has: the SDK's client reaps it only later)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.parent.is_dir() and Path("/proc/self/stat").exists():
        try:
            return stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0] in "ZX"
        except FileNotFoundError:
            return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


Outcome = types.CallToolResult | MCPError


async def naps(
    client: ClientSession, marks: Path, seconds: dict[str, float], sig: signal.Signals
) -> dict[str, Outcome]:
    """Start one nap per label, signal the server once all have started, collect outcomes."""
    outcomes: dict[str, Outcome] = {}

    async def nap(label: str) -> None:
        try:
            outcomes[label] = await client.call_tool(
                "nap", {"seconds": seconds[label], "label": label}
            )
        except MCPError as exc:
            outcomes[label] = exc

    await client.list_tools()  # as hosts do; the client checks results against the list
    async with anyio.create_task_group() as group:
        for label in seconds:
            group.start_soon(nap, label)
        pid = await started(marks, *seconds)
        os.kill(pid, sig)
        # Once the signal has landed, a new call is refused with an error it can read.
        for attempt in range(10_000):
            try:
                await client.call_tool("nap", {"seconds": 0, "label": f"late-{attempt}"})
            except MCPError as exc:
                outcomes["late"] = exc
                break
            await anyio.sleep(0.02)
    return outcomes


def refused(outcome: Outcome) -> None:
    assert isinstance(outcome, MCPError), outcome
    assert outcome.error.code == SHUTTING_DOWN
    assert "shutting down and takes no new calls" in outcome.error.message


def answered(outcome: Outcome, label: str) -> None:
    assert isinstance(outcome, types.CallToolResult), outcome
    assert not outcome.is_error, text_of(outcome)
    assert f"({label})" in text_of(outcome)


def cancelled(outcome: Outcome, grace: str) -> None:
    assert isinstance(outcome, MCPError), outcome
    assert outcome.error.code == SHUTTING_DOWN
    assert "shutting down" in outcome.error.message
    assert f"{grace} s grace period" in outcome.error.message


# -- streamable HTTP ----------------------------------------------------------------------


def test_http_sigterm_lets_calls_within_the_grace_answer(tmp_path: Path, marks: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    async def session() -> dict[str, Outcome]:
        with anyio.fail_after(TIMEOUT):
            async with (
                streamable_http_client(url) as (read, write, *_),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                return await naps(client, marks, {"a": 3, "b": 3, "c": 3}, signal.SIGTERM)

    with http_server(tmp_path, port, env=server_env(tmp_path)) as process:
        outcomes = anyio.run(session)
        assert process.wait(timeout=TIMEOUT) == -signal.SIGTERM
    for label in "abc":
        answered(outcomes[label], label)
    refused(outcomes["late"])
    assert "Traceback" not in (tmp_path / "http-stderr.txt").read_text(encoding="utf-8")


def test_http_sigterm_cancels_calls_past_the_grace(tmp_path: Path, marks: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    async def session() -> dict[str, Outcome]:
        with anyio.fail_after(TIMEOUT):
            async with (
                streamable_http_client(url) as (read, write, *_),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                return await naps(client, marks, {"short": 0.2, "x": 60, "y": 60}, signal.SIGTERM)

    env = server_env(tmp_path)
    with http_server(tmp_path, port, "--shutdown-grace", "1.5", env=env) as process:
        outcomes = anyio.run(session)
        assert process.wait(timeout=TIMEOUT) == -signal.SIGTERM
    answered(outcomes["short"], "short")
    cancelled(outcomes["x"], "1.5")
    cancelled(outcomes["y"], "1.5")
    refused(outcomes["late"])


# -- stdio --------------------------------------------------------------------------------


def test_stdio_sigint_exits_within_the_grace_while_stdin_stays_open(
    tmp_path: Path, marks: Path
) -> None:
    child_env(tmp_path, ("mcp_nap_tools", NAP_TOOLS), NAP_CONFIG)  # installs the nap tool
    server = stdio_params(tmp_path, "--shutdown-grace", "1.5")
    server.env = {**(server.env or {}), "MCP_TEST_MARKS": str(marks)}
    exited: list[bool] = []

    async def session() -> dict[str, Outcome]:
        with anyio.fail_after(TIMEOUT):
            async with (
                stdio_client(server, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                outcomes = await naps(client, marks, {"short": 0.2, "long": 60}, signal.SIGINT)
                # The client still holds the server's stdin open: the server ends anyway.
                pid = int((marks / "short").read_text(encoding="utf-8"))
                while not gone(pid):
                    await anyio.sleep(0.05)
                exited.append(True)
                return outcomes

    errors = tmp_path / "stderr.txt"
    with errors.open("w", encoding="utf-8") as errlog:
        outcomes = anyio.run(session)
    assert exited == [True]
    answered(outcomes["short"], "short")
    cancelled(outcomes["long"], "1.5")
    refused(outcomes["late"])
    log = errors.read_text(encoding="utf-8")
    assert "toolplug: interrupted" in log
    assert "Traceback" not in log
