"""``toolplug call`` as a tool's host: a question asked on the terminal (a pty here), field by
field; on a pipe nobody can be asked and the tool's error says so."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.helpers.cli import Site

ASKING = '''
from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 1},
        "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
        "count": {"type": "integer", "title": "How many"},
    },
    "required": ["name"],
}


class Asking(Tool):
    metadata = ToolMetadata(
        name="asking", description="Asks its user for a name.", category="utility",
        parameters={"type": "object", "properties": {}},
    )

    async def run(self, arguments, context):
        context.report_progress(1, 2, "asking")
        context.log("warning", "about to ask")
        answer = await context.ask("Who are you?", FORM)
        if not answer.accepted:
            return ToolResult.success("no answer: " + answer.action)
        return ToolResult.success(f"hello {answer.content['name']}, {answer.content}")


@hookimpl
def register_tools(register):
    register(Asking)
'''


def _on_a_terminal(env: dict[str, str], typed: list[str]) -> tuple[int, str, str]:
    """``toolplug call asking`` with stdin and stderr on a pty, each line of ``typed`` sent
    once the line before it was asked for."""
    leader, follower = pty.openpty()
    seen: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    command = [sys.executable, "-m", "toolplug", "call", "asking"]
    try:
        with subprocess.Popen(
            command, stdin=follower, stdout=subprocess.PIPE, stderr=follower, env=env
        ) as process:
            os.close(follower)
            for count, line in enumerate(typed, start=1):
                deadline = time.monotonic() + 60
                while b"".join(seen).count(b": ") + b"".join(seen).count(b"] ") < count:
                    if time.monotonic() > deadline or process.poll() is not None:
                        break
                    time.sleep(0.05)
                os.write(leader, line.encode() + b"\n")
            out, _ = process.communicate(timeout=60)
        reader.join(5)
    finally:
        os.close(leader)
    return process.returncode, out.decode(), b"".join(seen).decode(errors="replace")


def _site(site: Site) -> dict[str, str]:
    modules = {"asking_tool": ASKING}
    site.add("toolplug-asking", entry_points={"asking": "asking_tool"}, modules=modules)
    return site.env(TOOLPLUG_PLUGINS="toolplug-asking", TERM="xterm")


def test_a_tools_question_is_asked_on_the_terminal_field_by_field(site: Site) -> None:
    env = _site(site)
    code, out, err = _on_a_terminal(env, ["y", "", "Ada", "", "x", "3"])
    assert code == 0, err
    assert "asking asks: Who are you?" in err
    assert "an answer is needed here" in err  # the empty name, asked again
    assert "'x' is not a whole number" in err
    assert "[warning] about to ask" in err
    assert "hello Ada, {'name': 'Ada', 'size': 'small', 'count': 3}" in out


def test_declining_at_the_terminal_reaches_the_tool(site: Site) -> None:
    code, out, err = _on_a_terminal(_site(site), ["n"])
    assert code == 0, err
    assert "no answer: decline" in out


def test_on_a_pipe_nobody_is_asked_and_the_error_says_so(site: Site, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolplug", "call", "asking"], env=_site(site),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode != 0
    assert "UnavailableError" in done.stderr
    assert "stdin is not a terminal" in done.stderr
