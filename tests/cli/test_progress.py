"""Long work says what it is waiting for on stderr, when stderr is a terminal (a pty here),
and nothing when it is not; a command with nothing slow to do never loads rich."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

from tests.helpers.mcp_servers import stdio_table, write_server

_MODULES = """
import json, sys
from toolplug.cli import main
code = main(sys.argv[1:])
print("@@MODULES@@" + json.dumps(sorted(sys.modules)))
raise SystemExit(code)
"""


def _run(args: list[str], env: dict[str, str], *, terminal: bool) -> tuple[int, str, str]:
    """``toolplug ARGS`` with stderr on a pty (``terminal``) or a pipe: code, out, err."""
    command = [sys.executable, "-c", _MODULES, *args]
    if not terminal:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=120, check=False
        )
        return done.returncode, done.stdout, done.stderr
    leader, follower = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the other end closed: the process is gone
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        with subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower, env=env
        ) as process:
            os.close(follower)
            out, _ = process.communicate(timeout=120)
        reader.join(10)
    finally:
        os.close(leader)
    return process.returncode, out.decode(), b"".join(chunks).decode(errors="replace")


def _modules(out: str) -> set[str]:
    return {m.split(".")[0] for m in json.loads(out.split("@@MODULES@@")[1])}


def test_mounting_says_so_on_a_terminal_and_not_on_a_pipe(tmp_path: Path) -> None:
    script = write_server(tmp_path)
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        + stdio_table("calc", script, "--slow-start", "1.5"),
        encoding="utf-8",
    )
    env = {**os.environ, "TOOLPLUG_NO_CACHE": "1", "TERM": "xterm", "TOOLPLUG_PLUGINS": ""}
    args = ["--config", str(config), "doctor"]  # doctor asks every server again
    code, _out, err = _run(args, env, terminal=True)
    assert code == 0, err
    assert "mounting calc..." in err
    code, out, err = _run(args, env, terminal=False)
    assert code == 0, err
    assert "mounting" not in err
    assert "rich" not in _modules(out)


def test_a_command_with_nothing_slow_to_do_never_loads_rich_on_a_terminal(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "TERM": "xterm", "TOOLPLUG_CACHE_DIR": str(tmp_path / "cli")}
    for _answer in ("computed", "from the output cache"):
        code, out, err = _run(["list", "--all"], env, terminal=True)
        assert code == 0, err
        assert "rich" not in _modules(out)
        assert err == ""


def test_parsing_a_description_says_so_on_a_terminal(tmp_path: Path) -> None:
    operations = {
        f"/items{i}": {"get": {"operationId": f"list{i}", "summary": f"List items {i}.",
                               "responses": {"200": {"description": "ok"}}}}
        for i in range(300)
    }
    spec = {"openapi": "3.1.0", "info": {"title": "Items", "version": "1"},
            "servers": [{"url": "http://127.0.0.1:9/"}], "paths": operations}
    (tmp_path / "items.json").write_text(json.dumps(spec), encoding="utf-8")
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n[openapi.items]\nspec = "items.json"\n',
        encoding="utf-8",
    )
    env = {**os.environ, "TOOLPLUG_NO_CACHE": "1", "TERM": "xterm", "TOOLPLUG_PLUGINS": ""}
    code, _out, err = _run(["--config", str(config), "list"], env, terminal=True)
    assert code == 0, err
    assert "parsing description items..." in err
