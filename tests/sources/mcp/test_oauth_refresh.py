"""A refresh that fails without the grant being refused keeps the sign-in.

The upstream is the official MCP SDK's ``MCPServer`` as a protected resource, with a
token endpoint beside it on the same loopback port that answers a refresh as it is told
(``POST /answer``): ``500`` (a failing authorization server), ``ok`` (a new access token,
the refresh token kept) or ``invalid_grant`` (the refresh token was revoked). The sign-in
a ``toolplug login`` leaves (tokens, registration, metadata) is written to the user's
token store with an access token that has expired, so that the first call refreshes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import keyring
import pytest

import toolplug
from tests.helpers.keyrings import file_keyring
from tests.helpers.measured import measured
from tests.helpers.serve import free_port
from toolplug import ErrorType
from toolplug.config._config import load_config
from toolplug.sources.mcp import mounted, sign_out
from toolplug.state._tokens import TokenStore

REFRESH = "rt-kept-7f3a9c"

UPSTREAM = '''
import secrets, sys, time

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.responses import JSONResponse
from starlette.routing import Route

port = int(sys.argv[1])
base = f"http://127.0.0.1:{port}"
tokens: dict[str, float] = {}
state = {"answer": "500", "refreshes": 0, "ttl": 300}


class Verifier:
    async def verify_token(self, token):
        expires = tokens.get(token)
        if expires is None or expires < time.time():
            return None
        return AccessToken(token=token, client_id="c1", scopes=["tools"],
                           expires_at=int(expires), resource=f"{base}/mcp")


server = MCPServer("upstream", token_verifier=Verifier(), auth=AuthSettings(
    issuer_url=base, resource_server_url=f"{base}/mcp", required_scopes=["tools"],
    validate_token_resource=True,
))


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


async def token(request):
    form = await request.form()
    assert form["grant_type"] == "refresh_token" and form["refresh_token"] == "rt-kept-7f3a9c"
    state["refreshes"] += 1
    if state["answer"] == "500":
        return JSONResponse({"error": "server_error"}, status_code=500)
    if state["answer"] == "invalid_grant":
        return JSONResponse({"error": "invalid_grant"}, status_code=400)
    issued = secrets.token_urlsafe(16)
    tokens[issued] = time.time() + state["ttl"]
    return JSONResponse({"access_token": issued, "token_type": "Bearer",
                         "expires_in": state["ttl"], "scope": "tools"})


async def answer(request):
    state.update(await request.json())
    return JSONResponse(state)


async def asked(request):
    return JSONResponse(state)


app = server.streamable_http_app()
app.router.routes[:0] = [
    Route("/token", token, methods=["POST"]),
    Route("/answer", answer, methods=["POST"]),
    Route("/asked", asked),
]
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
'''


@contextmanager
def upstream() -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-c", UPSTREAM, str(port)], env=measured(dict(os.environ)),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/asked", timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the upstream did not start") from None
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)


def _signed_in(store: TokenStore, base: str, token_endpoint: str) -> None:
    """What a sign-in left, its access token expired a minute ago."""
    store.update(
        f"{base}/mcp",
        tokens={"access_token": "expired-long-ago", "token_type": "Bearer",
                "refresh_token": REFRESH, "scope": "tools"},
        expires_at=time.time() - 60,
        client={"client_id": "c1", "redirect_uris": ["http://127.0.0.1:1/callback"],
                "token_endpoint_auth_method": "none", "scope": "tools"},
        server_metadata={"issuer": base, "authorization_endpoint": f"{base}/authorize",
                         "token_endpoint": token_endpoint,
                         "response_types_supported": ["code"]},
        authorization_server=base,
    )


def _config(home: Path, base: str, extra: str = "") -> Path:
    path = home / "toolplug.toml"
    path.write_text(
        f'cache_dir = "{home / "cache"}"\nstate_dir = "{home / "state"}"\n'
        f'[mcp_servers.up]\nurl = "{base}/mcp"\napproval = "never"\nauth = "oauth"\n'
        f'[mcp_servers.up.oauth]\nscopes = ["tools"]\n{extra}',
        encoding="utf-8",
    )
    return path


def _call(config: Path) -> toolplug.ToolResult:
    registry = toolplug.load(config)
    try:
        return asyncio.run(registry.acall("up_add", {"a": 2, "b": 40}))
    finally:
        registry.close()


def _problem(config: Path) -> str | None:
    """Why the server is unavailable at load (nothing cached yet: it is asked at once)."""
    registry = toolplug.load(config)
    try:
        server = mounted(registry)
        assert server is not None
        return server.servers["up"].problem
    finally:
        registry.close()


def _told(base: str, answer: str, ttl: int = 300) -> dict[str, Any]:
    said: dict[str, Any] = httpx.post(
        f"{base}/answer", json={"answer": answer, "ttl": ttl}, timeout=5
    ).json()
    return said


def test_a_token_endpoint_answering_500_keeps_the_sign_in(tmp_path: Path) -> None:
    with upstream() as base:
        store = TokenStore(tmp_path / "state" / "oauth")
        config = _config(tmp_path, base)
        _signed_in(store, base, f"{base}/token")
        assert _problem(config) == (
            "could not refresh its sign-in: its authorization server answered HTTP 500 "
            "(server_error); the sign-in is kept, a later call tries again"
        )
        kept = store.entry(f"{base}/mcp")
        assert kept["tokens"]["refresh_token"] == REFRESH  # not forgotten
        assert httpx.get(f"{base}/asked", timeout=5).json()["refreshes"] == 1  # once

        _told(base, "ok")  # the authorization server is back: the next call refreshes
        # (the reason cached with the listing is retried after a while: not waited for)
        (tmp_path / "cache" / "mcp" / "up.json").unlink()
        added = _call(config)
        assert added.ok, added.error
        assert "42" in str(added.output)
        kept = store.entry(f"{base}/mcp")
        assert kept["tokens"]["access_token"] != "expired-long-ago"
        assert kept["tokens"]["refresh_token"] == REFRESH
        assert kept["expires_at"] > time.time() + 200

        # a refresh token revoked: only then is the sign-in dropped
        store.update(f"{base}/mcp", expires_at=time.time() - 60)
        _told(base, "invalid_grant")
        spent = _call(config)
        assert spent.error is not None
        assert spent.error.message == (
            "MCP server 'up' is unavailable: its sign-in expired: run `toolplug login up`"
        )
        assert "tokens" not in store.entry(f"{base}/mcp")


def test_a_token_endpoint_that_cannot_be_reached_keeps_the_sign_in(tmp_path: Path) -> None:
    with upstream() as base:
        store = TokenStore(tmp_path / "state" / "oauth")
        config = _config(tmp_path, base)
        _signed_in(store, base, f"http://127.0.0.1:{free_port()}/token")  # nothing listens
        assert _problem(config) == (
            "could not refresh its sign-in: its authorization server could not be reached; "
            "the sign-in is kept, a later call tries again"
        )
        assert store.entry(f"{base}/mcp")["tokens"]["refresh_token"] == REFRESH


def test_a_refresh_failing_mid_session_is_a_call_that_may_be_retried(tmp_path: Path) -> None:
    with upstream() as base:
        store = TokenStore(tmp_path / "state" / "oauth")
        config = _config(tmp_path, base)
        _signed_in(store, base, f"{base}/token")
        _told(base, "ok", ttl=2)  # each access token lives 2 s
        registry = toolplug.load(config)

        async def scenario() -> tuple[toolplug.ToolResult, toolplug.ToolResult]:
            first = await registry.acall("up_add", {"a": 1, "b": 1})
            assert first.ok, first.error
            # the session stays open; its access token expires, and the server fails
            await asyncio.to_thread(_told, base, "500")
            await asyncio.sleep(2.5)
            return first, await registry.acall("up_add", {"a": 1, "b": 2})

        try:
            _, failed = asyncio.run(scenario())
        finally:
            registry.close()
        assert failed.error is not None
        assert failed.error.type == ErrorType.NETWORK
        assert failed.error.retry_possible
        assert "could not refresh its sign-in" in failed.error.message
        assert store.entry(f"{base}/mcp")["tokens"]["refresh_token"] == REFRESH


def test_kept_in_the_keyring_a_refresh_writes_there_and_no_token_is_logged_or_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with file_keyring(tmp_path, monkeypatch) as keyring_file, upstream() as base:
        key = f"{base}/mcp"
        store = TokenStore(tmp_path / "state" / "oauth", "keyring")
        config = _config(tmp_path, base, extra='[oauth]\nstore = "keyring"\n')
        _signed_in(store, base, f"{base}/token")
        _told(base, "ok")
        added = _call(config)
        assert added.ok, added.error
        kept = json.loads(keyring.get_password("toolplug", key) or "{}")
        access = kept["tokens"]["access_token"]
        assert access != "expired-long-ago"  # refreshed, and kept in the keyring
        assert kept["tokens"]["refresh_token"] == REFRESH
        assert keyring_file.is_file()
        on_disk = store.path.read_text(encoding="utf-8")
        listed = [p.read_text(encoding="utf-8") for p in (tmp_path / "cache").rglob("*.json")]
        assert listed  # the tools' listing was cached
        for secret in (access, REFRESH):
            assert secret not in on_disk
            assert secret not in caplog.text
            assert not any(secret in text for text in listed)
        assert "tokens" not in json.loads(on_disk)[key]
        env = {**os.environ, "TOOLPLUG_CONFIG": str(config)}
        doctor, listing = (subprocess.run(
            [sys.executable, "-m", "toolplug", *command], env=env, capture_output=True,
            text=True, timeout=120, check=False,
        ) for command in (["doctor"], ["list", "--all"]))
        assert 'sign-in kept in: the keyring (keyrings.alt.file.PlaintextKeyring, service ' \
            '"toolplug")' in doctor.stdout, doctor.stdout + doctor.stderr
        assert "up_add" in listing.stdout, listing.stdout + listing.stderr
        for said in (doctor.stdout, doctor.stderr, listing.stdout, listing.stderr):
            assert access not in said
            assert REFRESH not in said

        out = sign_out(load_config(config), "up", env=os.environ)
        assert out.startswith("signed out of up")
        assert keyring.get_password("toolplug", key) is None
