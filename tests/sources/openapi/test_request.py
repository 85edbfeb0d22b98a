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

    def do_GET(self) -> None:
        self.seen.append(self.path)  # the request target, exactly as sent
        missing = self.path.startswith("/items/missing")
        body = b'{"message": "no such item"}' if missing else b'{"ok": true}'
        self.send_response(404 if missing else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
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


def _load(spec_dir: Path, url: str) -> toolplug.Registry:
    spec = spec_dir / "api.json"
    spec.write_text(json.dumps(
        {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": _PATHS}
    ))
    return toolplug.load({
        "network": {"allow": ["127.0.0.1"]}, "cache_dir": str(spec_dir / "cache"),
        "openapi": {"api": {"spec": str(spec), "base_url": url}},
    })


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
    registry = _load(tmp_path, url)
    try:
        result = registry.call(tool, arguments)
    finally:
        registry.close()
    assert result.ok, result.error
    assert seen == [sent]


_DETAILS: Any = {
    "status": 404, "operation": "GET /items/{id}", "body": {"message": "no such item"},
}


def test_an_error_answers_details_are_in_to_dict_not_in_what_the_model_reads(
    recorder: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, _seen = recorder
    registry = _load(tmp_path, url)
    try:
        result = registry.call("api_get_item", {"id": "missing"})
    finally:
        registry.close()
    assert result.error is not None
    assert result.error.type == "NotFoundError"
    assert result.to_dict() == {
        "error": True, "error_type": "NotFoundError",
        "error_message": 'GET /items/{id} answered HTTP 404: {"message": "no such item"}',
        "retry_possible": False, "details": _DETAILS,
    }
    assert "details" not in json.loads(result.for_model())  # for hosts, not the model


def test_call_result_json_prints_the_details(
    recorder: tuple[str, list[str]], tmp_path: Path, cli: Any
) -> None:
    url, _seen = recorder
    (tmp_path / "api.json").write_text(json.dumps(
        {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": _PATHS}
    ))
    (tmp_path / "toolplug.toml").write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n[network]\nallow = ["127.0.0.1"]\n'
        f'[openapi.api]\nspec = "api.json"\nbase_url = "{url}"\n'
    )
    run = cli("call", "api_get_item", "id=missing", "--result", "json", cwd=tmp_path)
    assert run.code == 1, run.err
    assert json.loads(run.out)["details"] == _DETAILS



_AT_EXIT = """\
import sys
import toolplug

registry = toolplug.load(sys.argv[1])
result = registry.call("api_get_item", {"id": "one"})
assert result.ok, result.error
registry.close()
print("done")
"""


@pytest.mark.parametrize("where", ["sync", "inside asyncio.run"])
def test_a_script_that_calls_an_api_and_closes_the_registry_exits_without_a_traceback(
    recorder: tuple[str, list[str]], tmp_path: Path, where: str
) -> None:
    # the pooled client's closing task lived on the thread's own loop past close(): at
    # exit Python said "Task was destroyed but it is pending! ... _close_when_idle"
    import subprocess
    import sys

    url, seen = recorder
    spec = tmp_path / "api.json"
    spec.write_text(json.dumps(
        {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": _PATHS}
    ))
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n[network]\nallow = ["127.0.0.1"]\n'
        f'[openapi.api]\nspec = "{spec}"\nbase_url = "{url}"\n'
    )
    script = _AT_EXIT
    if where != "sync":  # a sync call from async code: it runs on the loop thread
        script = (
            "import asyncio\n"
            + "async def main() -> None:\n"
            + "".join(f"    {line}\n" for line in _AT_EXIT.splitlines())
            + "asyncio.run(main())\n"
        )
    done = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", script, str(config)],
        check=False, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "done\n", "")
    assert seen == ["/items/one"]


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ('attachment; filename="report.pdf"', "report.pdf"),
        # filename* (RFC 5987) wins over filename
        ("attachment; filename=plain.bin; filename*=UTF-8''na%C3%AFve.bin", "na\u00efve.bin"),
        # a directory in the name is dropped: a name, never a path
        ('attachment; filename="../../etc/passwd"', "passwd"),
        ('attachment; filename="C:\\temp\\x.png"', "x.png"),
        # no name, or one that is only dots
        ("inline", None),
        ('attachment; filename=".."', None),
        (None, None),
    ],
)
def test_the_file_name_of_content_disposition(header: str | None, name: str | None) -> None:
    from toolplug.sources.openapi._request import _disposition_name

    assert _disposition_name(header) == name


@pytest.mark.parametrize(
    ("media", "kind"),
    [
        ("image/png", "image"),
        ("image/svg+xml; charset=utf-8", "image"),
        ("audio/mpeg", "audio"),
        ("application/pdf", "file"),
        ("Application/Octet-Stream", "file"),
        # text and JSON stay text
        ("application/json", None),
        ("text/csv", None),
        (None, None),
    ],
)
def test_which_media_types_become_parts(media: str | None, kind: str | None) -> None:
    from toolplug.sources.openapi._request import part_kind

    assert part_kind(media) == kind
