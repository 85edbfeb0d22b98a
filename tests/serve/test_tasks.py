"""Calls as tasks over MCP (the Tasks extension, SEP-2663): the official SDK's ``Client`` at
its latest protocol version, against ``toolplug serve`` over streamable HTTP and stdio, and
against two real replicas sharing a real Redis, one of them killed mid-task.

The client half of the extension is tests/helpers/tasks.py. Every wait is bounded; no
assertion is about time.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError
from mcp.types.version import LATEST_MODERN_VERSION

from tests.helpers import tasks
from tests.helpers.posting import approvals_cli
from tests.helpers.redis import redis_server
from tests.helpers.serve import TIMEOUT, child_env, free_port, http_server, stdio_params

SLEEPY = r"""
import asyncio
import pathlib
from typing import Any

from toolplug import Tool, ToolMetadata, ToolResult, hookimpl


class Sleepy(Tool):
    metadata = ToolMetadata(
        name="sleepy",
        description="Wait until a file appears.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {"until": {"type": "string"}, "marker": {"type": "string"}},
            "required": ["until", "marker"],
        },
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        report = context.host.get("progress")
        pathlib.Path(arguments["marker"] + ".started").write_text("")
        try:
            rounds = 0
            while not pathlib.Path(arguments["until"]).exists():
                rounds += 1
                if report is not None:
                    report(rounds, None)
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            pathlib.Path(arguments["marker"] + ".cancelled").write_text("")
            raise
        return ToolResult.success("woke up")


class Batch(Tool):
    metadata = ToolMetadata(
        name="batch",
        description="Run a batch job, declared long-running (this one ends at once).",
        category="utility",
        long_running=True,
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success("batch done")


@hookimpl
def register_tools(register: Any) -> None:
    register(Sleepy)
    register(Batch)
"""

EXTRA = ("sleepy_tool", SLEEPY)


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


async def started(marker: Path) -> None:
    while not Path(str(marker) + ".started").exists():
        await asyncio.sleep(0.02)


def sleepy(tmp_path: Path, name: str) -> dict[str, Any]:
    return {"until": str(tmp_path / f"{name}.go"), "marker": str(tmp_path / name)}


def test_a_client_that_asks_gets_a_task_over_http(tmp_path: Path) -> None:
    env = {**os.environ, **child_env(tmp_path, EXTRA)}
    port = free_port()

    async def session() -> None:
        async with Client(url(port), extensions=[tasks.TasksClient()]) as client:
            assert client.protocol_version == LATEST_MODERN_VERSION
            # The handle comes back at once, while the tool still runs.
            created = await tasks.start(client, "sleepy", sleepy(tmp_path, "one"))
            assert (created.status, created.ttl_ms) == ("working", 3_600_000)
            await started(tmp_path / "one")
            working = await tasks.get(client.session, created.task_id)
            assert working.status == "working"
            assert working.result is None
            (tmp_path / "one.go").write_text("")
            done = await tasks.wait(client.session, created.task_id)
            assert done.status == "completed"
            assert done.result is not None
            assert done.result["content"][0]["text"] == "woke up"
            # The extension's client waits for the result the way a host does.
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured_content == {"sum": 5}
            # A tool's error is the task's result, as a plain call's would be.
            bad = await client.call_tool("add", {"a": "two"})
            assert bad.is_error
            assert "ValidationError" in text(bad)
            with pytest.raises(MCPError) as unknown:
                await tasks.get(client.session, "no-such-task")
            assert unknown.value.code == types.INVALID_PARAMS
        # A client that does not ask gets the plain call, and no task methods.
        async with Client(url(port)) as plain:
            answer = await plain.call_tool("add", {"a": 1, "b": 1})
            assert answer.structured_content == {"sum": 2}
            with pytest.raises(MCPError) as refused:
                await tasks.get(plain.session, created.task_id)
            assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY

    with http_server(tmp_path, port, env=env):
        asyncio.run(asyncio.wait_for(session(), TIMEOUT))


def test_cancel_stops_the_tool(tmp_path: Path) -> None:
    env = {**os.environ, **child_env(tmp_path, EXTRA)}
    port = free_port()

    async def session() -> tasks.TaskNow:
        async with Client(url(port), extensions=[tasks.TasksClient()]) as client:
            created = await tasks.start(client, "sleepy", sleepy(tmp_path, "stop"))
            await started(tmp_path / "stop")
            await tasks.cancel(client.session, created.task_id)
            return await tasks.wait(client.session, created.task_id)

    with http_server(tmp_path, port, env=env):
        ended = asyncio.run(asyncio.wait_for(session(), TIMEOUT))
    assert ended.status == "cancelled"
    assert (tmp_path / "stop.cancelled").exists()  # the tool itself was stopped


def test_tasks_over_stdio(tmp_path: Path) -> None:
    params = stdio_params(tmp_path)
    params.env = child_env(tmp_path)

    async def session() -> tuple[str, tasks.TaskNow, types.CallToolResult]:
        async with Client(params, extensions=[tasks.TasksClient()]) as client:
            created = await tasks.start(client, "add", {"a": 20, "b": 22})
            done = await tasks.wait(client.session, created.task_id)
            return client.protocol_version, done, await client.call_tool("echo", {"text": "hi"})

    version, done, echoed = asyncio.run(asyncio.wait_for(session(), TIMEOUT))
    assert version == LATEST_MODERN_VERSION
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["structuredContent"] == {"sum": 42}
    assert echoed.structured_content == {"result": "hi"}


# -- tasks only where they help --------------------------------------------------------


def threshold_params(tmp_path: Path, seconds: float) -> Any:
    """The stdio server with ``[calls] task_after_seconds``."""
    config = (
        "[tools.static_links]\n"
        'links = [{ name = "github", url = "https://github.com/example" }]\n\n'
        f"[calls]\ntask_after_seconds = {seconds}\n\n"
        "[tools.sleepy]\ntimeout_seconds = 600\n"  # only a cancel stops it within a test
    )
    env = child_env(tmp_path, EXTRA, config=config)  # first: it decides what is installed
    params = stdio_params(tmp_path)
    params.env = env
    return params


def test_only_calls_that_need_it_become_tasks(tmp_path: Path) -> None:
    answers: dict[str, Any] = {}

    async def session() -> None:
        params = threshold_params(tmp_path, 0.2)
        async with Client(params, extensions=[tasks.TasksClient()]) as client:
            # A quick call is answered directly, though the client declared the extension.
            answers["quick"] = await tasks.call(client, "add", {"a": 2, "b": 3})
            # Declared long-running: a task at once, however quick it is.
            batch = await tasks.call(client, "batch", {})
            answers["batch"] = batch
            assert isinstance(batch, tasks.CreatedTask)
            answers["batch_done"] = await tasks.wait(client.session, batch.task_id)
            # Asked for on the request: a task.
            answers["asked"] = await tasks.call(client, "add", {"a": 1, "b": 1}, ask=True)
            # Still running after the threshold: a task, while the tool runs on.
            slow = await tasks.call(client, "sleepy", sleepy(tmp_path, "late"))
            answers["slow"] = slow
            assert isinstance(slow, tasks.CreatedTask)
            await started(tmp_path / "late")
            answers["slow_working"] = await tasks.get(client.session, slow.task_id)
            (tmp_path / "late.go").write_text("")
            answers["slow_done"] = await tasks.wait(client.session, slow.task_id)
            # A quick error is a direct answer too.
            answers["bad"] = await tasks.call(client, "add", {"a": "two", "b": 1})
        # A client without the extension: the plain call, long-running or not.
        async with Client(threshold_params(tmp_path, 0.2)) as plain:
            answers["plain_batch"] = await plain.call_tool("batch", {})

    asyncio.run(asyncio.wait_for(session(), TIMEOUT))
    quick = answers["quick"]
    assert isinstance(quick, types.CallToolResult)
    assert quick.structured_content == {"sum": 5}
    assert answers["batch_done"].status == "completed"
    assert answers["batch_done"].result["content"][0]["text"] == "batch done"
    assert isinstance(answers["asked"], tasks.CreatedTask)
    assert answers["slow"].status == "working"
    assert answers["slow_working"].status == "working"
    assert answers["slow_done"].status == "completed"
    assert answers["slow_done"].result["content"][0]["text"] == "woke up"
    bad = answers["bad"]
    assert isinstance(bad, types.CallToolResult)
    assert bad.is_error
    assert text(bad).startswith("ValidationError: ")
    assert isinstance(answers["plain_batch"], types.CallToolResult)
    assert text(answers["plain_batch"]) == "batch done"


def test_a_client_that_gives_up_before_the_threshold_cancels_the_call(tmp_path: Path) -> None:
    async def session() -> None:
        params = threshold_params(tmp_path, 600)  # never a task within this test
        async with Client(params, extensions=[tasks.TasksClient()]) as client:
            waiting = asyncio.ensure_future(
                tasks.call(client, "sleepy", sleepy(tmp_path, "dropped"))
            )
            await started(tmp_path / "dropped")
            waiting.cancel()  # the SDK sends notifications/cancelled for the request
            with pytest.raises(asyncio.CancelledError):
                await waiting
            while not (tmp_path / "dropped.cancelled").exists():
                await asyncio.sleep(0.02)

    asyncio.run(asyncio.wait_for(session(), TIMEOUT))  # ends once the tool was stopped


def test_a_threshold_of_zero_makes_every_call_a_task(tmp_path: Path) -> None:
    async def session() -> Any:
        params = threshold_params(tmp_path, 0)
        async with Client(params, extensions=[tasks.TasksClient()]) as client:
            created = await tasks.call(client, "add", {"a": 20, "b": 22})
            assert isinstance(created, tasks.CreatedTask)
            return await tasks.wait(client.session, created.task_id)

    done = asyncio.run(asyncio.wait_for(session(), TIMEOUT))
    assert done.status == "completed"
    assert done.result["structuredContent"] == {"sum": 42}


# -- two replicas, one Redis -------------------------------------------------------


def replicas_env(tmp_path: Path, store: str) -> dict[str, str]:
    config = (
        "[tools.static_links]\n"
        'links = [{ name = "github", url = "https://github.com/example" }]\n\n'
        f'[calls]\nstore = "{store}"\n'
    )
    return {**os.environ, **child_env(tmp_path, EXTRA, config=config)}


def test_a_task_started_on_one_replica_is_answered_by_the_other(tmp_path: Path) -> None:
    with redis_server(tmp_path) as store:
        env = replicas_env(tmp_path, store)
        one_port, two_port = free_port(), free_port()

        async def session() -> tuple[tasks.TaskNow, tasks.TaskNow]:
            async with (
                Client(url(one_port), extensions=[tasks.TasksClient()]) as one,
                Client(url(two_port), extensions=[tasks.TasksClient()]) as two,
            ):
                created = await tasks.start(one, "sleepy", sleepy(tmp_path, "shared"))
                await started(tmp_path / "shared")
                working = await tasks.get(two.session, created.task_id)
                (tmp_path / "shared.go").write_text("")
                return working, await tasks.wait(two.session, created.task_id)

        with http_server(tmp_path, one_port, env=env), http_server(tmp_path, two_port, env=env):
            working, done = asyncio.run(asyncio.wait_for(session(), TIMEOUT))
    assert working.status == "working"
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["content"][0]["text"] == "woke up"


def test_a_task_whose_replica_was_killed_reads_as_failed(tmp_path: Path) -> None:
    with redis_server(tmp_path) as store:
        env = replicas_env(tmp_path, store)
        one_port, two_port = free_port(), free_port()
        with http_server(tmp_path, two_port, env=env):
            with http_server(tmp_path, one_port, env=env) as one_process:

                async def begin() -> str:
                    async with Client(url(one_port), extensions=[tasks.TasksClient()]) as one:
                        created = await tasks.start(one, "sleepy", sleepy(tmp_path, "doomed"))
                        await started(tmp_path / "doomed")
                        return created.task_id

                task_id = asyncio.run(asyncio.wait_for(begin(), TIMEOUT))
                one_process.send_signal(signal.SIGKILL)
                one_process.wait(TIMEOUT)

            async def ask() -> tasks.TaskNow:
                async with Client(url(two_port), extensions=[tasks.TasksClient()]) as two:
                    return await tasks.wait(two.session, task_id)

            ended = asyncio.run(asyncio.wait_for(ask(), TIMEOUT))
    assert ended.status == "failed"
    assert ended.error is not None
    assert "no heartbeat" in ended.error["message"]


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_a_task_that_waits_for_a_person_reads_input_required(tmp_path: Path) -> None:
    config = (
        "[tools.static_links]\n"
        'links = [{ name = "github", url = "https://github.com/example" }]\n\n'
        '[tools.sleepy]\napproval = "always"\n\n'
        f'[approvals]\ninbox = true\nstore = "sqlite:{tmp_path / "approvals.db"}"\n'
    )
    env = {**os.environ, **child_env(tmp_path, EXTRA, config=config)}
    port = free_port()

    async def session() -> list[tasks.TaskNow]:
        async with Client(url(port), extensions=[tasks.TasksClient()]) as client:
            created = await tasks.start(client, "sleepy", sleepy(tmp_path, "asked"))
            waiting = await tasks.wait(client.session, created.task_id, until="input_required")
            message = waiting.status_message or ""
            found = re.search(r"toolplug approvals approve (apr_\S+)`", message)
            assert found, message
            assert not Path(str(tmp_path / "asked") + ".started").exists()  # not run yet
            code, _, err = await approvals_cli(tmp_path / "toolplug.toml", "approve", found[1])
            assert code == 0, err
            await started(tmp_path / "asked")
            running = await tasks.wait(client.session, created.task_id, until="working")
            (tmp_path / "asked.go").write_text("")
            return [waiting, running, await tasks.wait(client.session, created.task_id)]

    with http_server(tmp_path, port, env=env):
        waiting, running, done = asyncio.run(asyncio.wait_for(session(), TIMEOUT))
    assert waiting.status == "input_required"
    assert "waiting for a person's approval: request apr_" in (waiting.status_message or "")
    assert waiting.result is None
    assert running.status_message is None or "approval" not in running.status_message
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["content"][0]["text"] == "woke up"
