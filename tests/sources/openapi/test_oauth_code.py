"""``[openapi.NAME] auth = "oauth"`` signed in to by a person, for real: oidc-provider on
127.0.0.1 (tests/helpers/oidc) as the authorization server the description names (an
oauth2 ``authorizationCode`` flow, or ``openIdConnect`` discovery), in front of a real API
on 127.0.0.1 that checks each token's signature, audience and scope. Before a sign-in the
operations that need the scheme are unavailable with the reason naming the scheme and
``toolplug login``; the sign-in is completed headless (the login and consent forms posted
as a browser would, then the redirect to toolplug's loopback port); then calls, a refresh
after the access token expired, an expired sign-in, and a sign-out. An operation whose
description says ``security: []`` is never sent the token. Bad input (a forged ``state``,
a token endpoint answering 500) is a clear reason and keeps nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

import toolplug
from tests.helpers.oidc import authorization_server, refreshed, verified
from tests.helpers.oidc import browser as _browser
from tests.helpers.openapi import json_server
from tests.helpers.serve import free_port
from toolplug.config._config import load_config
from toolplug.sources._signin import SignInError
from toolplug.sources.openapi import described, sign_in, sign_out
from toolplug.sources.openapi._signin import SignIn
from toolplug.state._tokens import TokenStore

SCOPES = ["openid", "offline_access", "tools:read"]


class _Api:
    """A protected API: ``GET /me`` wants a token for this API with ``tools:read``;
    ``GET /health`` says ``security: []`` and notes every Authorization header it got."""

    def __init__(self, issuer: str, scheme: dict[str, Any]) -> None:
        self.jwks = jwt.PyJWKClient(f"{issuer}/jwks")
        self.issuer = issuer
        self.scheme = scheme
        self.health_headers: list[str | None] = []
        self.url = ""

    def description(self) -> dict[str, Any]:
        ok = {"200": {"description": "ok", "content": {
            "application/json": {"schema": {"type": "object"}},
        }}}
        return {
            "openapi": "3.1.0",
            "info": {"title": "Protected", "version": "1"},
            "servers": [{"url": self.url}],
            "security": [{"corp": ["tools:read"]}],
            "components": {"securitySchemes": {"corp": self.scheme}},
            "paths": {
                "/me": {"get": {"operationId": "whoAmI", "responses": ok}},
                "/health": {"get": {"operationId": "health", "security": [], "responses": ok}},
            },
        }

    def check(self, header: str | None) -> tuple[int, dict[str, Any]]:
        token = (header or "").removeprefix("Bearer ")
        claims = verified(self.jwks, self.issuer, token, self.url)
        if isinstance(claims, str):
            return 401, {"error": claims}
        if "tools:read" not in str(claims.get("scope", "")).split():
            return 403, {"error": "insufficient_scope"}
        return 200, {"sub": claims.get("sub"), "scope": claims["scope"]}


@contextmanager
def _serve(api: _Api) -> Iterator[_Api]:
    def answer(method: str, path: str, headers: Message) -> tuple[int, Any]:
        if path == "/openapi.json":
            return 200, api.description()
        if path == "/me":
            return api.check(headers.get("Authorization"))
        if path == "/health":
            api.health_headers.append(headers.get("Authorization"))
            return 200, {"up": True}
        return 404, {}

    with json_server(answer) as url:
        api.url = url
        yield api


def _code_flow(issuer: str) -> dict[str, Any]:
    return {"type": "oauth2", "flows": {"authorizationCode": {
        "authorizationUrl": f"{issuer}/auth", "tokenUrl": f"{issuer}/token",
        "scopes": {"tools:read": "read"},
    }}}


def _register(issuer: str, port: int) -> str:
    """A client registered beforehand, as an operator would (its redirect on ``port``)."""
    answer = httpx.post(f"{issuer}/reg", json={
        "redirect_uris": [f"http://127.0.0.1:{port}/callback"], "response_types": ["code"],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none", "scope": " ".join(SCOPES),
    }, timeout=30)
    answer.raise_for_status()
    client_id: str = answer.json()["client_id"]
    return client_id


def _config(home: Path, api_url: str, **oauth: Any) -> Path:
    path = home / "toolplug.toml"
    keys = "".join(f"{k} = {json.dumps(v)}\n" for k, v in {"scopes": SCOPES, **oauth}.items())
    path.write_text(
        f'cache_dir = "{home / "cache"}"\nstate_dir = "{home / "state"}"\n'
        '[network]\nallow = ["127.0.0.1"]\n'
        f'[openapi.corp]\nspec = "{api_url}/openapi.json"\nauth = "oauth"\n'
        f"[openapi.corp.oauth]\n{keys}",
        encoding="utf-8",
    )
    return path


def _key(api: _Api) -> str:
    return f"openapi:corp {api.url}"


def _call(config: Path, name: str) -> toolplug.ToolResult:
    registry = toolplug.load(config)
    try:
        return asyncio.run(registry.acall(name, {}))
    finally:
        registry.close()


def _reasons(config: Path, name: str) -> list[str]:
    registry = toolplug.load(config)
    try:
        return list(registry.availability(name).reasons)
    finally:
        registry.close()


def test_sign_in_call_refresh_expiry_and_sign_out(tmp_path: Path) -> None:
    with authorization_server(tmp_path, token_ttl=6) as issuer, \
            _serve(_Api(issuer, _code_flow(issuer))) as api:
        port = free_port()
        config = _config(tmp_path, api.url, client_id=_register(issuer, port),
                         redirect_port=port)
        store = TokenStore(tmp_path / "state" / "oauth")
        # not signed in: what needs the scheme is unavailable, naming it and the command
        (reason,) = _reasons(config, "corp_who_am_i")
        assert "the security scheme 'corp' (oauth2: OAuth 2.0, flows: authorization code" \
            in reason, reason
        assert reason.endswith("needs a sign-in: run `toolplug login corp`"), reason
        health = _call(config, "corp_health")  # security: [] needs no sign-in, gets no token
        assert health.ok, health.error

        open_url, opened = _browser()
        said = sign_in(load_config(config), "corp", env=os.environ, open_url=open_url)
        assert said.startswith("signed in to corp (the security scheme 'corp'"), said
        [url] = opened
        query = parse_qs(urlsplit(url).query)
        assert query["code_challenge_method"] == ["S256"]
        assert query["resource"] == [api.url]
        assert query["redirect_uri"] == [f"http://127.0.0.1:{port}/callback"]
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
        first = store.entry(_key(api))["tokens"]
        assert first["refresh_token"]
        assert jwt.decode(first["access_token"], options={"verify_signature": False})["aud"] \
            == api.url

        me = _call(config, "corp_who_am_i")
        assert me.ok, me.error
        assert me.data == {"sub": "alice", "scope": "tools:read"}
        assert first["access_token"] not in json.dumps(me.data)
        assert _call(config, "corp_health").ok
        assert api.health_headers == [None, None]  # never the token

        time.sleep(7)  # the access token expires: the next calls refresh it, once
        registry = toolplug.load(config)
        try:
            async def race() -> list[toolplug.ToolResult]:
                return await asyncio.gather(
                    *(registry.acall("corp_who_am_i", {}) for _ in range(10))
                )

            assert all(result.ok for result in asyncio.run(race()))
            found = described(registry)
            assert found is not None
            grant = found.apis["corp"].grant
            assert isinstance(grant, SignIn)
            assert grant.refreshed == 1
        finally:
            registry.close()
        assert store.entry(_key(api))["tokens"]["access_token"] != first["access_token"]

        # a refresh token the authorization server no longer honours: the sign-in expired
        kept = store.entry(_key(api))
        store.update(_key(api), expires_at=time.time() - 60,
                     tokens={**kept["tokens"], "refresh_token": "revoked-long-ago"})
        spent = _call(config, "corp_who_am_i")
        assert spent.error is not None
        assert spent.error.message.endswith("its sign-in expired: run `toolplug login corp`")
        assert "tokens" not in store.entry(_key(api))
        (reason,) = _reasons(config, "corp_who_am_i")
        assert reason.endswith("its sign-in expired: run `toolplug login corp`"), reason

        sign_in(load_config(config), "corp", env=os.environ, open_url=_browser()[0])
        assert _call(config, "corp_who_am_i").ok
        kept = store.entry(_key(api))
        out = sign_out(load_config(config), "corp", env=os.environ)
        assert out == (
            "signed out of corp: its tokens are forgotten here; its authorization server "
            "offers no revocation, so it was not told (they stay valid there until they expire)"
        )
        assert store.entry(_key(api)) == {}
        # forgotten here only: the authorization server still honours its refresh token
        assert refreshed(issuer, kept["tokens"]["refresh_token"], kept["client"]["client_id"],
                         api.url) == "ok"
        (reason,) = _reasons(config, "corp_who_am_i")
        assert reason.endswith("needs a sign-in: run `toolplug login corp`")


def test_openid_connect_discovers_registers_and_the_cli_signs_in(tmp_path: Path) -> None:
    scheme = {"type": "openIdConnect",
              "openIdConnectUrl": "{issuer}/.well-known/openid-configuration"}
    with authorization_server(tmp_path) as issuer:
        scheme["openIdConnectUrl"] = scheme["openIdConnectUrl"].format(issuer=issuer)
        with _serve(_Api(issuer, scheme)) as api:
            config = _config(tmp_path, api.url)
            env = {**os.environ, "TOOLPLUG_CONFIG": str(config)}
            for command in (["list", "--all"], ["doctor"]):
                run = subprocess.run(
                    [sys.executable, "-m", "toolplug", *command], env=env,
                    capture_output=True, text=True, timeout=120, check=False,
                )
                said = run.stdout + run.stderr
                assert "(openIdConnect: OpenID Connect, discovered at" in said, said
                assert "needs a sign-in: run `toolplug login corp`" in said, said
                assert "Traceback" not in said
            # toolplug login prints the address (no browser here) and takes the redirect
            login = subprocess.Popen(
                [sys.executable, "-m", "toolplug", "login", "corp", "--no-browser"], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            try:
                assert login.stderr is not None
                line = ""
                while not line.strip().startswith("http"):
                    line = login.stderr.readline()
                    assert line, "toolplug login printed no address"
                asyncio.run(_browser()[0](line.strip()))
                out, err = login.communicate(timeout=60)
            finally:
                login.kill()
            assert login.returncode == 0, err
            assert "signed in to corp" in out
            entry = TokenStore(tmp_path / "state" / "oauth").entry(_key(api))
            assert entry["client"]["client_id"]  # registered at the discovered endpoint
            me = _call(config, "corp_who_am_i")
            assert me.ok, me.error
            logout = subprocess.run(
                [sys.executable, "-m", "toolplug", "logout", "corp"], env=env,
                capture_output=True, text=True, timeout=120, check=False,
            )
            # (the test server offers no revocation endpoint, its discovery document says)
            assert logout.stdout.startswith("signed out of corp"), logout
            assert TokenStore(tmp_path / "state" / "oauth").entry(_key(api)) == {}
            assert _call(config, "corp_who_am_i").error is not None


def test_a_forged_state_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    with authorization_server(tmp_path) as issuer, \
            _serve(_Api(issuer, _code_flow(issuer))) as api:
        port = free_port()
        config = _config(tmp_path, api.url, client_id=_register(issuer, port),
                         redirect_port=port)
        with pytest.raises(SignInError, match="state is not the one this sign-in sent") as exc:
            sign_in(load_config(config), "corp", env=os.environ,
                    open_url=_browser(state="forged-by-someone-else")[0])
        assert "run `toolplug login corp` again" in str(exc.value)
        assert "tokens" not in TokenStore(tmp_path / "state" / "oauth").entry(_key(api))


def _failing(method: str, path: str, headers: Message) -> tuple[int, Any]:
    """An authorization server whose token endpoint answers 500 (its authorization
    endpoint is never visited: the browser of the test goes straight to the redirect)."""
    return 500, {"error": "server_error"}


def test_a_token_endpoint_answering_500_is_a_clear_reason_and_keeps_nothing(
    tmp_path: Path,
) -> None:
    async def redirect_at_once(url: str) -> None:
        query = parse_qs(urlsplit(url).query)
        async with httpx.AsyncClient(timeout=30) as browser:
            await browser.get(query["redirect_uri"][0], params={
                "code": "a-code", "state": query["state"][0],
            })

    with json_server(_failing) as issuer, _serve(_Api(issuer, _code_flow(issuer))) as api:
        config = _config(tmp_path, api.url, client_id="toolplug")
        with pytest.raises(SignInError, match=r"Token exchange failed \(500\)") as exc:
            sign_in(load_config(config), "corp", env=os.environ, open_url=redirect_at_once)
        assert str(exc.value).startswith("corp: the sign-in failed: "), exc.value
        assert TokenStore(tmp_path / "state" / "oauth").entry(_key(api)) == {}


def test_an_operation_that_says_security_none_is_sent_no_credentials_of_any_kind(
    tmp_path: Path,
) -> None:
    api = _Api("http://127.0.0.1:9", _code_flow("http://127.0.0.1:9"))
    seen: dict[str, str | None] = {}

    def answer(method: str, path: str, headers: Message) -> tuple[int, Any]:
        if path == "/openapi.json":
            return 200, api.description()
        seen[path] = headers.get("Authorization")
        return 200, {}

    with json_server(answer) as url:
        api.url = url
        registry = toolplug.load({
            "network": {"allow": ["127.0.0.1"]}, "cache_dir": str(tmp_path / "cache"),
            "openapi": {"corp": {"spec": f"{url}/openapi.json",
                                 "auth": {"type": "bearer", "token": {"env": "T"}}}},
        }, env={"T": "a-static-token"})
        try:
            assert registry.call("corp_who_am_i", {}).ok
            assert registry.call("corp_health", {}).ok
        finally:
            registry.close()
    assert seen == {"/me": "Bearer a-static-token", "/health": None}
