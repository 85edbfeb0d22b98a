"""Who is calling ``toolplug serve --http``: bearer tokens checked, scopes per tool, owners.

With ``[serve.auth]`` the HTTP server is an OAuth 2.1 resource server, built on the MCP SDK's
seams: a ``TokenVerifier`` (here ``Verifier``) turns a bearer token into an ``AccessToken``,
and the SDK's bearer middleware answers a request without a valid one with 401 and
``WWW-Authenticate: Bearer resource_metadata="..."`` (``BareChallenge`` leaves out the error
code for a request that sent no token, as RFC 6750 says). Tokens are checked one of three ways:

- JWTs (RFC 9068) with PyJWT: the signature against the issuer's keys (its JWKS, found from
  its metadata when ``jwks_uri`` is not set; cached, fetched again for an unknown ``kid``
  and when five minutes old, and a key gone from it takes every verification it made
  along), the algorithm against an allow-list, ``iss``, ``aud`` (this server's resource
  URL, RFC 8707), ``exp``, ``nbf`` and ``iat`` (JSON numbers, RFC 7519's NumericDate, each
  with ``leeway_seconds``);
- introspection (RFC 7662) at ``introspection_url`` with this server's client credentials;
- static tokens (``[serve.auth.tokens.NAME]``), for development and tests.

Protected resource metadata (RFC 9728) is served at ``/.well-known/oauth-protected-resource``
and at its path-suffixed form. Each tool needs scopes (``scopes_for``: ``[tools.NAME] scopes``,
else ``read_scope`` for a read-only tool and ``write_scope`` for the rest); ``tools/list``
shows a principal only what it may call, and ``ScopeGate`` answers a ``tools/call`` without
them with 403 ``insufficient_scope`` naming them (the MCP authorization specification's
scope challenge). The published prompts, resources and templates need ``published_scopes``
(``read_scope``, or their mounted server's ``scopes``); ``serve/_published.py`` lists and
refuses them by it. A client's token is never passed on: it stays in this module and the
SDK's middleware.

``owner_of`` names who owns per-client state (kept outputs, tasks, ``--max-tools`` lists):
the verified principal (issuer, subject and client id), else the HTTP session, else over
stdio the one client of the process; a client with none of these owns nothing another
client can see.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import httpx
import jwt
from jwt import PyJWKSet
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, principal_components
from mcp.server.auth.routes import build_resource_metadata_url
from pydantic import AnyHttpUrl

from toolplug.config._settings import resolve_value
from toolplug.contract._errors import UsageError

if TYPE_CHECKING:

    from toolplug.config._settings import AuthSettings
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.contract._published import Prompt, Resource, ResourceTemplate
    from toolplug.runtime._registry import Registry

__all__ = [
    "METADATA_PATH",
    "BareChallenge",
    "ScopeGate",
    "Verifier",
    "access_token",
    "may_call",
    "metadata_url",
    "owner_of",
    "published_scopes",
    "scopes_for",
]

log = logging.getLogger("toolplug")

METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
"""Where the protected resource metadata is served (RFC 9728), bare and path-suffixed."""
_KEYS_REFRESH_SECONDS: Final = 30.0
"""An unknown ``kid`` fetches the keys again at most this often (a flood of made-up kids
must not become a flood of requests to the issuer)."""
_KEYS_MAX_AGE_SECONDS: Final = 300.0
"""Keys older than this are fetched again at the next token, so that a key the issuer
withdrew stops verifying tokens within this long."""
_HTTP_TIMEOUT: Final = 10.0
_VERIFIED_ENTRIES: Final = 1024
"""JWTs already verified, kept until they expire (or their key leaves the issuer's JWKS):
a client's next request costs a lookup, not a signature check."""
_NUMERIC_DATES: Final = ("exp", "nbf", "iat")
"""The claims that are times: JSON numbers of seconds (RFC 7519, NumericDate)."""
_ASGI = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]
_NOBODY: Final = "anonymous"
"""What binds a task to a client without an owner: the task id alone, 128 random bits."""


# -- owners -------------------------------------------------------------------------


def access_token(ctx: Any) -> AccessToken | None:
    """The verified token of the request in ``ctx`` (an SDK request context), if any."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, Mapping) else None
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def principal(token: AccessToken) -> str:
    """The owner key of a verified token's principal: issuer, subject and client id."""
    client_id, issuer, subject = principal_components(token)
    who = json.dumps([issuer, subject, client_id])
    return "principal:" + hashlib.sha256(who.encode()).hexdigest()[:32]


def owner_of(ctx: Any) -> str | None:
    """Who owns what this request leaves behind: ``principal:...`` (a verified token),
    ``session:...`` (an HTTP session without auth), ``stdio``, or None (nobody: a stateless
    HTTP client without a verified token, whose state nobody else may see)."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is None:
        return "stdio"
    token = access_token(ctx)
    if token is not None:
        return principal(token)
    session = headers.get("mcp-session-id")
    return f"session:{session}" if session else None


def bind(task_id: str, owner: str | None) -> str:
    """The task id a client is given: the engine's id and a digest of it with its owner, so
    that an id shown to another owner names no task."""
    mark = hashlib.sha256(f"{owner or _NOBODY}\n{task_id}".encode()).hexdigest()[:16]
    return f"{task_id}.{mark}"


def unbind(shown: str, owner: str | None) -> str | None:
    """The engine's id of a task id a client sent, when the task is this owner's."""
    task_id, _, _mark = shown.rpartition(".")
    if not task_id or not hmac.compare_digest(bind(task_id, owner), shown):
        return None
    return task_id


# -- scopes per tool ----------------------------------------------------------------


def scopes_for(
    name: str, metadata: ToolMetadata | None, registry: Registry, auth: AuthSettings
) -> list[str]:
    """The scopes a call of ``name`` needs: ``[tools.NAME] scopes`` (or its mounted
    server's), else ``read_scope`` for a read-only tool and ``write_scope`` for the rest,
    always with ``required_scopes``."""
    configured = registry.config.tool_settings(name).scopes
    if configured is not None:
        own = list(configured)
    elif metadata is not None and metadata.annotations.read_only:
        own = [auth.read_scope]
    else:
        own = [auth.write_scope]
    return sorted({*auth.required_scopes, *own})


def published_scopes(
    item: Prompt | Resource | ResourceTemplate, registry: Registry, auth: AuthSettings
) -> list[str]:
    """The scopes getting a prompt, reading a resource or completing an argument needs
    (each only reads): its mounted server's ``[mcp_servers.NAME] scopes`` when set (an item
    of a mounted server requires its capability, ``mcp_NAME``), else ``read_scope``,
    always with ``required_scopes``."""
    own = [auth.read_scope]
    for name, server in registry.config.mcp_servers.items():
        if f"mcp_{name}" in item.requires and server.scopes is not None:
            own = list(server.scopes)
            break
    return sorted({*auth.required_scopes, *own})


def refusal(what: str, needed: Iterable[str], token: AccessToken | None) -> str:
    """The words of a refusal for want of scopes: ``what`` (``calling echo``) needs the
    scopes the token lacks."""
    granted = set(token.scopes) if token is not None else set()
    return f"{what} needs the scope {' '.join(s for s in needed if s not in granted)}"


def may_call(needed: Iterable[str], token: AccessToken | None) -> bool:
    """Whether the token grants every needed scope (no token: auth is off)."""
    return token is None or set(needed) <= set(token.scopes)


class BareChallenge:
    """ASGI middleware: a 401 for a request that sent no bearer token carries no error code
    (RFC 6750, 3.1: a request without credentials is told how to authenticate, not that
    its token is invalid), only where the protected resource metadata is. A bad token keeps
    the SDK's ``error="invalid_token"``."""

    def __init__(self, app: _ASGI, *, resource_metadata: str) -> None:
        self.app, self._metadata = app, resource_metadata

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or _has_bearer(scope):
            await self.app(scope, receive, send)
            return
        replaced = False

        async def bare(message: MutableMapping[str, Any]) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message.get("status") == 401:
                replaced = True
                await _challenge(send, 401, f'Bearer resource_metadata="{self._metadata}"', {
                    "error_description": "this server needs a bearer token: get one from "
                    "the authorization server its resource metadata names",
                    "resource_metadata": self._metadata,
                })
            elif not replaced:
                await send(message)

        await self.app(scope, receive, bare)


async def _challenge(send: Any, status: int, challenge: str, answer: Mapping[str, Any]) -> None:
    """Answer ``status`` with the ``WWW-Authenticate`` challenge and a JSON body."""
    body = json.dumps(answer).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", challenge.encode()),
        ],
    })
    await send({"type": "http.response.body", "body": body})


def _has_bearer(scope: Mapping[str, Any]) -> bool:
    """Whether the request sent an ``Authorization: Bearer ...`` header (any token)."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization" and value[:7].lower() == b"bearer ":
            return True
    return False


class ScopeGate:
    """ASGI middleware inside the SDK's bearer middleware: a ``tools/call`` whose token
    lacks the tool's scopes gets 403 ``insufficient_scope``, with the scopes it needs in
    ``WWW-Authenticate`` (and ``required_scopes`` are checked on every request)."""

    def __init__(
        self,
        app: _ASGI,
        *,
        needed: Callable[[str], list[str]],
        required: list[str],
        resource_metadata: str,
    ) -> None:
        self.app, self._needed, self._required = app, needed, required
        self._metadata = resource_metadata

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        user = scope.get("user")
        if scope["type"] != "http" or not isinstance(user, AuthenticatedUser):
            await self.app(scope, receive, send)  # the SDK's middleware answers 401
            return
        granted = set(user.scopes)
        missing = [s for s in self._required if s not in granted]
        if missing:
            await self._refuse(send, self._required, "this server needs " + " ".join(missing))
            return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, receive = await _buffered(receive)
        for tool in _called_tools(body):
            needed = self._needed(tool)
            if not set(needed) <= granted:
                lacking = " ".join(s for s in needed if s not in granted)
                await self._refuse(send, needed, f"calling {tool} needs the scope {lacking}")
                return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Any, scopes: list[str], description: str) -> None:
        challenge = (
            f'Bearer error="insufficient_scope", scope="{" ".join(scopes)}", '
            f'resource_metadata="{self._metadata}", error_description="{description}"'
        )
        await _challenge(
            send, 403, challenge, {"error": "insufficient_scope", "error_description": description}
        )


async def _buffered(receive: Any) -> tuple[bytes, Any]:
    """The whole request body (the envelope check in front has bounded its size), and a
    ``receive`` that hands it on unchanged."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: let the app see it
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


def _called_tools(body: bytes) -> list[str]:
    """The tools a JSON-RPC message (or batch) calls; a body the SDK will refuse calls none."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # the SDK answers what it cannot read
        return []
    messages = parsed if isinstance(parsed, list) else [parsed]
    names = []
    for message in messages:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str):
                names.append(name)
    return names


# -- verifying tokens ---------------------------------------------------------------


class Verifier:
    """The SDK's ``TokenVerifier`` for ``[serve.auth]``: static tokens first, then a JWT
    checked against the issuer's keys, or the token introspected (RFC 7662)."""

    def __init__(
        self, settings: AuthSettings, *, env: Mapping[str, str] | None = None,
        base: Path | None = None,
    ) -> None:
        """Read the static tokens and the introspection secret.

        Raises:
            UsageError: a token or secret's variable is unset or its file unreadable.
        """
        self._settings = settings
        env = os.environ if env is None else env
        base = base or Path.cwd()
        self._static: list[tuple[bytes, str, list[str]]] = []
        for name, static in sorted(settings.tokens.items()):
            value = _secret(static.token, env, base, f"serve.auth.tokens.{name}.token")
            self._static.append((value.encode(), name, list(static.scopes)))
        self._secret = (
            _secret(settings.client_secret, env, base, "serve.auth.client_secret")
            if settings.client_secret is not None
            else None
        )
        self._audiences = sorted({settings.audience, settings.audience.rstrip("/")})
        self._issuers = sorted({settings.issuer, settings.issuer.rstrip("/")})
        self._keys: dict[str, Any] = {}
        self._published: dict[str, str] = {}  # each kid's JWK as the issuer published it
        self._keys_at: float | None = None
        self.refresh_seconds = _KEYS_REFRESH_SECONDS
        """An unknown kid fetches the keys again at most this often."""
        self.keys_max_age = _KEYS_MAX_AGE_SECONDS
        """Keys this old are fetched again before the next token is taken."""
        self._keys_lock = asyncio.Lock()
        self._jwks_uri = settings.jwks_uri
        self._verified: dict[str, tuple[str, AccessToken]] = {}  # token: (its kid, its access)
        self._http = httpx.AsyncClient(timeout=_HTTP_TIMEOUT, follow_redirects=False)

    @property
    def secrets(self) -> list[str]:
        """The static tokens and the introspection secret, for the redactor."""
        found = [value.decode() for value, _, _ in self._static]
        return [*found, self._secret] if self._secret else found

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's principal and scopes, or None when it is not valid for this server."""
        found = self._static_token(token)
        if found is not None or self._static_only:
            return found
        try:
            if self._settings.introspection_url is not None:
                return await self._introspect(token)  # asked each time: it may be revoked
            await self._refresh_old_keys()  # a withdrawn key's verifications go with it
            known = self._verified.get(token)
            if known is not None and not _expired(known[1]):
                return known[1]
            self._verified.pop(token, None)
            verified = await self._jwt(token)
            if verified is None:
                return None
            if len(self._verified) >= _VERIFIED_ENTRIES:
                self._verified.pop(next(iter(self._verified)))  # the oldest
            self._verified[token] = verified
            return verified[1]
        except Exception as exc:  # an unreadable token, or the issuer out of reach
            log.info("bearer token refused: %s: %s", type(exc).__name__, exc)
            return None

    @property
    def _static_only(self) -> bool:
        """Static tokens alone: ``tokens`` set, and neither keys nor introspection."""
        settings = self._settings
        return bool(settings.tokens) and not (settings.jwks_uri or settings.introspection_url)

    def _static_token(self, token: str) -> AccessToken | None:
        offered = token.encode()
        for value, name, scopes in self._static:
            if hmac.compare_digest(value, offered):
                return AccessToken(
                    token=token, client_id=name, subject=name, scopes=scopes,
                    resource=self._settings.audience, claims={"iss": self._settings.issuer},
                )
        return None

    async def _jwt(self, token: str) -> tuple[str, AccessToken] | None:
        """The kid of the key that signed the token and its access, or None."""
        header = jwt.get_unverified_header(token)
        algorithm = header.get("alg")
        if algorithm not in self._settings.algorithms:
            log.info("bearer token refused: its algorithm %r is not allowed", algorithm)
            return None
        key = await self._key(header.get("kid"))
        if key is None:
            log.info("bearer token refused: no key of the issuer has kid %r", header.get("kid"))
            return None
        kid = header.get("kid")
        used = str(kid) if kid is not None else next(iter(self._keys))  # None: the one key
        claims = jwt.decode(
            token,
            key,
            algorithms=[algorithm],
            audience=self._audiences,
            issuer=self._issuers,
            leeway=self._settings.leeway_seconds,
            options={"require": ["exp", "iss", "aud"]},
        )
        wrong = _not_numeric(claims)
        if wrong is not None:
            log.info("bearer token refused: %s", wrong)
            return None
        return used, self._access(token, claims)

    def _access(self, token: str, claims: Mapping[str, Any]) -> AccessToken:
        """The SDK's ``AccessToken``; its ``expires_at`` is when this server stops taking
        the token: its ``exp`` and ``leeway_seconds`` (the SDK's middleware refuses a token
        past ``expires_at``, so ``exp`` alone would leave clocks no leeway)."""
        scope = claims.get("scope", claims.get("scp", ""))
        scopes = scope.split() if isinstance(scope, str) else [str(s) for s in scope or []]
        client = claims.get("client_id") or claims.get("azp") or ""
        exp = claims.get("exp")
        return AccessToken(
            token=token,
            client_id=str(client),
            subject=str(claims["sub"]) if claims.get("sub") is not None else None,
            scopes=scopes,
            expires_at=(
                int(exp + self._settings.leeway_seconds) if isinstance(exp, int | float) else None
            ),
            resource=self._settings.audience,
            claims={"iss": claims.get("iss", self._settings.issuer)},
        )

    async def _refresh_old_keys(self) -> None:
        """Fetch the keys again when they are ``keys_max_age`` old; while the issuer cannot
        be reached the keys known keep serving, and it is asked again a little later."""
        if self._keys_at is None or time.monotonic() - self._keys_at < self.keys_max_age:
            return
        async with self._keys_lock:
            if self._keys_at is None or time.monotonic() - self._keys_at < self.keys_max_age:
                return  # another request fetched them meanwhile
            try:
                await self._fetch_keys()
            except Exception as exc:
                log.warning("the issuer's keys could not be fetched again (%s): %s",
                            type(exc).__name__, exc)
                self._keys_at = time.monotonic() - self.keys_max_age + self.refresh_seconds

    async def _key(self, kid: str | None) -> Any:
        """The issuer's key for ``kid`` (with no kid: its one key), fetching the keys when
        they are unknown or ``kid`` is new (at most every ``refresh_seconds``)."""
        found = self._pick(kid)
        if found is not None:
            return found
        async with self._keys_lock:
            found = self._pick(kid)
            since = None if self._keys_at is None else time.monotonic() - self._keys_at
            if found is None and (since is None or since >= self.refresh_seconds):
                await self._fetch_keys()
                found = self._pick(kid)
        return found

    def _pick(self, kid: str | None) -> Any:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _fetch_keys(self) -> None:
        self._keys_at = time.monotonic()
        if self._jwks_uri is None:
            self._jwks_uri = await self._discover()
        response = await self._http.get(self._jwks_uri)
        response.raise_for_status()
        published = response.json()
        keys = PyJWKSet.from_dict(published)
        self._keys = {
            str(k.key_id or ""): k.key for k in keys.keys if (k.public_key_use or "sig") == "sig"
        }
        jwks = {
            str(jwk.get("kid") or ""): json.dumps(jwk, sort_keys=True)
            for jwk in published.get("keys", []) if isinstance(jwk, dict)
        }
        withdrawn = {kid for kid, jwk in self._published.items() if jwks.get(kid) != jwk}
        self._published = {kid: jwks[kid] for kid in self._keys}
        if withdrawn:  # a key gone (or changed) verifies nothing any more, kept or not
            for token in [t for t, (kid, _) in self._verified.items() if kid in withdrawn]:
                del self._verified[token]
            log.info("the issuer no longer publishes the keys %s", sorted(withdrawn))

    async def _discover(self) -> str:
        """The issuer's ``jwks_uri``, from its RFC 8414 (or OpenID) metadata."""
        issuer = self._settings.issuer.rstrip("/")
        scheme, _, rest = issuer.partition("://")
        host, _, path = rest.partition("/")
        path = f"/{path}" if path else ""
        for url in (
            f"{scheme}://{host}/.well-known/oauth-authorization-server{path}",
            f"{issuer}/.well-known/openid-configuration",
        ):
            response = await self._http.get(url)
            if response.status_code == 200:
                metadata = response.json()
                if str(metadata.get("issuer", "")).rstrip("/") != issuer:
                    raise ValueError(f"{url} names another issuer: {metadata.get('issuer')!r}")
                jwks = metadata.get("jwks_uri")
                if isinstance(jwks, str):
                    return jwks
        raise ValueError(f"the issuer {issuer} publishes no jwks_uri in its metadata")

    async def _introspect(self, token: str) -> AccessToken | None:
        settings = self._settings
        assert settings.introspection_url is not None
        assert settings.client_id is not None
        response = await self._http.post(
            settings.introspection_url,
            data={"token": token, "token_type_hint": "access_token"},
            auth=(settings.client_id, self._secret or ""),
        )
        response.raise_for_status()
        claims = response.json()
        if not isinstance(claims, dict) or claims.get("active") is not True:
            return None
        audiences = claims.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else audiences or []
        if not set(audiences) & set(self._audiences):
            log.info("bearer token refused: issued for %r, not for this server", audiences)
            return None
        if claims.get("iss") is not None and claims["iss"] not in self._issuers:
            return None
        wrong = _not_numeric(claims)
        if wrong is not None:
            log.info("bearer token refused: its introspection says %s", wrong)
            return None
        now, leeway = time.time(), settings.leeway_seconds
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if isinstance(exp, int | float) and exp + leeway < now:
            return None
        if isinstance(nbf, int | float) and nbf - leeway > now:
            return None
        return self._access(token, claims)

    async def aclose(self) -> None:
        """Close the connections to the issuer."""
        await self._http.aclose()


def _expired(token: AccessToken) -> bool:
    """Past its ``expires_at``, which has the leeway in it already."""
    return token.expires_at is not None and token.expires_at < time.time()


def _not_numeric(claims: Mapping[str, Any]) -> str | None:
    """What is wrong with a time claim that is not a JSON number (RFC 7519 NumericDate: a
    string such as "1700000000" is not one, nor ``true``), or None when all are numbers."""
    for name in _NUMERIC_DATES:
        value = claims.get(name)
        if value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value):
            return (
                f"its {name} claim is {type(value).__name__} {value!r:.40}, and must be a "
                "number of seconds since 1970 (RFC 7519 NumericDate)"
            )
    return None


def _secret(value: Any, env: Mapping[str, str], base: Path, key: str) -> str:
    try:
        text, _ = resolve_value(value, env=env, base=base)
    except OSError as exc:
        raise UsageError(f"{key}: cannot read {value.file}: {exc.strerror or exc}") from None
    if not text:
        raise UsageError(
            f"{key}: the environment variable {value.env} is not set; set it, or point "
            "the key at a file with { file = \"PATH\" }"
        )
    return text


def metadata_url(audience: str) -> str:
    """The path-suffixed protected resource metadata URL of a resource (RFC 9728, 3.1)."""
    return str(build_resource_metadata_url(AnyHttpUrl(audience)))
