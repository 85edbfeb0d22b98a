"""One operation's request as it reaches a server: against a real HTTP server on 127.0.0.1
that records each request line as it came over the wire (no URL parser between)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import toolplug


class _Recorder(BaseHTTPRequestHandler):
    seen: list[str]

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.seen.append(self.path)  # the request target, exactly as sent
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        """Quiet: the test reads ``seen``."""


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


_PATHS: dict[str, Any] = {
    "/items/{id}": {"get": {
        "operationId": "getItem",
        "parameters": [{"name": "id", "in": "path", "required": True,
                        "schema": {"type": "string"}}],
        "responses": {"200": {"description": "the item"}},
    }},
    "/a/{x}/b": {"get": {
        "operationId": "getB",
        "parameters": [{"name": "x", "in": "path", "required": True,
                        "schema": {"type": "string"}}],
        "responses": {"200": {"description": "b"}},
    }},
}


@pytest.mark.parametrize(
    ("tool", "arguments", "sent"),
    [
        # a dot segment stays a segment: no server or proxy between may remove it
        ("api_get_item", {"id": ".."}, "/items/%2E%2E"),
        ("api_get_item", {"id": "."}, "/items/%2E"),
        ("api_get_b", {"x": ".."}, "/a/%2E%2E/b"),  # not /b, a GET no one asked for
        ("api_get_b", {"x": "."}, "/a/%2E/b"),
        # dots inside a segment are plain characters
        ("api_get_item", {"id": "..."}, "/items/..."),
        ("api_get_item", {"id": "a..b"}, "/items/a..b"),
        # a slash is no segment boundary either
        ("api_get_item", {"id": "../x"}, "/items/..%2Fx"),
    ],
)
def test_a_path_parameter_is_one_segment_even_when_it_is_dots(
    recorder: tuple[str, list[str]], tmp_path: Path, tool: str, arguments: dict[str, Any],
    sent: str,
) -> None:
    url, seen = recorder
    spec = tmp_path / "api.json"
    spec.write_text(json.dumps(
        {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": _PATHS}
    ))
    registry = toolplug.load({
        "network": {"allow": ["127.0.0.1"]}, "cache_dir": str(tmp_path / "cache"),
        "openapi": {"api": {"spec": str(spec), "base_url": url}},
    })
    try:
        result = registry.call(tool, arguments)
    finally:
        registry.close()
    assert result.ok, result.error
    assert seen == [sent]
