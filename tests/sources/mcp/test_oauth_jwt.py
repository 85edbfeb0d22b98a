"""Client credentials with ``private_key_jwt`` (RFC 7523), for real: oidc-provider on
127.0.0.1 (tests/helpers/oidc.py) in front of ``toolplug serve --http`` under
``[serve.auth]``, mounted by a second toolplug whose client proves itself with an
assertion its private key signs, no secret and no person. The client is registered at the
authorization server with its public key (RFC 7591, as an operator would); a key the
server does not know, and a key that cannot sign with the configured algorithm, are each
a clear reason and keep no token.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

import toolplug
from tests.helpers.oidc import authorization_server
from tests.helpers.serve import CONFIG, child_env, free_port, http_server
from toolplug.sources.mcp import mounted
from toolplug.state._tokens import TokenStore


def _pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _register(issuer: str, key: ec.EllipticCurvePrivateKey, alg: str) -> str:
    """Register a machine client whose public key is ``key``'s; its client id."""
    public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    response = httpx.post(f"{issuer}/reg", json={
        "grant_types": ["client_credentials"], "response_types": [], "redirect_uris": [],
        "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_signing_alg": alg,
        "jwks": {"keys": [{**public, "use": "sig", "alg": alg}]},
        "scope": "tools:read tools:write",
    }, timeout=30)
    assert response.status_code == 201, response.text
    client_id: str = response.json()["client_id"]
    return client_id


def _inner(home: Path, url: str, client_id: str, issuer: str, alg: str = "ES256") -> Path:
    path = home / "inner.toml"
    path.write_text(
        f'cache_dir = "{home / "cache"}"\nstate_dir = "{home / "state"}"\n'
        f'[mcp_servers.upstream]\nurl = "{url}"\nauth = "oauth"\napproval = "never"\n'
        "[mcp_servers.upstream.oauth]\n"
        f'grant = "client_credentials"\nclient_id = "{client_id}"\nissuer = "{issuer}"\n'
        'token_endpoint_auth = "private_key_jwt"\n'
        'client_assertion_key = { file = "client-key.pem" }\n'
        f'client_assertion_algorithm = "{alg}"\nscopes = ["tools:read"]\n',
        encoding="utf-8",
    )
    return path


def _problem(config: Path) -> str | None:
    registry = toolplug.load(config)
    try:
        return mounted(registry).servers["upstream"].problem  # type: ignore[union-attr]
    finally:
        registry.close()


def _kept(home: Path, url: str) -> dict[str, Any]:
    return TokenStore(home / "state" / "oauth").entry(url)


def test_a_machine_client_signs_its_assertion_and_calls(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    home = tmp_path / "inner"
    home.mkdir()
    key = ec.generate_private_key(ec.SECP256R1())
    (home / "client-key.pem").write_text(_pem(key), encoding="utf-8")
    with authorization_server(tmp_path) as issuer:
        client_id = _register(issuer, key, "ES256")
        env = {**os.environ, **child_env(tmp_path, config=(
            f'{CONFIG}\n[serve.auth]\nissuer = "{issuer}"\naudience = "{audience}"\n'
        ))}
        config = _inner(home, audience, client_id, issuer)
        with http_server(tmp_path, port, env=env):
            assert _problem(config) is None
            registry = toolplug.load(config)
            try:
                added = asyncio.run(registry.acall("upstream_add", {"a": 2, "b": 40}))
            finally:
                registry.close()
            assert added.ok, added.error
            assert "42" in str(added.output)
            kept = _kept(home, audience)
            token = kept["tokens"]["access_token"]
            claims = jwt.decode(token, options={"verify_signature": False})
            assert claims["aud"] == audience
            assert claims["client_id"] == client_id
            assert "tools:read" in claims["scope"].split()
            # the key is a secret: never in the cached listing, nor in the token store
            key_text = (home / "client-key.pem").read_text(encoding="utf-8")
            cached = (home / "cache" / "mcp" / "upstream.json").read_text(encoding="utf-8")
            stored = (home / "state" / "oauth" / "tokens.json").read_text(encoding="utf-8")
            body = key_text.splitlines()[1]
            assert body not in cached
            assert body not in stored
            assert token not in cached


def test_a_key_the_authorization_server_does_not_know_is_a_reason(tmp_path: Path) -> None:
    home = tmp_path / "inner"
    home.mkdir()
    known = ec.generate_private_key(ec.SECP256R1())
    (home / "client-key.pem").write_text(
        _pem(ec.generate_private_key(ec.SECP256R1())), encoding="utf-8"
    )
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(tmp_path) as issuer:
        client_id = _register(issuer, known, "ES256")
        env = {**os.environ, **child_env(tmp_path, config=(
            f'{CONFIG}\n[serve.auth]\nissuer = "{issuer}"\naudience = "{audience}"\n'
        ))}
        with http_server(tmp_path, port, env=env):
            problem = _problem(_inner(home, audience, client_id, issuer))
    assert problem is not None
    assert problem.startswith("the OAuth sign-in failed: "), problem
    assert "invalid_client" in problem, problem
    assert "Traceback" not in problem
    assert "tokens" not in _kept(home, audience)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (lambda: _pem(rsa.generate_private_key(65537, 2048)), "cannot sign a ES256 assertion"),
        (lambda: "not a key at all", "is not a PEM private key"),
    ],
)
def test_a_key_that_cannot_sign_is_a_reason_before_any_token_request(
    tmp_path: Path, key: Any, expected: str
) -> None:
    home = tmp_path / "inner"
    home.mkdir()
    (home / "client-key.pem").write_text(key(), encoding="utf-8")
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with authorization_server(tmp_path) as issuer:
        env = {**os.environ, **child_env(tmp_path, config=(
            f'{CONFIG}\n[serve.auth]\nissuer = "{issuer}"\naudience = "{audience}"\n'
        ))}
        with http_server(tmp_path, port, env=env):
            problem = _problem(_inner(home, audience, "some-client", issuer))
    assert problem is not None
    assert expected in problem, problem
    assert "client_assertion_key" in problem
    assert "Traceback" not in problem
    assert "tokens" not in _kept(home, audience)
