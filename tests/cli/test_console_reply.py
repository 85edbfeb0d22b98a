"""A person's decision sent back by the webhook's receiver, signed as the webhook is: a real
receiver on loopback (an HTTP server in this test) takes the ``approval.requested`` POST,
checks its signature and POSTs the decision to the URL it names, on a ``toolplug console``
process (the call waits in this process) and on ``toolplug serve --http`` (the call waits
there, the reply carries no token). Unsigned, forged, old, early, replayed and unknown
replies are refused, each with its reason, and recorded."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client

import toolplug
from tests.helpers.cli import Site
from tests.helpers.console import ALICE, pending, served_env, serving
from tests.helpers.posting import posting_plugin
from tests.helpers.serve import TIMEOUT, free_port, http_server
from toolplug import ErrorType
from toolplug.engine._inbox import sign
from toolplug.state._events import RecordFilters
from toolplug.state._record import SqliteStore

SECRET = "reply-key-of-the-test"


def _signed(body: dict[str, Any], stamp: float | None = None, key: str = SECRET) -> Any:
    raw = json.dumps(body).encode()
    when = str(int(time.time() if stamp is None else stamp))
    return raw, {"X-Toolplug-Timestamp": when, "Content-Type": "application/json",
                 "X-Toolplug-Signature": sign(key.encode(), when, raw)}


class Receiver(BaseHTTPRequestHandler):
    """A Slack workflow's stand-in: verifies the webhook, then (answered already) POSTs the
    decision ``decide`` gives for the call's text to the reply URL the webhook names."""

    seen: list[dict[str, Any]]
    replies: list[httpx.Response]
    decide: dict[str, str]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        stamp = self.headers["X-Toolplug-Timestamp"]
        assert sign(SECRET.encode(), stamp, body) == self.headers["X-Toolplug-Signature"]
        assert abs(time.time() - int(stamp)) < 60
        told = json.loads(body)
        self.seen.append(told)
        self.send_response(204)
        self.end_headers()
        decision = self.decide.get(told["request"]["arguments"]["text"])
        if decision is not None:
            threading.Thread(target=self._reply, args=(told, decision), daemon=True).start()

    def _reply(self, told: dict[str, Any], decision: str) -> None:
        raw, headers = _signed({"request": told["reply"]["request"], "decision": decision,
                                "by": "alice@slack", "note": f"{decision} from slack"})
        self.replies.append(httpx.post(told["reply"]["url"], content=raw, headers=headers,
                                       timeout=10))

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[Receiver]]]:
    hook = type("Hook", (Receiver,), {"seen": [], "replies": [], "decide": {}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/hook", hook
    finally:
        server.shutdown()
        server.server_close()


def _config(folder: Path, hook: str, reply: str = "") -> Path:
    path = folder / ("agent.toml" if reply else "toolplug.toml")
    path.write_text(
        'state_dir = "state"\n'
        f'[approvals]\ninbox = true\nstore = "sqlite:{folder / "approvals.db"}"\n'
        f'wait_seconds = 60\nwebhook_url = "{hook}"\n'
        'webhook_secret = { env = "HOOK_SECRET" }\n'
        + (f'reply_url = "{reply}"\n' if reply else "")
        + f'[record]\nenabled = true\nstore = "{folder / "record.sqlite3"}"\n',
        encoding="utf-8",
    )
    return path


def test_a_signed_reply_decides_on_the_console_and_forged_ones_are_refused(
    site: Site, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    receiver: tuple[str, type[Receiver]],
) -> None:
    hook, seen = receiver
    seen.decide = {"yes": "approve", "no": "deny"}
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    with posting_plugin(site, monkeypatch, "reply_tools") as tools, serving(
        _config(tmp_path, hook)
    ) as console:
        decide = console + "approvals/decide"
        registry = toolplug.load(_config(tmp_path, hook, decide),
                                 plugins=[("reply_tools", tools)], env={"TOOLPLUG_PLUGINS": ""})

        async def scenario() -> None:
            assert (await asyncio.wait_for(registry.acall("post", {"text": "yes"}), 10)).ok
            denied = await asyncio.wait_for(registry.acall("post", {"text": "no"}), 10)
            assert denied.error is not None
            assert denied.error.type == ErrorType.PERMISSION
            assert "deny from slack (alice@slack, by a signed reply)" in denied.error.message
            assert tools.RAN == ["yes"]
            assert [r.status_code for r in seen.replies] == [200, 200]
            assert seen.replies[0].json()["state"] == "approved"
            assert seen.seen[0]["reply"]["url"] == decide

            # a call nobody's receiver answers: every forged reply leaves it waiting
            call = asyncio.create_task(registry.acall("post", {"text": "later"}))
            (request,) = await pending(registry)
            body = {"request": request.id, "decision": "approve"}
            raw, headers = _signed(body)
            async with httpx.AsyncClient(timeout=10) as http:
                async def refused(status: int, why: str, **sent: Any) -> str:
                    answer = await http.post(decide, **sent)
                    assert answer.status_code == status, answer.text
                    assert answer.json()["why"] == why
                    return str(answer.json()["error"])

                said = await refused(401, "unsigned", json=body)
                assert "X-Toolplug-Signature" in said
                forged = {**headers, "X-Toolplug-Signature": _signed(body, key="guess")[1][
                    "X-Toolplug-Signature"]}
                assert "does not match" in await refused(401, "signature", content=raw,
                                                         headers=forged)
                old, aged = _signed(body, time.time() - 301)
                assert "older than" in await refused(401, "stale", content=old, headers=aged)
                early, ahead = _signed(body, time.time() + 120)
                assert "ahead of" in await refused(401, "stale", content=early, headers=ahead)
                odd, oddly = _signed({"request": request.id, "decision": "maybe"})
                await refused(400, "body", content=odd, headers=oddly)
                nobody, unknown = _signed({"request": "apr_forged", "decision": "deny"})
                await refused(404, "unknown", content=nobody, headers=unknown)
                assert not call.done()
                answer = await http.post(decide, content=raw, headers=headers)
                assert answer.status_code == 200, answer.text
                assert (await asyncio.wait_for(call, 10)).ok
                said = await refused(409, "decided", content=raw, headers=headers)  # replayed
                assert "already approved" in said
            record = registry.record
            assert record is not None
            for _ in range(100):  # the console's writer flushes every 0.2 s
                kept = record.query(kind="approval.decision", status="refused")
                if len(kept) >= 7:
                    break
                await asyncio.sleep(0.05)
            assert sorted(e.detail["why"] for e in kept) == [
                "body", "decided", "signature", "stale", "stale", "unknown", "unsigned",
            ], kept
            assert {e.rule for e in kept} == {"webhook"}
            assert {e.tool for e in kept if e.detail["why"] != "unknown"} == {"post"}

        try:
            asyncio.run(scenario())
        finally:
            registry.close()
    assert tools.RAN == ["yes", "later"]


def test_without_a_secret_the_console_says_to_set_one(tmp_path: Path) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text(
        'state_dir = "state"\n[approvals]\ninbox = true\n'
        f'[record]\nenabled = true\nstore = "{tmp_path / "record.sqlite3"}"\n',
        encoding="utf-8",
    )
    with serving(config) as console:
        raw, headers = _signed({"request": "apr_x", "decision": "approve"})
        answer = httpx.post(console + "approvals/decide", content=raw, headers=headers,
                            timeout=10)
        # a form without its CSRF token: refused and recorded, as the reply above is not
        # (signed decisions are off: there was nothing to decide)
        forged = httpx.post(console + "approvals/apr_x/approve", data={}, timeout=10)
        assert forged.status_code == 403
        store = SqliteStore(tmp_path / "record.sqlite3")
        deadline = time.monotonic() + 10
        while not (kept := store.query(RecordFilters(kind="approval.decision"))):
            assert time.monotonic() < deadline, "the refused form was not recorded"
            time.sleep(0.1)
    assert answer.status_code == 404
    assert answer.json()["why"] == "unconfigured"
    assert "set [approvals] webhook_secret" in answer.json()["error"]
    assert [e.detail["why"] for e in store.query(RecordFilters(kind="approval.decision"))] == [
        "csrf"
    ]
    assert [e.detail["why"] for e in kept] == ["csrf"]


async def _echo(port: int, text: str) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}, timeout=TIMEOUT) as http,
        Client(_transport(f"http://127.0.0.1:{port}/mcp", http)) as client,
    ):
        return await client.call_tool("echo", {"text": text})


def _transport(url: str, http: httpx2.AsyncClient) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(url, http_client=http)


def test_serve_http_takes_a_signed_reply_without_a_token(
    tmp_path: Path, receiver: tuple[str, type[Receiver]]
) -> None:
    hook, seen = receiver
    seen.decide = {"from alice": "approve"}
    port = free_port()
    env = {**served_env(tmp_path, port, console=False), "HOOK_SECRET": SECRET}  # no console
    config = tmp_path / "toolplug.toml"
    text = config.read_text(encoding="utf-8").replace(
        "[approvals]\n", f'[approvals]\nwebhook_url = "{hook}"\n'
        'webhook_secret = { env = "HOOK_SECRET" }\n', 1)
    config.write_text(text, encoding="utf-8")
    with http_server(tmp_path, port, env=env):
        result = asyncio.run(asyncio.wait_for(_echo(port, "from alice"), TIMEOUT))
        assert result.content[0].text == "from alice"
        (told,) = seen.seen
        assert told["reply"]["url"] == f"http://127.0.0.1:{port}/approvals/decide"
        assert told["request"]["owner"].startswith("principal:")
        (answer,) = seen.replies
        assert answer.json()["owner"] == told["request"]["owner"]  # decided as its owner
        raw, headers = _signed({"request": told["reply"]["request"], "decision": "deny"})
        again = httpx.post(told["reply"]["url"], content=raw, headers=headers, timeout=10)
        assert again.status_code == 409
        assert httpx.post(told["reply"]["url"], json={}, timeout=10).status_code == 401
        store = SqliteStore(tmp_path / "record.sqlite3")
        deadline = time.monotonic() + 10
        while True:
            kept = store.query(RecordFilters(kind="approval.decision", status="refused"))
            if len(kept) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert sorted(e.detail["why"] for e in kept) == ["decided", "unsigned"]
