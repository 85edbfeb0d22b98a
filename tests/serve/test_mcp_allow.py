"""The effects a served call may have, from a real MCP client of ``toolplug serve``: the
operator's ``[serve] allow`` bounds every session, a call's ``_meta["toolplug/allow"]``
narrows it for that call and never widens it, and a malformed one is a ``ValidationError``
that names the key (serve/_allow.py; docs/mcp.md, "The effects a call may have")."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, cast

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import RequestParamsMeta

from tests.helpers.serve import child_env, error_of, free_port, http_server, text_of

NEWS = "https://news.example/today"  # untrusted: a page that tells the agent to post
TOOLS = (Path(__file__).parents[1] / "helpers" / "guard.py").read_text(encoding="utf-8") + (
    "\n\n@hookimpl\ndef register_tools(register: Any) -> None:\n"
    "    for tool in (ReadPage, Post, SendToChannel):\n        register(tool)\n"
)
POST = ("post", {"text": "Weather is fine today."})  # every value the model's own
SEND = ("send_to_channel", {"channel": "general", "body": "Weather is fine today."})
READ = ("read_page", {"url": NEWS})

Call = tuple[str, dict[str, Any], dict[str, Any] | None]


async def _run(session: ClientSession, calls: list[Call]) -> list[types.CallToolResult]:
    await session.initialize()
    return [
        await session.call_tool(name, arguments, meta=cast(RequestParamsMeta | None, meta))
        for name, arguments, meta in calls
    ]


def _stdio(tmp_path: Path, config: str, calls: list[Call]) -> list[types.CallToolResult]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolplug", "serve"],
        env=child_env(tmp_path, ("allow_tools", TOOLS), config=config),
        cwd=str(tmp_path),
    )

    async def session() -> list[types.CallToolResult]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as talk:
            return await _run(talk, calls)

    return anyio.run(session)


def _allow(*effects: str) -> dict[str, Any]:
    return {"toolplug/allow": list(effects)}


def _refused_by_effects(result: types.CallToolResult) -> dict[str, Any]:
    """The details of a call the effects rule asked about (nobody here could be asked)."""
    error = error_of(result)
    assert error["error_type"] == "ApprovalRequiredError", text_of(result)
    assert error["details"]["rule"] == "effects"
    return dict(error["details"])


def test_the_operator_bounds_the_session_and_a_call_s_meta_narrows_it(tmp_path: Path) -> None:
    config = '[serve]\nallow = ["research", "post"]\n'  # read_page by its category
    (
        before, read, inside, outside, narrowed, widened, asked_for,
    ) = _stdio(tmp_path, config, [
        (*SEND, None),  # nothing untrusted read yet: whatever runs came from the user
        (*READ, None),
        (*POST, None),  # inside the operator's bound
        (*SEND, None),  # outside it: the page may have asked for it
        (*POST, _allow("send_to_channel")),  # the user asked for a channel message only
        (*SEND, _allow("send_to_channel", "post")),  # the client cannot widen the operator's
        (*POST, _allow("post")),  # inside both
    ])
    assert not before.is_error, text_of(before)
    assert not read.is_error
    assert not inside.is_error, text_of(inside)
    assert _refused_by_effects(outside)["allowed"] == ["post", "research"]
    assert _refused_by_effects(narrowed)["allowed"] == ["send_to_channel"]
    # inside the client's bound, outside the operator's: the operator's word stands
    assert _refused_by_effects(widened)["allowed"] == ["post", "research"]
    assert "send_to_channel changes something or sends it out" in text_of(widened)
    assert not asked_for.is_error, text_of(asked_for)


def test_a_malformed_allow_is_a_validation_error_naming_the_key(tmp_path: Path) -> None:
    results = _stdio(tmp_path, "", [
        (*POST, {"toolplug/allow": "post"}),  # a string, not a list
        (*POST, {"toolplug/allow": {"post": -1}}),  # a count below 0
        (*POST, {"toolplug/allow": {"post": True}}),  # a boolean is no count
        (*POST, {"toolplug/allow": ["post", ""]}),  # an empty name
        (*POST, {"toolplug/allow": [7]}),  # not a name
        (*POST, {"toolplug/allow": 3}),
        (*POST, {"toolplug/allow": ["x" * 300]}),  # longer than any name
        (*POST, {"toolplug/allow": [f"tool_{i}" for i in range(1001)]}),  # too many
        (*POST, {"toolplug/allow": []}),  # well formed: no effect asked for, nothing read
    ])
    *malformed, fine = results
    found = [error_of(result) for result in malformed]
    assert {error["error_type"] for error in found} == {"ValidationError"}
    for error in found:
        assert error["error_message"].startswith('_meta["toolplug/allow"] ')
        assert error["error_message"].endswith("The call did not run.")
        assert error["details"]["meta"] == "toolplug/allow"
        assert error["details"]["expected"].startswith("a list of tool names or tool categories")
    messages = [error["error_message"] for error in found]
    assert 'is the string "post"' in messages[0]
    assert 'gives "post" the count -1: a count is a whole number, 0 or more, or null' in messages[1]
    assert 'gives "post" the count true' in messages[2]
    assert 'holds "": each effect is a tool\'s name or a tool category' in messages[3]
    assert "holds 7" in messages[4]
    assert "is 3: give a list" in messages[5]
    assert "holds a name of 300 characters, more than 256" in messages[6]
    assert "names 1001 effects, more than 1000" in messages[7]
    assert len(found[7]["details"]["got"]) <= 80  # a hostile value is not echoed whole
    assert not fine.is_error, text_of(fine)  # nothing untrusted read: the bound not applied


async def _http_session(url: str, calls: list[Call]) -> list[types.CallToolResult]:
    async with (
        streamable_http_client(url) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        return await _run(session, calls)


def test_over_http_each_call_carries_its_bound_and_counts_are_the_session_s(
    tmp_path: Path,
) -> None:
    # No operator bound: the client's alone, per call. A count is spent by the session's
    # calls of the tool; another session starts afresh.
    port = free_port()
    env = {**os.environ, **child_env(tmp_path, ("allow_tools", TOOLS), config="")}
    with http_server(tmp_path, port, env=env):
        url = f"http://127.0.0.1:{port}/mcp"

        async def both() -> tuple[list[types.CallToolResult], list[types.CallToolResult]]:
            first = await _http_session(url, [
                (*READ, _allow("read_page")),
                (*POST, None),  # no bound given, none configured: runs
                (*SEND, _allow("post")),  # outside the call's bound
                (*POST, {"toolplug/allow": {"post": 2}}),  # the second post: within 2
                (*POST, {"toolplug/allow": {"post": 2}}),  # a third: beyond the count
                (*POST, {"toolplug/allow": {"post": None}}),  # any number
            ])
            other = await _http_session(url, [
                (*READ, None), (*POST, {"toolplug/allow": {"post": 1}}),
            ])
            return first, other

        first, other = anyio.run(both)
    read, unbounded, outside, second, third, any_number = first
    assert not read.is_error
    assert not unbounded.is_error, text_of(unbounded)
    assert _refused_by_effects(outside)["allowed"] == ["post"]
    assert not second.is_error, text_of(second)
    details = _refused_by_effects(third)
    assert details["count"] == 2
    assert "asked for 2 such calls and 2 ran" in details["reason"]
    assert not any_number.is_error, text_of(any_number)
    assert not other[1].is_error, text_of(other[1])  # another session: its own count
