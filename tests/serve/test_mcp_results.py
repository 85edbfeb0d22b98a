"""``toolplug serve``: results that survive ``structuredContent``, and errors encoded once.

The server is the real command with real catalog tools (read_file, write_file,
static_links, citations) beside the test tools. The clients: the official SDK's
``ClientSession`` (which checks every success's ``structuredContent`` against the tool's
``outputSchema`` itself), pydantic-ai's ``MCPToolset`` driven by a ``FunctionModel`` that
keeps what the model is handed, and the Agents SDK's MCP server classes with
``use_structured_content=True`` driven by its ``ScriptedModel``, over stdio and HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from agents import Agent, RunConfig, Runner
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from agents.testing import ScriptedModel, assistant_message, function_call
from fastmcp.client.transports import StdioTransport
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolplug
from tests.helpers.serve import (
    CONFIG,
    TIMEOUT,
    child_env,
    error_of,
    free_port,
    http_server,
    text_of,
)
from toolplug.render._mcp import mcp_output_schema, structured_content

NOTES = "0123456789abcdefghijklmnopqrstuvwxyz"

RESULT_CONFIG = CONFIG + """
[tools.read_file]
cache_dir = "files"

[tools.write_file]
cache_dir = "files"
"""

PLUGINS = "toolplug-static-links,toolplug-files,toolplug-citations,mcp-test-tools"

READ = ("read_file", {"path": "file_cache_dir/notes.txt", "max_chars": 10})
"""A page of a longer file: the warning says where to read on (offset 10)."""
BAD = ("add", {"a": "two", "b": 1})
"""The model's mistake: an error result it should read once and act on."""


def server_env(tmp_path: Path) -> dict[str, str]:
    """The server's environment: the catalog tools beside the test tools, and a file."""
    env = child_env(tmp_path, config=RESULT_CONFIG)
    (tmp_path / "files").mkdir(exist_ok=True)
    (tmp_path / "files" / "notes.txt").write_text(NOTES, encoding="utf-8")
    return {**env, "TOOLPLUG_PLUGINS": PLUGINS}


def params(tmp_path: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolplug", "serve"],
        env=server_env(tmp_path),
        cwd=str(tmp_path),
    )


@contextmanager
def http_url(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    with http_server(tmp_path, port, env={**os.environ, **server_env(tmp_path)}):
        yield f"http://127.0.0.1:{port}/mcp"


# -- the official client: every catalog result validates ---------------------------------

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "read": READ,
    "read_rest": ("read_file", {"path": "file_cache_dir/notes.txt", "offset": 10}),
    "write": ("write_file", {"path": "file_cache_dir/out.txt", "content": "hello"}),
    "links": ("static_links", {"action": "list"}),
    "cite": (
        "citations",
        {"action": "add", "title": "Example", "url": "https://example.com/a"},
    ),
    "cite_list": ("citations", {"action": "list"}),
    "cite_format": ("citations", {"action": "format", "style": "apa"}),
    "bad": BAD,
    "missing": ("read_file", {"path": "file_cache_dir/nothing-here.txt"}),
}


def test_every_result_validates_and_carries_its_warnings_and_citations(tmp_path: Path) -> None:
    async def session() -> tuple[dict[str, types.Tool], dict[str, types.CallToolResult]]:
        with anyio.fail_after(TIMEOUT):
            async with (
                stdio_client(params(tmp_path)) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                tools = {t.name: t for t in (await client.list_tools()).tools}
                # The client checks each success's structuredContent against the
                # outputSchema and raises when it does not match.
                replies = {
                    label: await client.call_tool(name, arguments)
                    for label, (name, arguments) in CALLS.items()
                }
                return tools, replies

    tools, replies = anyio.run(session)
    for label, reply in replies.items():
        schema = tools[CALLS[label][0]].output_schema
        assert schema is not None, label
        if not reply.is_error:
            assert reply.structured_content is not None, label
            jsonschema.validate(reply.structured_content, schema)

    read = replies["read"].structured_content
    assert read is not None
    assert read["content"] == NOTES[:10]
    (warning,) = read["warnings"]
    assert "call read_file again with offset 10 for the rest" in warning
    assert f"Warning: {warning}" in text_of(replies["read"])  # and in the text, as before
    assert "warnings" not in (replies["read_rest"].structured_content or {})

    links = replies["links"].structured_content
    assert links is not None
    assert links["citations"] == [{"title": "github", "url": "https://github.com/example"}]

    # citations has a member called citations of its own: its data is wrapped
    cited = replies["cite_list"].structured_content
    assert cited is not None
    assert set(cited) >= {"result"}
    assert not replies["cite"].is_error, text_of(replies["cite"])

    bad = error_of(replies["bad"])
    assert bad["error_type"] == "ValidationError"
    assert bad["retry_possible"] is False
    missing = error_of(replies["missing"])
    assert missing["error_type"] == "NotFoundError"


CATALOG = Path(__file__).resolve().parents[2] / "plugins"
PAGE = (
    "<html><head><title>Tides</title></head><body><h1>Tides</h1>"
    "<p>High tide at 06:10. Low tide at 12:25.</p><a href='/feed.xml'>feed</a></body></html>"
)


def test_the_network_and_file_tools_validate_too(tmp_path: Path, httpserver_ipv4: Any) -> None:
    """url_fetch, link_validator and rss_feed against a server on 127.0.0.1, calendar from
    a file and readability offline: every success validates, with what it carries."""
    feed = (CATALOG / "rss_feed" / "tests" / "feeds" / "rss20.xml").read_bytes()
    httpserver_ipv4.expect_request("/page").respond_with_data(PAGE, content_type="text/html")
    httpserver_ipv4.expect_request("/feed.xml").respond_with_data(
        feed, content_type="application/rss+xml"
    )
    page, feed_url = httpserver_ipv4.url_for("/page"), httpserver_ipv4.url_for("/feed.xml")
    ics = CATALOG / "calendar" / "tests" / "data" / "team.ics"
    config = (
        CONFIG
        + '\n[network]\nallow = ["127.0.0.1/32"]\n\n'
        + f'[tools.calendar]\nsources = [{{ name = "team", path = "{ics}" }}]\n\n'
        + '[tools.url_fetch]\napproval = "never"\n'  # the test is the person who approves
    )
    env = {
        **child_env(tmp_path, config=config),
        "TOOLPLUG_PLUGINS": "toolplug-url-fetch,toolplug-readability,toolplug-link-validator,"
        "toolplug-rss-feed,toolplug-calendar,mcp-test-tools",
    }
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "fetch": ("url_fetch", {"url": page}),
        "fetch_page": ("url_fetch", {"url": page, "max_chars": 1000, "offset": 5}),
        "links": ("link_validator", {"urls": [page, feed_url]}),
        "feed": ("rss_feed", {"action": "fetch", "url": feed_url, "limit": 2}),
        "events": (
            "calendar",
            {"action": "list_events", "source": "team",
             "time_min": "2000-01-01T00:00:00Z", "time_max": "2100-01-01T00:00:00Z"},
        ),
        "readability": ("readability", {"text": "The cat sat on the mat. It was warm."}),
    }

    async def session() -> tuple[dict[str, types.Tool], dict[str, types.CallToolResult]]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "toolplug", "serve"], env=env, cwd=str(tmp_path)
        )
        with anyio.fail_after(TIMEOUT):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                tools = {t.name: t for t in (await client.list_tools()).tools}
                replies = {
                    label: await client.call_tool(name, arguments)
                    for label, (name, arguments) in calls.items()
                }
                return tools, replies

    tools, replies = anyio.run(session)
    for label, reply in replies.items():
        assert not reply.is_error, (label, text_of(reply))
        schema = tools[calls[label][0]].output_schema
        assert schema is not None, label
        assert reply.structured_content is not None, label
        jsonschema.validate(reply.structured_content, schema)
    assert replies["feed"].structured_content is not None
    assert replies["feed"].structured_content.get("citations"), "a feed cites its items"


def test_example_outputs_of_the_catalog_validate_with_warnings_and_citations() -> None:
    """Each catalog tool's example data, with a warning and a citation beside it, matches
    the outputSchema the server advertises for it."""
    registry = toolplug.load({})
    checked = 0
    for tool in registry.tools.values():
        metadata = tool.metadata
        schema = mcp_output_schema(metadata)
        if schema is None:
            continue
        for example in metadata.examples:
            if example.output is None:
                continue
            content = structured_content(
                metadata,
                example.output,
                warnings=["cut"],
                citations=[{"title": "T", "url": "https://example.com"}],
            )
            jsonschema.validate(content, schema)
            checked += 1
    assert checked >= 4


# -- pydantic-ai's MCP client ---------------------------------------------------------


def run_pydantic_ai(toolset: MCPToolset[Any]) -> dict[str, str]:
    """The model calls read_file and add (badly); what it is handed back, by tool."""
    handed: dict[str, str] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart(READ[0], READ[1]), ToolCallPart(BAD[0], BAD[1])]
            )
        for part in messages[-1].parts:
            if isinstance(part, ToolReturnPart):  # as a provider's adapter sends it
                handed[part.tool_name] = part.model_response_str()
        return ModelResponse(parts=[TextPart("done")])

    async def go() -> None:
        agent = PydanticAgent(FunctionModel(model), toolsets=[toolset])
        with anyio.fail_after(TIMEOUT):
            async with agent:
                await agent.run("read my notes and add two and one")

    asyncio.run(go())
    return handed


def check_pydantic_ai(handed: dict[str, str]) -> None:
    # structuredContent is what the model reads: the warning is in it
    read = json.loads(handed["read_file"])
    assert read["content"] == NOTES[:10]
    assert any("call read_file again with offset 10" in w for w in read["warnings"])
    # the error once encoded: pydantic-ai's {"error": ...} holds toolplug's prose
    error = json.loads(handed["add"])["error"]
    assert error.startswith("ValidationError: invalid arguments for add: a: expected type")
    assert "retry_possible: false" in error
    assert not error.lstrip().startswith("{")


def test_pydantic_ai_over_stdio(tmp_path: Path) -> None:
    env = {**os.environ, **server_env(tmp_path)}
    transport = StdioTransport(
        command=sys.executable, args=["-m", "toolplug", "serve"], env=env, cwd=str(tmp_path)
    )
    check_pydantic_ai(run_pydantic_ai(MCPToolset(transport)))


def test_pydantic_ai_over_http(tmp_path: Path) -> None:
    with http_url(tmp_path) as url:
        check_pydantic_ai(run_pydantic_ai(MCPToolset(url)))


# -- the OpenAI Agents SDK, reading structuredContent --------------------------------


async def run_agents(server: Any) -> dict[str, str]:
    """The scripted model calls read_file and add (badly); its tool outputs, by call id."""
    model = ScriptedModel(
        [
            [
                function_call(READ[0], READ[1], call_id="read"),
                function_call(BAD[0], BAD[1], call_id="bad"),
            ],
            [assistant_message("done")],
        ]
    )
    async with server:
        agent = Agent(name="assistant", model=model, mcp_servers=[server])
        await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))
    found: dict[str, str] = {}
    for recorded in model.calls:
        for item in recorded.input if isinstance(recorded.input, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = item["output"]
                found[item["call_id"]] = output if isinstance(output, str) else json.dumps(output)
    return found


def check_agents(outputs: dict[str, str]) -> None:
    read = json.loads(outputs["read"])
    assert read["content"] == NOTES[:10]
    assert any("call read_file again with offset 10" in w for w in read["warnings"])
    # an error keeps its text (the SDK's rule): toolplug's prose, once
    assert "ValidationError: invalid arguments for add: a: expected type" in outputs["bad"]
    assert "retry_possible: false" in outputs["bad"]


def test_agents_sdk_with_structured_content_over_stdio(tmp_path: Path) -> None:
    server = MCPServerStdio(
        {
            "command": sys.executable,
            "args": ["-m", "toolplug", "serve"],
            "env": {**os.environ, **server_env(tmp_path)},
            "cwd": str(tmp_path),
        },
        use_structured_content=True,
        client_session_timeout_seconds=TIMEOUT,
    )
    check_agents(asyncio.run(run_agents(server)))


def test_agents_sdk_with_structured_content_over_http(tmp_path: Path) -> None:
    with http_url(tmp_path) as url:
        server = MCPServerStreamableHttp(
            {"url": url}, use_structured_content=True, client_session_timeout_seconds=TIMEOUT
        )
        check_agents(asyncio.run(run_agents(server)))


@pytest.mark.parametrize("retry", [True, False])
def test_error_text_says_whether_to_retry(retry: bool) -> None:
    from toolplug import ToolResult
    from toolplug.serve._app import error_text

    failed = ToolResult.failure(
        "RateLimitError" if retry else "ValidationError",
        "slow down" if retry else "a: expected type integer",
        retry_possible=retry,
        details={"retry_after_seconds": 30} if retry else None,
    )
    text = error_text(failed)
    if retry:
        assert text == (
            "RateLimitError: slow down\n"
            "retry_possible: true (the same call may succeed if made again, after 30 seconds)"
        )
    else:
        assert text.startswith("ValidationError: a: expected type integer\nretry_possible: false")
