"""Real HTTP APIs on 127.0.0.1 for the OpenAPI tests and bench/openapi.py: the FastAPI
application of ``openapi_app`` under uvicorn, and Prism mocking (and validating against)
GitHub's REST description from the npm package ``@octokit/openapi``.

The npm packages live in ``tests/sources/openapi/node`` (``npm install`` there; .ci/run does it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.helpers.serve import free_port, stop, wait_for_port

__all__ = [
    "GITHUB_SPEC",
    "NODE_DIR",
    "PRISM",
    "fastapi_server",
    "json_server",
    "node_missing",
    "prism_server",
]

NODE_DIR = Path(__file__).resolve().parents[1] / "sources" / "openapi" / "node"
GITHUB_SPEC = (
    NODE_DIR / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
)
PRISM = NODE_DIR / "node_modules" / ".bin" / "prism"


def node_missing() -> str | None:
    """Why the Prism tests cannot run here, or None."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed (Prism and GitHub's description come from npm)"
    if not PRISM.exists() or not GITHUB_SPEC.exists():
        return (
            "the npm packages are not installed: run `npm install --no-package-lock` in "
            f"{NODE_DIR} (.ci/run does)"
        )
    return None


Answer = Callable[[str, str, Message], tuple[int, Any] | tuple[int, Any, dict[str, str]]]
"""(method, path, headers) -> the status and the JSON body of the answer (and headers to
send with it)."""


@contextmanager
def json_server(answer: Answer) -> Iterator[str]:
    """A small HTTP server on 127.0.0.1 whose every GET and POST ``answer`` answers in JSON
    (a request's body is read and dropped); yields its base URL; always ended."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, body, *more = answer(self.command, self.path, self.headers)
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in (more[0] if more else {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def fastapi_server(tmp_path: Path) -> Iterator[str]:
    """The FastAPI application on a free port; yields its base URL."""
    port = free_port()
    log = tmp_path / "uvicorn.txt"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "uvicorn", "openapi_app:app", "--app-dir",
                str(Path(__file__).parent), "--host", "127.0.0.1", "--port", str(port),
                "--log-level", "warning",
            ],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=tmp_path,
        )
        try:
            wait_for_port(process, port, lambda: log.read_text(encoding="utf-8"))
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(process)


@contextmanager
def prism_server(tmp_path: Path, spec: Path = GITHUB_SPEC) -> Iterator[str]:
    """``prism mock`` serving ``spec`` on a free port: it answers from the description's
    examples and logs, for each request, whether it passed the description's rules (its log
    is ``tmp_path / "prism.txt"``). Not ``--errors``: GitHub's own examples break some of its
    response schemas, and that flag turns those into 500s. Yields its base URL."""
    port = free_port()
    log = tmp_path / "prism.txt"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(PRISM), "mock", "-h", "127.0.0.1", "-p", str(port), str(spec)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=tmp_path,
            env={**os.environ, "NODE_OPTIONS": "--max-old-space-size=4096"},
        )
        try:
            wait_for_port(process, port, lambda: log.read_text(encoding="utf-8"))
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(process)
