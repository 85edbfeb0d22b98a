"""A call of a mounted MCP server's tool carries toolplug's trace context in ``_meta``.

The server is the SDK's own, in a child process over stdio and streamable HTTP on
127.0.0.1; its one tool answers with the ``_meta`` its request carried, as it came. The
MCP SDK's client span of the request (a child of the call's ``execute_tool`` span) is what
the ``traceparent`` names, so the server's spans continue the caller's trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

import toolplug
from tests.helpers.mcp_servers import http_server, stdio_table
from tests.helpers.telemetry import memory_exporter

UPSTREAM = r'''
import argparse
import json

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--http", type=int)
options = parser.parse_args()
app = MCPServer("traced", version="1.0")


@app.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def seen_meta(ctx: Context) -> str:
    """The _meta of this call's request, as it came."""
    meta = ctx.request_context.meta
    if meta is not None and not isinstance(meta, dict):
        meta = meta.model_dump(by_alias=True, exclude_none=True)
    return json.dumps(meta)


if options.http is None:
    app.run()
else:
    import uvicorn

    uvicorn.run(app.streamable_http_app(), host="127.0.0.1", port=options.http,
                log_level="warning")
'''

TRACE_ID = 0x5B8EFFF798038103D269B633813FC60C
CALLER = 0xEEE19B7EC3C1B174
TRACESTATE = "toolplug-test=mounted"
TRUSTED = "trust_annotations = true"  # the tool says it only reads: no approval to ask


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    yield from memory_exporter()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "traced_server.py"
    path.write_text(UPSTREAM, encoding="utf-8")
    return path


def _load(tmp_path: Path, table: str) -> toolplug.Registry:
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n{table}', encoding="utf-8"
    )
    return toolplug.load(config, env={"TOOLPLUG_PLUGINS": ""})


def _caller() -> NonRecordingSpan:
    return NonRecordingSpan(SpanContext(
        trace_id=TRACE_ID, span_id=CALLER, is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState.from_header([TRACESTATE]),
    ))


def _check(exporter: InMemorySpanExporter, registry: toolplug.Registry) -> None:
    exporter.clear()
    with trace.use_span(_caller()):
        result = registry.call("up_seen_meta", {})
    assert result.ok, result.error
    meta = json.loads(result.output)  # its other keys (a progress token, ...) may be any
    version, trace_id, span_id, flags = meta["traceparent"].split("-")
    assert (version, trace_id) == ("00", f"{TRACE_ID:032x}")
    assert int(flags, 16) & 1  # sampled
    assert meta["tracestate"] == TRACESTATE
    spans = {f"{s.context.span_id:016x}": s for s in exporter.get_finished_spans()}
    sent = spans[span_id]  # the SDK's client span of the request, under toolplug's
    assert sent.kind is trace.SpanKind.CLIENT
    assert (sent.attributes or {})["mcp.method.name"] == "tools/call"
    assert sent.parent is not None
    call = spans[f"{sent.parent.span_id:016x}"]
    assert call.name == "execute_tool up_seen_meta"
    assert call.parent is not None
    assert call.parent.span_id == CALLER


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_mounted_call_carries_the_trace_context_in_meta(
    exporter: InMemorySpanExporter, tmp_path: Path, script: Path, transport: str
) -> None:
    if transport == "stdio":
        registry = _load(tmp_path, stdio_table("up", script, extra=TRUSTED))
        try:
            _check(exporter, registry)
        finally:
            registry.close()
        return
    with http_server(script) as url:
        registry = _load(tmp_path, f'[mcp_servers.up]\nurl = "{url}"\n{TRUSTED}\n')
        try:
            _check(exporter, registry)
        finally:
            registry.close()
