"""A mounted server that needs an OAuth sign-in (``auth = "oauth"``), for real: oidc-provider
on 127.0.0.1 (tests/helpers/oidc.py) in front of ``toolplug serve --http`` under
``[serve.auth]``, mounted by a second toolplug. Before a sign-in the server is unavailable
with the reason naming ``toolplug login``; the sign-in is completed headless (the login and
consent forms posted as a browser would, then the redirect to toolplug's loopback port);
then calls, a refresh after the access token expired, and a sign-out. Bad input (a forged
``state``, a token endpoint answering 500, a malformed metadata document) is a clear
reason and keeps nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import jwt
import pytest

import toolplug
from tests.helpers.oidc import authorization_server, refreshed
from tests.helpers.oidc import browser as _browser
from tests.helpers.serve import CONFIG, child_env, free_port, http_server
from toolplug.config._config import load_config
from toolplug.sources.mcp import SignInError, mounted, sign_in, sign_out
from toolplug.state._tokens import TokenStore

SCOPES = '["openid", "offline_access", "tools:read", "tools:write", "echo:run"]'


def _outer(issuer: str, audience: str) -> str:
    return f'{CONFIG}\n[serve.auth]\nissuer = "{issuer}"\naudience = "{audience}"\n'


def _inner(home: Path, url: str, extra: str = "", scopes: str = SCOPES) -> Path:
    path = home / "inner.toml"
    path.write_text(
        f'cache_dir = "{home / "cache"}"\nstate_dir = "{home / "state"}"\n'
        f'[mcp_servers.upstream]\nurl = "{url}"\nauth = "oauth"\napproval = "never"\n'
        f"[mcp_servers.upstream.oauth]\nscopes = {scopes}\n{extra}",
        encoding="utf-8",
    )
    return path


def _kept(home: Path, url: str) -> dict[str, Any]:
    return TokenStore(home / "state" / "oauth").entry(url)


def _call(config: Path, name: str, arguments: dict[str, Any]) -> toolplug.ToolResult:
    registry = toolplug.load(config)
    try:
        return asyncio.run(registry.acall(name, arguments))
    finally:
        registry.close()


def test_sign_in_call_refresh_and_sign_out(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    home = tmp_path / "inner"
    home.mkdir()
    with authorization_server(tmp_path, token_ttl=6) as issuer:
        env = {**os.environ, **child_env(tmp_path, config=_outer(issuer, audience))}
        config = _inner(home, audience)
        with http_server(tmp_path, port, env=env):
            # not signed in: unavailable, and the reason says how to sign in
            registry = toolplug.load(config)
            try:
                server = mounted(registry).servers["upstream"]  # type: ignore[union-attr]
                assert server.problem == "needs a sign-in: run `toolplug login upstream`"
            finally:
                registry.close()
            assert "tokens" not in _kept(home, audience)

            open_url, opened = _browser()
            said = sign_in(load_config(config), "upstream", env=os.environ, open_url=open_url)
            assert said.startswith("signed in to upstream")
            [url] = opened
            query = parse_qs(urlsplit(url).query)
            assert query["code_challenge_method"] == ["S256"]
            assert query["resource"] == [audience]
            assert query["redirect_uri"][0].startswith("http://127.0.0.1:")

            tokens_file = home / "state" / "oauth" / "tokens.json"
            assert stat.S_IMODE(tokens_file.stat().st_mode) == 0o600
            kept = _kept(home, audience)
            first = kept["tokens"]["access_token"]
            assert kept["tokens"]["refresh_token"]
            assert jwt.decode(first, options={"verify_signature": False})["aud"] == audience

            added = _call(config, "upstream_add", {"a": 2, "b": 40})
            assert added.ok, added.error
            assert "42" in str(added.output)
            # the tokens are secrets: never in the cached listing
            cached = (home / "cache" / "mcp" / "upstream.json").read_text(encoding="utf-8")
            assert first not in cached

            time.sleep(7)  # the access token expires: the next call refreshes it, once
            again = _call(config, "upstream_add", {"a": 1, "b": 1})
            assert again.ok, again.error
            refreshed = _kept(home, audience)["tokens"]["access_token"]
            assert refreshed != first

            # a refresh token the authorization server no longer honours: the call says
            # the sign-in expired and how to sign in again; the spent tokens are dropped
            store = TokenStore(home / "state" / "oauth")
            kept = store.entry(audience)
            store.update(audience, expires_at=time.time() - 60,
                         tokens={**kept["tokens"], "refresh_token": "revoked-long-ago"})
            spent = _call(config, "upstream_add", {"a": 1, "b": 2})
            assert not spent.ok
            assert spent.error is not None
            assert spent.error.message == (
                "MCP server 'upstream' is unavailable: its sign-in expired: "
                "run `toolplug login upstream`"
            )
            assert "tokens" not in store.entry(audience)
            sign_in(load_config(config), "upstream", env=os.environ, open_url=_browser()[0])

            out = sign_out(load_config(config), "upstream", env=os.environ)
            assert out.startswith("signed out of upstream")
            assert _kept(home, audience) == {}
            registry = toolplug.load(config)
            try:
                server = mounted(registry).servers["upstream"]  # type: ignore[union-attr]
                assert server.problem == "needs a sign-in: run `toolplug login upstream`"
            finally:
                registry.close()


def test_a_step_up_to_a_wider_scope_names_the_sign_in_that_asks_for_it(
    tmp_path: Path,
) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    home = tmp_path / "inner"
    home.mkdir()
    with authorization_server(tmp_path) as issuer:
        # toolplug asks for the configured scopes (without echo:run): enough for this server
        config = _inner(home, audience, scopes=SCOPES.replace(', "echo:run"', ""))
        env = {**os.environ, **child_env(tmp_path, config=_outer(issuer, audience))}
        with http_server(tmp_path, port, env=env):
            narrow, _ = _browser()
            sign_in(load_config(config), "upstream", env=os.environ, open_url=narrow)
            first = _kept(home, audience)["tokens"]
            assert "echo:run" not in first["scope"].split()
            assert _call(config, "upstream_add", {"a": 1, "b": 1}).ok

        # the server now wants echo:run on every request: 403 insufficient_scope. No
        # person to ask in a mount, so the reason names the sign-in; the scopes are kept
        (tmp_path / "toolplug.toml").write_text(  # the outer server's, read at its start
            _outer(issuer, audience) + 'required_scopes = ["echo:run"]\n', encoding="utf-8"
        )
        with http_server(tmp_path, port, env=env):
            refused = _call(config, "upstream_add", {"a": 1, "b": 1})
            assert refused.error is not None
            said = refused.error.message
            assert said.startswith(
                "MCP server 'upstream' is unavailable: needs a sign-in with more access "
                "(the scopes "
            ), said
            assert said.endswith(": run `toolplug login upstream`"), said
            assert "echo:run" in said
            kept = _kept(home, audience)
            assert "echo:run" in kept["wanted_scope"].split()
            assert kept["tokens"] == first  # nothing new kept, nothing dropped

            full, opened = _browser()
            sign_in(load_config(config), "upstream", env=os.environ, open_url=full)
            asked = parse_qs(urlsplit(opened[0]).query)["scope"][0].split()
            assert {"echo:run", "tools:read", "tools:write"} <= set(asked)
            added = _call(config, "upstream_add", {"a": 2, "b": 40})
            assert added.ok, added.error
            assert "42" in str(added.output)


def test_a_forged_state_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    home = tmp_path / "inner"
    home.mkdir()
    with authorization_server(tmp_path) as issuer:
        env = {**os.environ, **child_env(tmp_path, config=_outer(issuer, audience))}
        config = _inner(home, audience)
        with http_server(tmp_path, port, env=env):
            open_url, _ = _browser(state="forged-by-someone-else")
            with pytest.raises(SignInError, match="state is not the one this sign-in sent"):
                sign_in(load_config(config), "upstream", env=os.environ, open_url=open_url)
    assert "tokens" not in _kept(home, audience)


# -- a broken authorization server ------------------------------------------------------


@contextmanager
def _broken(kind: str) -> Iterator[tuple[str, list[str]]]:
    """A protected resource and its authorization server on one loopback port, broken as
    ``kind`` says: ``token-500`` (the token endpoint fails), ``bad-metadata`` (the
    authorization server's metadata is not a metadata document), ``huge`` (the protected
    resource's metadata is 400 kB), ``foreign-resource`` (the protected resource's metadata
    describes another origin's resource), ``other-audience`` (tokens are issued, and every
    request with one is refused with 401 ``invalid_token``: a token meant for another
    audience) or ``scope-403`` (tokens are issued, and every request with one is refused
    with 403 ``insufficient_scope`` for the scope ``admin``)."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            base = f"http://{self.headers['Host']}"
            path = urlsplit(self.path).path
            asked.append(f"GET {path}")
            if path.startswith("/.well-known/oauth-protected-resource"):
                padding = {"padding": "x" * 400_000} if kind == "huge" else {}
                resource = (
                    "https://elsewhere.example/mcp" if kind == "foreign-resource"
                    else f"{base}/mcp"
                )
                self._send(200, {"resource": resource, "authorization_servers": [base],
                                 **padding})
            elif path.startswith("/.well-known/oauth-authorization-server"):
                if kind == "bad-metadata":
                    self._send(200, {"issuer": 7, "authorization_endpoint": ["nope"]})
                else:
                    self._send(200, {
                        "issuer": base, "authorization_endpoint": f"{base}/authorize",
                        "token_endpoint": f"{base}/token",
                        "registration_endpoint": f"{base}/register",
                        "response_types_supported": ["code"],
                        "code_challenge_methods_supported": ["S256"],
                    })
            elif path == "/authorize":
                query = parse_qs(urlsplit(self.path).query)
                target = query["redirect_uri"][0] + "?" + urlencode(
                    {"code": "a-code", "state": query["state"][0]}
                )
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self._send(404, {})

        def do_POST(self) -> None:
            base = f"http://{self.headers['Host']}"
            path = urlsplit(self.path).path
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            asked.append(f"POST {path}")
            if path == "/register":
                self._send(201, {"client_id": "c1", "redirect_uris": ["http://127.0.0.1/cb"],
                                 "token_endpoint_auth_method": "none"})
            elif path == "/token" and kind in ("scope-403", "other-audience"):
                self._send(200, {"access_token": f"t{len(asked)}", "token_type": "Bearer",
                                 "expires_in": 300, "scope": "tools:read"})
            elif path == "/token":
                self._send(500, {"error": "server_error"})
            elif kind == "scope-403" and self.headers.get("Authorization"):
                meta = f'{base}/.well-known/oauth-protected-resource/mcp'
                self._send(403, {"error": "insufficient_scope"}, {"WWW-Authenticate": (
                    f'Bearer error="insufficient_scope", scope="admin", '
                    f'resource_metadata="{meta}"'
                )})
            elif kind == "other-audience" and self.headers.get("Authorization"):
                meta = f'{base}/.well-known/oauth-protected-resource/mcp'
                self._send(401, {"error": "invalid_token"}, {"WWW-Authenticate": (
                    f'Bearer error="invalid_token", error_description="audience", '
                    f'resource_metadata="{meta}"'
                )})
            else:
                meta = f'{base}/.well-known/oauth-protected-resource/mcp'
                self._send(401, {"error": "unauthorized"},
                           {"WWW-Authenticate": f'Bearer resource_metadata="{meta}"'})

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", asked
    finally:
        server.shutdown()
        server.server_close()


async def _follow(url: str) -> None:
    async with httpx.AsyncClient(timeout=30, follow_redirects=True) as browser:
        await browser.get(url)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("token-500", "Token exchange failed (500)"),
        ("bad-metadata", "oauth-authorization-server cannot be read: issuer"),
        ("huge", "oauth-protected-resource/mcp is 400"),
        ("foreign-resource", "Protected resource https://elsewhere.example/mcp does not match"),
        ("other-audience", "refused the token its authorization server just issued"),
    ],
)
def test_a_broken_authorization_server_is_a_clear_reason_and_keeps_no_token(
    tmp_path: Path, kind: str, expected: str
) -> None:
    with _broken(kind) as (url, asked):
        config = _inner(tmp_path, url)
        with pytest.raises(SignInError) as caught:
            sign_in(load_config(config), "upstream", env=os.environ, open_url=_follow,
                    timeout=30)
    said = str(caught.value)
    assert said.startswith("upstream: ")
    assert expected in said, said
    assert "Traceback" not in said
    assert "tokens" not in _kept(tmp_path, url)
    assert "POST /mcp" in asked


def test_a_step_up_the_authorization_server_does_not_grant_is_a_reason_not_a_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEP_UP_SECRET", "s3cret")
    with _broken("scope-403") as (url, asked):
        base = url.removesuffix("/mcp")
        config = _inner(tmp_path, url, (
            'grant = "client_credentials"\nclient_id = "c1"\n'
            f'client_secret = {{ env = "STEP_UP_SECRET" }}\nissuer = "{base}"\n'
        ))
        for _ in range(2):  # each start: one step-up at most, then the reason
            registry = toolplug.load(config)
            try:
                server = mounted(registry).servers["upstream"]  # type: ignore[union-attr]
                assert server.problem == (
                    "still wants the scopes admin (the new token has tools:read): the "
                    "authorization server did not grant them"
                )
            finally:
                registry.close()
    # the first start: a token for the 401, whose 403 is the reason; the second (the
    # token kept): one step-up, whose 403 is the reason
    assert asked.count("POST /token") == 2, asked


def test_doctor_and_list_say_which_server_needs_a_sign_in(tmp_path: Path) -> None:
    with _broken("token-500") as (url, _):
        config = _inner(tmp_path, url)
        env = {**os.environ, "TOOLPLUG_CONFIG": str(config)}
        doctor = subprocess.run(
            [sys.executable, "-m", "toolplug", "doctor"], env=env, capture_output=True,
            text=True, timeout=120, check=False,
        )
        listed = subprocess.run(
            [sys.executable, "-m", "toolplug", "list", "--all"], env=env, capture_output=True,
            text=True, timeout=120, check=False,
        )
    for run in (doctor, listed):
        said = run.stdout + run.stderr
        assert "needs a sign-in: run `toolplug login upstream`" in said, said
        assert "Traceback" not in said
    assert "toolplug login upstream" in doctor.stdout



@pytest.mark.parametrize("revocation", [True, False])
def test_sign_out_revokes_the_refresh_token_where_the_server_offers_it(
    tmp_path: Path, revocation: bool
) -> None:
    # the sign-out tells an authorization server that offers RFC 7009 revocation: the
    # refresh token is then refused at its token endpoint; one that offers none is not told
    # (the token still works there), and the sign-out says which
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    home = tmp_path / "inner"
    home.mkdir()
    with authorization_server(tmp_path, revocation=revocation) as issuer:
        env = {**os.environ, **child_env(tmp_path, config=_outer(issuer, audience))}
        config = _inner(home, audience)
        with http_server(tmp_path, port, env=env):
            sign_in(load_config(config), "upstream", env=os.environ, open_url=_browser()[0])
            kept = _kept(home, audience)
            refresh, client = kept["tokens"]["refresh_token"], kept["client"]
            assert not client.get("client_secret")  # a public client: refreshed() below is its
            out = sign_out(load_config(config), "upstream", env=os.environ)
            assert _kept(home, audience) == {}
        after = refreshed(issuer, refresh, client["client_id"], audience)
    if revocation:
        assert "revoked" in out, out
        assert after == "invalid_grant"
    else:
        assert "offers no revocation, so it was not told" in out, out
        assert after == "ok"
