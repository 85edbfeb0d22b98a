"""run_code wherever a tool works: the command line and an MCP client of ``toolplug serve``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

PROGRAM = (
    "r = await citations(action='add', title='Monty', url='https://example.org/monty')\n"
    "print(r['status'])\n"
    "[c['title'] for c in (await citations(action='list'))['citations']]\n"
)


def configure(where: Path) -> dict[str, str]:
    """Code mode on, the citations plugin only; the environment a child process gets."""
    (where / "toolplug.toml").write_text("[code]\nenabled = true\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPLUG_")}
    env["TOOLPLUG_PLUGINS"] = "toolplug-citations"
    env["XDG_STATE_HOME"] = str(where / "state")
    env["XDG_DATA_HOME"] = str(where / "data")  # where the citations are kept
    return env


def test_toolplug_call_runs_a_program(cli: Any) -> None:
    env = configure(Path.cwd())
    done = cli("call", "run_code", "--json", json.dumps({"code": PROGRAM}), env=env)
    assert done.code == 0, done.err
    assert done.out.splitlines() == ["added", '["Monty"]']
    refused = cli("call", "run_code", "code=open('toolplug.toml').read()", env=env)
    assert refused.code == 1
    assert "open is not allowed in run_code" in refused.err
    listed = cli("list", env=env)
    assert "run_code   utility    optional     toolplug" in listed.out


def test_an_mcp_client_lists_and_calls_run_code(tmp_path: Path) -> None:
    env = configure(tmp_path)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolplug", "serve"], env=env, cwd=str(tmp_path)
    )

    async def converse(errors: TextIO) -> tuple[list[types.Tool], types.CallToolResult]:
        with anyio.fail_after(60):
            client = stdio_client(params, errlog=errors)
            async with client as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listed = (await session.list_tools()).tools
                return listed, await session.call_tool("run_code", {"code": PROGRAM})

    with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errors:
        listed, result = anyio.run(converse, errors)
    by_name = {t.name: t for t in listed}
    assert sorted(by_name) == ["citations", "run_code"]
    described = by_name["run_code"].input_schema["properties"]["code"]["description"]
    assert "async def citations(action: Literal['add', 'list', 'format', 'remove']" in described
    assert not result.is_error, result.content
    assert result.structured_content == {
        "printed": "added\n", "value": ["Monty"], "calls": 2,
    }
