"""Serve and mount are each other's mirror: a server mounted through a ``toolplug serve``
of a mounted server behaves as the original.

The original is written with the SDK (``mcp.server.mcpserver``) and speaks the handshake
era, asking by requests of its own during a call. The chain is
client -> ``toolplug serve`` B (mounts A) -> ``toolplug serve`` A (mounts the original)
-> original, every mount with ``prefix = ""`` so the names are the original's. The same
script of calls, answered the same way, is run against the original directly and against
the chain, and what the client sees is compared.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from tests.helpers.measured import measured
from tests.helpers.serve import TIMEOUT

ORIGINAL = r'''
import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    CallToolResult, ImageContent, ModelHint, ModelPreferences, SamplingMessage, TextContent,
)

warnings.simplefilter("ignore")  # the SDK marks logging and sampling deprecated (SEP-2577)
app = MCPServer("original")
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 1},
        "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
        "seats": {"type": "integer", "minimum": 1, "default": 2},
    },
    "required": ["name"],
}
PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


@app.tool()
async def interview(ctx: Context) -> str:
    """Asks the user a form with defaults and an enum."""
    answer = await ctx.session.elicit("Who is coming?", FORM)
    return json.dumps(answer.model_dump(mode="json", exclude_none=True), sort_keys=True)


@app.tool()
async def muse(topic: str, ctx: Context) -> str:
    """Asks the client's model for a line."""
    done = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"a line on {topic}"))],
        max_tokens=40, system_prompt="Be brief.",
        model_preferences=ModelPreferences(hints=[ModelHint(name="small")]),
    )
    return f"{done.content.text} ({done.model}, {done.stop_reason})"


@app.tool()
async def steps(ctx: Context) -> str:
    """Reports progress with messages."""
    for done in (1, 2, 3):
        await ctx.report_progress(done, 3, f"step {done}")
    return "three steps"


@app.tool()
async def chatty(ctx: Context) -> str:
    """Logs at several levels."""
    for level in ("debug", "info", "warning", "error"):
        await ctx.log(level, f"a {level} line", logger_name="chatter")
    return "logged"


@app.tool()
def picture() -> CallToolResult:
    """Returns a picture and structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text="a red dot"),
                 ImageContent(type="image", data=PNG, mime_type="image/png")],
        structured_content={"width": 1, "height": 1},
    )


@app.tool()
def refuse() -> str:
    """Fails, saying why."""
    from mcp.server.mcpserver.exceptions import ToolError

    raise ToolError("no tea today")


async def main():  # the handshake era only: no server/discover
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    low = app._lowlevel_server
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        await serve_loop(low, read, write, lifespan_state=state,
                         init_options=low.create_initialization_options())


import anyio
import json

anyio.run(main)
'''

MOUNT = 'prefix = ""\napproval = "never"\nsampling = true\n'
TOOLS = ["chatty", "interview", "muse", "picture", "refuse", "steps"]


def _table(name: str, command: list[str], env: dict[str, str] | None = None) -> str:
    args = ", ".join(json.dumps(a) for a in command[1:])
    table = f"[mcp_servers.{name}]\ncommand = {json.dumps(command[0])}\nargs = [{args}]\n{MOUNT}"
    if env:
        table += "env = {" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + "}\n"
    return table


def _serve_env(directory: Path, config: str) -> dict[str, str]:
    directory.mkdir()
    (directory / "toolplug.toml").write_text(
        f'cache_dir = {json.dumps(str(directory / "cache"))}\n{config}', encoding="utf-8"
    )
    return measured({  # B's too, through the env table of its mount of A
        "TOOLPLUG_CONFIG": str(directory / "toolplug.toml"),
        "TOOLPLUG_PLUGINS": "",  # only the mounted tools
        "XDG_CACHE_HOME": str(directory / "xdg-cache"),
        "XDG_STATE_HOME": str(directory / "xdg-state"),
    })


@pytest.fixture
def servers(tmp_path: Path) -> dict[str, StdioServerParameters]:
    """The original, and B: the serve of a mount of the serve A of a mount of it."""
    script = tmp_path / "original.py"
    script.write_text(ORIGINAL, encoding="utf-8")
    serve = [sys.executable, "-m", "toolplug", "serve"]
    a = _serve_env(tmp_path / "a", _table("original", [sys.executable, str(script)]))
    b = _serve_env(tmp_path / "b", _table("a", serve, env=a))
    return {
        "original": StdioServerParameters(command=sys.executable, args=[str(script)]),
        "chain": StdioServerParameters(
            command=sys.executable, args=serve[1:], env=b, cwd=str(tmp_path)
        ),
    }


class Seen:
    """All the client was asked and told, answering each question and sampling request
    the same way."""

    def __init__(self) -> None:
        self.questions: list[tuple[str, Any]] = []
        self.samplings: list[types.CreateMessageRequestParams] = []
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.results: dict[str, types.CallToolResult] = {}

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.questions.append((params.message, params.requested_schema))
        return types.ElicitResult(action="accept", content={"name": "Ada", "size": "large"})

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        self.samplings.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="tea is calm"),
            model="test-model", stop_reason="endTurn",
        )

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)


SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("interview", {}), ("muse", {"topic": "tea"}), ("steps", {}), ("chatty", {}),
    ("picture", {}), ("refuse", {}),
]


def _run(server: StdioServerParameters) -> tuple[Seen, list[str]]:
    seen = Seen()

    async def main() -> list[str]:
        with anyio.fail_after(TIMEOUT):
            async with Client(
                server, mode="legacy", elicitation_callback=seen.elicit,
                sampling_callback=seen.sample, logging_callback=seen.on_log,
            ) as client:
                names = sorted(tool.name for tool in (await client.list_tools()).tools)
                for name, arguments in SCRIPT:
                    seen.results[name] = await client.call_tool(
                        name, arguments, progress_callback=seen.on_progress
                    )
                return names

    return seen, anyio.run(main)


def _innermost(params: types.LoggingMessageNotificationParams) -> Any:
    """The original's own data of a log line: each serve wraps what its mount relayed as
    ``{"message", "data": {"server", "logger", "data"}}``."""
    data = params.data
    while isinstance(data, dict) and set(data) == {"message", "data"}:
        data = data["data"]["data"]
    return data


def test_a_server_mounted_through_a_serve_of_a_mounted_server_behaves_as_the_original(
    servers: dict[str, StdioServerParameters],
) -> None:
    direct, direct_names = _run(servers["original"])
    chain, chain_names = _run(servers["chain"])
    assert direct_names == chain_names == TOOLS

    # the same questions, answered the same way, and what the original heard
    assert chain.questions == direct.questions
    [(message, schema)] = chain.questions
    assert message == "Who is coming?"
    assert schema["properties"]["size"] == {
        "type": "string", "enum": ["small", "large"], "default": "small"
    }
    heard = {"action": "accept", "content": {"name": "Ada", "size": "large"}}
    assert json.loads(_text(direct.results["interview"])) == heard
    # through a mount the answer comes with each field's default filled in (docs/mcp.md)
    assert json.loads(_text(chain.results["interview"])) == {
        "action": "accept", "content": {"name": "Ada", "size": "large", "seats": 2}
    }

    # the same sampling request, and its completion back to the original
    [asked] = chain.samplings
    # _meta may carry a trace context (traceparent), which differs per hop by design
    def unmeta(params: Any) -> Any:
        return params.model_copy(update={"meta": None})

    assert [unmeta(asked)] == [unmeta(p) for p in direct.samplings]
    assert asked.max_tokens == 40
    assert asked.system_prompt == "Be brief."
    assert [m.content for m in asked.messages] == [
        types.TextContent(type="text", text="a line on tea")
    ]
    assert _text(chain.results["muse"]) == _text(direct.results["muse"])
    assert _text(direct.results["muse"]) == "tea is calm (test-model, endTurn)"

    # progress in order, messages and all; by design each serve sends at most one report
    # per [serve] progress_interval_seconds to a session (a report sooner waits, replaced
    # by the next, and the result supersedes what still waits), so the chain hears the
    # first of reports made at once, and never a report out of order
    assert direct.progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert chain.progress[0] == direct.progress[0]
    assert all(step in direct.progress for step in chain.progress)
    assert chain.progress == sorted(chain.progress)

    # log lines of the same levels, carrying the original's text
    assert [e.level for e in chain.logs] == [e.level for e in direct.logs]
    assert [e.level for e in direct.logs] == ["debug", "info", "warning", "error"]
    assert [_innermost(e) for e in chain.logs] == [e.data for e in direct.logs]
    # by design a serve names the tool as the logger, and its mount keeps the server's own
    # logger in the line's data (docs/mcp.md "When a server talks back")
    assert {e.logger for e in direct.logs} == {"chatter"}
    assert {e.logger for e in chain.logs} == {"chatty"}
    assert chain.logs[0].data["message"].startswith("chatty: ")

    # a picture, and the same structured content where the tool declares its outputSchema
    for seen in (direct, chain):
        text, image = seen.results["picture"].content
        assert text == types.TextContent(type="text", text="a red dot")
        assert isinstance(image, types.ImageContent)
        assert image.mime_type == "image/png"
        assert base64.b64decode(image.data).startswith(b"\x89PNG\r\n\x1a\n")
    assert chain.results["picture"].content == direct.results["picture"].content
    for name in ("chatty", "muse", "steps"):
        assert chain.results[name].structured_content == direct.results[name].structured_content
    assert direct.results["steps"].structured_content == {"result": "three steps"}
    # by design serve sends structuredContent only for a tool with a returns schema: the
    # original's picture declares none, so its structured content stays with the mount
    # (the result's data, for a Python host) and stops at the serve
    assert direct.results["picture"].structured_content == {"width": 1, "height": 1}
    assert chain.results["picture"].structured_content is None
    assert [n for n, r in chain.results.items() if r.is_error] == ["refuse"]

    # an error keeps its type and words through the chain: the outer serve reads the inner
    # one's structured error (its _meta), so the type is said once, not once a hop
    said = direct.results["refuse"].content[0]
    assert isinstance(said, types.TextContent)
    assert "no tea today" in said.text
    relayed = chain.results["refuse"].content[0]
    assert isinstance(relayed, types.TextContent)
    assert relayed.text.startswith(f"ExecutionError: {said.text}\nretry_possible: false")
    assert relayed.text.count("ExecutionError") == 1 + said.text.count("ExecutionError")
    assert relayed.text.count("retry_possible") == 1


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    [block] = [b for b in result.content if isinstance(b, types.TextContent)]
    return block.text
