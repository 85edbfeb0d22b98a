"""The inbox: a call nobody could be asked about waits for a person's decision, made here
or in another process (the command line, run as a subprocess), on SQLite, in memory and on
a real Redis; expiry, forged and replayed decisions, the signed webhook, no thread held, a
plan's steps paused one by one."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

import toolplug
from tests.helpers.cli import Site
from tests.helpers.posting import approvals_cli, posting_plugin
from tests.helpers.redis import redis_server
from toolplug import ErrorType


@pytest.fixture
def tools(site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with posting_plugin(site, monkeypatch, "inbox_tools") as module:
        yield module


def _config(tmp_path: Path, store: str, **approvals: Any) -> tuple[dict[str, Any], Path]:
    """The configuration as a table, and the same written to a file for the CLI."""
    table = {"approvals": {"inbox": True, "store": store, **approvals}}
    lines = ["[approvals]"] + [f"{k} = {json.dumps(v)}" for k, v in table["approvals"].items()]
    path = tmp_path / "toolplug.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return table, path


def _load(tools: Any, table: dict[str, Any]) -> Any:
    return toolplug.load(table, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("inbox_tools", tools)])


async def _pending(registry: Any, count: int = 1, owner: str | None = None) -> list[Any]:
    for _ in range(400):
        found = await registry.approvals.apending(owner, every_owner=owner is None)
        if len(found) >= count:
            return list(found)
        await asyncio.sleep(0.025)
    raise AssertionError("no request came")


def test_a_call_waits_and_another_process_approves_it(tools: Any, tmp_path: Path) -> None:
    table, config = _config(tmp_path, f"sqlite:{tmp_path / 'approvals.db'}")
    registry = _load(tools, table)

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "hello"}))
        (request,) = await _pending(registry)
        assert (request.tool, dict(request.arguments), request.state) == (
            "post", {"text": "hello"}, "pending"
        )
        assert "not read-only" in request.reason
        code, out, _ = await approvals_cli(config, "list")
        assert code == 0
        assert request.id in out
        assert "post" in out
        assert not call.done()  # it waits: the tool has not run
        assert tools.RAN == []
        code, out, err = await approvals_cli(config, "approve", request.id)
        assert code == 0, err
        result = await asyncio.wait_for(call, 10)
        assert result.ok, result.error
        assert tools.RAN == ["hello"]
        code, _, err = await approvals_cli(config, "approve", request.id)  # replayed
        assert code == 1
        assert "already approved" in err
        assert "counts once" in err
        code, _, err = await approvals_cli(config, "deny", "apr_forged-id")  # never made
        assert code == 1
        assert "no approval request" in err

    try:
        asyncio.run(scenario())
    finally:
        registry.close()


def test_a_denial_from_another_process_refuses_the_call(tools: Any, tmp_path: Path) -> None:
    table, config = _config(tmp_path, f"sqlite:{tmp_path / 'approvals.db'}")
    registry = _load(tools, table)

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "no"}))
        (request,) = await _pending(registry)
        code, _, err = await approvals_cli(config, "deny", request.id, "--note", "not today")
        assert code == 0, err
        result = await asyncio.wait_for(call, 10)
        assert result.error is not None
        assert result.error.type == ErrorType.PERMISSION
        assert "not today" in result.error.message

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert tools.RAN == []


def test_only_the_owner_decides(tools: Any, tmp_path: Path) -> None:
    table, config = _config(tmp_path, f"sqlite:{tmp_path / 'approvals.db'}")
    registry = _load(tools, table)

    async def scenario() -> None:
        call = asyncio.create_task(
            registry.acall("post", {"text": "mine"}, context={"client": "alice"})
        )
        (request,) = await _pending(registry, owner="alice")
        assert request.owner == "alice"
        assert await registry.approvals.apending("bob") == []  # bob sees none of alice's
        for forged in (("--as", "bob"), ()):  # another principal, and nobody
            code, _, err = await approvals_cli(config, "approve", request.id, *forged)
            assert code == 1, err
            assert "belongs to another owner" in err, err
        assert not call.done()
        code, _, err = await approvals_cli(config, "approve", request.id, "--as", "alice")
        assert code == 0, err
        assert (await asyncio.wait_for(call, 10)).ok

    try:
        asyncio.run(scenario())
    finally:
        registry.close()


def test_an_expired_request_is_refused_with_that_reason(tools: Any, tmp_path: Path) -> None:
    table, config = _config(tmp_path, f"sqlite:{tmp_path / 'approvals.db'}", wait_seconds=0.4)
    registry = _load(tools, table)

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "late"}))
        (request,) = await _pending(registry)
        result = await asyncio.wait_for(call, 10)
        assert result.error is not None
        assert result.error.type == ErrorType.APPROVAL_REQUIRED
        assert result.error.details["expired"] is True
        assert "nobody decided in time" in result.error.message
        code, _, err = await approvals_cli(config, "approve", request.id)  # too late
        assert code == 1
        assert "expired" in err

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert tools.RAN == []


def test_two_hundred_waiting_calls_hold_no_threads(tools: Any) -> None:
    registry = _load(tools, {"approvals": {"inbox": True, "store": "memory"}})

    async def scenario() -> None:
        first = asyncio.create_task(registry.acall("post", {"text": "0"}))
        await _pending(registry, 1)
        threads = threading.active_count()
        calls = [first] + [
            asyncio.create_task(registry.acall("post", {"text": str(n)})) for n in range(1, 200)
        ]
        waiting = await _pending(registry, 200)
        assert threading.active_count() <= threads  # 200 waiting, not one more thread
        for request in waiting:
            await registry.approvals.adecide(request.id, True)
        results = await asyncio.wait_for(asyncio.gather(*calls), 30)
        assert all(r.ok for r in results)

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert sorted(tools.RAN, key=int) == [str(n) for n in range(200)]


class _Hook(BaseHTTPRequestHandler):
    secret = b""
    received: ClassVar[list[tuple[bool, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        stamp = self.headers.get("X-Toolplug-Timestamp", "")
        expected = "sha256=" + hmac.new(
            self.secret, stamp.encode() + b"." + body, hashlib.sha256
        ).hexdigest()
        good = hmac.compare_digest(expected, self.headers.get("X-Toolplug-Signature", ""))
        self.received.append((good, json.loads(body)))
        self.send_response(204 if good else 401)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("secret", ["s3cret-hook-key", None])
def test_the_webhook_is_signed(
    tools: Any, monkeypatch: pytest.MonkeyPatch, secret: str | None
) -> None:
    _Hook.secret, _Hook.received = b"s3cret-hook-key", []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    approvals: dict[str, Any] = {
        "inbox": True, "store": "memory",
        "webhook_url": f"http://127.0.0.1:{server.server_port}/hook",
    }
    if secret is not None:  # without one the POST goes unsigned, and the receiver refuses it
        monkeypatch.setenv("HOOK_SECRET", secret)
        approvals["webhook_secret"] = {"env": "HOOK_SECRET"}
    registry = _load(tools, {"approvals": approvals})

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "hooked"}))
        (request,) = await _pending(registry)
        for _ in range(200):
            if _Hook.received:
                break
            await asyncio.sleep(0.025)
        await registry.approvals.adecide(request.id, False)
        await call
        (good, body), = _Hook.received
        assert good is (secret is not None)
        assert body["event"] == "approval.requested"
        assert body["request"]["id"] == request.id
        assert body["request"]["arguments"] == {"text": "hooked"}
        if secret is not None:  # where to send a signed decision back (none known here)
            assert body["reply"] == {"url": None, "request": request.id,
                                     "decisions": ["approve", "deny"]}
        else:
            assert "reply" not in body

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


def test_replicas_on_redis_share_the_inbox(tools: Any, tmp_path: Path, redis_url: str) -> None:
    table, config = _config(tmp_path, "auto")
    table["calls"] = {"store": redis_url}
    config.write_text(config.read_text() + f'\n[calls]\nstore = "{redis_url}"\n')
    registry = _load(tools, table)

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "shared"}))
        (request,) = await _pending(registry)
        code, out, _ = await approvals_cli(config, "list", "--json")  # another process, same Redis
        assert code == 0
        assert request.id in [r["id"] for r in json.loads(out)]
        code, _, err = await approvals_cli(config, "approve", request.id)
        assert code == 0, err
        assert (await asyncio.wait_for(call, 10)).ok
        code, _, err = await approvals_cli(config, "deny", request.id)  # a second decision
        assert code == 1
        assert "already approved" in err

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert tools.RAN == ["shared"]


def test_a_plan_pauses_at_each_step_that_waits(tools: Any, tmp_path: Path) -> None:
    # a plan run where nobody can be asked (cron): each step that needs approval waits in
    # the inbox while the others go on; a denied step fails and what depends on it is
    # skipped, with no approver given
    table, config = _config(tmp_path, f"sqlite:{tmp_path / 'approvals.db'}")
    registry = _load(tools, table)
    plan = {"steps": [
        {"id": 1, "action": "post", "parameters": {"text": "first"}},
        {"id": 2, "action": "post", "parameters": {"text": "second"}},
        {"id": 3, "action": "post", "parameters": {"text": "after the second"},
         "dependencies": [2]},
    ]}

    async def scenario() -> toolplug.PlanResult:
        run = asyncio.create_task(toolplug.run_plan(registry, plan))
        waiting = {r.arguments["text"]: r for r in await _pending(registry, 2)}
        assert set(waiting) == {"first", "second"}  # both paused at once, 3 not yet asked
        code, _, err = await approvals_cli(config, "approve", waiting["first"].id)
        assert code == 0, err
        for _ in range(400):  # the first step runs while the second still waits
            if tools.RAN:
                break
            await asyncio.sleep(0.025)
        assert tools.RAN == ["first"]
        assert not run.done()
        code, _, err = await approvals_cli(config, "deny", waiting["second"].id)
        assert code == 0, err
        return await asyncio.wait_for(run, 10)

    try:
        outcome = asyncio.run(scenario())
    finally:
        registry.close()
    assert [s.status for s in outcome.steps] == ["ok", "failed", "skipped"]
    assert tools.RAN == ["first"]
