"""The flow guard over MCP: one conversation per client (here the stdio client), results
labelled in ``_meta`` as MCP's trust annotations extension writes them, and a sink call that
carries what an untrusted call returned refused when the client cannot be asked."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from tests.helpers.serve import child_env, text_of

NEWS = "https://news.example/today"
EVIL = "https://collect.evil.example/drop?k=1"
GUARD_TOOLS = (Path(__file__).parents[1] / "helpers" / "guard.py").read_text(encoding="utf-8") + (
    "\n\n@hookimpl\ndef register_tools(register: Any) -> None:\n"
    "    for tool in (ReadPage, ReadInbox, Post):\n        register(tool)\n"
)


def _params(tmp_path: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolplug", "serve"],
        env=child_env(tmp_path, ("guard_tools", GUARD_TOOLS)),
        cwd=str(tmp_path),
    )


async def _calls(tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> list[types.CallToolResult]:
    async with (
        stdio_client(_params(tmp_path)) as (read, write),
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
