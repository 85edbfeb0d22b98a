"""A call ``toolplug serve`` answers over streamable HTTP carries the MCP semantic
conventions on its span (``mcp.method.name``, ``mcp.session.id``, ``jsonrpc.request.id``,
``mcp.protocol.version``, the transport), and its session reaches the record.

The server runs in this process (uvicorn in a thread, on 127.0.0.1), so its spans reach the
OpenTelemetry SDK's in-memory exporter; the client is the MCP SDK's own, over real HTTP.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.transport_security import TransportSecuritySettings
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolplug
from tests.helpers.serve import free_port
from tests.helpers.telemetry import memory_exporter
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult
from toolplug.serve._server import build_server


class Echo(Tool):
    metadata = ToolMetadata(
        name="echo_back",
        description="Say the text back.",
        category="utility",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success(arguments.get("text", ""))


class Plugin:
    @toolplug.hookimpl
    def register_tools(self, register: Any) -> None:
        register(Echo)


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    yield from memory_exporter()


def _serving(registry: toolplug.Registry) -> tuple[uvicorn.Server, threading.Thread, str]:
    app = build_server(registry).streamable_http_app(
        streamable_http_path="/mcp", host="127.0.0.1",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        assert thread.is_alive(), "the server stopped"
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}/mcp"


def test_a_served_call_has_the_mcp_attributes_and_its_session_is_recorded(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    registry = toolplug.load(
        {"record": {"enabled": True, "store": str(tmp_path / "record.sqlite3")}},
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("echo", Plugin())],
    )
    server, thread, url = _serving(registry)
    exporter.clear()

    async def client() -> str:
        with anyio.fail_after(60):
            async with streamable_http_client(url) as (read, write), ClientSession(
                read, write
            ) as session:
                init = await session.initialize()
                result = await session.call_tool("echo_back", {"text": "hi"})
                assert not result.is_error
                return str(init.protocol_version)

    try:
        version = anyio.run(client)
    finally:
        server.should_exit = True
        thread.join(30)
    spans: list[ReadableSpan] = [
        s for s in exporter.get_finished_spans() if s.name == "execute_tool echo_back"
    ]
    assert len(spans) == 1
    attributes = dict(spans[0].attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "echo_back"
    assert attributes["mcp.protocol.version"] == version
    assert attributes["network.transport"] == "tcp"
    assert attributes["network.protocol.name"] == "http"
    session = attributes["mcp.session.id"]
    assert isinstance(session, str)
    assert len(session) >= 16
    assert attributes["jsonrpc.request.id"]
    record = registry.record
    assert record is not None
    assert record.flush()
    [event] = record.query(tool="echo_back")
    assert event.session == session  # the record's session is the span's
    assert event.principal == f"session:{session}"
    context = spans[0].get_span_context()
    assert context is not None
    assert (event.trace_id, event.span_id) == (
        f"{context.trace_id:032x}", f"{context.span_id:016x}",
    )
    registry.close()
