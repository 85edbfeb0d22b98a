"""``[openapi.NAME] auth = "oauth"`` with ``grant = "authorization_code"``: a person signs in.

The endpoints are the description's: an oauth2 scheme's ``authorizationCode`` flow
(``authorizationUrl`` and ``tokenUrl``, relative to the base URL where they are relative),
else an openIdConnect scheme's discovery document (its endpoints, its issuer, and its
registration endpoint, with which toolplug registers itself when no ``client_id`` is
configured). ``toolplug login NAME`` runs the MCP SDK's authorization code grant, as a
mounted server's sign-in does (``toolplug.sources._oauth_flow``): PKCE S256, a ``state``
checked on the redirect taken on 127.0.0.1, the resource indicator (RFC 8707: the API's
base URL), and the redirect's ``iss`` checked against a known issuer (RFC 9207: the
discovery document's, or ``issuer``). Every request of the flow goes through the network
guard, like the API's own. The tokens are kept in the user's token store
(``STATE_DIR/oauth/tokens.json``, 0600) only once the sign-in completed; a call refreshes
an expired access token (once across processes: the store's lock) and a refresh that is
refused drops them, the reason then "its sign-in expired: run `toolplug login NAME`". A
403 ``insufficient_scope`` cannot be stepped up without the person: the call's reason says
the API "needs a sign-in with more access (the scopes ...)", and the scopes it named are
kept (``wanted_scope``, as a mount keeps them) for the next sign-in to ask for. A sign-out
revokes the tokens where the authorization server's metadata names a revocation endpoint.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlencode, urljoin, urlsplit

from toolplug.config._oauth import OAuthSettings
from toolplug.sources._signin import needs_sign_in
from toolplug.sources.openapi._oauth import (
    GrantError,
    Memory,
    discover,
    operation_scopes,
    sdk_headers,
    send,
    union,
)

if TYPE_CHECKING:
    from toolplug.contract._network import NetworkPolicy
    from toolplug.sources._oauth_flow import Callback
    from toolplug.state._tokens import TokenStore
    from toolplug.trust._redaction import Redactor

__all__ = ["SignIn", "sign_in_for"]

_MARGIN: Final = 10.0
"""Seconds before its expiry an access token is taken as spent (a request in flight may
outlive it): at most a quarter of its life, so a short-lived token is used at all."""
_CLIENT_NAME: Final = "toolplug"


@dataclass
class SignIn:
    """One API's person's grant: where its endpoints are, and its entry in the store."""

    api: str
    settings: OAuthSettings
    resource: str
    """The protected resource: the API's base URL (the token's audience)."""
    scheme: str
    """The security scheme the sign-in is for (its name in the description)."""
    store: TokenStore
    authorization_url: str | None = None
    token_url: str | None = None
    discovery_url: str | None = None
    flow_scopes: tuple[str, ...] = ()
    """The scopes the description's flow lists (asked for when neither ``scopes`` is set
    nor the operations name any)."""
    operation_scopes: tuple[str, ...] = ()
    """The scopes the description's operations name for the scheme (asked for when
    ``scopes`` is not set)."""
    client_secret: str | None = None
    redactor: Redactor | None = None
    _refused: str | None = None
    """An access token the API answered 401 to: refreshed before it is sent again."""
    _locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    refreshed: int = 0
    """How many refreshes this process made (a measure)."""

    @property
    def table(self) -> str:
        return f"[openapi.{self.api}.oauth]"

    @property
    def key(self) -> str:
        """What its tokens are kept by: the API's name and the resource."""
        return f"openapi:{self.api} {self.resource}"

    @property
    def scope(self) -> str | None:
        """What a sign-in asks for: the configured scopes, else those the operations name
        (with ``openid`` for OpenID Connect), else the flow's."""
        if self.settings.scopes:
            return " ".join(self.settings.scopes)
        oidc = "openid" if self.discovery_url else None
        if self.operation_scopes:
            return union(oidc, *self.operation_scopes)
        if self.flow_scopes:
            return " ".join(self.flow_scopes)
        return oidc

    def asked(self, entry: Mapping[str, Any]) -> str | None:
        """What the next sign-in asks for: ``scope`` with the scopes a step-up wanted."""
        wanted = entry.get("wanted_scope")
        return union(self.scope, wanted if isinstance(wanted, str) else None)

    async def step_up(self, challenged: str) -> str:
        """The API answered 403 ``insufficient_scope``: a person must sign in again for
        more access. The scopes it named are kept (the next sign-in asks for them too);
        the reason, in words, after "the API"."""
        entry = await self.store.aentry(self.key)
        if not challenged:
            return (
                f"wants more access than the sign-in has (its answer names no scope): "
                f"check {self.table} scopes, then run `toolplug login {self.api}`"
            )
        held = set(str((entry.get("tokens") or {}).get("scope") or "").split())
        if held and set(challenged.split()) <= held:
            return (
                f"still wants the scopes {challenged}, which its sign-in has (signing in "
                "again would not help): see the API's answer"
            )
        kept = entry.get("wanted_scope")
        wanted = union(kept if isinstance(kept, str) else None, challenged)
        if wanted != kept:
            await self.store.aupdate(self.key, wanted_scope=wanted)
        return needs_sign_in(self.api, scope=self.asked({"wanted_scope": wanted}) or challenged)

    def hide(self, *secrets: str | None) -> None:
        if self.redactor is not None:
            for secret in secrets:
                if secret:
                    self.redactor.add(secret)

    # -- at load and at a call --------------------------------------------------------

    def status(self) -> str | None:
        """Why its operations cannot be called now (no sign-in, or one that expired), or
        None: read from the store, without a request."""
        return _reason(self.api, self.store.entry(self.key))

    def ends(self) -> float | None:
        """When the sign-in read at load ends with no refresh to renew it (then a listing
        says it expired), or None."""
        entry = self.store.entry(self.key)
        ends = _ends(entry)
        return None if (entry.get("tokens") or {}).get("refresh_token") else ends

    def _valid(self, entry: Mapping[str, Any]) -> str | None:
        token = (entry.get("tokens") or {}).get("access_token")
        if not isinstance(token, str) or token == self._refused:
            return None
        ends = _ends(entry)
        if ends is not None and time.time() >= ends:
            return None
        self.hide(token, (entry.get("tokens") or {}).get("refresh_token"))
        return token

    async def authorization(self, policy: NetworkPolicy, timeout: float) -> str:
        """The ``Authorization`` header's value: the stored access token, refreshed when it
        expired (one refresh at a time, across processes too)."""
        token = self._valid(await self.store.aentry(self.key))
        if token is not None:
            return f"Bearer {token}"
        loop = asyncio.get_running_loop()
        async with self._locks.setdefault(loop, asyncio.Lock()):
            release = await self.store.hold(self.key)
            try:
                entry = await self.store.aentry(self.key)  # another may have refreshed it
                token = self._valid(entry)
                if token is None:
                    token = await self._refresh(entry, policy, timeout)
            finally:
                await release()
        return f"Bearer {token}"

    def spent(self, header: str) -> None:
        """The API refused this token (401): the next call refreshes it first."""
        self._refused = header.removeprefix("Bearer ")

    async def _refresh(self, entry: dict[str, Any], policy: NetworkPolicy, timeout: float) -> str:
        import httpx2

        tokens = entry.get("tokens") or {}
        if not tokens.get("refresh_token"):
            if tokens:
                await self.store.aupdate(self.key, tokens=None, expires_at=None, expired=True)
            expired = bool(tokens) or bool(entry.get("expired"))
            raise GrantError(needs_sign_in(self.api, expired=expired))
        provider = self._provider(entry, redirect=None)
        await provider._initialize()
        request = await provider._refresh_token()
        answer = await send(
            self.table, "POST", str(request.url), policy, timeout,
            headers=sdk_headers(request), content=request.read(),
        )
        response = httpx2.Response(
            answer.status, headers={"content-type": answer.content_type or "application/json"},
            content=answer.content, request=request,
        )
        if not await provider._handle_refresh_response(response):
            await self.store.aupdate(self.key, tokens=None, expires_at=None, expired=True)
            raise GrantError(needs_sign_in(self.api, expired=True))
        self._refused = None
        self.refreshed += 1
        current = provider.context.current_tokens
        assert current is not None
        return str(current.access_token)

    # -- signing in and out -----------------------------------------------------------

    def _provider(
        self, entry: Mapping[str, Any], *, redirect: str | None,
        open_url: Callable[[str], Awaitable[None]] | None = None,
        answer: Callable[[], Awaitable[Any]] | None = None, storage: Any = None,
        scope: str | None = None,
    ) -> Any:
        from mcp.client.auth import OAuthClientProvider
        from mcp.shared.auth import OAuthClientMetadata, OAuthMetadata, ProtectedResourceMetadata

        from toolplug.sources._oauth_flow import Storage

        registered = (entry.get("client") or {}).get("redirect_uris") or []
        metadata = OAuthClientMetadata.model_validate({
            "redirect_uris": [redirect or (registered[0] if registered else
                                           "http://127.0.0.1/callback")],
            "client_name": _CLIENT_NAME, "response_types": ["code"],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": self._method(), "scope": scope or self.scope,
        })
        provider = OAuthClientProvider(
            server_url=self.resource, client_metadata=metadata,
            storage=storage or Storage(self.store, self.key, self.hide),
            redirect_handler=open_url, callback_handler=answer,
        )
        server = entry.get("server_metadata")
        context = provider.context
        if isinstance(server, dict):
            context.oauth_metadata = OAuthMetadata.model_validate(server)
            context.protected_resource_metadata = ProtectedResourceMetadata.model_validate({
                "resource": self.resource,
                "authorization_servers": [str(context.oauth_metadata.issuer)],
            })  # what the description says of it: the resource indicator is sent
        return provider

    def _method(self) -> str:
        return self.settings.token_endpoint_auth if self.client_secret else "none"

    async def _server_metadata(self, policy: NetworkPolicy, timeout: float) -> dict[str, Any]:
        """The authorization server's endpoints: discovered, or the description's flow."""
        if self.discovery_url is not None:
            document = await discover(self.table, self.discovery_url, policy, timeout)
            if not isinstance(document.get("authorization_endpoint"), str):
                raise GrantError(
                    f"{self.table}: the OpenID Connect discovery document at "
                    f"{self.discovery_url} names no authorization_endpoint: no person can "
                    "sign in there"
                )
            if self.settings.issuer is not None:
                document["issuer"] = self.settings.issuer
            return document
        assert self.authorization_url is not None
        assert self.token_url is not None
        origin = urlsplit(self.authorization_url)
        metadata = {
            "issuer": self.settings.issuer or f"{origin.scheme}://{origin.netloc}",
            "authorization_endpoint": self.authorization_url, "token_endpoint": self.token_url,
            "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
        }
        if self.settings.issuer is not None:  # its metadata may name a revocation endpoint
            revocation = await self._revocation(self.settings.issuer, policy, timeout)
            if revocation is not None:
                metadata["revocation_endpoint"] = revocation
        return metadata

    async def _revocation(self, issuer: str, policy: NetworkPolicy, timeout: float) -> str | None:
        """The revocation endpoint (RFC 7009) the configured issuer's metadata names (RFC
        8414, else OpenID Connect discovery), where that metadata is the issuer's and
        names the description's token URL; None otherwise (a sign-out then says the
        server was not told)."""
        split = urlsplit(issuer)
        path = split.path.rstrip("/")
        origin = f"{split.scheme}://{split.netloc}"
        for url in (
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{issuer.rstrip('/')}/.well-known/openid-configuration",
        ):
            try:
                answer = await send(self.table, "GET", url, policy, timeout)
                document = json.loads(answer.content) if answer.status == 200 else None
            except (GrantError, ValueError):
                continue
            if not isinstance(document, dict) or document.get("issuer") != issuer \
                    or document.get("token_endpoint") != self.token_url:
                continue
            endpoint = document.get("revocation_endpoint")
            if isinstance(endpoint, str) and endpoint.startswith(("http://", "https://")):
                return endpoint
            return None
        return None

    async def login(
        self, open_url: Callable[[str], Awaitable[None]], policy: NetworkPolicy,
        *, timeout: float = 300.0,
    ) -> str:
        """Sign in: the authorization URL opened (``open_url``), the redirect taken on
        127.0.0.1, the code exchanged; the tokens kept only then. What happened, in words;
        ``LoginError`` when it did not complete (an earlier sign-in's tokens are dropped
        first, so a failed one leaves none)."""
        from toolplug.sources._oauth_flow import Callback, LoginError, login_problem

        entry = await self.store.aentry(self.key)
        callback = Callback()
        registered = (entry.get("client") or {}).get("redirect_uris") or []
        redirect = await callback.listen(
            self.settings.redirect_port, registered[0] if registered else None
        )
        await self.store.aupdate(self.key, tokens=None, expires_at=None, expired=None)
        try:
            async with asyncio.timeout(timeout):
                kept = await self._sign_in(entry, redirect, callback, open_url, policy)
        except TimeoutError:
            raise LoginError(f"no sign-in within {timeout:g} s") from None
        except GrantError as exc:
            raise LoginError(str(exc)) from None
        except Exception as exc:
            raise LoginError(login_problem(exc, self.api)) from None
        finally:
            await callback.close()
        await self.store.aupdate(self.key, **kept)
        return (
            f"signed in to {self.api} (the security scheme {self.scheme!r}, for "
            f"{self.resource}); the tokens are kept in {self.store.where}"
        )

    async def _sign_in(
        self, entry: dict[str, Any], redirect: str, callback: Callback,
        open_url: Callable[[str], Awaitable[None]], policy: NetworkPolicy,
    ) -> dict[str, Any]:
        """The flow, kept in memory; what to store once it completed."""
        import httpx2
        from mcp.client.auth.oauth2 import check_registration_usable
        from mcp.client.auth.utils import (
            create_client_registration_request,
            handle_registration_response,
        )
        from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull

        from toolplug.sources._oauth_flow import LoginError

        step = 30.0  # seconds for each request of the flow
        server = await self._server_metadata(policy, step)
        issuer_known = self.discovery_url is not None or self.settings.issuer is not None
        memory = Memory()

        async def answer() -> AuthorizationCodeResult:
            result = await callback.answer
            if not issuer_known:  # nothing to check it against: the description names none
                result = AuthorizationCodeResult(code=result.code, state=result.state)
            return result

        scope = self.asked(entry)  # with what a step-up asked for
        provider = self._provider(
            {"server_metadata": server}, redirect=redirect, open_url=open_url,
            answer=answer, storage=memory, scope=scope,
        )
        await provider._initialize()
        context = provider.context
        client = self._fixed(redirect, scope)
        stored = entry.get("client") or {}
        if client is None and (stored.get("redirect_uris") or [None])[0] == redirect \
                and _covers(stored.get("scope"), scope):
            client = OAuthClientInformationFull.model_validate(stored)
        if client is None:
            if not server.get("registration_endpoint"):
                raise LoginError(
                    f"{self.table} needs client_id: the authorization server of the security "
                    f"scheme {self.scheme!r} offers no registration (register toolplug there "
                    f"with the redirect URI http://127.0.0.1:PORT/callback and set "
                    "client_id and redirect_port)"
                )
            request = create_client_registration_request(
                context.oauth_metadata, context.client_metadata, self.resource
            )
            client = await handle_registration_response(
                await self._exchange(request, policy, step, httpx2)
            )
            check_registration_usable(client)
        self.hide(client.client_secret)
        context.client_info = client
        request = await provider._perform_authorization()
        await provider._handle_token_response(await self._exchange(request, policy, step, httpx2))
        tokens = context.current_tokens
        assert tokens is not None
        self.hide(tokens.access_token, tokens.refresh_token)
        expires = None if tokens.expires_in is None else time.time() + tokens.expires_in
        return {
            "tokens": tokens.model_dump(mode="json", exclude_none=True), "expires_at": expires,
            "client": client.model_dump(mode="json", exclude_none=True),
            "server_metadata": server, "expired": None,
        }

    async def _exchange(
        self, request: Any, policy: NetworkPolicy, timeout: float, httpx2: Any
    ) -> Any:
        """Send one request the SDK built through the network guard; its answer as the
        SDK reads it."""
        answer = await send(
            self.table, request.method, str(request.url), policy, timeout,
            headers=sdk_headers(request), content=request.read(),
        )
        return httpx2.Response(
            answer.status, headers={"content-type": answer.content_type or "application/json"},
            content=answer.content, request=request,
        )

    def _fixed(self, redirect: str, scope: str | None) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self.settings.client_id is None:
            return None
        return OAuthClientInformationFull.model_validate({
            "client_id": self.settings.client_id, "client_secret": self.client_secret,
            "redirect_uris": [redirect], "token_endpoint_auth_method": self._method(),
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "scope": scope,
        })

    async def logout(self, policy: NetworkPolicy) -> str:
        """Forget the tokens; revoke them first where the authorization server's metadata
        names a revocation endpoint (RFC 7009). What happened, in words."""
        from toolplug.sources._oauth_flow import revoke

        entry = await self.store.aforget(self.key)

        async def post(
            url: str, data: dict[str, str], headers: dict[str, str]
        ) -> tuple[int, str | None] | str:
            from toolplug.sources._oauth_flow import error_of  # the MCP SDK: on a sign-out

            try:
                answer = await send(
                    self.table, "POST", url, policy, 30.0, content=urlencode(data).encode(),
                    headers={**headers, "Content-Type": "application/x-www-form-urlencoded"},
                )
            except GrantError as exc:
                return str(exc)
            return int(answer.status), error_of(answer.content)

        return await revoke(entry, self.api, post)


def _covers(registered: Any, wanted: str | None) -> bool:
    """Whether a client registered for ``registered`` scopes may ask for ``wanted`` (an
    authorization server refuses scopes beyond those a client registered with): else
    toolplug registers again."""
    if not isinstance(registered, str) or not wanted:
        return True
    return set(wanted.split()) <= set(registered.split())


def _ends(entry: Mapping[str, Any]) -> float | None:
    """When the stored access token is taken as spent (None: it names no expiry)."""
    expires = entry.get("expires_at")
    if not isinstance(expires, int | float):
        return None
    life = (entry.get("tokens") or {}).get("expires_in")
    margin = min(_MARGIN, life / 4) if isinstance(life, int | float) and life > 0 else _MARGIN
    return float(expires) - margin


def _reason(api: str, entry: Mapping[str, Any]) -> str | None:
    tokens = entry.get("tokens") or {}
    if not tokens.get("access_token"):
        return needs_sign_in(api, expired=bool(entry.get("expired")))
    ends = _ends(entry)
    if ends is not None and time.time() >= ends and not tokens.get("refresh_token"):
        return needs_sign_in(api, expired=True)
    return None


def sign_in_for(
    api: str, oauth: OAuthSettings, *, base_url: str,
    schemes: Mapping[str, Mapping[str, Any]], store: TokenStore, operations: Any = None,
) -> SignIn | str:
    """The person's grant of an API (its endpoints from ``schemes``; the scopes to ask for,
    when none are configured, those the converted ``operations`` name), or why it has
    none."""
    for name, scheme in schemes.items():
        flow = (scheme.get("flows") or {}).get("authorizationCode")
        if scheme.get("type") == "oauth2" and flow and flow.get("authorizationUrl") \
                and flow.get("tokenUrl"):
            return SignIn(
                api, oauth, base_url, name, store,
                authorization_url=urljoin(base_url, flow["authorizationUrl"]),
                token_url=urljoin(base_url, flow["tokenUrl"]),
                flow_scopes=tuple(flow.get("scopes") or ()),
                operation_scopes=operation_scopes(operations, name),
            )
    for name, scheme in schemes.items():
        if scheme.get("type") == "openIdConnect" and scheme.get("openIdConnectUrl"):
            return SignIn(
                api, oauth, base_url, name, store,
                discovery_url=urljoin(base_url, scheme["openIdConnectUrl"]),
                operation_scopes=operation_scopes(operations, name),
            )
    return (
        f'[openapi.{api}] auth = "oauth" with grant = "authorization_code": the description '
        "has no oauth2 scheme with an authorizationCode flow and no openIdConnect scheme, so "
        "no authorization server is known"
    )
