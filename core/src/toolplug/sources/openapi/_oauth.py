"""``[openapi.NAME] auth = "oauth"``: an access token from the client credentials grant
(a person's sign-in, ``grant = "authorization_code"``, is ``_signin``'s).

The token URL is the description's: an oauth2 scheme's ``clientCredentials`` flow
(``tokenUrl``, relative to the base URL where it is relative), else an openIdConnect
scheme's discovery document (its ``token_endpoint`` and ``issuer``). The token request is
the MCP SDK's, as a mounted server's client credentials are: its
``ClientCredentialsOAuthProvider`` (``client_secret_basic`` or ``client_secret_post``) or
``PrivateKeyJWTOAuthProvider`` (an assertion the client's key signs, RFC 7523) builds it
with the resource indicator (RFC 8707: the API's base URL) and the configured scopes (else
those the operations' ``security`` names for the scheme), and reads the answer. What is
toolplug's: every request (discovery and token) goes through the network guard, like the
API's own; the token is fetched once and kept in memory until it expires (``_MARGIN``
seconds early) or the API answers 401 with it, once per call; a 403 ``insufficient_scope``
(``insufficient_scope``) asks for a token with the challenge's scopes too and sends the
request again, once per call (``STEP_UPS``); each token is added to the registry's
redactor as it arrives, never logged or returned; a refusal is the call's structured
error naming what to fix.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urljoin

from toolplug.config._oauth import OAuthSettings

if TYPE_CHECKING:
    from toolplug.contract._network import NetworkPolicy
    from toolplug.trust._redaction import Redactor

__all__ = [
    "STEP_UPS", "Grant", "GrantError", "Memory", "discover", "grant_for", "insufficient_scope",
    "operation_scopes", "sdk_headers", "send", "union",
]

_MARGIN: Final = 10.0
"""Seconds before its expiry a token is taken as spent (a request in flight may outlive it)."""
_LARGEST: Final = 256 * 1024
"""Bytes of a discovery document or token answer read at most (real ones are a few KB)."""
STEP_UPS: Final = 1
"""New tokens with wider scopes one call asks for at most (the client credentials grant):
a 403 ``insufficient_scope`` after it is the call's reason."""
_FIELD: Final = re.compile(r'([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


def insufficient_scope(details: Mapping[str, Any] | None) -> str | None:
    """The scopes a call's 403 ``insufficient_scope`` challenge names ("" when it names
    none), from its ``WWW-Authenticate`` (RFC 6750), or None for any other answer."""
    if not details or details.get("status") != 403:
        return None
    fields = {
        key.lower(): quoted or bare
        for key, quoted, bare in _FIELD.findall(str(details.get("challenge") or ""))
    }
    if fields.get("error") != "insufficient_scope":
        return None
    return " ".join(str(fields.get("scope") or "").split())


def union(*scopes: str | None) -> str | None:
    """Space-separated scopes joined, each once, in order (None: none at all)."""
    joined = dict.fromkeys(s for scope in scopes if scope for s in scope.split())
    return " ".join(joined) or None


def operation_scopes(operations: Any, scheme: str) -> tuple[str, ...]:
    """The scopes the converted operations' ``security`` names for ``scheme``, each once."""
    found: dict[str, None] = {}
    for op in operations if isinstance(operations, list) else ():
        if isinstance(op, dict) and not op.get("anonymous"):
            found.update(dict.fromkeys((op.get("scopes") or {}).get(scheme) or ()))
    return tuple(found)


class GrantError(Exception):
    """No access token could be had: why, in words, and what to fix; ``error_type`` and
    ``retry_possible`` those of the call's error (the guard's, when no request got through)."""

    def __init__(
        self, message: str, *, error_type: str = "PermissionError", retry_possible: bool = False
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.retry_possible = retry_possible


@dataclass
class Grant:
    """One API's client credentials and the token they were last given."""

    api: str
    settings: OAuthSettings
    resource: str
    """The protected resource: the API's base URL (the token's audience)."""
    token_url: str | None = None
    discovery_url: str | None = None
    """An openIdConnect scheme's discovery document (used when there is no token URL)."""
    client_secret: str | None = None
    client_assertion_key: str | None = None
    secret_from: str = "client_secret"
    """Where the secret comes from, in words (the fix of a refusal names it)."""
    redactor: Redactor | None = None
    _token: str | None = None
    _expires: float | None = None
    _issuer: str | None = None
    _locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    operation_scopes: tuple[str, ...] = ()
    """The scopes the description's operations name for its scheme (asked for when
    ``scopes`` is not set)."""
    widened: str | None = None
    """Scopes a 403 ``insufficient_scope`` asked for, beyond those asked at first."""
    granted: str | None = None
    """The scopes the last token was given, as the token answer says (None: unsaid)."""
    fetched: int = 0
    """How many tokens it was given (a measure: one per expiry, 401 or step-up)."""

    @property
    def scope(self) -> str | None:
        """What its token requests ask for: the configured scopes, else those the
        operations name; with those a step-up added."""
        asked = self.settings.scope or union(*self.operation_scopes)
        return union(asked, self.widened)

    def widen(self, header: str, challenged: str) -> str | None:
        """The API wants more scopes than this token has (403 ``insufficient_scope``): the
        next token is asked for them too. What was widened before (``narrow`` takes the
        widening back where the authorization server refuses it)."""
        before = self.widened
        self.widened = union(self.widened, challenged)
        self.spent(header)
        return before

    def narrow(self, before: str | None, challenged: str = "") -> None:
        """A token with the wider scopes was refused, or given without some of them: the
        next calls ask for those before and those it was given (an operation that needs
        no more still works)."""
        given = set((self.granted or "").split()) if challenged else set()
        self.widened = union(before, *(s for s in challenged.split() if s in given))

    @property
    def table(self) -> str:
        return f"[openapi.{self.api}.oauth]"

    def _valid(self) -> bool:
        return self._token is not None and (
            self._expires is None or time.time() < self._expires - _MARGIN
        )

    async def authorization(self, policy: NetworkPolicy, timeout: float) -> str:
        """The ``Authorization`` header's value: the token held, or a new one (one request
        at a time on each event loop)."""
        if not self._valid():
            loop = asyncio.get_running_loop()
            lock = self._locks.setdefault(loop, asyncio.Lock())
            async with lock:
                if not self._valid():
                    await self._fetch(policy, timeout)
        assert self._token is not None
        return f"Bearer {self._token}"

    def spent(self, header: str) -> None:
        """The API refused this token (401): the next call gets another."""
        if self._token is not None and header == f"Bearer {self._token}":
            self._token = self._expires = None

    def _hide(self, *secrets: str | None) -> None:
        if self.redactor is not None:
            for secret in secrets:
                if secret:
                    self.redactor.add(secret)

    async def _get(
        self, method: str, url: str, policy: NetworkPolicy, timeout: float, **kw: Any
    ) -> Any:
        return await send(self.table, method, url, policy, timeout, **kw)

    async def _discover(self, policy: NetworkPolicy, timeout: float) -> tuple[str, str | None]:
        assert self.discovery_url is not None
        document = await discover(self.table, self.discovery_url, policy, timeout)
        issuer = document.get("issuer")
        return document["token_endpoint"], issuer if isinstance(issuer, str) else None

    async def _fetch(self, policy: NetworkPolicy, timeout: float) -> None:
        import httpx2
        from mcp.client.auth import OAuthTokenError
        from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

        token_url, issuer = self.token_url, self.settings.issuer or self._issuer
        if token_url is None:
            token_url, found = await self._discover(policy, timeout)
            issuer = self.settings.issuer or found
            self._issuer = found
        # the assertion's audience (private_key_jwt): the issuer, else the token URL itself
        issuer = issuer or token_url
        provider = self._provider(issuer)
        await provider._initialize()
        context = provider.context
        context.oauth_metadata = OAuthMetadata.model_validate({
            "issuer": issuer, "authorization_endpoint": token_url, "token_endpoint": token_url,
        })
        context.protected_resource_metadata = ProtectedResourceMetadata.model_validate({
            "resource": self.resource, "authorization_servers": [issuer],
        })  # what the description says of it: the resource indicator is sent
        request = await provider._perform_authorization()
        answer = await self._get(
            "POST", str(request.url), policy, timeout, headers=sdk_headers(request),
            content=request.read(),
        )
        if answer.status != 200:
            raise GrantError(self._refused(str(request.url), answer.status, answer.content))
        response = httpx2.Response(
            answer.status, headers={"content-type": answer.content_type or "application/json"},
            content=answer.content, request=request,
        )
        try:
            await provider._handle_token_response(response)
        except (OAuthTokenError, ValueError) as exc:
            raise GrantError(
                f"{self.table}: the authorization server at {token_url} answered no token "
                f"toolplug can read ({type(exc).__name__})"
            ) from None
        tokens = context.current_tokens
        assert tokens is not None
        self._hide(tokens.access_token, tokens.refresh_token)
        self._token, self._expires = tokens.access_token, context.token_expiry_time
        self.granted = tokens.scope
        self.fetched += 1

    def _provider(self, issuer: str) -> Any:
        from mcp.client.auth.extensions.client_credentials import (
            ClientCredentialsOAuthProvider,
            PrivateKeyJWTOAuthProvider,
            SignedJWTParameters,
        )

        oauth = self.settings
        assert oauth.client_id is not None
        storage = Memory()
        if oauth.token_endpoint_auth == "private_key_jwt":
            assert self.client_assertion_key is not None
            sign = SignedJWTParameters(
                issuer=oauth.client_id, subject=oauth.client_id,
                signing_key=self.client_assertion_key,
                signing_algorithm=oauth.client_assertion_algorithm,
            ).create_assertion_provider()
            return PrivateKeyJWTOAuthProvider(
                server_url=self.resource, storage=storage, client_id=oauth.client_id,
                assertion_provider=sign, scope=self.scope, issuer=issuer,
            )
        assert self.client_secret is not None
        return ClientCredentialsOAuthProvider(
            server_url=self.resource, storage=storage, client_id=oauth.client_id,
            client_secret=self.client_secret, scope=self.scope, issuer=issuer,
            token_endpoint_auth_method=oauth.token_endpoint_auth,
        )

    def _refused(self, url: str, status: int, content: bytes) -> str:
        said: Mapping[str, Any] = {}
        try:
            found = json.loads(content)
            said = found if isinstance(found, dict) else {}
        except ValueError:
            pass
        error = str(said.get("error") or "")
        detail = str(said.get("error_description") or "")
        why = f"HTTP {status}" + (f" {error}" if error else "") + (f": {detail}" if detail else "")
        if error in ("invalid_client", "unauthorized_client") or status == 401:
            fix = (
                f"check {self.table} client_id and {self.secret_from}, and that "
                f'token_endpoint_auth = "{self.settings.token_endpoint_auth}" is a method the '
                "authorization server allows this client"
            )
        elif error == "invalid_scope":
            fix = f"check {self.table} scopes against what the client may be granted"
        elif error == "invalid_target":
            fix = f"the authorization server does not issue tokens for {self.resource}"
        else:
            fix = "see the authorization server's answer"
        return f"{self.table}: the authorization server at {url} refused the token request " \
            f"({why}): {fix}"


async def send(
    table: str, method: str, url: str, policy: NetworkPolicy, timeout: float, **kw: Any
) -> Any:
    """One request to an authorization server, through the network guard (its answer's
    body bounded); one the guard refuses or that cannot be made is a ``GrantError``."""
    from toolplug.http import NetworkError, fetch, guard_failure

    try:
        return await fetch(
            method, url, policy=policy, timeout=timeout, max_bytes=_LARGEST,
            follow_redirects=False, **kw,
        )
    except NetworkError as exc:
        failure = guard_failure(exc)
        raise GrantError(
            f"{table}: cannot reach the authorization server at {url}: {exc.reason}",
            error_type=str(failure.type), retry_possible=failure.retry_possible,
        ) from None


async def discover(table: str, url: str, policy: NetworkPolicy, timeout: float) -> dict[str, Any]:
    """An openIdConnect scheme's discovery document, with at least its ``token_endpoint``."""
    answer = await send(table, "GET", url, policy, timeout)
    document: Any = None
    if answer.status == 200 and not answer.truncated:
        try:
            document = json.loads(answer.content)
        except ValueError:
            document = None
    endpoint = document.get("token_endpoint") if isinstance(document, dict) else None
    if not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://")):
        said = f"HTTP {answer.status}" if answer.status != 200 else "no token_endpoint"
        raise GrantError(
            f"{table}: the OpenID Connect discovery document at {url} cannot be used "
            f"({said}): the description's openIdConnectUrl must name a provider's "
            "/.well-known/openid-configuration"
        )
    assert isinstance(document, dict)
    return document


def sdk_headers(request: Any) -> dict[str, str]:
    """The headers of a request the SDK built, without those the guard's client sets."""
    return {
        k: v for k, v in request.headers.items()
        if k.lower() not in ("host", "content-length", "user-agent", "accept-encoding")
    }


class Memory:
    """The SDK's ``TokenStorage`` in memory: the client credentials grant keeps its token
    itself, and a person's sign-in keeps nothing until it completed."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


def grant_for(
    api: str, oauth: OAuthSettings, *, base_url: str,
    schemes: Mapping[str, Mapping[str, Any]], operations: Any = None,
) -> Grant | str:
    """The grant of an API (its token URL from ``schemes``; the scopes to ask for, when
    none are configured, those the converted ``operations`` name), or why it has none."""
    for name, scheme in schemes.items():
        flow = (scheme.get("flows") or {}).get("clientCredentials")
        if scheme.get("type") == "oauth2" and flow and flow.get("tokenUrl"):
            return Grant(
                api, oauth, base_url, token_url=urljoin(base_url, flow["tokenUrl"]),
                operation_scopes=operation_scopes(operations, name),
            )
    for name, scheme in schemes.items():
        if scheme.get("type") == "openIdConnect" and scheme.get("openIdConnectUrl"):
            return Grant(
                api, oauth, base_url,
                discovery_url=urljoin(base_url, scheme["openIdConnectUrl"]),
                operation_scopes=operation_scopes(operations, name),
            )
    return (
        f'[openapi.{api}] auth = "oauth": the description has no oauth2 scheme with a '
        "clientCredentials flow and no openIdConnect scheme, so no token URL is known"
    )
