"""``toolplug serve``: an MCP client round trip over stdio and streamable HTTP.

The server is the real command, ``python -m toolplug serve``, in a subprocess, with test
tools installed as a distribution beside the real static_links plugin; the client is the
official MCP SDK's
``ClientSession``. Every wait is bounded and every server process is ended by its test.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

import toolplug
from tests.helpers.serve import (
    TIMEOUT,
    error_of,
    free_port,
    http_server,
    stdio_params,
    text_of,
)
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult, UsageError, hookimpl
from toolplug.render._mcp import RESULT_EXTRAS
from toolplug.serve._server import INSTALL_LINE, build_server, parse_address, serve

EXPECTED_TOOLS = ["add", "echo", "liar", "static_links"]


@dataclass
class Seen:
    """What one client session observed, for the assertions."""

    init: types.InitializeResult | None = None
    listed: list[types.Tool] = field(default_factory=list)
    listed_again: list[str] = field(default_factory=list)
    calls: dict[str, types.CallToolResult] = field(default_factory=dict)


async def converse(
    transport: AbstractAsyncContextManager[
        tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]
    ],
    calls: dict[str, tuple[str, dict[str, Any]]],
) -> Seen:
    """Initialize, list, make the calls (label -> (tool, arguments)), and list again."""
    seen = Seen()
    with anyio.fail_after(TIMEOUT):
        async with transport as (read, write), ClientSession(read, write) as session:
            seen.init = await session.initialize()
            seen.listed = (await session.list_tools()).tools
            for label, (name, arguments) in calls.items():
                seen.calls[label] = await session.call_tool(name, arguments)
            seen.listed_again = [t.name for t in (await session.list_tools()).tools]
    return seen


CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "add": ("add", {"a": 2, "b": 3}),
    "echo": ("echo", {"text": "héllo"}),
    "links": ("static_links", {"action": "list"}),
    "bad": ("add", {"a": "two"}),
    "unknown": ("ad", {}),
    "liar": ("liar", {}),
}


def check_round_trip(seen: Seen) -> None:
    """The assertions both transports share."""
    assert seen.init is not None
    assert seen.init.server_info.name == "toolplug"
    assert seen.init.capabilities.tools is not None
    # Optional tools come with the optional-tools section as server instructions.
    assert seen.init.instructions is not None
    assert "static_links" in seen.init.instructions

    by_name = {tool.name: tool for tool in seen.listed}
    assert sorted(by_name) == EXPECTED_TOOLS
    assert seen.listed_again == EXPECTED_TOOLS
    add = by_name["add"]
    assert add.description == "Add two integers.\n\nUse for exact integer sums."
    assert add.input_schema["required"] == ["a", "b"]
    # The warnings and citations a result may carry are declared beside the data.
    assert add.output_schema == {
        "type": "object",
        "properties": {"sum": {"type": "integer"}, **RESULT_EXTRAS},
        "required": ["sum"],
    }
    assert add.annotations is not None
    assert add.annotations.read_only_hint is True
    assert add.annotations.destructive_hint is False
    assert add.annotations.idempotent_hint is True
    assert add.annotations.open_world_hint is False
    # A non-object returns schema is wrapped so the output schema is an object.
    assert by_name["echo"].output_schema is not None
    assert by_name["echo"].output_schema["properties"] == {
        "result": {"type": "string"},
        **RESULT_EXTRAS,
    }
    assert by_name["static_links"].title == "Configured links"
    # Trust labels in each tool's _meta: the configuration's overlay (add), the cautious
    # default of a tool that declares none (echo), the plugin's own (static_links).
    trust = {name: (tool.meta or {}).get("toolplug/trust") for name, tool in by_name.items()}
    assert trust["add"] == {
        "output": "trusted", "private": False, "sinks": [],
        "returnMetadata": {"source": "system", "sensitivity": "none"},
    }
    assert trust["echo"] == {
        "output": "untrusted", "private": True, "sinks": ["text"],
        "returnMetadata": {"source": "untrustedPublic", "sensitivity": "user"},
    }
    assert trust["static_links"] is not None
    assert (trust["static_links"]["output"], trust["static_links"]["sinks"]) == ("trusted", [])

    calls = seen.calls
    assert not calls["add"].is_error
    assert text_of(calls["add"]) == "2 + 3 = 5"
    assert calls["add"].structured_content == {"sum": 5}

    assert not calls["echo"].is_error
    assert text_of(calls["echo"]) == "héllo"
    assert calls["echo"].structured_content == {"result": "héllo"}

    assert not calls["links"].is_error, text_of(calls["links"])
    assert "https://github.com/example" in text_of(calls["links"])

    # Bad arguments: an error result naming each bad field, not a protocol error.
    # Once encoded: prose for the model, the fields in _meta for the host.
    bad = error_of(calls["bad"])
    assert bad["error"] is True
    assert bad["error_type"] == "ValidationError"
    assert "a: expected type integer" in bad["error_message"]
    assert "b: expected a value (required)" in bad["error_message"]

    unknown = error_of(calls["unknown"])
    assert unknown["error_type"] == "NotFoundError"
    assert "did you mean add" in unknown["error_message"]

    # Every structured result validates against the output schema its tool advertised.
    for label, result in calls.items():
        if result.structured_content is not None:
            schema = by_name[CALLS[label][0]].output_schema
            assert schema is not None, label
            jsonschema.validate(result.structured_content, schema)
    assert calls["add"].structured_content is not None

    # Data that breaks the declared returns schema is the plugin's bug, reported as one.
    liar = error_of(calls["liar"])
    assert liar["error_type"] == "ExecutionError"
    assert "does not match its declared returns schema" in liar["error_message"]
    assert calls["liar"].structured_content is None


# -- stdio ----------------------------------------------------------------------------


def run_stdio(tmp_path: Path, calls: dict[str, tuple[str, dict[str, Any]]], *options: str) -> Seen:
    errors = tmp_path / "server-stderr.txt"
    with errors.open("w", encoding="utf-8") as errlog:
        try:
            return anyio.run(
                converse, stdio_client(stdio_params(tmp_path, *options), errlog=errlog), calls
            )
        except BaseException:
            errlog.flush()
            print(errors.read_text(encoding="utf-8"), file=sys.stderr)
            raise


def test_stdio_round_trip(tmp_path: Path) -> None:
    check_round_trip(run_stdio(tmp_path, CALLS))


def test_stdio_toolset_limits_what_is_offered(tmp_path: Path) -> None:
    seen = run_stdio(
        tmp_path,
        {"add": ("add", {"a": 1, "b": 1}), "echo": ("echo", {"text": "x"})},
        "--toolset",
        "math",
    )
    assert [t.name for t in seen.listed] == ["add"]
    assert not seen.calls["add"].is_error
    # Installed, but outside the toolset: not callable through this server.
    refused = error_of(seen.calls["echo"])
    assert refused["error_type"] == "NotFoundError"
    assert "not offered by this server (toolset math)" in refused["error_message"]
    # No optional tool is offered, so there are no instructions.
    assert seen.init is not None
    assert seen.init.instructions is None


# -- serve --max-tools ------------------------------------------------------------------


@dataclass
class Grown:
    """What a session under --max-tools saw: the first list, the search, the second list."""

    init: types.InitializeResult | None = None
    first: list[str] = field(default_factory=list)
    search: types.CallToolResult | None = None
    changed: int = 0
    second: list[str] = field(default_factory=list)
    echo: types.CallToolResult | None = None


async def grow(
    transport: AbstractAsyncContextManager[
        tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]
    ],
) -> Grown:
    grown = Grown()
    notified = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            grown.changed += 1
            notified.set()

    with anyio.fail_after(TIMEOUT):
        async with transport as (read, write), ClientSession(
            read, write, message_handler=on_message
        ) as session:
            grown.init = await session.initialize()
            grown.first = [t.name for t in (await session.list_tools()).tools]
            grown.search = await session.call_tool("search_tools", {"query": "repeat the text"})
            await notified.wait()
            grown.second = [t.name for t in (await session.list_tools()).tools]
            grown.echo = await session.call_tool("echo", {"text": "found"})
    return grown


def check_grown(grown: Grown) -> None:
    assert grown.init is not None
    assert grown.init.capabilities.tools is not None
    assert grown.init.capabilities.tools.list_changed is True
    assert grown.init.instructions is not None
    assert "call search_tools with what you need" in grown.init.instructions
    # The one tool most relevant to the task, and the search tool.
    assert grown.first == ["add", "search_tools"]
    assert grown.search is not None
    assert not grown.search.is_error
    assert '"name": "echo"' in text_of(grown.search)
    assert grown.changed == 1
    assert grown.second == ["add", "echo", "search_tools"]
    assert grown.echo is not None
    assert text_of(grown.echo) == "found"


def test_stdio_max_tools_grows_the_list_by_search(tmp_path: Path) -> None:
    options = ("--max-tools", "1", "--task", "add two integers")
    errors = tmp_path / "server-stderr.txt"
    with errors.open("w", encoding="utf-8") as errlog:
        grown = anyio.run(grow, stdio_client(stdio_params(tmp_path, *options), errlog=errlog))
    check_grown(grown)


def test_max_tools_needs_no_search_when_everything_fits() -> None:
    server = build_server(ping_registry(), max_tools=5)
    options = server.create_initialization_options()
    assert options.capabilities.tools is not None
    assert not options.capabilities.tools.list_changed


def test_task_without_max_tools_is_a_usage_error(cli: Any) -> None:
    done = cli("serve", "--task", "anything")
    assert done.code == 2
    assert "--task needs --max-tools" in done.err


# -- streamable HTTP ------------------------------------------------------------------


def test_streamable_http_max_tools_grows_each_session(tmp_path: Path) -> None:
    port = free_port()
    options = ("--max-tools", "1", "--task", "add two integers")
    with http_server(tmp_path, port, *options):
        url = f"http://127.0.0.1:{port}/mcp"
        check_grown(anyio.run(grow, streamable_http_client(url)))
        # A new session starts from the short list again.
        fresh = anyio.run(converse, streamable_http_client(url), {})
    assert [t.name for t in fresh.listed] == ["add", "search_tools"]


def test_streamable_http_round_trip(tmp_path: Path) -> None:
    port = free_port()
    with http_server(tmp_path, port) as process:
        seen = anyio.run(converse, streamable_http_client(f"http://127.0.0.1:{port}/mcp"), CALLS)
        assert process.poll() is None  # still serving after bad calls
    check_round_trip(seen)
    # The server announced where it listens, and stopped on SIGTERM without a traceback.
    log = (tmp_path / "http-stderr.txt").read_text(encoding="utf-8")
    assert f"MCP server at http://127.0.0.1:{port}/mcp" in log
    assert "Traceback" not in log


# -- in process -----------------------------------------------------------------------


class Ping(Tool):
    metadata = ToolMetadata(name="ping", description="Answer pong.", category="utility")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("pong")


class PingPlugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Ping)


def ping_registry() -> toolplug.Registry:
    return toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("ping", PingPlugin())])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8000", ("127.0.0.1", 8000)),  # the usual form
        ("8000", ("127.0.0.1", 8000)),  # a port alone means loopback
        (":8000", ("127.0.0.1", 8000)),  # an empty host too
        ("0.0.0.0:80", ("0.0.0.0", 80)),  # every interface, on purpose
        ("localhost:0", ("localhost", 0)),  # port 0: any free port
        ("[::1]:9000", ("::1", 9000)),  # IPv6 in brackets
        (" example.org:443 ", ("example.org", 443)),  # surrounding space is ignored
    ],
)
def test_parse_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "localhost",  # no port
        "127.0.0.1:http",  # a port name, not a number
        "127.0.0.1:70000",  # out of range
        "::1:8000",  # IPv6 without brackets is ambiguous
        "[::1]8000",  # bracket without colon
        "",  # nothing
    ],
)
def test_parse_address_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="HOST:PORT"):
        parse_address(text)


def test_busy_port_is_a_usage_error() -> None:
    registry = ping_registry()
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        with pytest.raises(UsageError, match=f"cannot serve MCP on 127.0.0.1:{port}"):
            serve(registry, http=f"127.0.0.1:{port}")


def test_unknown_toolset_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown toolset 'nope'"):
        build_server(ping_registry(), toolset="nope")


def test_missing_sdk_names_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "mcp" or name.startswith("mcp."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # makes `import mcp` raise ImportError
    with pytest.raises(UsageError) as caught:
        serve(ping_registry())
    assert INSTALL_LINE == 'pip install "toolplug[mcp]"'
    assert INSTALL_LINE in str(caught.value)


def test_importing_the_server_module_does_not_import_mcp() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, toolplug.serve._server; print('mcp' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "False"
