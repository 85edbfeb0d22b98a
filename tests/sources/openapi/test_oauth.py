"""``[openapi.NAME] auth = "oauth"``: the client credentials grant against a real
authorization server (oidc-provider on 127.0.0.1, tests/helpers/oidc), its token URL from
the description (an oauth2 clientCredentials flow, or openIdConnect discovery), and a real
API on 127.0.0.1 that checks each token's signature (the provider's JWKS), audience and
scope before it answers."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

import toolplug
from tests.helpers.oidc import MACHINE, authorization_server, verified
from tests.helpers.openapi import json_server


class _Api:
    """A protected API: ``GET /me`` answers who the token was issued to; every token it
    accepted is kept (``seen``); a token in ``revoked`` is refused with 401."""

    def __init__(self, issuer: str, scheme: dict[str, Any]) -> None:
        self.jwks = jwt.PyJWKClient(f"{issuer}/jwks")
        self.issuer = issuer
        self.scheme = scheme
        self.seen: list[str] = []
        self.revoked: set[str] = set()
        self.url = ""

    def description(self) -> dict[str, Any]:
        return {
            "openapi": "3.1.0",
            "info": {"title": "Protected", "version": "1"},
            "servers": [{"url": self.url}],
            "security": [{"corp": ["tools:read"]}],
            "components": {"securitySchemes": {"corp": self.scheme}},
            "paths": {"/me": {"get": {
                "operationId": "whoAmI", "summary": "Who the token was issued to",
                "responses": {"200": {"description": "ok", "content": {
                    "application/json": {"schema": {"type": "object"}},
                }}},
            }}},
        }

    def check(self, header: str | None) -> tuple[int, dict[str, Any]]:
        if not header or not header.startswith("Bearer "):
            return 401, {"error": "no token"}
        token = header.removeprefix("Bearer ")
        if token in self.revoked:
            return 401, {"error": "revoked"}
        claims = verified(self.jwks, self.issuer, token, self.url)
        if isinstance(claims, str):
            return 401, {"error": claims}
        if "tools:read" not in str(claims.get("scope", "")).split():
            return 403, {"error": "insufficient_scope"}
        self.seen.append(token)
        return 200, {"client": claims.get("client_id"), "scope": claims["scope"]}


@contextmanager
def _serve(api: _Api) -> Iterator[_Api]:
    def answer(method: str, path: str, headers: Message) -> tuple[int, Any]:
        if path == "/openapi.json":
            return 200, api.description()
        if path == "/me":
            return api.check(headers.get("Authorization"))
        return 404, {}

    with json_server(answer) as url:
        api.url = url
        yield api


def _config(api: _Api, tmp_path: Path, **oauth: Any) -> dict[str, Any]:
    return {
        "network": {"allow": ["127.0.0.1"]},
        "cache_dir": str(tmp_path / "cache"),
        "openapi": {"corp": {
            "spec": f"{api.url}/openapi.json", "auth": "oauth",
            "oauth": {
                "grant": "client_credentials", "client_id": MACHINE[0],
                "client_secret": {"env": "CORP_SECRET"}, "scopes": ["tools:read"], **oauth,
            },
        }},
    }


def _flow(issuer: str) -> dict[str, Any]:
    return {"type": "oauth2", "flows": {"clientCredentials": {
        "tokenUrl": f"{issuer}/token", "scopes": {"tools:read": "read"},
    }}}


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_a_token_from_the_flow_s_token_url_is_fetched_once_and_kept(
    tmp_path: Path, method: str
) -> None:
    with authorization_server(tmp_path) as issuer, _serve(_Api(issuer, _flow(issuer))) as api:
        registry = toolplug.load(
            _config(api, tmp_path, token_endpoint_auth=method),
            env={"CORP_SECRET": MACHINE[1]},
        )
        try:
            assert registry.availability("corp_who_am_i").available
            first = registry.call("corp_who_am_i", {})
            assert first.ok, first.error
            assert first.data == {"client": "machine", "scope": "tools:read"}
            second = registry.call("corp_who_am_i", {})
            assert second.ok
            assert len(api.seen) == 2
            assert api.seen[0] == api.seen[1]  # one token for both calls
            # the token and the secret are the redactor's: never in what a call shows
            shown = registry.redactor.redact(f"{api.seen[0]} {MACHINE[1]}")
            assert api.seen[0] not in shown
            assert MACHINE[1] not in shown
            # a token the API stops taking: the call gets a new one and succeeds
            api.revoked.add(api.seen[0])
            third = registry.call("corp_who_am_i", {})
            assert third.ok, third.error
            assert api.seen[-1] != api.seen[0]
        finally:
            registry.close()


def test_openid_connect_discovery_names_the_token_endpoint_and_an_expired_token_is_renewed(
    tmp_path: Path,
) -> None:
    with authorization_server(tmp_path, token_ttl=12) as issuer:
        scheme = {
            "type": "openIdConnect",
            "openIdConnectUrl": f"{issuer}/.well-known/openid-configuration",
        }
        with _serve(_Api(issuer, scheme)) as api:
            registry = toolplug.load(_config(api, tmp_path), env={"CORP_SECRET": MACHINE[1]})
            try:
                assert registry.call("corp_who_am_i", {}).ok
                time.sleep(3)  # within _MARGIN (10 s) of its expiry: renewed before it lapses
                renewed = registry.call("corp_who_am_i", {})
                assert renewed.ok, renewed.error
                assert len(set(api.seen)) == 2
            finally:
                registry.close()


def test_a_wrong_secret_is_a_structured_error_naming_the_fix(tmp_path: Path) -> None:
    with authorization_server(tmp_path) as issuer, _serve(_Api(issuer, _flow(issuer))) as api:
        registry = toolplug.load(_config(api, tmp_path), env={"CORP_SECRET": "not-the-secret"})
        try:
            result = registry.call("corp_who_am_i", {})
            assert result.error is not None
            assert result.error.type == "PermissionError"
            message = result.error.message
            assert f"the authorization server at {issuer}/token refused" in message
            assert "invalid_client" in message
            assert "check [openapi.corp.oauth] client_id and client_secret (the environment " \
                "variable CORP_SECRET)" in message
            assert "not-the-secret" not in json.dumps(result.error.details or {})
            assert "not-the-secret" not in message
            assert api.seen == []
        finally:
            registry.close()
        unset = toolplug.load(_config(api, tmp_path), env={})
        try:
            (reason,) = unset.availability("corp_who_am_i").reasons
            assert "[openapi.corp.oauth] client_secret" in reason
            assert "CORP_SECRET is not set" in reason
        finally:
            unset.close()


def _register(issuer: str, key: ec.EllipticCurvePrivateKey) -> str:
    """Register a machine client whose public key is ``key``'s (RFC 7591); its client id."""
    public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    response = httpx.post(f"{issuer}/reg", json={
        "grant_types": ["client_credentials"], "response_types": [], "redirect_uris": [],
        "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_signing_alg": "ES256",
        "jwks": {"keys": [{**public, "use": "sig", "alg": "ES256"}]},
        "scope": "tools:read",
    }, timeout=30)
    assert response.status_code == 201, response.text
    client_id: str = response.json()["client_id"]
    return client_id


def test_private_key_jwt_signs_for_the_discovered_issuer_and_concurrent_calls_share_one_token(
    tmp_path: Path,
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    with authorization_server(tmp_path) as issuer:
        client_id = _register(issuer, key)
        scheme = {
            "type": "openIdConnect",
            "openIdConnectUrl": f"{issuer}/.well-known/openid-configuration",
        }
        with _serve(_Api(issuer, scheme)) as api:
            config = _config(api, tmp_path, client_id=client_id)
            oauth = config["openapi"]["corp"]["oauth"]
            del oauth["client_secret"]
            oauth |= {
                "token_endpoint_auth": "private_key_jwt",
                "client_assertion_key": {"env": "CORP_KEY"},
                "client_assertion_algorithm": "ES256",
            }
            registry = toolplug.load(config, env={"CORP_KEY": pem})

            async def many() -> list[toolplug.ToolResult]:
                return await asyncio.gather(
                    *(registry.acall("corp_who_am_i", {}) for _ in range(20))
                )

            try:
                results = asyncio.run(many())
                assert all(r.ok for r in results), [r.error for r in results if not r.ok]
                assert results[0].data["client"] == client_id
                assert len(api.seen) == 20
                assert len(set(api.seen)) == 1  # one token request for twenty calls
            finally:
                registry.close()
