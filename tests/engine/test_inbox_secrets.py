"""Hostile input for the approvals inbox: a secret under a secret-named key (``password``,
``Authorization`` in a nested object, ``api_key`` in a list's object) never reaches the
inbox's SQLite file, ``toolplug approvals list`` (a subprocess, text and JSON), the
webhook's body, the record's approval events or the pattern of a decision remembered
"always"; the call, approved from another process,
still runs with the real values (kept in the waiting process's memory, never read back
from the store)."""

from __future__ import annotations

import asyncio
import importlib
import json
import sqlite3
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

import toolplug
from tests.helpers.cli import Site
from tests.helpers.posting import approvals_cli
from toolplug.state._remembered import pattern_of

PASSWORD = "hunter2-Zq81xW"
BEARER = "Bearer tok-9f3e77c1"
NESTED = "sk-nested-55d0c1aa"
SECRETS = (PASSWORD, BEARER, NESTED, "Zq81xW", "9f3e77c1", "55d0c1aa")
"""The values, and pieces of them that would show through an encoding."""

ARGUMENTS: dict[str, Any] = {
    "user": "ann",
    "password": PASSWORD,
    "headers": {"Authorization": BEARER, "Accept": "application/json"},
    "items": [{"name": "first", "api_key": NESTED}, "plain"],
}
MASKED: dict[str, Any] = {
    "user": "ann",
    "password": "***",
    "headers": {"Authorization": "***", "Accept": "application/json"},
    "items": [{"name": "first", "api_key": "***"}, "plain"],
}

LOGIN_TOOLS = '''
from typing import Any

from toolplug import Annotations, Tool, ToolMetadata, ToolResult, hookimpl

RECEIVED: list[dict[str, Any]] = []


class Login(Tool):
    metadata = ToolMetadata(
        name="login",
        description="Sign in to a service and change its settings.",
        category="utility",
        parameters={"type": "object", "properties": {
            "user": {"type": "string"}, "password": {"type": "string"},
            "headers": {"type": "object"}, "items": {"type": "array"},
        }, "required": ["user"]},
        annotations=Annotations(read_only=False, destructive=False, open_world=True),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        RECEIVED.append(arguments)
        return ToolResult.success("signed in")


@hookimpl
def register_tools(register: Any) -> None:
    register(Login)
'''


@pytest.fixture
def tools(site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    site.add("secret-login", entry_points={"t": "secret_login"},
             modules={"secret_login": LOGIN_TOOLS})
    monkeypatch.syspath_prepend(str(site.path))
    module = importlib.import_module("secret_login")
    module.RECEIVED.clear()
    try:
        yield module
    finally:
        sys.modules.pop("secret_login", None)


class _Hook(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[str]:
    _Hook.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/hook"
    finally:
        server.shutdown()
        server.server_close()


def _clean(where: str, text: str | bytes) -> None:
    data = text.encode() if isinstance(text, str) else text
    for secret in SECRETS:
        assert secret.encode() not in data, f"{secret!r} in {where}"


_READ = """
import pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob(sys.argv[2])):
    data = path.read_bytes()
    print(path.name, len(data), *[s for s in sys.argv[3:] if s.encode() in data])
"""


async def _files_clean(folder: Path, pattern: str) -> None:
    """No secret in the bytes of the files ``pattern`` names, read by another process:
    closing a file this process opened would drop the SQLite locks it holds on it."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _READ, str(folder), pattern, *SECRETS,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    lines = [line.split() for line in out.decode().splitlines()]
    assert sum(int(size) for _, size, *_ in lines) > 0, f"no {pattern} in {folder}"
    for name, _, *found in lines:
        assert not found, f"{found} in {name}"


def test_secret_named_arguments_stay_out_of_the_inbox(
    tools: Any, tmp_path: Path, hook: str
) -> None:
    inbox_file = tmp_path / "approvals.db"
    record_file = tmp_path / "record.sqlite3"
    approvals = {"inbox": True, "store": f"sqlite:{inbox_file}", "wait_seconds": 120,
                 "webhook_url": hook}
    table = {"approvals": approvals, "record": {"enabled": True, "store": str(record_file)}}
    config = tmp_path / "toolplug.toml"
    config.write_text("[approvals]\n" + "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in approvals.items()
    ))
    registry = toolplug.load(table, env={"TOOLPLUG_PLUGINS": ""},
                             plugins=[("secret_login", tools)])

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("login", ARGUMENTS))
        for _ in range(400):
            pending = await registry.approvals.apending()
            if pending and _Hook.bodies:
                break
            await asyncio.sleep(0.025)
        (request,) = pending
        assert dict(request.arguments) == MASKED
        _clean("the request", json.dumps(request.to_dict()) + request.describe())
        await _files_clean(tmp_path, "approvals.db*")  # the file, its WAL and shm
        code, out, err = await approvals_cli(config, "list")
        assert code == 0, err
        assert request.id in out
        assert '"password": "***"' in out
        _clean("approvals list", out + err)
        code, out, err = await approvals_cli(config, "list", "--json")
        assert code == 0, err
        (listed,) = json.loads(out)
        assert listed["arguments"] == MASKED
        _clean("approvals list --json", out + err)
        (body,) = _Hook.bodies
        assert json.loads(body)["request"]["arguments"] == MASKED
        _clean("the webhook body", body)
        assert not call.done()
        # another process decides
        code, out, err = await approvals_cli(config, "approve", request.id)
        assert code == 0, err
        _clean("approvals approve", out + err)
        result = await asyncio.wait_for(call, 30)
        assert result.ok, result.error
        await _files_clean(tmp_path, "approvals.db*")  # the decided record too

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert tools.RECEIVED == [ARGUMENTS]  # the real values, from the waiting call's memory
    with sqlite3.connect(record_file) as db:
        rows = db.execute("SELECT kind, arguments FROM events ORDER BY id").fetchall()
    kinds = [kind for kind, _ in rows]
    assert "approval.request" in kinds, kinds
    assert "call" in kinds, kinds
    for kind, arguments in rows:
        if arguments is not None:
            assert json.loads(arguments) == MASKED, kind
    for kept in sorted(tmp_path.glob("record.sqlite3*")):
        _clean(kept.name, kept.read_bytes())


def test_an_always_never_writes_a_secret_into_its_pattern(tools: Any, tmp_path: Path) -> None:
    inbox_file = tmp_path / "approvals.db"
    approvals = {"inbox": True, "store": f"sqlite:{inbox_file}", "wait_seconds": 120}
    config = tmp_path / "toolplug.toml"
    config.write_text("[approvals]\n" + "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in approvals.items()
    ))
    registry = toolplug.load({"approvals": approvals}, env={"TOOLPLUG_PLUGINS": ""},
                             plugins=[("secret_login", tools)])

    async def waiting() -> Any:
        for _ in range(400):
            pending = await registry.approvals.apending()
            if pending:
                return pending[0]
            await asyncio.sleep(0.025)
        raise AssertionError("no request came")

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("login", ARGUMENTS))
        request = await waiting()
        code, _, err = await approvals_cli(
            config, "approve", request.id, "--remember", "always"
        )
        assert code == 0, err
        assert (await asyncio.wait_for(call, 30)).ok
        (kept,) = await registry.approvals.aremembered()
        _clean("the remembered decision", json.dumps(kept.to_dict()) + kept.rule())
        await _files_clean(tmp_path, "approvals.db*")
        code, out, err = await approvals_cli(config, "remembered", "--json")
        assert code == 0, err
        _clean("approvals remembered", out + err)
        # the pattern holds for these arguments whatever the secrets, and only for them
        other_secrets = {**ARGUMENTS, "password": "another-one", "headers": {
            "Authorization": "Bearer other", "Accept": "application/json"}}
        assert (await registry.acall("login", other_secrets)).ok  # not asked again
        again = asyncio.create_task(registry.acall("login", {**ARGUMENTS, "user": "bob"}))
        second = await waiting()
        assert second.arguments["user"] == "bob"  # another user: asked
        await registry.approvals.adecide(second.id, False)
        assert not (await asyncio.wait_for(again, 30)).ok
        assert pattern_of({"password": "x1"}) == ("password", {})  # a lone secret: any value

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert [r["user"] for r in tools.RECEIVED] == ["ann", "ann"]
