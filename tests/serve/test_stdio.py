"""``toolplug serve`` whatever its standard input is: the null device, a pipe already
closed, a regular file, or no descriptor 0 at all. Over stdio the input's end is the end of
serving (exit 0, what was asked is answered, no traceback); over ``--http`` standard input
does not matter. Every case runs the real ``python -m toolplug serve`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from mcp import Client

from tests.helpers.serve import TIMEOUT, child_env, free_port, stop, text_of, wait_for_port

SERVE = [sys.executable, "-m", "toolplug", "serve"]
# descriptor 0 closed before the interpreter starts, as `toolplug serve <&-` does
WITHOUT_STDIN = ["/bin/sh", "-c", 'exec "$0" "$@" <&-']

REQUESTS = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "a-file", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": "three", "method": "tools/call",
     "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, **child_env(tmp_path)}


def _assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "internal error" not in done.stderr


def _serve(tmp_path: Path, stdin: Any, *, command: list[str] = SERVE) -> (
    subprocess.CompletedProcess[str]
):
    return subprocess.run(
        [*command, *([] if command is SERVE else SERVE)], stdin=stdin, capture_output=True,
        text=True, env=_env(tmp_path), cwd=tmp_path, timeout=TIMEOUT, check=False,
    )


def test_the_null_device_ends_serving_cleanly(tmp_path: Path) -> None:
    # epoll refuses /dev/null, though asyncio's pipe transport takes any character device
    _assert_clean(_serve(tmp_path, subprocess.DEVNULL))


def test_a_pipe_closed_before_serving_ends_it_cleanly(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(write)
    try:
        _assert_clean(_serve(tmp_path, read))
    finally:
        os.close(read)


def test_no_standard_input_at_all_ends_serving_cleanly(tmp_path: Path) -> None:
    # descriptor 0 may then belong to the event loop itself: it must not be taken over
    done = _serve(tmp_path, None, command=WITHOUT_STDIN)
    _assert_clean(done)
    assert done.stdout == ""


def test_a_regular_file_is_served_to_its_end_and_every_request_answered(
    tmp_path: Path,
) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(r) + "\n" for r in REQUESTS), encoding="utf-8")
    with requests.open("rb") as source:
        done = _serve(tmp_path, source)
    _assert_clean(done)
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers, key=str) == [1, 2, "three"]
    assert answers[1]["result"]["serverInfo"]["name"] == "toolplug"
    assert "add" in {t["name"] for t in answers[2]["result"]["tools"]}
    assert answers["three"]["result"]["content"][0]["text"] == "2 + 3 = 5"


def _http_with_stdin(tmp_path: Path, stdin: Any, *, command: list[str] = SERVE) -> str:
    """Serve --http with this standard input, call a tool over HTTP, and stop the server."""
    port = free_port()
    errors = tmp_path / "http-stderr.txt"
    args = [*command, *([] if command is SERVE else SERVE), "--http", f"127.0.0.1:{port}"]
    with errors.open("wb") as errlog:
        process = subprocess.Popen(
            args, stdin=stdin, stdout=errlog, stderr=errlog, env=_env(tmp_path), cwd=tmp_path
        )
        try:
            wait_for_port(process, port, lambda: errors.read_text(encoding="utf-8"))

            async def call() -> str:
                with anyio.fail_after(TIMEOUT):
                    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                        return text_of(await client.call_tool("add", {"a": 1, "b": 1}))

            answer = anyio.run(call)
            assert process.poll() is None, errors.read_text(encoding="utf-8")
        finally:
            stop(process)
    assert "Traceback" not in errors.read_text(encoding="utf-8")
    return answer


@pytest.mark.parametrize("kind", ["null device", "closed pipe", "regular file", "none"])
def test_http_serves_whatever_standard_input_is(tmp_path: Path, kind: str) -> None:
    stdin: int | IO[bytes] | None
    command = SERVE
    if kind == "null device":
        stdin = subprocess.DEVNULL
    elif kind == "closed pipe":
        read, write = os.pipe()
        os.close(write)
        stdin = read
    elif kind == "regular file":
        (tmp_path / "input.txt").write_text("not a protocol message\n", encoding="utf-8")
        stdin = (tmp_path / "input.txt").open("rb")
    else:
        stdin, command = None, WITHOUT_STDIN
    try:
        assert _http_with_stdin(tmp_path, stdin, command=command) == "1 + 1 = 2"
    finally:
        if isinstance(stdin, int) and stdin >= 0:
            os.close(stdin)
        elif stdin is not None and not isinstance(stdin, int):
            stdin.close()
