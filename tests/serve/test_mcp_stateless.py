"""``--max-tools`` for stateless (2026-07-28) clients over streamable HTTP: no
``Mcp-Session-Id``, so a client's list is kept for its verified principal (``[serve.auth]``),
or not kept at all; changes reach a client on its ``subscriptions/listen`` stream. The real
``toolplug serve`` and the official SDK client at its latest protocol version."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.auth import READ, WRITE, auth_config
from tests.helpers.redis import redis_server
from tests.helpers.serve import CONFIG, TIMEOUT, child_env, free_port, http_server, text_of

OPTIONS = ("--max-tools", "1", "--task", "add two integers")
# alice and bob hold static tokens (their names); the audience is the replicas' public URL
AUTH = auth_config(
    "http://127.0.0.1:1", "http://127.0.0.1:8000/mcp",
    tokens={"alice": (READ, WRITE), "bob": (READ, WRITE)},
)
TOKENS = {"TOKEN_ALICE": "alice", "TOKEN_BOB": "bob"}


@asynccontextmanager
async def _as(url: str, token: str) -> AsyncIterator[Client]:
    """A stateless client that sends a credential with every request."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def _names(client: Client) -> list[str]:
    return sorted(t.name for t in (await client.list_tools()).tools)


def test_a_client_without_identity_is_served_statelessly(tmp_path: Path) -> None:
    port = free_port()
    with http_server(tmp_path, port, *OPTIONS):
        url = f"http://127.0.0.1:{port}/mcp"

        async def run() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            with anyio.fail_after(TIMEOUT):
                async with Client(url) as one, Client(url) as two:
                    assert one.protocol_version == "2026-07-28"
                    found = await one.call_tool("search_tools", {"query": "repeat the text"})
                    seen["found"] = text_of(found)
                    seen["one"], seen["two"] = await _names(one), await _names(two)
                    seen["echo"] = text_of(await one.call_tool("echo", {"text": "found"}))
            return seen

        seen = anyio.run(run)
    assert '"name": "echo"' in seen["found"]  # the definition comes with the answer
    assert seen["one"] == seen["two"] == ["add", "search_tools"]  # no list is kept
    assert seen["echo"] == "found"  # and the tool it found can be called


def test_a_credential_without_auth_is_nobody(tmp_path: Path) -> None:
    """Without ``[serve.auth]`` nothing checks a bearer token: anyone could send alice's,
    so it names no owner, and what one holder's search added nobody else is listed."""
    port = free_port()
    with http_server(tmp_path, port, *OPTIONS):
        url = f"http://127.0.0.1:{port}/mcp"

        async def run() -> list[str]:
            with anyio.fail_after(TIMEOUT):
                async with _as(url, "alice") as alice:
                    await alice.call_tool("search_tools", {"query": "repeat the text"})
                async with _as(url, "alice") as impostor:
                    return await _names(impostor)

        listed = anyio.run(run)
    assert listed == ["add", "search_tools"]


def test_a_principal_keeps_its_own_list_and_hears_it_grow(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, **child_env(tmp_path, config=CONFIG + AUTH), **TOKENS}
    with http_server(tmp_path, port, *OPTIONS, env=env):
        url = f"http://127.0.0.1:{port}/mcp"

        async def run() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            with anyio.fail_after(TIMEOUT):
                async with _as(url, "alice") as alice, _as(url, "bob") as bob:
                    async with alice.listen(tools_list_changed=True) as changes:
                        await alice.call_tool("search_tools", {"query": "repeat the text"})
                        async for _event in changes:
                            break  # the list grew
                    seen["alice"], seen["bob"] = await _names(alice), await _names(bob)
                async with _as(url, "alice") as again:
                    seen["again"] = await _names(again)  # the same principal, later
            return seen

        seen = anyio.run(run)
    assert seen["alice"] == ["add", "echo", "search_tools"]
    assert seen["bob"] == ["add", "search_tools"]
    assert seen["again"] == ["add", "echo", "search_tools"]


async def _quiet(changes: Any, seconds: float) -> bool:
    """Whether a listen stream hears nothing for ``seconds`` (a change is delivered within
    milliseconds of the search that made it; the wait is generous)."""
    with anyio.move_on_after(seconds):
        async for _event in changes:
            return False
    return True


def test_a_principal_hears_only_its_own_list_change(tmp_path: Path) -> None:
    """alice's search grows alice's list: bob's listen stream hears nothing of it (before,
    every stream heard every change, so bob learnt when alice searched, and listed again
    for nothing), and hears his own search when he makes one."""
    port = free_port()
    env = {**os.environ, **child_env(tmp_path, config=CONFIG + AUTH), **TOKENS}
    with http_server(tmp_path, port, *OPTIONS, env=env):
        url = f"http://127.0.0.1:{port}/mcp"

        async def run() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            with anyio.fail_after(TIMEOUT):
                async with _as(url, "alice") as alice, _as(url, "bob") as bob:
                    async with (
                        alice.listen(tools_list_changed=True) as alices,
                        bob.listen(tools_list_changed=True) as bobs,
                    ):
                        await alice.call_tool("search_tools", {"query": "repeat the text"})
                        async for _event in alices:
                            break  # alice hears hers
                        seen["bob heard nothing"] = await _quiet(bobs, 2)
                        await bob.call_tool("search_tools", {"query": "repeat the text"})
                        async for _event in bobs:
                            break  # and bob his own
                        seen["alice heard nothing"] = await _quiet(alices, 2)
                    seen["alice"], seen["bob"] = await _names(alice), await _names(bob)
            return seen

        seen = anyio.run(run)
    assert seen["bob heard nothing"]
    assert seen["alice heard nothing"]
    assert seen["alice"] == seen["bob"] == ["add", "echo", "search_tools"]


def test_replicas_share_a_principal_list_and_its_changes_through_redis(
    tmp_path: Path,
) -> None:
    with redis_server(tmp_path) as store:
        config = CONFIG + AUTH + f'[calls]\nstore = "{store}"\n'
        env = {**os.environ, **child_env(tmp_path, config=config), **TOKENS}
        ports = free_port(), free_port()
        for replica in ("one", "two"):
            (tmp_path / replica).mkdir()
        with (
            http_server(tmp_path / "one", ports[0], *OPTIONS, env=env),
            http_server(tmp_path / "two", ports[1], *OPTIONS, env=env),
        ):
            one, two = (f"http://127.0.0.1:{port}/mcp" for port in ports)

            async def run() -> dict[str, Any]:
                seen: dict[str, Any] = {}
                with anyio.fail_after(TIMEOUT):
                    async with (
                        _as(two, "alice") as listening,
                        _as(one, "alice") as searching,
                        _as(two, "bob") as other,
                    ):
                        seen["before"] = await _names(listening)
                        async with (
                            listening.listen(tools_list_changed=True) as changes,
                            other.listen(tools_list_changed=True) as others,
                        ):
                            await searching.call_tool("search_tools", {"query": "repeat the text"})
                            async for _event in changes:
                                break  # heard on replica two, searched on replica one
                            seen["bob heard nothing"] = await _quiet(others, 2)
                        seen["after"] = await _names(listening)
                    async with _as(two, "bob") as bob:
                        seen["bob"] = await _names(bob)
                return seen

            seen = anyio.run(run)
    assert seen["before"] == ["add", "search_tools"]
    assert seen["after"] == ["add", "echo", "search_tools"]
    assert seen["bob heard nothing"]  # alice's change travelled with her name
    assert seen["bob"] == ["add", "search_tools"]
