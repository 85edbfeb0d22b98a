"""The official "everything" MCP server, mounted under a real ``toolplug serve`` and driven
by the SDK's ``mcp.Client`` on the other side: what it asks, samples, reports and logs
reaches the client as docs/mcp.md "When a server talks back" says, and what the client
answers reaches it (its results say what it received).

The server comes from npm (tests/relay/everything/package.json, pinned): install it with
``npm install --no-package-lock`` in that directory.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from tests.helpers.measured import measured
from tests.helpers.serve import TIMEOUT, free_port, http_server, stop, wait_for_port

HERE = Path(__file__).parent / "everything"
ENTRY = HERE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _missing() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed (the everything server comes from npm)"
    if not ENTRY.exists():
        return (
            "the everything server is not installed: run `npm install --no-package-lock "
            f"--no-audit --no-fund` in {HERE}"
        )
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def _config(tmp_path: Path, *, sampling: bool, url: str | None = None) -> dict[str, str]:
    """The environment of a ``toolplug serve`` that mounts only the everything server,
    its tools under their own names (``prefix = ""``), asking no approval."""
    where = f'url = "{url}"' if url else (
        f'command = {json.dumps(shutil.which("node"))}\nargs = [{json.dumps(str(ENTRY))}, "stdio"]'
    )
    (tmp_path / "toolplug.toml").write_text(
        f'cache_dir = {json.dumps(str(tmp_path / "cache"))}\n'
        f'[mcp_servers.everything]\n{where}\nprefix = ""\napproval = "never"\n'
        f"sampling = {str(sampling).lower()}\n",
        encoding="utf-8",
    )
    return measured({
        "TOOLPLUG_CONFIG": str(tmp_path / "toolplug.toml"),
        "TOOLPLUG_PLUGINS": "",  # only the mounted tools
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
    })


@asynccontextmanager
async def _served(tmp_path: Path, transport: str, env: dict[str, str]) -> AsyncIterator[Any]:
    if transport == "stdio":
        yield StdioServerParameters(
            command=sys.executable, args=["-m", "toolplug", "serve"], env=env, cwd=str(tmp_path)
        )
        return
    port = free_port()
    with http_server(tmp_path, port, env={**os.environ, **env}):
        yield f"http://127.0.0.1:{port}/mcp"


class Seen:
    """What the client on the far side of ``toolplug serve`` was asked and told."""

    def __init__(self) -> None:
        self.questions: list[Any] = []
        self.samplings: list[types.CreateMessageRequestParams] = []
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.questions.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada", "check": True})

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        self.samplings.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="a calm cup"),
            model="test-model", stop_reason="endTurn",
        )

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)


def _session(
    tmp_path: Path, transport: str, env: dict[str, str], work: Callable[[Client], Awaitable[Any]],
    seen: Seen,
) -> Any:
    async def main() -> Any:
        with anyio.fail_after(TIMEOUT):
            async with _served(tmp_path, transport, env) as server, Client(
                server, mode="legacy", elicitation_callback=seen.elicit,
                sampling_callback=seen.sample, logging_callback=seen.on_log,
            ) as client:
                return await work(client)

    return anyio.run(main)


def _texts(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@contextmanager
def _everything_over_http() -> Iterator[str]:
    """The everything server in its streamableHttp mode on 127.0.0.1; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [shutil.which("node") or "node", str(ENTRY), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(process, port, lambda: "")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process, 10)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_everything_server_talks_back_to_the_client_of_serve(
    tmp_path: Path, transport: str
) -> None:
    seen = Seen()

    async def work(client: Client) -> dict[str, types.CallToolResult]:
        calls: dict[str, dict[str, Any]] = {
            "trigger_elicitation_request": {},
            "trigger_sampling_request": {"prompt": "tea", "maxTokens": 7},
            "trigger_long_running_operation": {"duration": 0.3, "steps": 3},
            "toggle_simulated_logging": {},
            "get_tiny_image": {},
            "get_resource_reference": {},
        }
        results = {
            name: await client.call_tool(name, arguments, progress_callback=seen.on_progress)
            for name, arguments in calls.items()
        }
        await client.call_tool("toggle_simulated_logging", {})  # off again
        return results

    results = _session(tmp_path, transport, _config(tmp_path, sampling=True), work, seen)

    # the question reaches the client's elicitation callback, its answer the server,
    # with each field's default filled in by the mount
    [question] = seen.questions
    assert question.message == "Please provide inputs for the following fields:"
    assert question.requested_schema["required"] == ["name"]
    said = _texts(results["trigger_elicitation_request"])
    assert "User provided the requested information" in said
    assert "- Name: Ada" in said
    assert "- Agreed to terms: true" in said
    raw = json.loads(said.split("Raw result: ", 1)[1])
    assert raw["content"]["firstLine"] == "It was a dark and stormy night."
    assert raw["content"]["untitledMultipleSelectEnum"] == ["Guitar"]

    # the sampling request reaches the client's model, its completion the server
    [asked] = seen.samplings
    assert [m.content for m in asked.messages] == [types.TextContent(
        type="text", text="Resource trigger-sampling-request context: tea"
    )]
    assert (asked.max_tokens, asked.system_prompt) == (7, "You are a helpful test server.")
    completion = json.loads(_texts(results["trigger_sampling_request"]).split("\n", 1)[1])
    assert completion["content"] == {"type": "text", "text": "a calm cup"}
    assert completion["model"] == "test-model"

    # progress with the call's own token, in order
    assert seen.progress == [(1, 3, None), (2, 3, None), (3, 3, None)]

    # the line the server logs during the call reaches the client, logger the tool's name,
    # the server's level and text kept (docs/mcp.md: context.log, {"server", "logger", "data"})
    [line] = seen.logs
    assert line.logger == "toggle_simulated_logging"
    assert line.level in LEVELS
    assert line.data["data"]["server"] == "everything"
    assert line.data["message"] == line.data["data"]["data"]
    assert line.data["message"].lower().startswith(line.level)

    # an image and an embedded resource arrive as content
    image = [b for b in results["get_tiny_image"].content if isinstance(b, types.ImageContent)]
    assert [b.mime_type for b in image] == ["image/png"]
    assert base64.b64decode(image[0].data).startswith(b"\x89PNG\r\n\x1a\n")
    [embedded] = [
        b for b in results["get_resource_reference"].content
        if isinstance(b, types.EmbeddedResource)
    ]
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert str(embedded.resource.uri) == "demo://resource/dynamic/text/1"
    assert embedded.resource.text.startswith("Resource 1: This is a plaintext resource")


def test_without_sampling_the_server_is_not_offered_the_clients_model(tmp_path: Path) -> None:
    # The mount declares sampling only with `sampling = true`; the everything server then
    # offers no trigger-sampling-request at all (it registers it only for a client that
    # declares sampling), so the client's model is never asked.
    seen = Seen()

    async def work(client: Client) -> tuple[list[str], types.CallToolResult]:
        names = [tool.name for tool in (await client.list_tools()).tools]
        refused = await client.call_tool("trigger_sampling_request", {"prompt": "tea"})
        return names, refused

    names, refused = _session(
        tmp_path, "stdio", _config(tmp_path, sampling=False), work, seen
    )
    assert "trigger_elicitation_request" in names
    assert "trigger_sampling_request" not in names
    assert refused.is_error
    assert "trigger_sampling_request" in _error_text(refused)
    assert seen.samplings == []


def _error_text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def test_the_everything_server_over_streamable_http_asks_and_reports_through_serve(
    tmp_path: Path,
) -> None:
    seen = Seen()

    async def work(client: Client) -> tuple[str, str]:
        asked = await client.call_tool("trigger_elicitation_request", {})
        steps = await client.call_tool(
            "trigger_long_running_operation", {"duration": 0.2, "steps": 2},
            progress_callback=seen.on_progress,
        )
        await client.call_tool("toggle_simulated_logging", {})
        await client.call_tool("toggle_simulated_logging", {})  # off again
        return _texts(asked), _texts(steps)

    with _everything_over_http() as url:
        env = _config(tmp_path, sampling=False, url=url)
        asked, steps = _session(tmp_path, "stdio", env, work, seen)
    assert "- Name: Ada" in asked
    assert len(seen.questions) == 1
    assert seen.progress == [(1, 2, None), (2, 2, None)]
    assert steps.startswith("Long running operation completed")
    # its line comes on the session's own stream, not the call's: the call in flight gets it
    [line] = seen.logs
    assert (line.logger, line.data["data"]["server"]) == ("toggle_simulated_logging", "everything")
    assert line.level in LEVELS




def _named(items: list[Any], name: str) -> Any:
    """The item whose name is ``name`` as the mount spells it (``-`` may become ``_``)."""
    [item] = [i for i in items if i.name.replace("_", "-") == name]
    return item


def test_the_everything_servers_prompts_and_resources_reach_the_client_of_serve(
    tmp_path: Path,
) -> None:
    async def work(client: Client) -> tuple[Any, Any, Any]:
        prompts = (await client.list_prompts()).prompts
        simple = await client.get_prompt(_named(prompts, "simple-prompt").name)
        city = await client.get_prompt(_named(prompts, "args-prompt").name, {"city": "Oslo"})
        read = await client.read_resource("demo://resource/dynamic/text/1")
        return simple, city, read

    simple, city, read = _session(
        tmp_path, "stdio", _config(tmp_path, sampling=False), work, Seen()
    )
    assert simple.messages[0].content.text == "This is a simple prompt without arguments."
    assert city.messages[0].content.text == "What's weather in Oslo?"
    [contents] = read.contents
    assert contents.text.startswith("Resource 1: This is a plaintext resource")
