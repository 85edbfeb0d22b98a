"""The console under ``toolplug serve --http`` with ``[serve.auth] console_scope``: the real
server in a subprocess, its static tokens for three principals (two with the console's
scope, one without), an MCP client's call that waits on the inbox, and the console's pages
at ``/console/`` driven over HTTP with httpx.

No token: 401 and the sign-in page; a bad one: 401; one without the scope: 403, naming it.
A pasted token signs a browser in with a signed cookie. Each principal sees and decides its
own requests only; a form of another principal's session, a replay and another owner's
request are refused, and each refusal is in the server's record.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client

from tests.helpers.auth import READ, WRITE, Key, issuer_server
from tests.helpers.console import ALICE, BOB, CAROL, SCOPE, served_env
from tests.helpers.serve import TIMEOUT, free_port, http_server
from toolplug.state._events import RecordFilters
from toolplug.state._record import SqliteStore


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _token(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, page
    return found.group(1)


def test_the_console_needs_a_token_with_its_scope(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with http_server(tmp_path, port, env=served_env(tmp_path, port)), httpx.Client(
        base_url=base, timeout=TIMEOUT
    ) as browser:
        anonymous = browser.get("/console/")
        assert anonymous.status_code == 401
        assert "resource_metadata=" in anonymous.headers["www-authenticate"]
        assert '<label for="token">Access token</label>' in anonymous.text
        assert "<h1>Sign in</h1>" in anonymous.text
        assert browser.get("/console").status_code == 307  # to /console/
        bad = browser.get("/console/", headers=_bearer("nobody-knows-this"))
        assert bad.status_code == 401
        assert 'error="invalid_token"' in bad.headers["www-authenticate"]
        lacking = browser.get("/console/history", headers=_bearer(CAROL))
        assert lacking.status_code == 403
        assert f"lacks the scope <code>{SCOPE}</code>" in lacking.text
        assert "insufficient_scope" in lacking.headers["www-authenticate"]
        allowed = browser.get("/console/", headers=_bearer(ALICE))
        assert allowed.status_code == 200, allowed.text
        assert "Deciding as <strong>alice (principal:" in allowed.text
        assert 'href="/console/history"' in allowed.text

        # a person pastes the token once: a signed cookie, never the token, is kept
        asked = browser.get("/console/sign-in")
        assert asked.status_code == 200
        csrf = _token(asked.text)
        forged = browser.post("/console/sign-in", data={"csrf": "0" * 64, "token": ALICE})
        assert forged.status_code == 403
        assert "toolplug_console_auth" not in browser.cookies
        refused = browser.post("/console/sign-in", data={"csrf": csrf, "token": CAROL})
        assert refused.status_code == 403
        assert SCOPE in refused.text
        wrong = browser.post("/console/sign-in", data={"csrf": csrf, "token": "guessed"})
        assert wrong.status_code == 401
        signed = browser.post("/console/sign-in", data={"csrf": csrf, "token": ALICE})
        assert signed.status_code == 303
        assert signed.headers["location"] == "/console/"
        cookie = signed.headers["set-cookie"]
        assert "toolplug_console_auth=" in cookie
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie
        assert "Path=/console" in cookie
        assert ALICE not in cookie
        home = browser.get("/console/")
        assert home.status_code == 200
        assert "signed in as alice" in home.text
        assert browser.get("/console/catalog").status_code == 200

        kept = browser.cookies["toolplug_console_auth"]
        tampered = kept[:-1] + ("0" if kept[-1] != "0" else "1")
        with httpx.Client(base_url=base, timeout=TIMEOUT) as other:
            other.cookies.set("toolplug_console_auth", tampered, path="/console")
            assert other.get("/console/").status_code == 401
        out = browser.post("/console/sign-out", data={"csrf": _token(home.text)})
        assert out.status_code == 303
        assert browser.get("/console/").status_code == 401

        # the MCP endpoint answers as it did: a token is still needed there
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        assert browser.post("/mcp", json=listing, headers={
            "accept": "application/json, text/event-stream",
        }).status_code == 401


def test_a_jwt_of_the_issuer_signs_in_until_it_expires(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with issuer_server(Key.rsa("one")) as issuer, http_server(
        tmp_path, port, env=served_env(tmp_path, port, issuer=issuer.url)
    ), httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT) as browser:
        granted = issuer.token(audience, subject="dana", scopes=(READ, SCOPE), lifetime=60)
        assert browser.get("/console/", headers=_bearer(granted)).status_code == 200
        plain = issuer.token(audience, subject="dana", scopes=(READ, WRITE))
        assert browser.get("/console/", headers=_bearer(plain)).status_code == 403
        other = issuer.token("http://127.0.0.1:1/mcp", subject="dana", scopes=(SCOPE,))
        assert browser.get("/console/", headers=_bearer(other)).status_code == 401
        expired = issuer.token(audience, subject="dana", scopes=(SCOPE,), lifetime=-120)
        assert browser.get("/console/", headers=_bearer(expired)).status_code == 401

        csrf = _token(browser.get("/console/sign-in").text)
        signed = browser.post("/console/sign-in", data={"csrf": csrf, "token": granted})
        assert signed.status_code == 303
        age = re.search(r"Max-Age=(\d+)", signed.headers["set-cookie"])
        assert age, signed.headers["set-cookie"]
        assert 1 <= int(age.group(1)) <= 60 + 30  # as long as the token, and leeway_seconds
        assert "signed in as dana" in browser.get("/console/").text


def test_without_a_console_scope_there_is_no_console(tmp_path: Path) -> None:
    port = free_port()
    with http_server(tmp_path, port, env=served_env(tmp_path, port, console=False)):
        found = httpx.get(f"http://127.0.0.1:{port}/console/", headers=_bearer(ALICE),
                          timeout=TIMEOUT)
    assert found.status_code == 404


async def _echo(port: int, token: str, text: str) -> Any:
    async with (
        httpx2.AsyncClient(headers=_bearer(token), timeout=TIMEOUT) as http,
        Client(_transport(f"http://127.0.0.1:{port}/mcp", http)) as client,
    ):
        return await client.call_tool("echo", {"text": text})


def _transport(url: str, http: httpx2.AsyncClient) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(url, http_client=http)


def test_a_principal_decides_its_own_requests_only(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}/console"

    async def scenario() -> None:
        async with (
            httpx.AsyncClient(base_url=base, headers=_bearer(ALICE), timeout=TIMEOUT) as alice,
            httpx.AsyncClient(base_url=base, headers=_bearer(BOB), timeout=TIMEOUT) as bob,
        ):
            call = asyncio.create_task(_echo(port, ALICE, "from alice"))
            for _ in range(400):
                page = await alice.get("/")
                found = re.search(r'action="/console/approvals/(apr_[\w-]+)/approve"', page.text)
                if found:
                    break
                await asyncio.sleep(0.05)
            assert found, (call.done() and call.result().content, page.text[-300:])
            request = found.group(1)
            approve = f"/approvals/{request}/approve"
            assert "<code>echo</code>" in page.text or "echo" in page.text
            theirs = await bob.get("/")
            assert request not in theirs.text  # bob is shown his own requests only
            assert "Waiting for a decision (0)" in theirs.text
            bobs = _token(theirs.text)
            taken = await bob.post(approve, data={"csrf": bobs})
            assert taken.status_code == 409
            assert "belongs to another owner" in taken.text
            # alice's session cookie with bob's token (or bob's with alice's form) is no form
            crossed = await alice.post(approve, data={"csrf": bobs})
            assert crossed.status_code == 403
            assert not call.done()

            done = await alice.post(approve, data={"csrf": _token(page.text), "note": "mine"})
            assert done.status_code == 200, done.text
            assert "approved" in done.text
            result = await asyncio.wait_for(call, TIMEOUT)
            assert result.content[0].text == "from alice"
            replayed = await alice.post(approve, data={"csrf": _token(page.text)})
            assert replayed.status_code == 409
            assert "already approved" in replayed.text

            for _ in range(100):  # the server's record writes every 0.2 s
                history = await alice.get("/history", params={"tool": "echo", "kind": "call"})
                if ">ok<" in history.text:
                    break
                await asyncio.sleep(0.05)
            assert ">ok<" in history.text
            assert "principal:" in history.text
            shown = (await bob.get("/history", params={"tool": "echo"})).text
            assert ">ok<" not in shown  # bob's history holds bob's events only: his refusal
            assert shown.count("<tr><td>") == shown.count("<td>refused</td>") == 1

    with http_server(tmp_path, port, env=served_env(tmp_path, port)):
        asyncio.run(asyncio.wait_for(scenario(), TIMEOUT))
        store = SqliteStore(tmp_path / "record.sqlite3")
        deadline = time.monotonic() + 10
        while True:
            refused = store.query(RecordFilters(
                kind="approval.decision", status="refused"
            ))
            if len(refused) >= 3 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    whys = sorted(event.detail["why"] for event in refused)
    assert whys == ["csrf", "decided", "owner"], refused
    owner = {event.detail["why"]: event for event in refused}["owner"]
    assert owner.tool == "echo"
    assert owner.principal != owner.detail["owner"]  # bob tried alice's request
    assert owner.detail["owner"].startswith("principal:")
