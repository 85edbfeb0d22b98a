"""``[openapi.NAME] auth = "oauth"`` when the API wants more scopes than the token has, and
a sign-out that revokes, for real: oidc-provider on 127.0.0.1 (tests/helpers/oidc) and an
API on 127.0.0.1 that checks each token's signature, audience and scopes, answering 403
with ``WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`` (RFC 6750) when
a scope is missing.

The client credentials grant asks for a token with the wider scopes once and sends the
request again once; a person's sign-in cannot be widened without the person, so the call's
reason says to sign in again, and that sign-in asks for the scopes the API named too.
``toolplug logout`` revokes the tokens where the discovery document names a revocation
endpoint (RFC 7009): the refresh token is then refused at the token endpoint.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt

import toolplug
from tests.helpers.oidc import MACHINE, authorization_server, browser, refreshed, verified
from tests.helpers.openapi import json_server
from tests.helpers.serve import free_port
from toolplug.config._config import load_config
from toolplug.sources.openapi import described, sign_in, sign_out
from toolplug.sources.openapi._oauth import Grant, insufficient_scope
from toolplug.sources.openapi._signin import SignIn
from toolplug.state._tokens import TokenStore

_OK = {"200": {"description": "ok", "content": {
    "application/json": {"schema": {"type": "object"}},
}}}


class _Api:
    """``GET /notes`` wants ``tools:read``; ``POST /notes`` wants ``tools:write`` although
    the description says ``tools:read`` (a description that lags behind its API); ``GET
    /stubborn`` answers 403 ``insufficient_scope`` naming ``echo:run`` whatever the token
    has; ``GET /admin`` wants ``offline_access``, which the client may not be granted (its
    token request is refused with ``invalid_scope``); ``GET /picky`` answers 403
    ``insufficient_scope`` naming ``tools:read`` whatever the token has.
    ``hits`` counts the requests of each path."""

    def __init__(self, issuer: str, scheme: dict[str, Any]) -> None:
        self.jwks = jwt.PyJWKClient(f"{issuer}/jwks")
        self.issuer = issuer
        self.scheme = scheme
        self.hits: dict[str, int] = {}
        self.url = ""

    def description(self) -> dict[str, Any]:
        return {
            "openapi": "3.1.0",
            "info": {"title": "Notes", "version": "1"},
            "servers": [{"url": self.url}],
            "security": [{"corp": ["tools:read"]}],
            "components": {"securitySchemes": {"corp": self.scheme}},
            "paths": {
                "/notes": {
                    "get": {"operationId": "listNotes", "responses": _OK},
                    "post": {"operationId": "addNote", "responses": _OK},
                },
                "/stubborn": {"get": {"operationId": "stubborn", "responses": _OK}},
                "/admin": {"get": {"operationId": "admin", "responses": _OK}},
                "/picky": {"get": {"operationId": "picky", "responses": _OK}},
            },
        }

    def answer(self, method: str, path: str, headers: Message) -> tuple[Any, ...]:
        if path == "/openapi.json":
            return 200, self.description()
        where = f"{method} {path}"
        self.hits[where] = self.hits.get(where, 0) + 1
        token = (headers.get("Authorization") or "").removeprefix("Bearer ")
        claims = verified(self.jwks, self.issuer, token, self.url)
        if isinstance(claims, str):
            return 401, {"error": claims}, {"WWW-Authenticate": 'Bearer error="invalid_token"'}
        held = str(claims.get("scope", "")).split()
        wanted = {
            "GET /notes": "tools:read", "POST /notes": "tools:write",
            "GET /admin": "offline_access",
        }.get(where)
        if wanted is None or wanted not in held:
            named = wanted or ("tools:read" if path == "/picky" else "echo:run")
            return 403, {"error": "insufficient_scope"}, {"WWW-Authenticate": (
                f'Bearer realm="notes", error="insufficient_scope", scope="{named}"'
            )}
        return 200, {"scope": claims["scope"]}


@contextmanager
def _serve(api: _Api) -> Iterator[_Api]:
    with json_server(api.answer) as url:
        api.url = url
        yield api


def _config(home: Path, api_url: str, **oauth: Any) -> Path:
    path = home / "toolplug.toml"
    def toml(value: Any) -> str:
        if isinstance(value, dict):
            return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }"
        return json.dumps(value)

    keys = "".join(f"{k} = {toml(v)}\n" for k, v in oauth.items())
    path.write_text(
        f'cache_dir = "{home / "cache"}"\nstate_dir = "{home / "state"}"\n'
        '[network]\nallow = ["127.0.0.1"]\n'
        f'[openapi.corp]\nspec = "{api_url}/openapi.json"\nauth = "oauth"\n'
        f"[openapi.corp.oauth]\n{keys}"
        '[tools.corp_add_note]\napproval = "never"\n',  # a POST: asked about otherwise
        encoding="utf-8",
    )
    return path


def _grant(registry: toolplug.Registry) -> Any:
    found = described(registry)
    assert found is not None
    return found.apis["corp"].grant


def test_client_credentials_step_up_once_then_the_reason(tmp_path: Path) -> None:
    with authorization_server(tmp_path) as issuer:
        scheme = {"type": "oauth2", "flows": {"clientCredentials": {
            "tokenUrl": f"{issuer}/token", "scopes": {"tools:read": "", "tools:write": ""},
        }}}
        with _serve(_Api(issuer, scheme)) as api:
            config = _config(tmp_path, api.url, grant="client_credentials",
                             client_id=MACHINE[0], client_secret={"env": "SECRET"})
            registry = toolplug.load(config, env={"SECRET": MACHINE[1]})
            try:
                async def calls() -> list[toolplug.ToolResult]:
                    return [
                        await registry.acall(name, {})
                        for name in ("corp_list_notes", "corp_add_note", "corp_list_notes",
                                     "corp_stubborn", "corp_admin", "corp_list_notes")
                    ]

                listed, added, again, stubborn, admin, after = asyncio.run(calls())
                grant = _grant(registry)
            finally:
                registry.close()
    assert isinstance(grant, Grant)
    # no scopes configured: the token is asked for those the operations name
    assert listed.ok, listed.error
    assert listed.data == {"scope": "tools:read"}
    # POST /notes wants tools:write: a token with both, the request sent again, once
    assert added.ok, added.error
    assert added.data == {"scope": "tools:read tools:write"}
    assert again.ok
    assert api.hits["GET /notes"] == 3  # each sent once: the wider token is kept
    # an API that refuses whatever it is given: one new token and one retry, then the reason
    assert api.hits["GET /stubborn"] == 2
    assert grant.fetched == 4  # at first; for POST /notes, /stubborn; after /admin's refusal
    assert stubborn.error is not None
    assert stubborn.error.type == "PermissionError"
    assert stubborn.error.message == (
        "GET /stubborn answered HTTP 403 insufficient_scope: the API still wants the scopes "
        "echo:run (the new token has tools:read tools:write echo:run): the authorization "
        "server did not grant them; check [openapi.corp.oauth] scopes against what the "
        "client may be granted"
    ), stubborn.error.message
    assert stubborn.error.details is not None
    assert stubborn.error.details["scopes"] == "echo:run"
    # a scope the authorization server refuses: the reason says so, and the calls after it
    # ask for the scopes that worked
    assert admin.error is not None
    assert admin.error.message.startswith(
        "GET /admin answered HTTP 403 insufficient_scope (the API wants the scopes "
        "offline_access), "
        "and a token with them was refused: [openapi.corp.oauth]: the authorization server "
    ), admin.error.message
    assert "invalid_scope" in admin.error.message
    assert api.hits["GET /admin"] == 1
    assert after.ok, after.error
    assert grant.widened == "tools:write echo:run"


def test_a_person_signs_in_again_for_more_access_and_logout_revokes(tmp_path: Path) -> None:
    with authorization_server(tmp_path, revocation=True) as issuer:
        scheme = {"type": "openIdConnect",
                  "openIdConnectUrl": f"{issuer}/.well-known/openid-configuration"}
        with _serve(_Api(issuer, scheme)) as api:
            # without scopes configured, a sign-in asks for openid and those the
            # operations name
            bare = toolplug.load(_config(tmp_path, api.url), env={})
            try:
                assert _grant(bare).scope == "openid tools:read"
            finally:
                bare.close()
            config = _config(tmp_path, api.url, scopes=["openid", "offline_access", "tools:read"])
            store = TokenStore(tmp_path / "state" / "oauth")
            key = f"openapi:corp {api.url}"
            open_url, opened = browser()
            sign_in(load_config(config), "corp", env=os.environ, open_url=open_url)
            first_client = store.entry(key)["client"]["client_id"]
            registry = toolplug.load(config, env={})
            try:
                assert registry.call("corp_list_notes", {}).ok
                refused = registry.call("corp_add_note", {})
                grant = _grant(registry)
            finally:
                registry.close()
            assert isinstance(grant, SignIn)
            assert refused.error is not None
            assert refused.error.type == "PermissionError"
            assert refused.error.message == (
                "POST /notes answered HTTP 403 insufficient_scope: the API needs a sign-in "
                "with more access (the scopes openid offline_access tools:read tools:write): "
                "run `toolplug login corp`"
            ), refused.error.message
            assert api.hits["POST /notes"] == 1  # no retry: only the person can grant more
            assert store.entry(key)["wanted_scope"] == "tools:write"

            # the next sign-in asks for the scopes the API named too (registering again:
            # the client registered before may not ask for them)
            sign_in(load_config(config), "corp", env=os.environ, open_url=open_url)
            asked = parse_qs(urlsplit(opened[-1]).query)["scope"][0]
            assert asked.split() == ["openid", "offline_access", "tools:read", "tools:write"]
            entry = store.entry(key)
            assert entry["client"]["client_id"] != first_client
            added = toolplug.load(config, env={})
            try:
                result = added.call("corp_add_note", {})
                picky = added.call("corp_picky", {})
            finally:
                added.close()
            assert result.ok, result.error
            assert set(result.data["scope"].split()) >= {"tools:read", "tools:write"}
            # a scope the sign-in has already: no use asking the person again
            assert picky.error is not None
            assert picky.error.message == (
                "GET /picky answered HTTP 403 insufficient_scope: the API still wants the "
                "scopes tools:read, which its sign-in has (signing in again would not help): "
                "see the API's answer"
            ), picky.error.message
            assert store.entry(key)["wanted_scope"] == "tools:write"

            # logout revokes: the refresh token is refused at the token endpoint afterwards
            refresh = entry["tokens"]["refresh_token"]
            out = sign_out(load_config(config), "corp", env=os.environ)
            assert out == (  # oidc-provider revokes no JWT access tokens
                "signed out of corp; its refresh token was revoked (the authorization server "
                "does not revoke its access token: valid there until it expires)"
            ), out
            assert store.entry(key) == {}
            client = entry["client"]["client_id"]
            assert refreshed(issuer, refresh, client, api.url) == "invalid_grant"


def test_an_oauth2_flow_with_its_issuer_configured_is_revoked_at_logout(tmp_path: Path) -> None:
    """An ``oauth2`` scheme's flows name no revocation endpoint: with ``issuer`` set, the
    sign-in reads the issuer's metadata for one."""
    with authorization_server(tmp_path, revocation=True) as issuer:
        scheme = {"type": "oauth2", "flows": {"authorizationCode": {
            "authorizationUrl": f"{issuer}/auth", "tokenUrl": f"{issuer}/token",
            "scopes": {"tools:read": "read"},
        }}}
        with _serve(_Api(issuer, scheme)) as api:
            port = free_port()
            scopes = ["openid", "offline_access", "tools:read"]
            client = httpx.post(f"{issuer}/reg", json={
                "redirect_uris": [f"http://127.0.0.1:{port}/callback"],
                "response_types": ["code"], "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "scope": " ".join(scopes),
            }, timeout=30).json()["client_id"]
            config = _config(tmp_path, api.url, scopes=scopes, client_id=client,
                             redirect_port=port, issuer=issuer)
            sign_in(load_config(config), "corp", env=os.environ, open_url=browser()[0])
            entry = TokenStore(tmp_path / "state" / "oauth").entry(f"openapi:corp {api.url}")
            assert entry["server_metadata"]["revocation_endpoint"] == f"{issuer}/token/revocation"
            out = sign_out(load_config(config), "corp", env=os.environ)
            assert out.startswith("signed out of corp; its refresh token was revoked"), out
            refresh = entry["tokens"]["refresh_token"]
            assert refreshed(issuer, refresh, client, api.url) == "invalid_grant"


def test_only_an_insufficient_scope_challenge_is_a_step_up() -> None:
    def said(status: int, challenge: str | None) -> str | None:
        details: dict[str, Any] = {"status": status}
        if challenge is not None:
            details["challenge"] = challenge
        return insufficient_scope(details)

    assert said(403, 'Bearer error="insufficient_scope", scope="a:b  c"') == "a:b c"
    assert said(403, "Bearer error=insufficient_scope, scope=one") == "one"
    assert said(403, 'Bearer realm="x, error=insufficient_scope"') is None  # quoted: a realm
    assert said(403, 'Bearer error="insufficient_scope"') == ""  # names none
    assert said(403, 'Bearer error="invalid_token"') is None
    assert said(403, None) is None
    assert said(401, 'Bearer error="insufficient_scope", scope="a"') is None
    assert insufficient_scope(None) is None
