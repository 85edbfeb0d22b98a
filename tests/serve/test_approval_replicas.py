"""Two ``toolplug serve --http`` replicas (real processes) sharing a real Redis for the inbox
and a real PostgreSQL for the record: a call made on replica A waits for approval, the
``toolplug console`` page (another process, same Redis) approves it through its form with
its CSRF token, and the call resumes on A. Then a call waits on A and one on B, A is killed
with SIGKILL: once A's lease lapses its request is failed, saying why, and an approval
attempted afterwards is refused, on the page and on the command line; B's request, whose
holder lives, is still decided and B's call resumes. The leases last a second."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, types

from tests.helpers.console import serving
from tests.helpers.postgres import Postgres, postgres_server
from tests.helpers.posting import approvals_cli
from tests.helpers.redis import redis_server
from tests.helpers.serve import TIMEOUT, child_env, free_port, stop, text_of, wait_for_port
from toolplug.config._config import load_config
from toolplug.engine._inbox import open_approvals
from toolplug.state._inbox import STOPPED

POST_TOOL = r'''
from typing import Any

from toolplug import Annotations, Tool, ToolMetadata, ToolResult, hookimpl


class Post(Tool):
    metadata = ToolMetadata(
        name="post",
        description="Publish a short message.",
        category="publish",
        parameters={"type": "object", "properties": {"text": {"type": "string"}},
                    "required": ["text"]},
        annotations=Annotations(read_only=False, destructive=False, open_world=True),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success(f"posted: {arguments['text']}")


@hookimpl
def register_tools(register: Any) -> None:
    register(Post)
'''


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with postgres_server() as running:
        yield running


def _setup(tmp_path: Path, redis: str, record: str) -> tuple[Path, dict[str, str]]:
    """The one configuration both replicas and the console read, and the servers' env."""
    config = tmp_path / "replicas.toml"
    config.write_text(
        f'[calls]\nstore = "{redis}"\n'
        "[approvals]\ninbox = true\nwait_seconds = 60\nlease_seconds = 1\n"
        f'[record]\nenabled = true\nstore = "{record}"\n',
        encoding="utf-8",
    )
    env = {**os.environ, **child_env(tmp_path, ("replica_post_tool", POST_TOOL))}
    return config, {**env, "TOOLPLUG_CONFIG": str(config)}


async def _waiting(config: Path, count: int) -> list[dict[str, Any]]:
    """The pending requests, once there are ``count``, as ``toolplug approvals list`` reads
    them (here, in this process: the command takes seconds to start)."""
    approvals = open_approvals(load_config(config))
    try:
        for _ in range(400):
            found = await approvals.apending(every_owner=True)
            if len(found) >= count:
                return [r.to_dict() for r in found]
            await asyncio.sleep(0.025)
    finally:
        await approvals.aclose()
    raise AssertionError("no request came")


def _token(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, page
    return found.group(1)


def _rows(address: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg  # the postgres extra: the fixture skipped where it is missing

    with psycopg.connect(address) as db:
        return [tuple(row) for row in db.execute(sql).fetchall()]


@contextlib.contextmanager
def _replicas(
    tmp_path: Path, env: dict[str, str], *names: str
) -> Iterator[dict[str, tuple[int, subprocess.Popen[bytes]]]]:
    """``toolplug serve --http`` once per name (``TOOLPLUG_REPLICA``), started at once: each
    one's port and process; always ended."""
    started: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}
    with contextlib.ExitStack() as stack:
        for name in names:
            port, log = free_port(), tmp_path / f"replica-{name}.txt"
            errors = stack.enter_context(log.open("wb"))
            process = subprocess.Popen(
                [sys.executable, "-m", "toolplug", "serve", "--http", f"127.0.0.1:{port}"],
                stdin=subprocess.DEVNULL, stdout=errors, stderr=errors,
                env={**env, "TOOLPLUG_REPLICA": name}, cwd=tmp_path,
            )
            stack.callback(stop, process)
            started[name] = port, process
        for name, (port, process) in started.items():
            wait_for_port(process, port, (tmp_path / f"replica-{name}.txt").read_text)
        yield started


def test_a_call_waits_on_one_replica_and_a_killed_holder_fails_its_request(
    tmp_path: Path, postgres: Postgres
) -> None:
    with redis_server(tmp_path) as redis:
        config, env = _setup(tmp_path, redis, postgres.address)
        with _replicas(tmp_path, env, "a", "b") as replicas, serving(config) as console:
            (a_port, a_process), (b_port, _) = replicas["a"], replicas["b"]

            async def post(port: int, text: str) -> types.CallToolResult:
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    return await client.call_tool("post", {"text": text})

            async def scenario(page: httpx.AsyncClient) -> None:
                call = asyncio.create_task(post(a_port, "hello"))
                (request,) = await _waiting(config, 1)
                assert request["owner"] is None  # a stateless client's: the operator decides
                shown = await page.get("/")
                assert request["id"] in shown.text
                token = _token(shown.text)
                done = await page.post(f"/approvals/{request['id']}/approve",
                                       data={"csrf": token})
                assert done.status_code == 200, done.text
                result = await asyncio.wait_for(call, TIMEOUT)
                assert text_of(result) == "posted: hello"  # resumed on A

                doomed = asyncio.create_task(post(a_port, "doomed"))
                kept = asyncio.create_task(post(b_port, "kept"))
                lost, other = sorted(
                    await _waiting(config, 2), key=lambda r: r["arguments"]["text"] != "doomed"
                )
                a_process.send_signal(signal.SIGKILL)
                a_process.wait(TIMEOUT)
                with contextlib.suppress(Exception):  # its server went away
                    await asyncio.wait_for(doomed, TIMEOUT)
                await asyncio.sleep(1.5)  # longer than the lease

                refused = await page.post(f"/approvals/{lost['id']}/approve",
                                          data={"csrf": token})
                assert refused.status_code == 409
                assert STOPPED in refused.text
                assert lost["id"] not in (await page.get("/")).text
                code, _, err = await approvals_cli(config, "approve", lost["id"])
                assert code == 1
                assert f"approval request {lost['id']} failed" in err
                assert STOPPED in err
                assert "no decision counts now" in err

                assert [r["id"] for r in await _waiting(config, 1)] == [other["id"]]
                done = await page.post(f"/approvals/{other['id']}/approve",
                                       data={"csrf": token})
                assert done.status_code == 200, done.text
                result = await asyncio.wait_for(kept, TIMEOUT)
                assert text_of(result) == "posted: kept"  # B's holder lives on

            async def run() -> None:
                async with httpx.AsyncClient(base_url=console, timeout=10) as page:
                    await asyncio.wait_for(scenario(page), 3 * TIMEOUT)

            asyncio.run(run())
    # the record, shared in PostgreSQL: each replica's call, and the decision on A
    rows = _rows(postgres.address, "SELECT replica, kind, status FROM toolplug_events "
                 "WHERE tool = 'post' ORDER BY id")
    assert ("a", "call", "ok") in rows
    assert ("b", "call", "ok") in rows
    assert ("a", "approval.decision", "approved") in rows
