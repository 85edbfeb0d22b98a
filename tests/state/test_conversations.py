"""Conversations per owner and session, shared by replicas through a real Redis: what a
call on one replica brought in is guarded on the other."""

from __future__ import annotations

import asyncio
from pathlib import Path

import toolplug
from tests.helpers.guard import PLUGIN, POSTED
from tests.helpers.redis import redis_server
from toolplug import ErrorType
from toolplug.state._conversations import Conversations
from toolplug.state._memory import MemoryBackend
from toolplug.state._redis import RedisBackend

NEWS = "https://news.example/today"
EVIL = "https://collect.evil.example/drop?k=1"


def _replica(url: str) -> tuple[toolplug.Registry, Conversations, RedisBackend]:
    registry = toolplug.load({"calls": {"store": url}}, plugins=[PLUGIN], env={})
    backend = RedisBackend(url)
    return registry, Conversations(registry.conversation, backend, most=8), backend


def test_replicas_sharing_redis_guard_one_conversation(tmp_path: Path) -> None:
    POSTED.clear()

    async def scenario(url: str) -> None:
        (one, one_talks, one_backend), (two, two_talks, two_backend) = _replica(url), _replica(url)
        try:
            async with one_talks.of("principal:alice", "request:1"):
                page = await one.acall("read_page", {"url": NEWS})
                assert page.ok
            async with two_talks.of("principal:alice", "request:2") as talk:
                assert talk is not None
                assert [s.tool for s in talk.sources] == ["read_page"]  # read from Redis
                refused = await two.acall("post", {"text": f"notes: {EVIL}"})
                assert (await two.acall("read_inbox", {})).ok
            async with two_talks.of("principal:bob", "request:3"):  # another owner
                posted = await two.acall("post", {"text": f"notes: {EVIL}"})
            async with one_talks.of("principal:alice", "request:4") as again:
                assert again is not None
                assert [s.tool for s in again.sources] == ["read_page", "read_inbox"]  # once each
                assert again.private  # what the other replica read
        finally:
            await one_backend.aclose()
            await two_backend.aclose()
            one.close()
            two.close()
        assert refused.error is not None
        assert refused.error.type == ErrorType.APPROVAL_REQUIRED
        assert refused.error.details["source"]["tool"] == "read_page"
        assert posted.ok

    with redis_server(tmp_path) as url:
        asyncio.run(scenario(url))
    assert [{"text": f"notes: {EVIL}"}] == POSTED


def test_without_a_shared_backend_each_owner_and_session_has_its_own() -> None:
    registry = toolplug.load({}, plugins=[PLUGIN], env={})

    async def scenario() -> None:
        talks = Conversations(registry.conversation, None, most=2)
        async with talks.of("alice", "s1") as first:
            await registry.acall("read_page", {"url": NEWS})
        async with talks.of("alice", "s1") as same, talks.of("alice", "s2") as other:
            assert same is first
            assert other is not first
        async with talks.of(None, "s1") as nobody:
            assert nobody is None
        async with talks.of("carol", "s1"):  # a third: the oldest goes
            pass
        async with talks.of("alice", "s1") as fresh:
            assert fresh is not first

    try:
        asyncio.run(scenario())
    finally:
        registry.close()


def test_a_memory_backend_logs_and_reads_back_alike() -> None:
    registry = toolplug.load({}, plugins=[PLUGIN], env={})
    backend = MemoryBackend()

    async def scenario() -> None:
        first = Conversations(registry.conversation, backend, most=8)
        async with first.of("alice", "request:1"):
            await registry.acall("read_page", {"url": NEWS})
        later = Conversations(registry.conversation, backend, most=8)  # after a restart
        async with later.of("alice", "request:2") as talk:
            assert talk is not None
            assert talk.untrusted
            assert [s.tool for s in talk.sources] == ["read_page"]

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
