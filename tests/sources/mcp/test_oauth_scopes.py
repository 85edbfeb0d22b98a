"""The configured ``scopes`` of ``[mcp_servers.NAME.oauth]`` are what toolplug asks for, for
real: oidc-provider on 127.0.0.1 in front of ``toolplug serve --http`` under
``[serve.auth]``, whose 401 and protected resource metadata name wider scopes
(``tools:read tools:write`` and the rest it serves). The MCP SDK's client would ask for
those instead (its scope selection replaces the client's scope on every 401); toolplug
asks for exactly the configured ones, for a person's sign-in and for client credentials,
and a step-up still widens them.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

import toolplug
from tests.helpers.oidc import MACHINE, authorization_server, consent
from tests.helpers.serve import CONFIG, child_env, free_port, http_server
from toolplug.config._config import load_config
from toolplug.sources.mcp import mounted, sign_in
from toolplug.state._tokens import TokenStore


def _outer(issuer: str, audience: str) -> str:
    return f'{CONFIG}\n[serve.auth]\nissuer = "{issuer}"\naudience = "{audience}"\n'


def _config(home: Path, url: str, oauth: str) -> Path:
    path = home / "inner.toml"
    path.write_text(
        f'cache_dir = "{home / "cache"}"\nstate_dir = "{home / "state"}"\n'
        f'[mcp_servers.upstream]\nurl = "{url}"\nauth = "oauth"\napproval = "never"\n'
        f"[mcp_servers.upstream.oauth]\n{oauth}",
        encoding="utf-8",
    )
    return path


def _kept(home: Path, url: str) -> dict[str, Any]:
    return TokenStore(home / "state" / "oauth").entry(url)


async def _follow(url: str) -> None:
    """A person at a browser: logs in, consents, and the browser follows the redirect."""
    redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
    answer = await consent(url, redirect)
    query = {"code": answer.code, "state": answer.state or "", "iss": answer.iss or ""}
    async with httpx.AsyncClient(timeout=30) as browser:
        await browser.get(f"{redirect}?{urlencode(query)}")


def test_a_sign_in_asks_for_the_configured_scopes_not_the_servers(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    home = tmp_path / "inner"
    home.mkdir()
    with authorization_server(tmp_path) as issuer:
        env = {**os.environ, **child_env(tmp_path, config=_outer(issuer, audience))}
        config = _config(home, audience, 'scopes = ["openid", "tools:read"]\n')
        with http_server(tmp_path, port, env=env):
            # what the server names: wider than the configured scopes
            said = httpx.get(
                f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", timeout=30
            ).json()
            assert "tools:write" in said["scopes_supported"]

            opened: list[str] = []

            async def open_url(url: str) -> None:
                opened.append(url)
                await _follow(url)

            sign_in(load_config(config), "upstream", env=os.environ, open_url=open_url)
            [url] = opened
            asked = parse_qs(urlsplit(url).query)["scope"][0].split()
            assert sorted(asked) == ["openid", "tools:read"], asked
            granted = _kept(home, audience)["tokens"]["scope"].split()
            assert "tools:write" not in granted
            assert "tools:read" in granted


def test_client_credentials_ask_for_the_configured_scopes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    home = tmp_path / "inner"
    home.mkdir()
    monkeypatch.setenv("SCOPES_MACHINE_SECRET", MACHINE[1])
    with authorization_server(tmp_path) as issuer:
        # every request needs echo:run too: the 401's token (the configured scopes) is
        # refused with 403 insufficient_scope, and the machine client steps up itself
        outer = _outer(issuer, audience) + 'required_scopes = ["echo:run"]\n'
        env = {**os.environ, **child_env(tmp_path, config=outer)}
        config = _config(home, audience, (
            f'grant = "client_credentials"\nclient_id = "{MACHINE[0]}"\n'
            'client_secret = { env = "SCOPES_MACHINE_SECRET" }\n'
            f'issuer = "{issuer}"\nscopes = ["tools:read"]\n'
        ))
        with http_server(tmp_path, port, env=env):
            registry = toolplug.load(config)
            try:
                server = mounted(registry).servers["upstream"]  # type: ignore[union-attr]
                assert server.problem is None, server.problem
            finally:
                registry.close()
            granted = _kept(home, audience)["tokens"]["scope"].split()
            assert sorted(granted) == ["echo:run", "tools:read"], granted
            registry = toolplug.load(config)
            try:
                added = asyncio.run(registry.acall("upstream_add", {"a": 2, "b": 40}))
            finally:
                registry.close()
            assert added.ok, added.error
            assert "42" in str(added.output)
