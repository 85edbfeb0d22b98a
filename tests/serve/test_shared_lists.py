"""Each principal's ``--max-tools`` list, kept through the state backend."""

from __future__ import annotations

import asyncio

from toolplug.serve._shared import SharedLists
from toolplug.state._memory import MemoryBackend


def test_a_list_grows_only_with_names_it_does_not_hold() -> None:
    async def run() -> tuple[set[str], set[str], int]:
        backend = MemoryBackend(64)
        lists = SharedLists(backend)
        await lists.add("principal:alice", ["web_search", "url_fetch", "web_search"])
        await lists.add("principal:alice", ["url_fetch", "rss_feed"])
        part = backend.part("listed:", entries=64)
        stored = await part.read_list("principal:alice", 0)
        return await lists.names("principal:alice"), await lists.names("principal:bob"), len(stored)

    alice, bob, stored = asyncio.run(run())
    assert alice == {"web_search", "url_fetch", "rss_feed"}
    assert bob == set()  # another principal's list is its own
    assert stored == 3  # each name once, however often searches find it
