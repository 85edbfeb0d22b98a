"""A served toolplug's principals, each signed in to a mounted server on its own, for real:
oidc-provider on 127.0.0.1 (tests/helpers/oidc.py) in front of an upstream
``toolplug serve --http`` under ``[serve.auth]`` whose tool echoes the principal it sees,
mounted with ``auth = "oauth"`` by an outer ``toolplug serve --http``, itself under
``[serve.auth]`` (two static tokens: two principals), its state on a real redis-server.

The outer server never passes a client's token on: the upstream sees only tokens its
authorization server issued for it. A principal that has not signed in gets a link; a
person completes it headless (the login and consent forms posted as a browser would, then
the redirect to the outer server's ``/oauth/callback``); each principal then sees its own
subject upstream, never the other's nor the operator's. ``on_behalf_of = "operator"``
sends every principal's call with the operator's sign-in.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import httpx2
import jwt
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken

import toolplug
from tests.helpers.oidc import authorization_server, consent
from tests.helpers.redis import redis_server
from tests.helpers.serve import CONFIG, child_env, free_port, http_server
from toolplug.config._config import load_config
from toolplug.serve._auth import principal
from toolplug.sources.mcp import sign_in

WHOAMI = ("whoami_tool", r'''
from typing import Any

from toolplug import Annotations, Tool, ToolMetadata, ToolResult, hookimpl


class WhoAmI(Tool):
    metadata = ToolMetadata(
        name="whoami",
        description="Say which principal this server sees.",
        category="utility",
        parameters={"type": "object", "properties": {}},
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success(str(context.host.get("client")))


@hookimpl
def register_tools(register: Any) -> None:
    register(WhoAmI)
''')

SCOPES = '["openid", "offline_access", "tools:read", "tools:write"]'
TOKENS = {"ann": "ann-outer-token-0123456789", "ben": "ben-outer-token-0123456789"}
"""The outer server's principals: static bearer tokens (each its own principal)."""


def _upstream_config(issuer: str, audience: str) -> str:
    return f'{CONFIG}\n[serve.auth]\nissuer = "{issuer}"\naudience = "{audience}"\n'


def _outer_config(home: Path, issuer: str, audience: str, upstream: str, redis: str) -> str:
    tokens = "".join(
        f'[serve.auth.tokens.{name}]\ntoken = {{ env = "{name.upper()}_TOKEN" }}\n'
        'scopes = ["tools:read", "tools:write"]\n'
        for name in TOKENS
    )
    mounts = "".join(
        f'[mcp_servers.{name}]\nurl = "{upstream}"\nauth = "oauth"\napproval = "never"\n'
        f'include = ["whoami"]\ntrust_annotations = true\n'
        f'[mcp_servers.{name}.oauth]\nscopes = {SCOPES}\n{extra}'
        for name, extra in (("up", ""), ("shared", 'on_behalf_of = "operator"\n'))
    )
    # the result cache is on for both: a principal's result must never be another's
    cached = "".join(
        f"[tools.{name}_whoami]\ncache_ttl_seconds = 300\n" for name in ("up", "shared")
    )
    return (
        f'cache_dir = "{home / "cache"}"\nstate_dir = "{home / "state"}"\n'
        f'[calls]\nstore = "{redis}"\n'
        f'[serve.auth]\nissuer = "{issuer}"\naudience = "{audience}"\n{tokens}{cached}{mounts}'
    )


async def _browser(url: str, subject: str) -> None:
    """A person opens the link, logs in as ``subject`` and consents; the browser follows
    the redirect to the outer server's callback, which must say it signed in."""
    redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
    answer = await consent(url, redirect, subject=subject)
    query = {"code": answer.code, "state": answer.state or ""}
    if answer.iss:
        query["iss"] = answer.iss
    async with httpx.AsyncClient(timeout=30) as browser:
        page = await browser.get(f"{redirect}?{urlencode(query)}")
        assert page.status_code == 200, page.text
        assert "Signed in to up" in page.text
        # the same redirect again (a replay): the pending sign-in was used once
        again = await browser.get(f"{redirect}?{urlencode(query)}")
        assert again.status_code == 400
        assert "expired or was used already" in again.text


async def _call(url: str, token: str, tool: str) -> dict[str, Any]:
    """One call of the outer server as a client holding ``token``; every Authorization
    header the upstream received meanwhile is the test's to check elsewhere."""
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool(tool, {})
    text = "".join(getattr(block, "text", "") for block in result.content)
    meta = result.meta or {}
    return {"error": result.is_error, "text": text, "meta": meta}


def _seen_as(access_token: str) -> str:
    """The principal key the upstream makes of a token it verified (serve/_auth.py)."""
    claims = jwt.decode(access_token, options={"verify_signature": False})
    return principal(AccessToken(
        token=access_token, client_id=str(claims.get("client_id") or claims.get("azp")),
        subject=claims["sub"], scopes=[], claims={"iss": claims["iss"]},
    ))


def _redis_entries(redis: str) -> list[dict[str, Any]]:
    import redis as redis_py

    client = redis_py.Redis.from_url(redis)
    try:
        keys = sorted(client.scan_iter("toolplug:oauth-tokens:principal:*"))
        found = [json.loads(client.get(key) or "{}") for key in keys if b":refresh" not in key]
    finally:
        client.close()
    return [entry for entry in found if "tokens" in entry]


def test_each_principal_signs_in_upstream_on_its_own_and_sees_only_its_own(
    tmp_path: Path,
) -> None:
    up_port, outer_port = free_port(), free_port()
    up_audience = f"http://127.0.0.1:{up_port}/mcp"
    outer_audience = f"http://127.0.0.1:{outer_port}/mcp"
    up_dir, outer_dir = tmp_path / "upstream", tmp_path / "outer"
    up_dir.mkdir()
    outer_dir.mkdir()
    with authorization_server(tmp_path) as issuer, redis_server(tmp_path) as redis:
        up_env = {**os.environ, **child_env(
            up_dir, extra=WHOAMI, config=_upstream_config(issuer, up_audience)
        )}
        outer_text = _outer_config(outer_dir, issuer, outer_audience, up_audience, redis)
        with http_server(up_dir, up_port, env=up_env):
            outer_env = {
                **os.environ, **child_env(outer_dir, config=outer_text),
                **{f"{name.upper()}_TOKEN": token for name, token in TOKENS.items()},
            }
            # the operator signs in once: that sign-in reads the server's tool list
            config = load_config(outer_dir / "toolplug.toml")
            operator_seen: list[str] = []

            async def operator_browser(url: str) -> None:
                redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
                answer = await consent(url, redirect, subject="operator")
                query = {"code": answer.code, "state": answer.state or "", "iss": answer.iss}
                async with httpx.AsyncClient(timeout=30) as browser:
                    await browser.get(f"{redirect}?{urlencode(query)}")
                operator_seen.append(url)

            said = sign_in(config, "up", env=outer_env, open_url=operator_browser)
            assert said.startswith("signed in to up")
            registry = toolplug.load(config.path, env=outer_env)
            try:  # a call with no principal (the CLI) goes with the operator's sign-in
                as_operator = asyncio.run(registry.acall("up_whoami", {}))
            finally:
                registry.close()
            assert as_operator.ok, as_operator.error
            operator_key = str(as_operator.output)
            assert operator_key.startswith("principal:")

            with http_server(outer_dir, outer_port, env=outer_env):
                # not signed in upstream: a link, each principal its own (not the
                # operator's result of up_whoami that the result cache holds)
                first = asyncio.run(_call(outer_audience, TOKENS["ann"], "up_whoami"))
                assert first["error"], first
                assert "needs you to sign in to it as yourself: open " in first["text"]
                ann_link = first["meta"]["toolplug/error"]["details"]["sign_in_url"]
                query = parse_qs(urlsplit(ann_link).query)
                assert query["redirect_uri"] == [f"http://127.0.0.1:{outer_port}/oauth/callback"]
                assert query["resource"] == [up_audience]
                assert query["code_challenge_method"] == ["S256"]
                # asked again before signing in: the same link, not a new registration
                again = asyncio.run(_call(outer_audience, TOKENS["ann"], "up_whoami"))
                assert again["meta"]["toolplug/error"]["details"]["sign_in_url"] == ann_link
                ben = asyncio.run(_call(outer_audience, TOKENS["ben"], "up_whoami"))
                ben_link = ben["meta"]["toolplug/error"]["details"]["sign_in_url"]
                assert ben_link != ann_link

                asyncio.run(_browser(ann_link, "ann-upstream"))
                ann = asyncio.run(_call(outer_audience, TOKENS["ann"], "up_whoami"))
                assert not ann["error"], ann
                # ann signed in; ben did not: ben still gets a link, never ann's sign-in,
                # nor ann's cached result (the result cache is on, and keyed by principal)
                ben = asyncio.run(_call(outer_audience, TOKENS["ben"], "up_whoami"))
                assert ben["error"], ben
                ben_link = ben["meta"]["toolplug/error"]["details"]["sign_in_url"]
                asyncio.run(_browser(ben_link, "ben-upstream"))
                ben = asyncio.run(_call(outer_audience, TOKENS["ben"], "up_whoami"))
                assert not ben["error"], ben

                # operator's mount: every principal's call goes with the operator's sign-in
                shared = asyncio.run(_call(outer_audience, TOKENS["ben"], "shared_whoami"))
                assert not shared["error"], shared
                assert shared["text"] == operator_key

        # each principal's upstream tokens are on the shared backend (Redis), keyed by
        # that principal: the upstream saw exactly the tokens its issuer made for it
        entries = _redis_entries(redis)
        assert len(entries) == 2
        seen = {}
        for entry in entries:
            access = entry["tokens"]["access_token"]
            claims = jwt.decode(access, options={"verify_signature": False})
            assert claims["aud"] == up_audience  # issued for the upstream, by its issuer
            assert claims["iss"] == issuer
            assert access not in TOKENS.values()
            seen[claims["sub"]] = _seen_as(access)
        assert ann["text"] == seen["ann-upstream"]
        assert ben["text"] == seen["ben-upstream"]
        assert len({ann["text"], ben["text"], operator_key}) == 3
        # a client's token is never what the upstream sees: not as its principal either
        for name in TOKENS:
            assert ann["text"] != _seen_as_static(name) != ben["text"]


def _seen_as_static(name: str) -> str:
    """The principal the upstream would make of the outer server's static token ``name``
    (were it ever passed on and accepted)."""
    return principal(AccessToken(
        token=TOKENS[name], client_id=name, subject=name, scopes=[], claims={"iss": None},
    ))
