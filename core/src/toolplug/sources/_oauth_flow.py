"""The parts of a person's OAuth sign-in that mounted servers and OpenAPI sources share,
on the MCP SDK's client auth (imported only when a flow runs):

- ``Storage``: the SDK's ``TokenStorage`` on one entry of a token store
  (``toolplug.state._tokens``), every token and secret it reads or writes given to a
  redactor;
- ``Callback``: the loopback end of the redirect (``GET /callback?code=...&state=...`` on
  127.0.0.1), whose answer the SDK's flow checks (its ``state``, its ``iss``);
- ``login_problem``: why a sign-in did not complete, in words;
- ``revoke``: the revocation (RFC 7009) of a sign-out, for whichever way a source sends
  its requests (a mount with its HTTP client, an OpenAPI source through the network guard).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final
from urllib.parse import parse_qs, quote, urlsplit

from mcp.client.auth import OAuthFlowError, OAuthTokenError
from mcp.client.auth.exceptions import OAuthRegistrationError
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError

from toolplug.state._tokens import Tokens

__all__ = [
    "CALLBACK_PATH", "Callback", "LoginError", "Storage", "chain", "error_of", "login_problem",
    "port_of", "revoke",
]

CALLBACK_PATH: Final = "/callback"


class LoginError(Exception):
    """A sign-in that did not complete, in words (nothing was stored)."""


class Storage:
    """The SDK's ``TokenStorage`` on a token store (the user's file, whose reads and writes
    run on a worker thread, or a served principal's entries on the state backend), one
    source's entry (``key``); ``hide`` tells the redactor of each secret read or written."""

    def __init__(self, store: Tokens, key: str, hide: Callable[..., None]) -> None:
        self.store = store
        self.key = key
        self.hide = hide

    async def entry(self) -> dict[str, Any]:
        return await self.store.aentry(self.key)

    async def update(self, **fields: Any) -> None:
        await self.store.aupdate(self.key, **fields)

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens_of(await self.entry())

    def tokens_of(self, entry: dict[str, Any]) -> OAuthToken | None:
        try:
            tokens = OAuthToken.model_validate(entry["tokens"]) if "tokens" in entry else None
        except ValidationError:
            return None
        if tokens is not None:
            self.hide(tokens.access_token, tokens.refresh_token)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.hide(tokens.access_token, tokens.refresh_token)
        expires = None if tokens.expires_in is None else time.time() + tokens.expires_in
        await self.update(
            tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires
        )

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_of(await self.entry())

    def client_of(self, entry: dict[str, Any]) -> OAuthClientInformationFull | None:
        try:
            client = (
                OAuthClientInformationFull.model_validate(entry["client"])
                if "client" in entry else None
            )
        except ValidationError:
            return None
        if client is not None:
            self.hide(client.client_secret)
        return client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.hide(client_info.client_secret)
        await self.update(client=client_info.model_dump(mode="json", exclude_none=True))


class Callback:
    """The loopback end of the redirect: one ``GET /callback?code=...&state=...``."""

    def __init__(self) -> None:
        self.answer: asyncio.Future[AuthorizationCodeResult] = (
            asyncio.get_running_loop().create_future()
        )
        self.server: asyncio.Server | None = None

    async def start(self, port: int) -> int:
        self.server = await asyncio.start_server(self._take, "127.0.0.1", port)
        return int(self.server.sockets[0].getsockname()[1])

    async def listen(self, port: int | None, registered: str | None) -> str:
        """Listen on ``port`` (the configured ``redirect_port``), else the port of the
        redirect URI the client was registered with, else any free one; the redirect URI."""
        wanted = port or port_of(registered or "") or 0
        try:
            wanted = await self.start(wanted)
        except OSError:
            if port is not None:
                raise LoginError(f"cannot listen on 127.0.0.1:{port} (redirect_port)") from None
            wanted = await self.start(0)
        return f"http://127.0.0.1:{wanted}{CALLBACK_PATH}"

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _take(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.split()
            target = urlsplit(parts[1]) if len(parts) >= 2 else urlsplit("/")
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            if target.path != CALLBACK_PATH:
                await _respond(writer, 404, "Not the sign-in's address.")
                return
            if "error" in query:
                said = query.get("error_description") or query["error"]
                if not self.answer.done():
                    self.answer.set_exception(
                        LoginError(f"the authorization server refused the sign-in: {said}")
                    )
                await _respond(writer, 400, f"The sign-in was refused: {said}")
                return
            if not self.answer.done():
                self.answer.set_result(AuthorizationCodeResult(
                    code=query.get("code", ""), state=query.get("state"), iss=query.get("iss"),
                ))
            await _respond(writer, 200, "Signed in: you can close this tab.")
        except (TimeoutError, OSError, ValueError):
            writer.close()


async def _respond(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = f"<!doctype html><title>toolplug</title><p>{text}</p>".encode()
    writer.write(
        f"HTTP/1.1 {status} OK\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()
    writer.close()


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it holds, causes and contexts and groups' members."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        inner = todo.pop()
        if id(inner) in seen:
            continue
        seen.add(id(inner))
        yield inner
        if isinstance(inner, BaseExceptionGroup):
            todo.extend(inner.exceptions)
        for linked in (inner.__cause__, inner.__context__):
            if linked is not None:
                todo.append(linked)


def login_problem(exc: BaseException, name: str | None = None) -> str:
    """Why a sign-in failed, in words (``name``: the source's, for the command to run)."""
    again = f"`toolplug login {name}`" if name else "`toolplug login`"
    for inner in chain(exc):
        if isinstance(inner, LoginError):
            return str(inner)
        if isinstance(inner, OAuthFlowError) and "State parameter mismatch" in str(inner):
            return (
                "the redirect's state is not the one this sign-in sent (another sign-in's, "
                f"or forged): nothing was kept; run {again} again"
            )
        if isinstance(inner, OAuthTokenError | OAuthRegistrationError | OAuthFlowError):
            return f"the sign-in failed: {inner}"
        if isinstance(inner, ValidationError):
            return f"the authorization server sent a document toolplug cannot read: {inner}"
    return f"the sign-in failed: {type(exc).__name__}: {exc}"


def port_of(url: str) -> int | None:
    try:
        return urlsplit(url).port
    except ValueError:
        return None


Post = Callable[[str, dict[str, str], dict[str, str]], Awaitable[tuple[int, str | None] | str]]
"""A form POST (URL, fields, headers): the answer's status and the ``error`` its JSON body
names (None: none), or what went wrong in a word."""


def error_of(content: bytes) -> str | None:
    """The ``error`` an OAuth error answer's JSON body names, or None."""
    try:
        said = json.loads(content)
    except ValueError:
        return None
    error = said.get("error") if isinstance(said, dict) else None
    return error if isinstance(error, str) else None


async def revoke(entry: dict[str, Any], name: str, post: Post) -> str:
    """Revoke the tokens of a forgotten ``entry`` where the authorization server's metadata
    names a revocation endpoint (RFC 7009); what happened, in words."""
    if "tokens" not in entry:
        return f"not signed in to {name}: nothing to forget"
    tokens = entry["tokens"]
    endpoint = (entry.get("server_metadata") or {}).get("revocation_endpoint")
    if not endpoint:
        return (
            f"signed out of {name}: its tokens are forgotten here; its authorization server "
            "offers no revocation, so it was not told (they stay valid there until they expire)"
        )
    client = entry.get("client") or {}
    data = {"client_id": str(client.get("client_id", ""))}
    headers: dict[str, str] = {}
    secret = client.get("client_secret")
    if secret and client.get("token_endpoint_auth_method") == "client_secret_basic":
        pair = f"{quote(data.pop('client_id'), safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    elif secret:
        data["client_secret"] = secret
    refused: list[str] = []
    kept: list[str] = []  # kinds the server does not revoke (RFC 7009 unsupported_token_type)
    for kind in ("refresh_token", "access_token"):
        if not tokens.get(kind):
            continue
        answer = await post(
            endpoint, {**data, "token": tokens[kind], "token_type_hint": kind}, headers
        )
        if isinstance(answer, str):
            refused.append(f"{kind}: {answer}")
        elif answer[0] == 400 and answer[1] == "unsupported_token_type":
            kept.append(kind)
        elif answer[0] != 200:
            refused.append(f"{kind}: HTTP {answer[0]}" + (f" {answer[1]}" if answer[1] else ""))
    if refused:
        return (
            f"signed out of {name}; the authorization server did not confirm the revocation "
            f"({', '.join(refused)})"
        )
    done = [k for k in ("refresh_token", "access_token") if tokens.get(k) and k not in kept]
    if kept and done:
        return (
            f"signed out of {name}; its {' and '.join(k.replace('_', ' ') for k in done)} was "
            "revoked (the authorization server does not revoke its "
            f"{' and '.join(k.replace('_', ' ') for k in kept)}: valid there until it expires)"
        )
    if kept:
        return (
            f"signed out of {name}: its tokens are forgotten here; the authorization server "
            "revokes no tokens of their kind (they stay valid there until they expire)"
        )
    return f"signed out of {name}; its tokens were revoked"
