"""The OAuth 2.1 client of a mounted server (``auth = "oauth"``): the MCP SDK's.

The SDK's ``OAuthClientProvider`` is an httpx auth flow that does what the MCP
authorization specification asks of a client: discovery from the 401 (RFC 9728, then the
authorization server's metadata with the 2025-03-26 fallbacks), registration
(pre-registered, a Client ID Metadata Document, dynamic), the authorization code with
PKCE S256 and the resource indicator (RFC 8707), scope selection, step-up on
``insufficient_scope`` and refresh; its ``ClientCredentialsOAuthProvider`` does the
machine-to-machine grant. This module adds what toolplug needs around it:

- what it is given is kept in ``toolplug.state._tokens`` (per user, 0600), with the
  metadata it discovered and the access token's expiry, so the next process refreshes an
  expired token instead of asking a person again; every token read or written is added to
  the server's redactor;
- a refresh is done once when several processes race (``Tokens.hold``; the SDK's own
  lock serialises the flows of one process) and re-reads what another process stored;
- a refresh the authorization server fails (5xx, unreachable) or refuses for a reason
  other than ``invalid_grant`` keeps the refresh token (the SDK would forget it): the
  request fails with the reason, the next ones (after ``REFRESH_BACKOFF``) try again;
  only ``invalid_grant`` drops the tokens, and the reason is then an expired sign-in;
- a mount never asks a person: a server that wants a sign-in is unavailable with the
  reason ``needs a sign-in: run `toolplug login NAME``` (``SignInNeeded``);
- a step-up (403 ``insufficient_scope``) is the SDK's: the challenge's scopes joined to
  those held, a new authorization, the request sent again, once per request
  (``STEP_UPS``). The client credentials grant does it without anyone; for a person's
  grant the call fails with the reason ``needs a sign-in with more access (the scopes
  ...): run `toolplug login NAME``` (``REFUSALS``), the scopes kept so that the sign-in
  asks for them, and the mount takes the new tokens on its next request;
- ``login()`` is that sign-in: the authorization URL opened in a browser (or printed),
  the redirect taken on 127.0.0.1, its ``state`` checked (by the SDK); ``logout()``
  forgets the tokens and revokes them where the metadata names a revocation endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final

import anyio
import httpx2
import jwt
from mcp import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthTokenError
from mcp.client.auth.exceptions import OAuthRegistrationError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.utils import extract_field_from_www_auth, union_scopes
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    ProtectedResourceMetadata,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from pydantic import PrivateAttr, ValidationError

from toolplug.sources._oauth_flow import (
    Callback,
    LoginError,
    Storage,
    chain,
    login_problem,
    revoke,
)
from toolplug.sources._oauth_flow import error_of as revocation_error
from toolplug.sources._signin import needs_sign_in
from toolplug.sources.mcp._credentials import Credentials
from toolplug.sources.mcp._refresh import (
    RefreshFailed,
    cancelling,
    error_of,
    refreshing,
    why_not_refreshed,
)
from toolplug.state._tokens import KeyringUnusable, Release, Tokens

__all__ = [
    "REFUSALS", "LoginError", "SignInNeeded", "auth_for", "login", "logout", "sign_in_problem",
]

log = logging.getLogger("toolplug.mount")


def _reported_here(record: logging.LogRecord) -> bool:
    """The SDK logs its flow's error with a traceback before raising it; toolplug reports
    that error as a reason (``sign_in_problem``, ``LoginError``), so the log line goes."""
    return record.getMessage() != "OAuth flow error"


logging.getLogger("mcp.client.auth.oauth2").addFilter(_reported_here)

_CLIENT_NAME: Final = "toolplug"
STEP_UPS: Final = 1
"""Step-ups of one request at most (the SDK's flow authorizes again once, then sends the
request again); a 403 ``insufficient_scope`` after it is the call's reason."""

REFRESH_BACKOFF: Final = 5.0
"""Seconds after a refresh failed (the authorization server failing or unreachable) in
which the requests of a mount fail with its reason instead of refreshing again."""

REFUSALS: Final[contextvars.ContextVar[list[str] | None]] = contextvars.ContextVar(
    "toolplug_oauth_refusals", default=None
)
"""Where a call (``_session.call_tool`` sets a list) learns why the OAuth flow let a
request's 403 through: the SDK's transport reports only "Server returned an error"."""


def _refused(reason: str) -> None:
    log.info("%s", reason)
    found = REFUSALS.get()
    if found is not None:
        found.append(reason)


_HAND_OFF: Final = httpx2.Request("GET", "http://hand-off.invalid/")
"""What ``_Kept._flow`` yields where the caller sends the request itself."""


def _passed(response: httpx2.Response) -> bool:
    """Whether an answer needs no flow: neither a 401 nor a 403 asking for more scopes."""
    return response.status_code != 401 and _insufficient_scope(response) is None


def _insufficient_scope(response: httpx2.Response) -> str | None:
    """The scopes a 403 ``insufficient_scope`` challenge names ("" when it names none),
    None for any other response."""
    if response.status_code != 403:
        return None
    if extract_field_from_www_auth(response, "error") != "insufficient_scope":
        return None
    return extract_field_from_www_auth(response, "scope") or ""


class SignInNeeded(Exception):
    """A mounted server answered 401 and only a person can sign in: the reason in words."""

    def __init__(self, name: str, *, expired: bool = False) -> None:
        super().__init__(needs_sign_in(name, expired=expired))
        self.reason = needs_sign_in(name, expired=expired)


# -- what the SDK keeps, in the store -------------------------------------------------------


class _Storage(Storage):
    """The shared ``Storage`` of one mounted server's entry (its key: the server's URL)."""

    def __init__(self, credentials: Credentials, store: Tokens) -> None:
        super().__init__(store, credentials.key, credentials.hide)
        self.credentials = credentials


class _Kept:
    """What toolplug adds to the SDK's providers (a mixin over them): the discovered
    metadata and the expiry kept with the tokens, a refresh once across processes, and
    a note of a refresh that failed (the reason then says the sign-in expired)."""

    context: Any
    _initialized: bool
    storage: _Storage
    refresh_failed: bool = False
    wanted_scope: str | None = None
    """Scopes a step-up asked a person for (kept: the next sign-in asks for them too)."""
    _reread: bool = False
    """A person was asked to sign in again: take the tokens the store has, once they change."""
    _held: Release | None = None
    _failed: tuple[float, str] | None = None
    """Until when a refresh that failed is not tried again, and its reason."""

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]
        self._restore(await self.storage.entry())

    def _own_scopes(self, configured: str | None) -> None:
        """Ask for the configured scopes, not those the SDK would choose (``_Widening``)."""
        self.context.client_metadata = _Widening.of(self.context.client_metadata, configured)

    def _restore(self, entry: dict[str, Any]) -> None:
        context = self.context
        wanted = entry.get("wanted_scope")
        self.wanted_scope = wanted if isinstance(wanted, str) and wanted else None
        if isinstance(context.client_metadata, _Widening):
            context.client_metadata.wanted = self.wanted_scope
        expires = entry.get("expires_at")
        context.token_expiry_time = float(expires) if isinstance(expires, int | float) else None
        with contextlib.suppress(ValidationError, TypeError):
            if "server_metadata" in entry:
                context.oauth_metadata = OAuthMetadata.model_validate(entry["server_metadata"])
            if "resource_metadata" in entry:
                context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                    entry["resource_metadata"]
                )
            if isinstance(entry.get("authorization_server"), str):
                context.auth_server_url = entry["authorization_server"]

    async def _keep_metadata(self) -> None:
        context = self.context
        await self.storage.update(
            server_metadata=None if context.oauth_metadata is None
            else context.oauth_metadata.model_dump(mode="json", exclude_none=True),
            resource_metadata=None if context.protected_resource_metadata is None
            else context.protected_resource_metadata.model_dump(mode="json", exclude_none=True),
            authorization_server=context.auth_server_url,
        )

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)  # type: ignore[misc]
        await self._keep_metadata()

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        if response.status_code != 200:
            error = await error_of(response)
            if error != "invalid_grant":
                # The authorization server failed (5xx), or refused for a reason that is
                # not about the grant: the refresh token is kept (the SDK would forget
                # it) and this request fails with the reason; the next one tries again.
                await self._release()
                raise RefreshFailed(self._note_failure(why_not_refreshed(
                    self.storage.credentials.settings.name, response.status_code, error
                )))
        ok: bool = await super()._handle_refresh_response(response)  # type: ignore[misc]
        self.refresh_failed = not ok
        self._failed = None
        if ok:
            await self._keep_metadata()
        elif response.status_code != 200:  # invalid_grant: spent or revoked, never again
            await self.storage.update(tokens=None, expires_at=None)
        await self._release()
        return ok

    def _note_failure(self, reason: str) -> str:
        self._failed = (time.monotonic() + REFRESH_BACKOFF, reason)
        return reason

    async def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            await held()

    async def _adopt_stored(self) -> bool:
        """Take the tokens on disk when they differ from the ones held (another process
        signed in or refreshed); whether it took them."""
        entry = await self.storage.entry()
        stored = self.storage.tokens_of(entry)
        if stored is None or stored.access_token == getattr(
            self.context.current_tokens, "access_token", None
        ):
            return False
        self.context.current_tokens = stored
        self._restore(entry)
        return True

    def _flow_lock(self) -> anyio.Lock:
        """One flow that gets a token at a time (held until it has one, never across the
        call it was for: the SDK's own lock is, which ``_auth_flow`` hands off early)."""
        lock: anyio.Lock | None = self.__dict__.get("_getting")
        if lock is None:
            lock = self.__dict__["_getting"] = anyio.Lock()
        return lock

    def _token(self) -> str | None:
        return getattr(self.context.current_tokens, "access_token", None)

    async def _valid_after_any_flow(self) -> bool:
        """Whether the token held may be sent as it is, once a flow under way (a refresh,
        a new token) has ended: calls that arrive meanwhile wait for it, not for each other."""
        if self._reread:
            return False
        lock = self._flow_lock()
        if lock.locked():
            async with lock:
                pass
        return self._initialized and bool(self.context.is_token_valid())

    def _bearer(self, request: httpx2.Request) -> str | None:
        self.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        self._add_auth_header(request)  # type: ignore[attr-defined]
        return self._token()

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # The SDK's flow holds its lock across the request it carries, so each call of the
        # server waited for the one before to be answered (50 calls of a 0.2 s tool: 10 s;
        # bench/oauth_mount.py). A valid token is sent without it; a flow that gets a new
        # one runs under this provider's own lock and is left once it has the token, the
        # call then sent like the others. A call refused even so goes through the SDK's
        # flow whole, which reads the answer (a token refused, a step-up).
        context = self.context
        sent = None
        if await self._valid_after_any_flow():
            sent = self._bearer(request)
            if _passed((yield request)):
                return
        handed = False
        async with self._flow_lock():
            if sent is not None and context.is_token_valid() and self._token() != sent:
                handed = True  # another call got a new token meanwhile
            else:
                flow = self._flow(request, hand_off=True)
                try:
                    outgoing = await flow.__anext__()
                    while outgoing is not _HAND_OFF:
                        outgoing = await flow.asend((yield outgoing))
                    handed = True
                except StopAsyncIteration:
                    return
                finally:
                    await flow.aclose()
        if handed:
            self._bearer(request)
            response = yield request
            if _passed(response):
                return
            challenged = _insufficient_scope(response)
            if challenged is not None:  # a token just issued without the scopes wanted
                _refused(self._still_refused(challenged))
                return
        flow = self._flow(request, hand_off=False)
        try:
            outgoing = await flow.__anext__()
            while True:
                outgoing = await flow.asend((yield outgoing))
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _flow(  # noqa: C901 - the SDK's flow wrapped step by step: a refresh once across processes, a step-up bounded, the hand-off
        self, request: httpx2.Request, *, hand_off: bool
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow for ``request`` with toolplug's steps around it; with
        ``hand_off``, it ends by yielding ``_HAND_OFF`` where the SDK, holding a token new
        to this flow, would send ``request`` under its lock."""
        context = self.context
        entered = self._token()
        if self._initialized and self._reread and await self._adopt_stored():
            self._reread = False
        if self._initialized and not context.is_token_valid() and context.can_refresh_token():
            failed = self._failed
            if failed is not None and time.monotonic() < failed[0]:
                # a refresh failed a moment ago: the calls meanwhile fail with its reason
                # (the server answers the expired token), not one more refresh each
                self._bearer(request)
                yield request
                _refused(failed[1])
                return
            # Another process may have refreshed it already: wait for any refresh under
            # way, then read what it stored; the SDK refreshes only if it is still stale.
            self._held = await self.storage.store.hold(self.storage.key)
            await self._adopt_stored()
            if context.is_token_valid():
                await self._release()
        flow = super()._auth_flow(request)  # type: ignore[misc]
        step_ups = 0
        try:
            outgoing = await flow.__anext__()
            while True:
                if (
                    hand_off and outgoing is request and not step_ups
                    and self._token() not in (None, entered) and context.is_token_valid()
                ):
                    yield _HAND_OFF  # closed here: the SDK's lock is released
                    return
                try:
                    response = yield outgoing
                except GeneratorExit:
                    if refreshing(outgoing) and not cancelling():  # no answer came
                        _refused(self._note_failure(
                            why_not_refreshed(self.storage.credentials.settings.name)
                        ))
                    raise
                challenged = _insufficient_scope(response) if outgoing is request else None
                if outgoing is not request:
                    await _screen(outgoing, response)
                elif challenged is not None:
                    if step_ups >= STEP_UPS:
                        _refused(self._still_refused(challenged))
                        return
                    step_ups += 1
                metadata = context.client_metadata
                if outgoing is request and isinstance(metadata, _Widening):
                    metadata.stepping(challenged is not None)  # until the next answer to it
                try:
                    outgoing = await flow.asend(response)
                except RefreshFailed as exc:
                    # httpx hands the token endpoint's answer to the transport as this
                    # request's: an error, whose reason the call reads (``REFUSALS``)
                    _refused(exc.reason)
                    return
                except StopAsyncIteration:
                    if challenged is not None:  # the SDK let it through (a 403 after a 401)
                        _refused(self._still_refused(challenged))
                    raise
                except SignInNeeded:
                    if not step_ups:
                        raise
                    # A person's grant cannot step up here: the call fails with the
                    # reason, the scopes are kept for the sign-in that is asked for.
                    wanted = union_scopes(self.wanted_scope, challenged) or None
                    await self.storage.update(wanted_scope=wanted)
                    self._reread = True
                    scope = context.client_metadata.scope or challenged or ""
                    _refused(needs_sign_in(self.storage.credentials.settings.name, scope=scope))
                    return
        except StopAsyncIteration:
            return
        finally:
            if isinstance(context.client_metadata, _Widening):
                context.client_metadata.stepping(False)
            await self._release()
            await flow.aclose()

    def _still_refused(self, challenged: str) -> str:
        granted = getattr(self.context.current_tokens, "scope", None) or "none named"
        wants = f"the scopes {challenged}" if challenged else "more scopes"
        return (
            f"still wants {wants} (the new token has {granted}): the authorization "
            "server did not grant them"
        )


_METADATA: Final = (
    ("/.well-known/oauth-protected-resource", ProtectedResourceMetadata),
    ("/.well-known/oauth-authorization-server", OAuthMetadata),
    ("/.well-known/openid-configuration", OAuthMetadata),
)
_LARGEST_METADATA: Final = 256 * 1024
"""Bytes of a metadata document read at most (real ones are a few kilobytes)."""


async def _screen(request: httpx2.Request, response: httpx2.Response) -> None:
    """Refuse a metadata document that is enormous or not a metadata document: the SDK
    would take it as "none here" and go on to guessed endpoints; a sign-in stops instead,
    naming the document."""
    if response.status_code != 200:
        return
    path = request.url.path
    model = next((m for prefix, m in _METADATA if path.startswith(prefix)), None)
    if model is None:
        return
    declared = response.headers.get("content-length", "")
    size = int(declared) if declared.isdigit() else 0
    content = b"" if size > _LARGEST_METADATA else await response.aread()
    size = max(size, len(content))
    if size > _LARGEST_METADATA:
        raise OAuthFlowError(
            f"the metadata document at {request.url} is {size} bytes "
            f"(more than {_LARGEST_METADATA}): not read"
        )
    try:
        model.model_validate_json(content)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the document"
        raise OAuthFlowError(
            f"the metadata document at {request.url} cannot be read: {where}: {first['msg']}"
        ) from None


class _Person(_Kept, OAuthClientProvider):
    """The authorization code grant: a person signs in (``login``), the mount refreshes."""

    def __init__(self, storage: _Storage, fixed: OAuthClientInformationFull | None, **kw: Any):
        super().__init__(storage=storage, **kw)
        self.storage = storage
        self._fixed = fixed

    async def _initialize(self) -> None:
        await super()._initialize()
        if self._fixed is not None:
            self.context.client_info = self._fixed


class _Machine(_Kept, ClientCredentialsOAuthProvider):
    """The client credentials grant: no person, a new token whenever one is needed."""

    def __init__(self, storage: _Storage, **kw: Any) -> None:
        super().__init__(storage=storage, **kw)
        self.storage = storage
        self._own_scopes(kw.get("scope"))


class _Signed(_Kept, PrivateKeyJWTOAuthProvider):
    """The client credentials grant with ``private_key_jwt``: each token request carries
    an assertion (RFC 7523) the client's key signs, for the authorization server's issuer."""

    def __init__(self, storage: _Storage, **kw: Any) -> None:
        super().__init__(storage=storage, **kw)
        self.storage = storage
        self._own_scopes(kw.get("scope"))


def _signer(
    credentials: Credentials, client_id: str, algorithm: str
) -> Callable[[str], Awaitable[str]]:
    """The SDK's assertion signer over the client's key (``iss`` and ``sub`` its client
    id, ``aud`` the issuer, a fresh ``jti``, five minutes' life); a key that cannot sign
    with ``algorithm`` is the flow's error, in words."""
    key = credentials.client_assertion_key
    assert key is not None
    sign = SignedJWTParameters(
        issuer=client_id, subject=client_id, signing_key=key, signing_algorithm=algorithm,
    ).create_assertion_provider()
    where = f"[mcp_servers.{credentials.settings.name}.oauth] client_assertion_key"

    async def signed(audience: str) -> str:
        try:
            return await sign(audience)
        except (ValueError, TypeError, jwt.exceptions.PyJWTError) as exc:
            raise OAuthFlowError(
                f"{where} cannot sign a {algorithm} assertion ({exc}): "
                "client_assertion_algorithm names the key's kind (RS*/PS* for RSA, ES* for EC, "
                "EdDSA for Ed25519)"
            ) from None

    return signed


class _Widening(OAuthClientMetadata):
    """The client's metadata whose ``scope``, whenever the SDK sets it, is what toolplug
    asks for: the configured ``scopes`` where there are some (the SDK would put the 401's
    challenge or the metadata's ``scopes_supported`` in their place), else the SDK's
    choice; a step-up's widening (``stepping``) is kept as the SDK makes it; and always
    with the scopes a step-up asked a person for, so the registration and the next
    sign-in ask for them too."""

    _wanted: str | None = PrivateAttr(default=None)
    _configured: str | None = PrivateAttr(default=None)
    _stepping: bool = PrivateAttr(default=False)
    """Whether the SDK's flow is answering a 403 ``insufficient_scope`` (set by
    ``_Kept._auth_flow``, under the SDK's lock): then its scope is the held scopes joined
    to the challenge's."""

    def stepping(self, answering: bool) -> None:
        self._stepping = answering

    @classmethod
    def of(cls, metadata: OAuthClientMetadata, configured: str | None) -> _Widening:
        widening = cls.model_validate(metadata.model_dump())
        widening._configured = configured
        return widening

    @property
    def wanted(self) -> str | None:
        return self._wanted

    @wanted.setter
    def wanted(self, scope: str | None) -> None:
        self._wanted = scope

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "scope":
            if self._configured and not self._stepping:
                value = self._configured
            if self._wanted:
                value = union_scopes(value, self._wanted)
        super().__setattr__(name, value)


def _metadata(credentials: Credentials, redirect: str) -> OAuthClientMetadata:
    oauth = credentials.settings.oauth_settings
    assert oauth is not None
    method = "none"
    if credentials.client_secret is not None:
        method = oauth.token_endpoint_auth
    return _Widening.of(OAuthClientMetadata.model_validate({
        "redirect_uris": [redirect], "client_name": _CLIENT_NAME,
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": method, "scope": oauth.scope,
    }), oauth.scope)


def _fixed_client(credentials: Credentials, redirect: str) -> OAuthClientInformationFull | None:
    oauth = credentials.settings.oauth_settings
    if oauth is None or oauth.client_id is None:
        return None
    method = oauth.token_endpoint_auth if credentials.client_secret is not None else "none"
    return OAuthClientInformationFull.model_validate({
        "client_id": oauth.client_id, "client_secret": credentials.client_secret,
        "redirect_uris": [redirect], "token_endpoint_auth_method": method,
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "scope": oauth.scope,
    })


def _provider(
    credentials: Credentials,
    store: Tokens,
    redirect: str,
    open_url: Callable[[str], Awaitable[None]],
    answer: Callable[[], Awaitable[AuthorizationCodeResult]],
) -> _Kept:
    settings = credentials.settings
    oauth = settings.oauth_settings
    assert oauth is not None
    credentials.hide(credentials.client_secret)
    storage = _Storage(credentials, store)
    if oauth.grant == "client_credentials" and oauth.token_endpoint_auth == "private_key_jwt":
        assert oauth.client_id is not None
        credentials.hide(credentials.client_assertion_key)
        return _Signed(
            storage, server_url=credentials.key, client_id=oauth.client_id,
            assertion_provider=_signer(
                credentials, oauth.client_id, oauth.client_assertion_algorithm
            ),
            scope=oauth.scope, issuer=oauth.issuer,
        )
    if oauth.grant == "client_credentials":
        assert oauth.client_id is not None
        assert credentials.client_secret is not None
        assert oauth.token_endpoint_auth != "private_key_jwt"
        return _Machine(
            storage, server_url=credentials.key, client_id=oauth.client_id,
            client_secret=credentials.client_secret, scope=oauth.scope,
            token_endpoint_auth_method=oauth.token_endpoint_auth, issuer=oauth.issuer,
        )
    return _Person(
        storage, _fixed_client(credentials, redirect), server_url=credentials.key,
        client_metadata=_metadata(credentials, redirect), redirect_handler=open_url,
        callback_handler=answer, client_metadata_url=oauth.client_metadata_url,
    )


# -- the mount --------------------------------------------------------------------------


class _NoSignIn(httpx2.Auth):
    """A server nobody has signed in to yet: its 401 is the reason, no flow is started
    (nothing is registered on the user's behalf before they ask to sign in)."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        response = yield request
        if response.status_code == 401:
            raise SignInNeeded(self.name)


async def auth_for(credentials: Credentials) -> httpx2.Auth:
    """The ``auth`` of a mount's HTTP client: the SDK's flow over the stored tokens (which
    it refreshes), the client credentials grant, or, with no sign-in kept, a 401 that says
    so. A mount never opens a browser: where a person is wanted, ``SignInNeeded``."""
    oauth = credentials.settings.oauth_settings
    assert oauth is not None
    store = credentials.store
    assert store is not None
    name = credentials.settings.name
    entry = await store.aentry(credentials.key)
    if oauth.grant == "authorization_code" and "tokens" not in entry:
        return _NoSignIn(name)
    provider: _Kept

    async def ask_a_person(url: str) -> None:
        raise SignInNeeded(name, expired=provider.refresh_failed)

    async def never() -> AuthorizationCodeResult:  # pragma: no cover - ask_a_person raised
        raise SignInNeeded(name)

    client = entry.get("client") or {}
    redirect = (client.get("redirect_uris") or ["http://127.0.0.1/callback"])[0]
    provider = _provider(credentials, store, redirect, ask_a_person, never)
    return provider  # type: ignore[return-value]


def sign_in_problem(exc: BaseException) -> str | None:
    """The reason of a start-up that failed in the OAuth flow, or None when it did not."""
    for inner in chain(exc):
        if isinstance(inner, SignInNeeded):
            return inner.reason
        if isinstance(inner, KeyringUnusable):
            return str(inner)
        if isinstance(inner, OAuthTokenError | OAuthRegistrationError | OAuthFlowError):
            return f"the OAuth sign-in failed: {inner}"
    return None


# -- signing in and out -------------------------------------------------------------------


async def login(
    credentials: Credentials,
    open_url: Callable[[str], Awaitable[None]],
    *,
    timeout: float = 300.0,
) -> str:
    """Sign in to the server: connect, let the SDK's flow discover and register, send the
    person to the authorization URL (``open_url``), take the redirect on 127.0.0.1, and
    keep the tokens. What happened, in words; ``LoginError`` when it did not complete
    (the tokens of an earlier sign-in are dropped first, so a failed one leaves none)."""
    settings = credentials.settings
    oauth = settings.oauth_settings
    store = credentials.store
    if oauth is None or store is None:
        raise LoginError(f'[mcp_servers.{settings.name}] has no auth = "oauth"')
    if credentials.problem is not None:
        raise LoginError(credentials.problem)
    entry = await store.aentry(credentials.key)
    callback = Callback()
    registered = (entry.get("client") or {}).get("redirect_uris") or []
    try:
        redirect = await callback.listen(
            oauth.redirect_port, registered[0] if registered else None
        )
    except LoginError:
        await callback.close()
        raise
    forget = {"tokens": None, "expires_at": None}
    if registered and registered[0] != redirect:
        forget["client"] = None  # registered for another port: register again
    if oauth.client_id is None and not _covers(entry.get("client") or {}, entry):
        forget["client"] = None  # registered for fewer scopes than a step-up wants
    await store.aupdate(credentials.key, **forget)

    async def answer() -> AuthorizationCodeResult:
        return await callback.answer

    opened = 0

    async def open_once(url: str) -> None:
        # a second authorization in one sign-in: the server answered 401 to the token the
        # sign-in just got (the callback takes one redirect, so the SDK's retry could only
        # end in a state mismatch)
        nonlocal opened
        opened += 1
        if opened > 1:
            raise LoginError(
                "the server refused the token its authorization server just issued (a token "
                "for another audience or resource): nothing was kept; check that the "
                "server's url and its protected resource metadata name the same resource"
            )
        await open_url(url)

    provider = _provider(credentials, store, redirect, open_once, answer)
    refusals: list[str] = []  # a step-up that did not get the scopes the server wants
    REFUSALS.set(refusals)
    try:
        async with asyncio.timeout(timeout):
            async with (
                httpx2.AsyncClient(auth=provider, timeout=30) as http,  # type: ignore[arg-type]
                Client(streamable_http_client(credentials.key, http_client=http)) as client,
            ):
                info = client.server_info
    except TimeoutError:
        raise LoginError(f"no sign-in within {timeout:g} s") from None
    except Exception as exc:
        await store.aupdate(credentials.key, tokens=None, expires_at=None)
        said = f"the server {refusals[-1]}" if refusals else login_problem(exc)
        raise LoginError(said) from None
    finally:
        await callback.close()
    if "tokens" not in await store.aentry(credentials.key):
        raise LoginError(f"{credentials.key} let toolplug in without a sign-in: nothing to keep")
    named = getattr(info, "name", None) or credentials.key
    return f"signed in to {settings.name} ({named}); the tokens are kept in {store.where}"


def _covers(client: dict[str, Any], entry: dict[str, Any]) -> bool:
    """Whether a registered client may ask for the scopes a step-up wants (an
    authorization server refuses scopes beyond those a client registered with)."""
    registered, wanted = client.get("scope"), entry.get("wanted_scope")
    if not isinstance(registered, str) or not isinstance(wanted, str):
        return True
    return set(wanted.split()) <= set(registered.split())


async def logout(credentials: Credentials) -> str:
    """Forget the server's tokens; revoke them first where the authorization server's
    metadata names a revocation endpoint (RFC 7009). What happened, in words."""
    store = credentials.store
    assert store is not None
    entry = await store.aforget(credentials.key)

    async def post(
        url: str, data: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, str | None] | str:
        try:
            async with httpx2.AsyncClient(timeout=30) as http:
                answer = await http.post(url, data=data, headers=headers)
        except httpx2.HTTPError as exc:
            return type(exc).__name__
        return answer.status_code, revocation_error(answer.content)

    return await revoke(entry, credentials.settings.name, post)
