"""An OpenAPI operation's request carries the call span's W3C trace context as headers.

Against a real HTTP server on 127.0.0.1 that records each request's headers as they came;
the spans go to the OpenTelemetry SDK's in-memory exporter. Without OpenTelemetry loaded
(a child process that never imports it) no header is sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

import toolplug
from tests.helpers.measured import measured
from tests.helpers.telemetry import memory_exporter

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
CALLER = 0xB7AD6B7169203331

_PATHS: dict[str, Any] = {
    "/items/{id}": {"get": {
        "operationId": "getItem",
        "parameters": [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
            {"name": "traceparent", "in": "header", "schema": {"type": "string"}},
        ],
        "responses": {"200": {"description": "the item"}},
    }},
}


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def do_GET(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads ``seen``."""


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Recorder,), {"seen": seen}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    yield from memory_exporter()


def _config(tmp_path: Path, url: str) -> dict[str, Any]:
    spec = tmp_path / "api.json"
    spec.write_text(json.dumps(
        {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": _PATHS}
    ))
    return {
        "network": {"allow": ["127.0.0.1"]}, "cache_dir": str(tmp_path / "cache"),
        "openapi": {"api": {"spec": str(spec), "base_url": url}},
    }


def _caller(state: str | None) -> NonRecordingSpan:
    return NonRecordingSpan(SpanContext(
        trace_id=TRACE_ID, span_id=CALLER, is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState.from_header([state]) if state else None,
    ))


@pytest.mark.parametrize("state", ["toolplug-test=t1,other=2", None])
def test_each_request_carries_the_call_spans_trace_context(
    exporter: InMemorySpanExporter, recorder: tuple[str, list[dict[str, str]]],
    tmp_path: Path, state: str | None,
) -> None:
    url, seen = recorder
    registry = toolplug.load(_config(tmp_path, url))
    exporter.clear()
    try:
        with trace.use_span(_caller(state)):
            result = registry.call("api_get_item", {"id": "a"})
    finally:
        registry.close()
    assert result.ok, result.error
    [span] = [s for s in exporter.get_finished_spans() if s.name == "execute_tool api_get_item"]
    [headers] = seen
    version, trace_id, span_id, flags = headers["traceparent"].split("-")
    assert (version, trace_id) == ("00", f"{TRACE_ID:032x}")
    assert span_id == f"{span.context.span_id:016x}"  # the API's spans nest under the call
    assert int(flags, 16) & 1  # sampled
    assert span.parent is not None
    assert span.parent.span_id == CALLER
    assert headers.get("tracestate") == state  # only when the trace has a state


def test_a_traceparent_the_call_sets_itself_is_sent_as_set(
    exporter: InMemorySpanExporter, recorder: tuple[str, list[dict[str, str]]], tmp_path: Path
) -> None:
    url, seen = recorder
    registry = toolplug.load(_config(tmp_path, url))
    own = "00-11111111111111111111111111111111-2222222222222222-00"
    try:
        with trace.use_span(_caller(None)):
            assert registry.call("api_get_item", {"id": "a", "traceparent": own}).ok
    finally:
        registry.close()
    assert [h["traceparent"] for h in seen] == [own]


def test_without_opentelemetry_no_header_is_sent(
    recorder: tuple[str, list[dict[str, str]]], tmp_path: Path
) -> None:
    url, seen = recorder
    config = tmp_path / "config.json"
    config.write_text(json.dumps(_config(tmp_path, url)))
    program = textwrap.dedent(f"""
        import json, sys
        import toolplug
        registry = toolplug.load(json.loads(open({str(config)!r}).read()))
        result = registry.call("api_get_item", {{"id": "a"}})
        registry.close()
        assert result.ok, result.error
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
        assert not loaded, loaded
    """)
    env = measured({k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [headers] = seen
    assert "traceparent" not in headers
    assert "tracestate" not in headers
