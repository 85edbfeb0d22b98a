"""The state backend: each primitive alike in memory and in a real Redis, and the shared
backend's fallback to memory while Redis is gone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.helpers.redis import redis_server
from toolplug.state._backend import Backend, Unreachable
from toolplug.state._memory import MemoryBackend
from toolplug.state._redis import RedisBackend
from toolplug.state._shared import SharedBackend, open_backend


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


def _backends(redis_url: str) -> list[Backend]:
    return [MemoryBackend(100, chars=10_000_000), RedisBackend(redis_url, prefix="test:")]


async def _each(redis_url: str) -> AsyncIterator[Backend]:
    for backend in _backends(redis_url):
        try:
            yield backend.part(f"{type(backend).__name__}:{id(backend)}:", entries=100,
                               chars=10_000_000)
        finally:
            await backend.aclose()


def test_values_with_a_time_to_live(redis_url: str) -> None:
    async def scenario() -> None:
        async for backend in _each(redis_url):
            assert await backend.get("a") is None
            assert await backend.set("a", "1", 0.2)
            assert await backend.get("a") == "1"
            assert not await backend.set("a", "2", None, only_if_absent=True)  # kept
            assert await backend.get("a") == "1"
            assert not await backend.set("b", "2", None, only_if_present=True)  # absent
            assert await backend.get_many(["a", "b"]) == ["1", None]
            await asyncio.sleep(0.3)
            assert await backend.get("a") is None, backend  # expired
            await backend.set_many({"a": "4", "d": "5"}, 60, only_if_present=True)
            assert await backend.get_many(["a", "d"]) == [None, None]  # a expired, d absent
            await backend.set_many({"a": "4", "d": "5"}, 60)
            assert await backend.get_many(["a", "d"]) == ["4", "5"]
            await backend.set("c", "3", None)
            await backend.delete("c")
            assert await backend.get("c") is None

    asyncio.run(scenario())


def test_compare_and_set(redis_url: str) -> None:
    async def scenario() -> None:
        async for backend in _each(redis_url):
            await backend.set("k", "old", 60)
            assert not await backend.swap("k", "other", "new", 60)
            assert await backend.get("k") == "old"
            assert await backend.swap("k", "old", "new", 60)
            assert await backend.get("k") == "new"
            assert not await backend.swap("missing", "old", "new", 60)

    asyncio.run(scenario())


def test_lists_that_count(redis_url: str) -> None:
    async def scenario() -> None:
        async for backend in _each(redis_url):
            assert [await backend.append("log", f"e{n}", 60) for n in range(3)] == [1, 2, 3]
            assert await backend.read_list("log", 0) == ["e0", "e1", "e2"]
            assert await backend.read_list("log", 2) == ["e2"]
            assert await backend.read_list("log", 3) == []
            assert await backend.read_list("none", 0) == []

    asyncio.run(scenario())


def test_a_moving_window(redis_url: str) -> None:
    async def scenario() -> None:
        async for backend in _each(redis_url):
            assert await backend.admit("tool", 2, 60) == 0.0
            assert await backend.admit("tool", 2, 60) == 0.0
            wait = await backend.admit("tool", 2, 60)
            assert 59 < wait <= 60, backend
            assert await backend.admit("other", 2, 60) == 0.0  # a window per key

    asyncio.run(scenario())


def test_an_ordered_index_drops_the_lowest(redis_url: str) -> None:
    async def scenario() -> None:
        async for backend in _each(redis_url):
            dropped: list[str] = []
            for n in range(5):
                dropped += await backend.index_add(
                    "i", f"m{n}", float(n), keep=3, drop_below=1.0, ttl=60
                )
            assert dropped == ["m1"], backend  # m0 fell below the score, m1 beyond the count
            assert await backend.index_newest("i", drop_below=0.0) == [
                ("m4", 4.0), ("m3", 3.0), ("m2", 2.0)
            ]
            assert [m for m, _ in await backend.index_newest("i", drop_below=3.0)] == [
                "m4", "m3"
            ]
            assert await backend.index_newest("none", drop_below=0.0) == []

    asyncio.run(scenario())


def test_long_texts_are_read_by_range(redis_url: str) -> None:
    text = "".join(f"{n:07d}\n" for n in range(300_000))  # 2.4 MB: three Redis chunks
    async def scenario() -> None:
        async for backend in _each(redis_url):
            assert await backend.write_text("t", text, 60)
            assert await backend.read_text("t", 0, len(text)) == text
            middle = 8 * 150_000
            assert await backend.read_text("t", middle, middle + 8) == "0150000\n"
            assert await backend.read_text("t", len(text), len(text)) == ""
            assert await backend.read_text("gone", 0, 10) is None

    asyncio.run(scenario())


def test_bytes_are_kept_whole_and_read_by_range(redis_url: str) -> None:
    # every byte value, so a decoding anywhere on the way would show
    data = bytes(range(256)) * 4_000 + b"\x00\xff"

    async def scenario() -> None:
        async for backend in _each(redis_url):
            assert await backend.write_bytes("b", data, 60)
            whole = await backend.read_bytes("b")
            assert whole == data
            if isinstance(backend, MemoryBackend):
                assert whole is data  # the object itself: no copy
            assert await backend.read_bytes("b", 255, 258) == b"\xff\x00\x01"
            assert await backend.read_bytes("b", len(data) - 2) == b"\x00\xff"
            assert await backend.read_bytes("b", 10, 10) == b""
            assert await backend.read_bytes("gone") is None
            assert await backend.read_bytes("gone", 3, 9) is None
            await backend.write_text("t", "text", 60)
            assert await backend.read_text("t", 0, 4) == "text"
            await backend.delete("b")

    asyncio.run(scenario())


def test_memory_is_bounded_per_part() -> None:
    async def scenario() -> None:
        backend = MemoryBackend(1000)
        small = backend.part("small:", entries=2)
        for n in range(3):
            await small.set(f"k{n}", "v", None)
        assert await small.get_many(["k0", "k1", "k2"]) == [None, "v", "v"]
        texts = backend.part("texts:", entries=10, chars=25)
        await texts.write_text("a", "x" * 10, 60)
        await texts.write_text("b", "y" * 10, 60)
        await texts.write_text("c", "z" * 10, 60)  # over 25 characters: the oldest goes
        assert await texts.read_text("a", 0, 10) is None
        assert await texts.read_text("c", 0, 3) == "zzz"
        # bytes count against the same bound as texts
        assert await texts.write_bytes("d", b"\x01" * 20, 60)
        assert await texts.read_text("b", 0, 10) is None
        assert await texts.read_text("c", 0, 3) is None
        assert await texts.read_bytes("d") == b"\x01" * 20
        assert not await texts.write_bytes("e", b"\x02" * 30, 60)  # larger than it holds

    asyncio.run(scenario())


def test_redis_unreachable_raises_and_the_shared_backend_falls_back(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        pass  # stopped: nothing listens there now

    async def scenario() -> None:
        gone = RedisBackend(url)
        with pytest.raises(Unreachable):
            await gone.get("k")
        await gone.aclose()
        backend = open_backend(url, entries=10)
        assert isinstance(backend, SharedBackend)
        try:
            assert await backend.set("k", "here", 60)
            assert await backend.get("k") == "here"  # from this process's memory
            assert backend.problem is not None
            warning = backend.warning()
            assert warning is not None
            assert "cannot be reached" in warning
            assert backend.warning() is None  # asked once per call
            spills = backend.part("spill:", entries=10, chars=100)
            assert not await spills.write_text("t", "text", 60)  # kept here only
            assert await spills.read_text("t", 0, 4) == "text"
            assert not await spills.write_bytes("p", b"\x89PNG", 60)  # likewise
            assert await spills.read_bytes("p", 1) == b"PNG"
        finally:
            await backend.aclose()

    asyncio.run(scenario())


def test_what_was_kept_here_stays_readable_once_redis_is_back(tmp_path: Path) -> None:
    async def scenario(url: str, spare: MemoryBackend) -> None:
        backend = SharedBackend(RedisBackend(url), spare)
        try:
            assert await backend.get("k") == "here"
            assert await backend.index_newest("i", drop_below=0.0) == [("m", 1.0)]
            await backend.set("k2", "there", 60)
            other = RedisBackend(url)  # another replica
            assert await other.get("k2") == "there"
            await other.aclose()
        finally:
            await backend.aclose()

    spare = MemoryBackend(10)
    asyncio.run(spare.set("k", "here", 60))  # as the fallback wrote it
    asyncio.run(spare.index_add("i", "m", 1.0, keep=5, drop_below=0.0, ttl=60))
    with redis_server(tmp_path) as url:
        asyncio.run(scenario(url, spare))
