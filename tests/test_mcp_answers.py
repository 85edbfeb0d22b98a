"""``toolplug serve`` answers every request, however malformed, on stdio and HTTP.

Raw JSON-RPC lines go to the real server in a subprocess (no SDK client in between, since
a client would refuse to send most of them). Each request whose id can be read gets the
error JSON-RPC 2.0 names, with that id; the rest get an error with a null id; the server
keeps serving. The last test fuzzes the server with generated messages.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_mcp import child_env, free_port, http_server
from toolplug.serve._screen import screen

SECRET = "ghp_fuzzsecret_5d1e0c9b7a"
DEEP: Any = {"a": 1}
for _ in range(200):
    DEEP = [DEEP]

# (label, line, expected id, expected code); code None: no reply at all.
CASES: list[tuple[str, str, Any, int | None]] = [
    ("positional params", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}', 1,
     -32602),
    ("params a string", '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"x"}', 2, -32600),
    ("id null", '{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None, -32600),
    ("id fractional", '{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', None, -32600),
    ("deep arguments", json.dumps({"jsonrpc": "2.0", "id": "d", "method": "tools/call",
                                   "params": {"name": "add", "arguments": {"x": DEEP}}}),
     "d", -32602),
    ("not JSON", "hello from nowhere", None, -32700),
    ("a batch", '[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]', None, -32600),
    ("no method", '{"jsonrpc":"2.0","id":8}', 8, -32600),
    ("wrong version", '{"jsonrpc":"1.0","id":9,"method":"tools/list"}', 9, -32600),
    ("a broken notification", '{"jsonrpc":"2.0","method":"notifications/x","params":[1]}',
     None, None),
]


@pytest.mark.parametrize(("label", "line", "request_id", "code"), CASES, ids=[c[0] for c in CASES])
def test_screen_names_the_error(label: str, line: str, request_id: Any, code: int | None) -> None:
    reply = screen(line)
    assert reply is not None
    if code is None:
        assert reply == {}
    else:
        assert reply["id"] == request_id
        assert reply["error"]["code"] == code
        assert len(reply["error"]["message"]) < 300


@pytest.mark.parametrize("line", [
    '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    '{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"add","arguments":{}}}',
    '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"id":"x"}}',
    '{"jsonrpc":"2.0","id":4,"result":{}}',
])
def test_screen_passes_what_the_sdk_takes(line: str) -> None:
    assert screen(line) is None


class StdioServer:
    """The real server over pipes, spoken to line by line."""

    def __init__(self, tmp_path: Path) -> None:
        env = {**os.environ, **child_env(tmp_path), "GITHUB_TOKEN": SECRET}
        self.errors = (tmp_path / "stderr.txt").open("w+b")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolplug", "serve", "--verbose"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, env=env,
            cwd=tmp_path,
        )
        self.buffer = b""
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        assert self.reply_to("init")["result"]["serverInfo"]["name"] == "toolplug"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Any) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def lines(self, timeout: float = 30) -> Iterator[dict[str, Any]]:
        """Each reply as it arrives, until ``timeout`` seconds pass without one."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                yield json.loads(line)  # anything but JSON on stdout fails the test here
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            self.buffer += chunk

    def reply_to(self, request_id: Any) -> dict[str, Any]:
        for message in self.lines():
            if message.get("id") == request_id:
                return message
        raise AssertionError(f"no reply to {request_id!r}")

    def replies_until(self, request_id: Any) -> list[dict[str, Any]]:
        """Every reply up to and including the one to ``request_id``."""
        seen = []
        for message in self.lines():
            seen.append(message)
            if message.get("id") == request_id:
                return seen
        raise AssertionError(f"no reply to {request_id!r}; saw {seen}")

    def close(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        self.errors.seek(0)
        text = self.errors.read().decode("utf-8", "replace")
        self.errors.close()
        return text


@pytest.fixture
def server(tmp_path: Path) -> Iterator[StdioServer]:
    running = StdioServer(tmp_path)
    yield running
    if not running.errors.closed:
        running.close()


def add_call(request_id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}


def test_stdio_answers_every_request(server: StdioServer) -> None:
    for number, (label, line, request_id, code) in enumerate(CASES):
        server.send(line)
        server.send(add_call(f"after-{number}"))
        replies = server.replies_until(f"after-{number}")
        *errors, after = replies
        assert after["result"]["content"][0]["text"] == "2 + 3 = 5", label
        if code is None:
            assert errors == [], label
        else:
            assert [(e["id"], e["error"]["code"]) for e in errors] == [(request_id, code)], label
    log = server.close()
    assert "Traceback" not in log
    assert "answered a malformed message with -32602" in log  # seen with --verbose


def test_http_answers_every_request(tmp_path: Path) -> None:
    port = free_port()
    with http_server(tmp_path, port):
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"accept": "application/json, text/event-stream",
                   "content-type": "application/json"}
        with httpx.Client(timeout=30) as client:
            init = client.post(url, headers=headers, json={
                "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}})
            session = {**headers, "mcp-session-id": init.headers["mcp-session-id"],
                       "mcp-protocol-version": "2025-06-18"}
            client.post(url, headers=session,
                        json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            for label, line, request_id, code in CASES:
                answer = client.post(url, headers=session, content=line)
                if code is None:
                    assert answer.status_code == 202, label
                    continue
                assert answer.status_code == 400, label
                body = answer.json()
                assert (body["id"], body["error"]["code"]) == (request_id, code), label
            ok = client.post(url, headers=session, json=add_call("last"))
            assert ok.status_code == 200
            assert '"2 + 3 = 5"' in ok.text


# -- fuzzing ---------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20,
)
IDS = st.none() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8) | st.booleans()
METHODS = st.sampled_from(["tools/call", "tools/list", "ping", "initialize", "nope", ""]) | st.text(
    max_size=12
)
MESSAGES = st.one_of(
    st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "method": METHODS},
        optional={"id": IDS, "params": JSON},
    ),
    st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": IDS, "method": st.just("tools/call"),
                           "params": st.fixed_dictionaries(
                               {"name": st.sampled_from(["add", "echo", "liar", "nope"])},
                               optional={"arguments": JSON})}),
    JSON,
)
ONE_LINE = st.text(max_size=60).filter(lambda text: not {"\n", "\r"} & set(text))
LINES = MESSAGES.map(json.dumps) | ONE_LINE


@pytest.mark.slow
def test_fuzzed_messages_never_break_the_server(tmp_path: Path) -> None:
    server = StdioServer(tmp_path)
    counter = iter(range(10**9))

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(LINES)
    def one(line: str) -> None:
        probe = f"probe-{next(counter)}"
        server.send(line)
        server.send(add_call(probe))
        replies = server.replies_until(probe)
        assert replies[-1]["result"]["content"][0]["text"] == "2 + 3 = 5"
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and "method" in message and "id" in message:
            # A request: answered, with its id when that is a string or an integer.
            raw = message["id"]
            readable = isinstance(raw, str | int) and not isinstance(raw, bool)
            assert [r for r in replies[:-1] if r.get("id") == (raw if readable else None)]
        for reply in replies:
            text = json.dumps(reply)
            assert SECRET not in text
            assert len(text) < 60_000
            assert "Traceback" not in text

    try:
        one()
    finally:
        log = server.close()
    assert "Traceback" not in log
    assert SECRET not in log
