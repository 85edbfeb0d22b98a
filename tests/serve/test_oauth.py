"""``toolplug serve --http`` under ``[serve.auth]`` with a real authorization server: the npm
package oidc-provider on 127.0.0.1 (tests/helpers/oidc.py), and the official SDK client's
own OAuth flow: discovery from the 401 (protected resource metadata, then the issuer's
metadata), dynamic registration, the authorization code with PKCE and the resource
indicator, then tools. Tokens the same server issued for another audience, with too few
scopes, expired or with a broken signature are refused with the documented status.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.helpers.oidc import authorization_server, consent, machine_token
from tests.helpers.serve import CONFIG, TIMEOUT, child_env, free_port, http_server

SCOPED = '[tools.echo]\nscopes = ["echo:run"]\n'


class Memory:
    """The SDK's ``TokenStorage``, in memory: what the client registered and was issued."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def _config(issuer: str, audience: str, extra: str = "") -> str:
    return f'{SCOPED}[serve.auth]\nissuer = "{issuer}"\naudience = "{audience}"\n{extra}\n'


def test_the_sdk_client_logs_in_through_its_own_oauth_flow_and_calls_tools(
    tmp_path: Path,
) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    redirect = "http://127.0.0.1:1/callback"  # the client's; the browser never goes there
    with authorization_server(tmp_path) as issuer:
        env = {**os.environ, **child_env(tmp_path, config=CONFIG + _config(issuer, audience))}
        storage = Memory()
        asked: list[str] = []
        answers: asyncio.Queue[Any] = asyncio.Queue()

        async def redirect_handler(url: str) -> None:  # the user's browser opens it
            asked.append(url)
            await answers.put(await consent(url, redirect, subject="alice"))

        async def callback_handler() -> Any:
            return await answers.get()

        async def session() -> dict[str, Any]:
            oauth = OAuthClientProvider(
                audience,
                OAuthClientMetadata.model_validate({
                    "redirect_uris": [redirect], "client_name": "toolplug test",
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                }),
                storage, redirect_handler=redirect_handler, callback_handler=callback_handler,
            )
            async with (
                httpx2.AsyncClient(auth=oauth, timeout=30) as http,
                Client(streamable_http_client(audience, http_client=http)) as client,
            ):
                tools = sorted(t.name for t in (await client.list_tools()).tools)
                added = await client.call_tool("add", {"a": 2, "b": 40})
                return {"tools": tools, "added": added.structured_content}

        with http_server(tmp_path, port, env=env):
            seen = asyncio.run(asyncio.wait_for(session(), TIMEOUT))
    # one login, with PKCE and the resource indicator, for the scopes the metadata lists
    [url] = asked
    query = httpx.URL(url).params
    assert query["code_challenge_method"] == "S256"
    assert query["resource"] == audience
    assert set(query["scope"].split()) >= {"tools:read", "tools:write"}
    assert storage.tokens is not None
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == audience
    assert claims["sub"] == "alice"
    assert claims["iss"] == issuer
    # echo needs echo:run, which the metadata lists too: the client asked for it and got it
    assert seen["tools"] == ["add", "echo", "liar", "static_links"]
    assert seen["added"] == {"sum": 42}


def _post(url: str, token: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream", "authorization": f"Bearer {token}"}
    return httpx.post(url, json=body, headers=headers, timeout=TIMEOUT)


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


ADD = _call("add", {"a": 1, "b": 2})


def test_tokens_the_server_cannot_accept_are_refused(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(tmp_path) as issuer:
        env = {**os.environ, **child_env(tmp_path, config=CONFIG + _config(issuer, audience))}
        with http_server(tmp_path, port, env=env):
            good = machine_token(issuer, audience, "tools:read tools:write")
            elsewhere = machine_token(issuer, "http://127.0.0.1:1/mcp", "tools:read tools:write")
            reader = machine_token(issuer, audience, "tools:read")
            head, body, signature = good.split(".")
            broken = f"{head}.{body}.{signature[::-1]}"
            answers = {
                "good": _post(audience, good, ADD),
                "another audience": _post(audience, elsewhere, ADD),
                "badly signed": _post(audience, broken, ADD),
                "reader calls add": _post(audience, reader, ADD),
                "reader calls echo": _post(audience, reader, _call("echo", {"text": "x"})),
            }
    assert answers["good"].status_code not in (401, 403)
    for case in ("another audience", "badly signed"):
        assert answers[case].status_code == 401, case
        assert "resource_metadata=" in answers[case].headers["www-authenticate"]
    assert answers["reader calls add"].status_code not in (401, 403)  # add is read-only
    refused = answers["reader calls echo"]
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert 'scope="echo:run"' in refused.headers["www-authenticate"]


def test_an_expired_token_is_refused(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(tmp_path, token_ttl=1) as issuer:
        config = CONFIG + _config(issuer, audience, "leeway_seconds = 0")
        env = {**os.environ, **child_env(tmp_path, config=config)}
        with http_server(tmp_path, port, env=env):
            token = machine_token(issuer, audience, "tools:read")
            expires = jwt.decode(token, options={"verify_signature": False})["exp"]
            while time.time() <= expires + 1:  # until the token has expired
                time.sleep(0.2)
            answer = _post(audience, token, ADD)
    assert answer.status_code == 401
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]


def test_introspection_asks_the_authorization_server_about_each_token(tmp_path: Path) -> None:
    """Opaque tokens, checked by RFC 7662 introspection with this server's credentials."""
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(tmp_path, token_format="opaque") as issuer:
        introspect = (
            f'introspection_url = "{issuer}/token/introspection"\n'
            'client_id = "machine"\nclient_secret = { env = "INTROSPECTION_SECRET" }'
        )
        config = CONFIG + _config(issuer, audience, introspect)
        env = {
            **os.environ, **child_env(tmp_path, config=config),
            "INTROSPECTION_SECRET": "machine-secret",
        }
        with http_server(tmp_path, port, env=env):
            good = machine_token(issuer, audience, "tools:read tools:write")
            assert good.count(".") != 2  # opaque, not a JWT
            answers = {
                "good": _post(audience, good, ADD),
                "another audience": _post(
                    audience, machine_token(issuer, "http://127.0.0.1:1/mcp", "tools:read"), ADD
                ),
                "made up": _post(audience, "x" * 43, ADD),
                "reader calls echo": _post(
                    audience, machine_token(issuer, audience, "tools:read"),
                    _call("echo", {"text": "x"}),
                ),
            }
    assert answers["good"].status_code not in (401, 403)
    assert answers["another audience"].status_code == 401
    assert answers["made up"].status_code == 401
    assert answers["reader calls echo"].status_code == 403
