"""``toolplug serve``: the optional-tools section as an MCP prompt (``prompts/get``).

The server is the real command in a subprocess (``tests.helpers.serve``); the clients are
the official SDK's ``ClientSession`` and the OpenAI Agents SDK's own MCP server classes,
whose ``get_prompt`` text becomes the instructions its ``ScriptedModel`` is given.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import Agent, RunConfig, Runner
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from agents.testing import ScriptedModel, assistant_message
from mcp import ClientSession, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.helpers.serve import TIMEOUT, child_env, free_port, http_server, stdio_params

SECTION_TITLE = "# Optional Tools"


async def prompts(tmp_path: Path, asks: dict[str, dict[str, str]]) -> dict[str, Any]:
    """List the prompts, then get ``optional_tools`` with each label's arguments: the
    prompt's text, or the ``MCPError`` the server answered."""
    found: dict[str, Any] = {}
    with anyio.fail_after(TIMEOUT):
        async with (
            stdio_client(stdio_params(tmp_path)) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            found["capabilities"] = init.capabilities
            found["instructions"] = init.instructions
            found["listed"] = (await session.list_prompts()).prompts
            for label, arguments in asks.items():
                name = arguments.pop("_name", "optional_tools")
                try:
                    got = await session.get_prompt(name, arguments)
                except MCPError as exc:
                    found[label] = exc
                    continue
                (message,) = got.messages
                assert message.role == "user"
                assert isinstance(message.content, types.TextContent)
                found[label] = message.content.text
    return found


ASKS: dict[str, dict[str, str]] = {
    # no arguments: the section the server's instructions carry
    "plain": {},
    # the tools most relevant to the task, at most one
    "one": {"task": "configured links to pages", "max_tools": "1"},
    # a toolset of required tools only: no optional tool to describe
    "math": {"toolset": "math"},
    # the client's mistakes: each a -32602 naming the argument
    "unknown_toolset": {"toolset": "nope"},
    "zero": {"max_tools": "0"},
    "words": {"max_tools": "two"},
    "negative": {"max_tools": "-3"},
    "extra": {"colour": "blue"},
    "other_prompt": {"_name": "summarise"},
}


def test_prompts_over_stdio(tmp_path: Path) -> None:
    found = anyio.run(prompts, tmp_path, {k: dict(v) for k, v in ASKS.items()})
    assert found["capabilities"].prompts is not None
    (prompt,) = found["listed"]
    assert prompt.name == "optional_tools"
    assert [(a.name, a.required) for a in prompt.arguments] == [
        ("toolset", False), ("task", False), ("max_tools", False)
    ]

    plain = found["plain"]
    assert plain.startswith(SECTION_TITLE)
    assert plain == found["instructions"]  # instructions stay, and say the same
    for name in ("static_links", "echo", "liar"):  # the optional tools
        assert name in plain

    one = found["one"]
    assert one.startswith(SECTION_TITLE)
    assert "static_links" in one
    assert "echo" not in one
    assert "liar" not in one

    assert "No optional tools are available in this session." in found["math"]

    errors = {label: found[label] for label in ASKS if isinstance(found[label], MCPError)}
    assert sorted(errors) == sorted(
        ["unknown_toolset", "zero", "words", "negative", "extra", "other_prompt"]
    )
    for label, error in errors.items():
        assert error.error.code == types.INVALID_PARAMS, label
    assert "unknown toolset 'nope' (known: math)" in str(errors["unknown_toolset"])
    for label in ("zero", "words", "negative"):
        assert "max_tools must be a positive integer" in str(errors[label]), label
    assert "no argument 'colour'" in str(errors["extra"])
    assert "unknown prompt 'summarise'" in str(errors["other_prompt"])


def test_a_served_toolset_is_the_only_one_a_prompt_may_name(tmp_path: Path) -> None:
    async def ask() -> list[Any]:
        answers: list[Any] = []
        with anyio.fail_after(TIMEOUT):
            async with (
                stdio_client(stdio_params(tmp_path, "--toolset", "math")) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for toolset in ("math", "web"):
                    try:
                        got = await session.get_prompt("optional_tools", {"toolset": toolset})
                        answers.append(got)
                    except MCPError as exc:
                        answers.append(exc)
        return answers

    served, other = anyio.run(ask)
    assert not isinstance(served, MCPError)
    assert isinstance(other, MCPError)
    assert other.error.code == types.INVALID_PARAMS
    assert "toolset 'web' is not served here: this server offers toolset 'math'" in str(other)


# -- the OpenAI Agents SDK ------------------------------------------------------------


async def agent_with_prompt(server: Any) -> tuple[list[str], str, ScriptedModel]:
    """The Agents SDK lists the prompts and gets one; the agent runs with it."""
    async with server:
        listed = [p.name for p in (await server.list_prompts()).prompts]
        got = await server.get_prompt(
            "optional_tools", {"task": "configured links to pages", "max_tools": "1"}
        )
        text = got.messages[0].content.text
        model = ScriptedModel([[assistant_message("done")]])
        agent = Agent(name="assistant", model=model, instructions=text, mcp_servers=[server])
        await Runner.run(agent, "hello", run_config=RunConfig(tracing_disabled=True))
    return listed, text, model


def check_agent(listed: list[str], text: str, model: ScriptedModel) -> None:
    assert listed == ["optional_tools"]
    assert text.startswith(SECTION_TITLE)
    assert "static_links" in text
    assert "echo" not in text
    assert model.first_call is not None
    assert model.first_call.system_instructions == text


def test_agents_sdk_gets_the_prompt_over_stdio(tmp_path: Path) -> None:
    server = MCPServerStdio(
        {
            "command": sys.executable,
            "args": ["-m", "toolplug", "serve"],
            "env": {**os.environ, **child_env(tmp_path)},
            "cwd": str(tmp_path),
        },
        client_session_timeout_seconds=TIMEOUT,
    )
    check_agent(*asyncio.run(agent_with_prompt(server)))


def test_agents_sdk_gets_the_prompt_over_http(tmp_path: Path) -> None:
    port = free_port()
    with http_server(tmp_path, port):
        server = MCPServerStreamableHttp(
            {"url": f"http://127.0.0.1:{port}/mcp"}, client_session_timeout_seconds=TIMEOUT
        )
        check_agent(*asyncio.run(agent_with_prompt(server)))


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "many", "٣"])
def test_agents_sdk_reads_why_max_tools_is_refused(tmp_path: Path, value: str) -> None:
    """Each not-a-positive-integer (an Arabic-Indic digit too) is refused, and says how."""

    async def ask() -> MCPError:
        server = MCPServerStdio(
            {
                "command": sys.executable,
                "args": ["-m", "toolplug", "serve"],
                "env": {**os.environ, **child_env(tmp_path)},
                "cwd": str(tmp_path),
            },
            client_session_timeout_seconds=TIMEOUT,
        )
        async with server:
            with pytest.raises(MCPError) as caught:
                await server.get_prompt("optional_tools", {"max_tools": value})
        return caught.value

    error = asyncio.run(ask())
    assert error.error.code == types.INVALID_PARAMS
    assert f"max_tools must be a positive integer such as 5; got {value!r}" in str(error)
