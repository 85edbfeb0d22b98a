"""A real authorization server for the tests: the npm package ``oidc-provider`` (OpenID
Certified) run by tests/helpers/oidc/server.mjs on 127.0.0.1, and the login and consent a
person would give, as the form posts a browser would send.

``.ci/run`` installs the package (``npm install --prefix tests/helpers/oidc``); so can a
developer. The folder's package.json pins the version; no lock file is committed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
import jwt
import pytest
from mcp.shared.auth import AuthorizationCodeResult

from tests.helpers.serve import free_port, stop, wait_for_port

FOLDER = Path(__file__).parent / "oidc"
INSTALL = "npm install --no-audit --no-fund --no-package-lock --prefix tests/helpers/oidc"
MACHINE = ("machine", "machine-secret")
"""The client that may use client_credentials (server.mjs registers it)."""


@contextmanager
def authorization_server(
    tmp_path: Path, *, token_ttl: int = 300, token_format: str = "jwt",
    revocation: bool = False,
) -> Iterator[str]:
    """oidc-provider on 127.0.0.1, issuing access tokens (``jwt`` or ``opaque``) that live
    ``token_ttl`` seconds, offering revocation (RFC 7009) when ``revocation``; yields its
    issuer URL; always ended."""
    node = shutil.which("node")
    if node is None or not (FOLDER / "node_modules" / "oidc-provider").is_dir():
        pytest.skip(f"the test authorization server needs node and oidc-provider: {INSTALL}")
    port = free_port()
    log = tmp_path / f"oidc-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [node, str(FOLDER / "server.mjs"), str(port)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=FOLDER,
            env={
                **os.environ, "ACCESS_TOKEN_TTL": str(token_ttl),
                "ACCESS_TOKEN_FORMAT": token_format, "REVOCATION": "1" if revocation else "0",
            },
        )
        try:
            wait_for_port(process, port, lambda: log.read_text(encoding="utf-8"))
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(process, 10)


async def consent(
    authorize_url: str, redirect_uri: str, *, subject: str = "alice", scope: str | None = None
) -> AuthorizationCodeResult:
    """Log in as ``subject`` and consent (to ``scope`` only, when given) at the authorization
    server, as a person in a browser would; the code and state it redirects back with."""
    async with httpx.AsyncClient(timeout=30) as browser:
        url = authorize_url
        for _ in range(20):
            response = await browser.get(url)
            if response.status_code == 200 and "/interaction/" in url:
                prompt = response.json()["prompt"]
                if prompt == "login":
                    response = await browser.post(f"{url}/login", data={"login": subject})
                else:
                    response = await browser.post(f"{url}/confirm", data={"scope": scope or ""}
                                                  if scope else {})
            if response.status_code not in (302, 303):
                raise AssertionError(f"{url} answered {response.status_code}: {response.text}")
            url = urljoin(url, response.headers["location"])
            if url.startswith(redirect_uri):
                query = parse_qs(urlsplit(url).query)
                if "error" in query:
                    raise AssertionError(f"the authorization server refused: {query}")
                return AuthorizationCodeResult(
                    code=query["code"][0],
                    state=query.get("state", [None])[0],
                    iss=query.get("iss", [None])[0],
                )
    raise AssertionError("the authorization server never redirected back")


def machine_token(issuer: str, resource: str, scope: str) -> str:
    """An access token from the client_credentials grant, for ``resource`` with ``scope``."""
    response = httpx.post(
        f"{issuer}/token",
        data={
            "grant_type": "client_credentials", "resource": resource, "scope": scope,
            "client_id": MACHINE[0], "client_secret": MACHINE[1],
        },
        timeout=30,
    )
    response.raise_for_status()
    token: str = response.json()["access_token"]
    return token


def refreshed(issuer: str, refresh_token: str, client_id: str, resource: str) -> str:
    """What the token endpoint says to a refresh with this refresh token (a public
    client's): "ok" when it honours it, else the ``error`` it answers."""
    answer = httpx.post(f"{issuer}/token", data={
        "grant_type": "refresh_token", "refresh_token": refresh_token,
        "client_id": client_id, "resource": resource,
    }, timeout=30)
    if answer.status_code == 200:
        return "ok"
    return str(answer.json().get("error", answer.status_code))


def browser(
    subject: str = "alice", state: str | None = None, granted: str | None = None
) -> tuple[Callable[[str], Coroutine[Any, Any, None]], list[str]]:
    """A person at a browser, as toolplug's ``open_url``: logs in and consents (to only the
    scopes ``granted``, when given), then the browser follows the redirect to toolplug's
    loopback port (with ``state`` replaced, when given: a forged one); the addresses it
    was sent to are noted."""
    opened: list[str] = []

    async def open_url(url: str) -> None:
        opened.append(url)
        redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        answer = await consent(url, redirect, subject=subject, scope=granted)
        query = {"code": answer.code, "state": state or answer.state or ""}
        if answer.iss:
            query["iss"] = answer.iss
        async with httpx.AsyncClient(timeout=30) as client:
            await client.get(f"{redirect}?{urlencode(query)}")

    return open_url, opened


def verified(jwks: jwt.PyJWKClient, issuer: str, token: str, audience: str) -> dict[str, Any] | str:
    """The claims of an access token the provider signed for ``audience`` (with or without
    a trailing slash), or why it is not one."""
    try:
        key = jwks.get_signing_key_from_jwt(token)
        claims: dict[str, Any] = jwt.decode(
            token, key.key, algorithms=["RS256"], issuer=issuer,
            audience=[audience, f"{audience}/"],
        )
    except jwt.PyJWTError as exc:
        return str(exc)
    return claims
