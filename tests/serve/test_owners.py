"""Per-client state belongs to one owner: the verified principal (``[serve.auth]``), else the
HTTP session, else nobody. Kept outputs (spills) and tasks, on one server and on two
replicas sharing a real Redis; the real ``toolplug serve`` and the official SDK client.

Each case here failed before owners: a client without a credential listed another's kept
output, and ``Bearer bob`` read and cancelled ``Bearer alice``'s tasks.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.helpers import tasks
from tests.helpers.auth import READ, WRITE, auth_config
from tests.helpers.redis import redis_server
from tests.helpers.serve import CONFIG, TIMEOUT, child_env, free_port, http_server

WAITER = r"""
import asyncio
import pathlib
from typing import Any

from toolplug import Tool, ToolMetadata, ToolResult, hookimpl


class Waiter(Tool):
    metadata = ToolMetadata(
        name="waiter",
        description="Wait until a file appears.",
        category="utility",
        parameters={
            "type": "object", "properties": {"until": {"type": "string"}}, "required": ["until"],
        },
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        pathlib.Path(arguments["until"] + ".started").write_text("")
        while not pathlib.Path(arguments["until"]).exists():
            await asyncio.sleep(0.02)
        return ToolResult.success("woke up")


@hookimpl
def register_tools(register: Any) -> None:
    register(Waiter)
"""
EXTRA = ("waiter_tool", WAITER)
TEXT = "".join(f"word{i:05d} " for i in range(1_000))  # over the 2,000-character budget
BUDGET = "\n[calls]\nmax_output_chars = 2000\n"
AUTH = auth_config(
    "http://127.0.0.1:1", "http://127.0.0.1:8000/mcp",
    tokens={"alice": (READ, WRITE), "bob": (READ, WRITE)},
)
TOKENS = {"TOKEN_ALICE": "alice-token", "TOKEN_BOB": "bob-token"}


@asynccontextmanager
async def client_as(url: str, token: str | None, *, tasking: bool = False) -> AsyncIterator[Client]:
    """The SDK client (stateless, its latest revision), with a bearer token or none; with
    ``tasking`` it declares the tasks extension (every call is a task)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    extensions = [tasks.TasksClient()] if tasking else []
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), extensions=extensions) as client,
    ):
        yield client


async def spill(client: Client) -> str:
    """Call echo with a text over the budget: the URI its whole output is kept at."""
    reply = await client.call_tool("echo", {"text": TEXT})
    links = [b for b in reply.content if isinstance(b, types.ResourceLink)]
    link = links[0]
    return str(link.uri)


MADE_UP = "toolplug://results/0123456789abcdef0123456789abcdef"


async def listed(client: Client) -> list[str]:
    return [str(r.uri) for r in (await client.list_resources()).resources]


async def read(client: Client, uri: str) -> str:
    try:
        content = (await client.read_resource(f"{uri}?offset=0&length=9")).contents[0]
    except MCPError as exc:
        return f"refused: {exc}"
    assert isinstance(content, types.TextResourceContents)
    return content.text


def test_a_client_without_identity_lists_nothing_of_another(tmp_path: Path) -> None:
    env = {**os.environ, **child_env(tmp_path, config=CONFIG + BUDGET)}
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    async def run() -> tuple[str, list[str], list[str], str]:
        async with client_as(url, None) as one, client_as(url, None) as two:
            uri = await spill(one)
            return uri, await listed(one), await listed(two), await read(one, uri)

    with http_server(tmp_path, port, env=env):
        _uri, mine, theirs, text = asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert mine == theirs == []  # nobody to list for: listed to nobody
    assert text == "word00000"  # its holder reads it by the URI it was given


def test_a_principal_owns_its_spills_and_tasks(tmp_path: Path) -> None:
    env = {**os.environ, **child_env(tmp_path, EXTRA, config=CONFIG + BUDGET + AUTH), **TOKENS}
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    until = str(tmp_path / "go")

    async def run() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with (
            client_as(url, "alice-token") as alice,
            client_as(url, "alice-token", tasking=True) as alice_tasks,
            client_as(url, "bob-token", tasking=True) as bob,
        ):
            uri = await spill(alice)
            created = await tasks.start(alice_tasks, "waiter", {"until": until})
            seen["bob lists"], seen["bob reads"] = await listed(bob), await read(bob, uri)
            seen["bob reads made up"] = await read(bob, MADE_UP)
            for name, ask in (("get", tasks.get), ("cancel", tasks.cancel)):
                with pytest.raises(MCPError) as refused:
                    await ask(bob.session, created.task_id)
                seen[f"bob {name}"] = refused.value
            seen["bob made up"] = await _refused(bob, created.task_id.split(".")[0])
            seen["still"] = (await tasks.get(alice_tasks.session, created.task_id)).status
            (tmp_path / "go").write_text("")
            seen["done"] = await tasks.wait(alice_tasks.session, created.task_id)
        async with client_as(url, "alice-token") as again:  # alice, on a new connection
            seen["alice lists"], seen["alice reads"] = await listed(again), await read(again, uri)
        seen["uri"] = uri
        return seen

    with http_server(tmp_path, port, env=env):
        seen = asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert seen["bob lists"] == []
    assert seen["bob reads"].startswith("refused:")
    # alice's output is to bob what a URI never kept is: nothing tells him alice has it
    assert "resource not found" in seen["bob reads"]
    assert seen["bob reads"].replace(seen["uri"], "URI") == (
        seen["bob reads made up"].replace(MADE_UP, "URI")
    )
    for name in ("get", "cancel"):
        assert seen[f"bob {name}"].code == types.INVALID_PARAMS
        assert "no such task" in str(seen[f"bob {name}"])
    assert seen["bob made up"] == types.INVALID_PARAMS
    assert seen["still"] == "working"  # bob's cancel did not reach it
    assert seen["done"].status == "completed"
    assert seen["alice lists"] == [seen["uri"] + "/data", seen["uri"]]  # output and data
    assert seen["alice reads"] == "word00000"


async def _refused(client: Client, task_id: str) -> int:
    with pytest.raises(MCPError) as refused:
        await tasks.get(client.session, task_id)
    return refused.value.code


def test_two_replicas_honour_one_principal_and_refuse_another(tmp_path: Path) -> None:
    with redis_server(tmp_path) as store:
        config = CONFIG + BUDGET + f'store = "{store}"\n' + AUTH
        env = {**os.environ, **child_env(tmp_path, EXTRA, config=config), **TOKENS}
        ports = free_port(), free_port()
        one, two = (f"http://127.0.0.1:{port}/mcp" for port in ports)
        until = str(tmp_path / "go")
        for replica in ("one", "two"):
            (tmp_path / replica).mkdir()

        async def run() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            async with (
                client_as(one, "alice-token") as alice,
                client_as(one, "alice-token", tasking=True) as alice_tasks,
            ):
                uri = await spill(alice)
                created = await tasks.start(alice_tasks, "waiter", {"until": until})
            async with (
                client_as(two, "alice-token", tasking=True) as alice,
                client_as(two, "bob-token", tasking=True) as bob,
            ):
                seen["alice lists"] = await listed(alice)
                seen["alice reads"] = await read(alice, uri)
                seen["bob lists"], seen["bob reads"] = await listed(bob), await read(bob, uri)
                seen["bob gets"] = await _refused(bob, created.task_id)
                (tmp_path / "go").write_text("")
                seen["done"] = await tasks.wait(alice.session, created.task_id)
            seen["uri"] = uri
            return seen

        with (
            http_server(tmp_path / "one", ports[0], env=env),
            http_server(tmp_path / "two", ports[1], env=env),
        ):
            seen = asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert seen["alice lists"] == [seen["uri"] + "/data", seen["uri"]]  # output and data
    assert seen["alice reads"] == "word00000"
    assert seen["bob lists"] == []
    assert seen["bob reads"].startswith("refused:")
    assert seen["bob gets"] == types.INVALID_PARAMS
    assert seen["done"].status == "completed"
    assert seen["done"].result["content"][0]["text"] == "woke up"


def _session(http: Any, url: str) -> dict[str, str]:
    """A session of the 2025-06-18 revision, opened by hand: the headers that name it."""
    headers = {"accept": "application/json, text/event-stream"}
    init = http.post(url, headers=headers, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
    named = {**headers, "mcp-session-id": init.headers["mcp-session-id"],
             "mcp-protocol-version": "2025-06-18"}
    http.post(url, headers=named, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return named


def _answer(response: Any) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


def test_without_auth_a_session_owns_what_it_leaves(tmp_path: Path) -> None:
    env = {**os.environ, **child_env(tmp_path, config=CONFIG + BUDGET)}
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    listing = {"jsonrpc": "2.0", "id": 2, "method": "resources/list", "params": {}}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": TEXT}}}
    with http_server(tmp_path, port, env=env), httpx.Client(timeout=TIMEOUT) as http:
        one, two = _session(http, url), _session(http, url)
        reply = _answer(http.post(url, headers=one, json=call))
        mine = _answer(http.post(url, headers=one, json=listing))["result"]["resources"]
        theirs = _answer(http.post(url, headers=two, json=listing))["result"]["resources"]
    link = next(b for b in reply["result"]["content"] if b["type"] == "resource_link")
    assert link["uri"] in [r["uri"] for r in mine]
    assert theirs == []


def test_a_rate_limit_per_client_is_each_principal_s_own(tmp_path: Path) -> None:
    # rate_limit per = "client": the owner of the call (here the verified principal) has a
    # window of its own, so alice's calls do not use up bob's.
    limit = (
        '\n[tools.echo]\nrate_limit = { calls = 1, per_seconds = 60, wait = false, '
        'per = "client" }\n'
    )
    env = {**os.environ, **child_env(tmp_path, EXTRA, config=CONFIG + AUTH + limit), **TOKENS}
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    async def run() -> list[types.CallToolResult]:
        async with client_as(url, "alice-token") as alice, client_as(url, "bob-token") as bob:
            return [
                await alice.call_tool("echo", {"text": "one"}),
                await alice.call_tool("echo", {"text": "two"}),
                await bob.call_tool("echo", {"text": "three"}),
            ]

    with http_server(tmp_path, port, env=env):
        first, second, bobs = asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert not first.is_error
    assert second.is_error
    assert "RateLimitError" in second.content[0].text  # type: ignore[union-attr]
    assert not bobs.is_error


CODE = "\n[code]\nenabled = true\nmax_programs_per_owner = 1\n"


def _program(code: str, request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "run_code", "arguments": {"code": code}}}


def test_without_auth_each_session_has_a_code_mode_cap_of_its_own(tmp_path: Path) -> None:
    """[code] max_programs_per_owner counts per owner: without [serve.auth] each
    Mcp-Session-Id is one, so one session's waiting program keeps no other session from
    running one. Stateless clients without a token cannot be told apart and share one
    count, and the refusal says so and how to get a count of one's own."""
    pytest.importorskip("pydantic_monty")
    env = {**os.environ, **child_env(tmp_path, EXTRA, config=CONFIG + CODE)}
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    held, anonymous_held = tmp_path / "go", tmp_path / "go-anonymous"
    waits = f"(await waiter(until={str(held)!r}))"
    anonymous_waits = f"(await waiter(until={str(anonymous_held)!r}))"

    async def run() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            one, two = await _async_session(http, url), await _async_session(http, url)
            holding = asyncio.ensure_future(http.post(url, headers=one, json=_program(waits)))
            await _until(tmp_path / "go.started")
            again = await http.post(url, headers=one, json=_program("1 + 1", 2))
            seen["one again"] = _answer(again)["result"]
            other = await http.post(url, headers=two, json=_program("1 + 1", 3))
            seen["two"] = _answer(other)["result"]
            async with client_as(url, None) as first, client_as(url, None) as second:
                waiting = asyncio.ensure_future(
                    first.call_tool("run_code", {"code": anonymous_waits})
                )
                await _until(tmp_path / "go-anonymous.started")
                seen["second"] = await second.call_tool("run_code", {"code": "1 + 1"})
                anonymous_held.write_text("")
                seen["first"] = await waiting
            held.write_text("")
            seen["one"] = _answer(await holding)["result"]
        return seen

    with http_server(tmp_path, port, env=env):
        seen = asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert not seen["one"]["isError"]
    assert seen["one again"]["isError"]  # its own cap: one program at a time
    assert "1 programs of this client are running" in seen["one again"]["content"][0]["text"]
    assert not seen["two"]["isError"], seen["two"]  # another session: a count of its own
    assert seen["two"]["structuredContent"]["value"] == 2
    assert not seen["first"].is_error
    refused = seen["second"]
    assert refused.is_error
    text = refused.content[0].text
    assert "clients toolplug cannot tell apart" in text
    assert "share one count" in text
    assert "[serve.auth]" in text


async def _async_session(http: Any, url: str) -> dict[str, str]:
    """``_session`` with an async client."""
    headers = {"accept": "application/json, text/event-stream"}
    init = await http.post(url, headers=headers, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
    named = {**headers, "mcp-session-id": init.headers["mcp-session-id"],
             "mcp-protocol-version": "2025-06-18"}
    await http.post(
        url, headers=named, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    return named


async def _until(path: Path) -> None:
    while not path.exists():
        await asyncio.sleep(0.02)
