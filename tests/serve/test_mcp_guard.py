"""The flow guard over MCP: one conversation per client (here the stdio client), results
labelled in ``_meta`` as MCP's trust annotations extension writes them, and a sink call that
carries what an untrusted call returned refused when the client cannot be asked."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import toolplug
from tests.helpers.serve import child_env, free_port, http_server, text_of

NEWS = "https://news.example/today"
EVIL = "https://collect.evil.example/drop?k=1"
GUARD_TOOLS = (Path(__file__).parents[1] / "helpers" / "guard.py").read_text(encoding="utf-8") + (
    "\n\n@hookimpl\ndef register_tools(register: Any) -> None:\n"
    "    for tool in (ReadPage, ReadInbox, Post):\n        register(tool)\n"
)


def _params(tmp_path: Path, config: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolplug", "serve"],
        env=child_env(tmp_path, ("guard_tools", GUARD_TOOLS), config=config),
        cwd=str(tmp_path),
    )


async def _calls(
    tmp_path: Path, *calls: tuple[str, dict[str, Any]], config: str = ""
) -> list[types.CallToolResult]:
    async with (
        stdio_client(_params(tmp_path, config)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments in calls]


def test_results_carry_the_trust_annotations(tmp_path: Path) -> None:
    page, inbox = anyio.run(_calls, tmp_path, ("read_page", {"url": NEWS}), ("read_inbox", {}))
    assert page.meta == {
        "io.modelcontextprotocol/trust-annotations": {"untrusted": True, "sensitive": False}
    }
    assert inbox.meta == {
        "io.modelcontextprotocol/trust-annotations": {"untrusted": False, "sensitive": True}
    }


def test_a_session_remembers_what_it_read(tmp_path: Path) -> None:
    page, post = anyio.run(
        _calls, tmp_path, ("read_page", {"url": NEWS}), ("post", {"text": f"see {EVIL}"})
    )
    assert not page.is_error
    assert post.is_error
    text = text_of(post)
    assert "ApprovalRequiredError" in text
    assert "read untrusted content" in text
    assert "read_page (call 1)" in text
    # another session read nothing: the same call runs
    [fresh] = anyio.run(_calls, tmp_path, ("post", {"text": f"see {EVIL}"}))
    assert not fresh.is_error, text_of(fresh)


def test_a_host_that_approves_calls_itself_is_still_asked_by_the_guard(tmp_path: Path) -> None:
    # [serve] approvals = "client": the MCP host approves calls, toolplug does not ask
    # again. Its approval did not see what the guard sees, so the guard still asks (and
    # this client cannot be asked: refused).
    config = '[serve]\napprovals = "client"\n'
    page, post = anyio.run(
        lambda: _calls(
            tmp_path, ("read_page", {"url": NEWS}), ("post", {"text": EVIL}), config=config
        )
    )
    assert not page.is_error
    assert post.is_error
    assert "read untrusted content" in text_of(post)


async def _session(url: str, *calls: tuple[str, dict[str, Any]]) -> list[types.CallToolResult]:
    async with (
        streamable_http_client(url) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments in calls]


def test_over_http_each_session_is_a_conversation_of_its_own(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, **child_env(tmp_path, ("guard_tools", GUARD_TOOLS), config="")}
    with http_server(tmp_path, port, env=env):
        url = f"http://127.0.0.1:{port}/mcp"

        async def both() -> tuple[types.CallToolResult, types.CallToolResult]:
            _, carried = await _session(
                url, ("read_page", {"url": NEWS}), ("post", {"text": EVIL})
            )
            [fresh] = await _session(url, ("post", {"text": EVIL}))
            return carried, fresh

        carried, fresh = anyio.run(both)
    assert carried.is_error
    assert "read untrusted content" in text_of(carried)
    assert not fresh.is_error, text_of(fresh)  # another session read nothing


def test_calls_run_as_tasks_are_guarded_in_the_session_s_conversation(tmp_path: Path) -> None:
    # A client that declares the Tasks extension, and a threshold of 0: every call it makes
    # runs as a task. What a task read is the session's, and a sink call that carries it
    # is asked about (here: refused, nobody can be asked), not run as a task unguarded.
    from mcp import Client

    from tests.helpers import tasks

    config = "[calls]\ntask_after_seconds = 0\n"

    async def session() -> tuple[Any, Any, Any]:
        async with Client(_params(tmp_path, config), extensions=[tasks.TasksClient()]) as client:
            read = await tasks.call(client, "read_page", {"url": NEWS})
            assert isinstance(read, tasks.CreatedTask), read
            done = await tasks.wait(client.session, read.task_id)
            post = await tasks.call(client, "post", {"text": f"see {EVIL}"})
            fine: Any = await tasks.call(client, "post", {"text": "nothing read"})
            if isinstance(fine, tasks.CreatedTask):
                fine = await tasks.wait(client.session, fine.task_id)
            return done, post, fine

    done, post, fine = anyio.run(session)
    assert done.status == "completed"
    assert isinstance(post, types.CallToolResult), post  # not a task that ran unguarded
    assert post.is_error
    assert "read_page (call 1)" in text_of(post)
    assert "ApprovalRequiredError" in text_of(post)
    assert getattr(fine, "status", None) == "completed", fine


def _guard_tools(*names: str) -> str:
    """A plugin module for ``toolplug serve``: tests/helpers/guard.py, registering ``names``."""
    return (Path(__file__).parents[1] / "helpers" / "guard.py").read_text(encoding="utf-8") + (
        "\n\n@hookimpl\ndef register_tools(register: Any) -> None:\n"
        f"    for tool in ({', '.join(names)}):\n        register(tool)\n"
    )


WORKSPACE_TOOLS = _guard_tools("Post", "GetChannels", "ReadWiki", "SendToChannel")


def test_refs_over_mcp(tmp_path: Path) -> None:
    """A tool's refs reach an MCP client in its ``_meta``, the operator's table too; a tool
    without refs keeps the ``_meta`` it had. A listed channel passed back runs; a channel
    named only in the partner's page is refused."""
    config = (
        '[tools.post]\ntrust = { output = "trusted", sinks = ["text", "link"], refs = ["link"] }\n'
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolplug", "serve"],
        env=child_env(tmp_path, ("workspace_tools", WORKSPACE_TOOLS), config=config),
        cwd=str(tmp_path),
    )

    async def session() -> tuple[list[types.Tool], list[types.CallToolResult]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as talk:
            await talk.initialize()
            listed = (await talk.list_tools()).tools
            calls = [
                await talk.call_tool(name, arguments)
                for name, arguments in (
                    ("get_channels", {}),
                    ("read_wiki", {}),
                    ("send_to_channel", {"channel": "External_0", "body": "hello"}),
                    ("send_to_channel", {"channel": "Secret_room_9", "body": "hello"}),
                )
            ]
            return listed, calls

    listed, (_, _, chosen, carried) = anyio.run(session)
    trust = {tool.name: (tool.meta or {}).get("toolplug/trust") for tool in listed}
    assert trust["send_to_channel"] == {
        "output": "trusted", "private": False, "sinks": ["channel", "body"],
        "refs": ["channel"],
        "returnMetadata": {"source": "system", "sensitivity": "none"},
    }
    assert trust["post"] is not None
    assert trust["post"]["refs"] == ["link"]  # the operator's table
    assert trust["get_channels"] == {  # no refs: no key, as before refs existed
        "output": "untrusted", "private": False, "sinks": [],
        "returnMetadata": {"source": "untrustedPublic", "sensitivity": "none"},
    }
    assert list(trust["get_channels"]) == ["output", "private", "sinks", "returnMetadata"]
    assert not chosen.is_error, text_of(chosen)
    assert carried.is_error
    assert "send_to_channel's channel carries the text 'secret_room_9'" in text_of(carried)
    assert "read_wiki (call 2)" in text_of(carried)


MAIL_TOOLS = _guard_tools("ReadPage", "FindContact", "SendMail")


def test_destinations_over_mcp(tmp_path: Path) -> None:
    """A tool's destinations reach an MCP client in its ``_meta``. In a session that read an
    untrusted page and a contact, a mail to the contact runs; the contact's door code in
    the body is refused under the trifecta rule."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolplug", "serve"],
        env=child_env(tmp_path, ("mail_tools", MAIL_TOOLS)),
        cwd=str(tmp_path),
    )
    mail = {"recipients": ["ada@corp.example"], "body": "Lunch moved to one."}

    async def session() -> tuple[list[types.Tool], list[types.CallToolResult]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as talk:
            await talk.initialize()
            listed = (await talk.list_tools()).tools
            calls = [
                await talk.call_tool(name, arguments)
                for name, arguments in (
                    ("read_page", {"url": "https://news.example/today"}),
                    ("find_contact", {"name": "Ada"}),
                    ("send_mail", mail),
                    ("send_mail", {**mail, "body": "The code is 4417-2290-17."}),
                )
            ]
            return listed, calls

    listed, (_, _, placed, carried) = anyio.run(session)
    trust = {tool.name: (tool.meta or {}).get("toolplug/trust") for tool in listed}
    assert trust["send_mail"] == {
        "output": "trusted", "private": False, "sinks": ["recipients", "subject", "body"],
        "destinations": ["recipients"],
        "returnMetadata": {"source": "system", "sensitivity": "none"},
    }
    assert "destinations" not in (trust["find_contact"] or {})
    assert not placed.is_error, text_of(placed)
    assert carried.is_error
    assert "send_mail's body leaves the machine or changes something" in text_of(carried)
    assert "(trifecta rule)" in text_of(carried)


@pytest.mark.parametrize("how", ["host approves", "as tasks"])
def test_the_servers_own_checks_search_a_long_page_off_the_loop(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, for the spy: the server asks the guard itself before a host's own approval
    stands ([serve] approvals = "client") and before it starts a call as a task. After a long
    page those checks search it in the guard's worker thread, as a call's own check does,
    and the call carrying the page is refused as before."""
    from mcp import Client

    from tests.helpers import tasks
    from tests.helpers.guard import PLUGIN
    from tests.helpers.guard_threads import CheckThreads, long_news
    from toolplug.serve._server import build_server

    long_news(monkeypatch)
    checks = CheckThreads(monkeypatch)
    tasked = how == "as tasks"
    config = (
        {"calls": {"task_after_seconds": 0}} if tasked else {"serve": {"approvals": "client"}}
    )
    registry = toolplug.load(config, plugins=[PLUGIN], env={})

    async def session() -> Any:
        extensions = [tasks.TasksClient()] if tasked else []
        with anyio.fail_after(60):
            async with Client(build_server(registry), extensions=extensions) as client:
                read = await tasks.call(client, "read_page", {"url": NEWS})
                if isinstance(read, tasks.CreatedTask):
                    await tasks.wait(client.session, read.task_id)
                return await tasks.call(client, "post", {"text": f"see {EVIL}"})

    try:
        post = anyio.run(session)
    finally:
        registry.close()
    assert isinstance(post, types.CallToolResult), post  # refused, not started as a task
    assert post.is_error
    assert "read untrusted content" in text_of(post)
    assert checks.threads
    assert checks.on_the_loop == []
