"""An issuer for the tests of ``[serve.auth]``: signing keys, JWTs signed with them, and a
real HTTP server on 127.0.0.1 that publishes the issuer's metadata (RFC 8414) and its JWKS.

The keys are made here (RSA and EC, with the ``cryptography`` package); the JWTs are made
by PyJWT, the library the server checks them with, so a test can change one claim (the
audience, the expiry) or the key and see the server refuse exactly that.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

READ, WRITE = "tools:read", "tools:write"


@dataclass
class Key:
    """A signing key and how it is named in the JWKS."""

    kid: str
    private: Any
    algorithm: str = "RS256"

    @classmethod
    def rsa(cls, kid: str) -> Key:
        return cls(kid, rsa.generate_private_key(public_exponent=65537, key_size=2048))

    @classmethod
    def ec(cls, kid: str, algorithm: str = "ES256") -> Key:
        curve = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1()}[algorithm]
        return cls(kid, ec.generate_private_key(curve), algorithm)

    def jwk(self) -> dict[str, Any]:
        algorithm = jwt.get_algorithm_by_name(self.algorithm)
        public: dict[str, Any] = json.loads(algorithm.to_jwk(self.private.public_key()))
        return {**public, "kid": self.kid, "use": "sig", "alg": self.algorithm}


@dataclass
class Issuer:
    """The authorization server the tests trust: its URL, keys, and what it was asked."""

    url: str = ""
    keys: list[Key] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def token(
        self,
        audience: str | list[str],
        *,
        key: Key | None = None,
        subject: str = "alice",
        client_id: str = "test-client",
        scopes: tuple[str, ...] = (READ, WRITE),
        lifetime: float = 300,
        not_before: float | None = None,
        issuer: str | None = None,
        header: Mapping[str, Any] | None = None,
        claims: Mapping[str, Any] | None = None,
    ) -> str:
        """A JWT access token (RFC 9068) signed with ``key`` (the first key by default);
        ``claims`` replace or add to the usual ones."""
        key = key or self.keys[0]
        now = time.time()
        made: dict[str, Any] = {
            "iss": issuer or self.url,
            "sub": subject,
            "aud": audience,
            "client_id": client_id,
            "scope": " ".join(scopes),
            "iat": int(now),
            "exp": int(now + lifetime),
            "jti": f"{subject}-{now}",
        }
        if not_before is not None:
            made["nbf"] = int(not_before)
        made.update(claims or {})
        headers = {"kid": key.kid, "typ": "at+jwt", **(header or {})}
        return jwt.encode(made, key.private, algorithm=key.algorithm, headers=headers)


@contextmanager
def issuer_server(*keys: Key) -> Iterator[Issuer]:
    """An issuer on 127.0.0.1: ``/.well-known/oauth-authorization-server`` and ``/jwks``;
    ``issuer.keys`` may change while it runs (a key rotation)."""
    issuer = Issuer(keys=list(keys))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            issuer.requests.append(self.path)
            if self.path == "/.well-known/oauth-authorization-server":
                body: Any = {
                    "issuer": issuer.url,
                    "jwks_uri": f"{issuer.url}/jwks",
                    "token_endpoint": f"{issuer.url}/token",
                }
            elif self.path == "/jwks":
                body = {"keys": [key.jwk() for key in issuer.keys]}
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def auth_config(
    issuer: str, audience: str, *, extra: str = "", tokens: Mapping[str, tuple[str, ...]] = {}
) -> str:
    """A ``[serve.auth]`` table; each static token NAME is read from ``TOKEN_NAME``."""
    lines = ["[serve.auth]", f'issuer = "{issuer}"', f'audience = "{audience}"', extra]
    for name, scopes in tokens.items():
        listed = ", ".join(f'"{s}"' for s in scopes)
        lines.append(
            f'tokens.{name} = {{ token = {{ env = "TOKEN_{name.upper()}" }}, scopes = [{listed}] }}'
        )
    return "\n".join(lines) + "\n"
