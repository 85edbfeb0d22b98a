"""A served principal's sign-in to a mounted server, on the MCP SDK's OAuth client
(``_principals`` says when and why; this is the part that speaks OAuth).

``link`` lets the SDK's flow do what it does for ``toolplug login`` (discovery from the
401 and the metadata documents, registration with this server's callback as the redirect
URI, scope selection), up to the authorization URL: there it stops, keeps the PKCE
verifier with the principal and the server on the backend under the ``state``, and hands
the URL back as the link. ``finish`` takes the redirect on whichever replica it reaches,
checks the issuer (RFC 9207) and exchanges the code with the verifier; the SDK's token
handling keeps the tokens for that principal.
"""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import urlencode, urljoin

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthTokenError
from mcp.client.auth.exceptions import OAuthRegistrationError
from mcp.client.auth.oauth2 import PKCEParameters
from mcp.client.auth.utils import validate_authorization_response_iss
from mcp.shared.auth import AuthorizationCodeResult

from toolplug.sources._oauth_flow import chain
from toolplug.sources.mcp import _oauth
from toolplug.sources.mcp._oauth import _fixed_client, _metadata, _Person, _Storage

if TYPE_CHECKING:
    from toolplug.state._backend import Backend
    from toolplug.state._tokens import PrincipalTokens

__all__ = ["PENDING_SECONDS", "SignInLink", "Signing", "finish", "link", "problem"]

PENDING_SECONDS: Final = 600.0
"""How long a sign-in link waits for its redirect (on the backend, for every replica)."""


class Signing(Protocol):
    """What this half needs of a server's principals (``_principals.Principals``, which
    imports this module when a principal first signs in: a protocol, not that class)."""

    name: str
    callback: str

    @property
    def key(self) -> str:
        """The server's URL, which its tokens are kept under."""
        ...

    def tokens(self, principal: str) -> PrincipalTokens:
        """Where ``principal``'s tokens are kept."""
        ...

    def pending(self) -> Backend:
        """The sign-ins waiting for their redirect."""
        ...

    def credentials(self, principal: str) -> Any:
        """The server's OAuth settings with ``principal``'s token store."""
        ...

_PING: Final = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
"""What asks the server for its 401 (any request would; this one changes nothing)."""


class SignInLink(Exception):
    """The flow reached the authorization URL: the link a principal signs in with."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class _Served(_Person):
    """The authorization code grant for a served principal: the redirect goes to this
    server's callback, and the flow stops at the authorization URL (no one waits here)."""

    principals: Signing
    principal: str

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        context = self.context
        if context.client_info is None:  # pragma: no cover - the flow registers first
            raise OAuthFlowError("no client is registered with the authorization server")
        pkce = PKCEParameters.generate()
        state = secrets.token_urlsafe(32)
        metadata = context.oauth_metadata
        if metadata is not None and metadata.authorization_endpoint is not None:
            endpoint = str(metadata.authorization_endpoint)
        else:  # the 2025-03-26 fallback: the authorization server at the server's origin
            endpoint = urljoin(context.get_authorization_base_url(context.server_url), "/authorize")
        query = {
            "response_type": "code", "client_id": context.client_info.client_id,
            "redirect_uri": self.principals.callback, "state": state,
            "code_challenge": pkce.code_challenge, "code_challenge_method": "S256",
        }
        if context.should_include_resource_param(context.protocol_version):
            query["resource"] = context.get_resource_url()
        if context.client_metadata.scope:
            query["scope"] = context.client_metadata.scope
            if "offline_access" in context.client_metadata.scope.split():
                query["prompt"] = "consent"  # OpenID Connect asks it with offline_access
        await self._keep_metadata()
        pending = json.dumps({
            "principal": self.principal, "server": self.principals.name,
            "verifier": pkce.code_verifier,
        })
        await self.principals.pending().set(f"state:{state}", pending, PENDING_SECONDS)
        raise SignInLink(f"{endpoint}?{urlencode(query)}")


def _provider(principals: Signing, principal: str) -> _Served:
    credentials = principals.credentials(principal)
    oauth = credentials.settings.oauth_settings
    assert oauth is not None
    credentials.hide(credentials.client_secret)
    redirect = principals.callback

    async def nobody(_url: str) -> None:  # pragma: no cover - the flow stops before it
        raise OAuthFlowError("no one waits for this sign-in here")

    async def never() -> AuthorizationCodeResult:  # pragma: no cover - likewise
        raise OAuthFlowError("no one waits for this sign-in here")

    provider = _Served(
        _Storage(credentials, credentials.store), _fixed_client(credentials, redirect),
        server_url=credentials.key, client_metadata=_metadata(credentials, redirect),
        redirect_handler=nobody, callback_handler=never,
        client_metadata_url=oauth.client_metadata_url,
    )
    provider.principals, provider.principal = principals, principal
    return provider


async def link(principals: Signing, principal: str) -> str:
    """The authorization URL ``principal`` signs in to the server with: the one made in
    the last ten minutes, else a new one (its sign-in waits on the backend)."""
    pending = principals.pending()
    current = f"link:{principal}:{principals.name}"
    kept = await pending.get(current)
    if kept:
        return kept
    provider = _provider(principals, principal)
    await principals.tokens(principal).aupdate(principals.key, tokens=None, expires_at=None)
    try:
        async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
            response = await http.post(
                principals.key, json=_PING,
                headers={"accept": "application/json, text/event-stream"},
            )
    except SignInLink as made:
        # a little less than the pending sign-in lives: a link shown is never a dead one
        await pending.set(current, made.url, PENDING_SECONDS - 60)
        return made.url
    raise OAuthFlowError(f"{principals.key} answered HTTP {response.status_code} without asking "
                         "for a sign-in")


async def finish(
    principals: Signing, pending: dict[str, Any], *, code: str, iss: str | None
) -> None:
    """Exchange the redirect's code for ``pending``'s principal and keep its tokens.

    Raises:
        OAuthFlowError, OAuthTokenError: the redirect or the token endpoint's answer
            was not what a sign-in needs.
    """
    principal = str(pending.get("principal"))
    verifier = str(pending.get("verifier"))
    if not code:
        raise OAuthFlowError("the redirect carries no authorization code")
    provider = _provider(principals, principal)
    await provider._initialize()
    validate_authorization_response_iss(iss, provider.context.oauth_metadata)
    async with httpx2.AsyncClient(timeout=30) as http:
        request = await provider._exchange_token_authorization_code(code, verifier)
        response = await http.send(request)
        await provider._handle_token_response(response)
    await principals.pending().delete(f"link:{principal}:{principals.name}")


def problem(exc: BaseException) -> str:
    """Why a sign-in could not start or complete, in words."""
    for inner in chain(exc):
        if isinstance(inner, OAuthTokenError | OAuthRegistrationError | OAuthFlowError):
            return str(inner)
        if isinstance(inner, httpx2.HTTPError):
            return f"{type(inner).__name__}: {inner}"
    said = _oauth.sign_in_problem(exc)
    return said or f"{type(exc).__name__}: {exc}"
