"""What an operation's ``security`` asks for, against what ``[openapi.NAME]`` supplies.

A description says which of its ``securitySchemes`` each operation needs (its own
``security``, else the document's): alternatives, each a set of schemes that go together,
``{}`` meaning "none". An operation none of whose alternatives the configuration can meet
is unavailable, and its reason names the scheme it needs (its type, its flows and their
URLs, or its discovery URL) and the configuration that supplies it. The configured auth
counts for every scheme of its kind (a header for an API key in a header or for an
``Authorization`` scheme, a bearer token for http bearer, oauth2 and openIdConnect), so a
description that declares security and works today with ``headers`` keeps working. A
scheme toolplug cannot judge (``mutualTLS``, a name the description never defines) counts
as met: the API's own answer is the reason then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolplug.config._openapi import ApiAuth, ApiSettings

__all__ = ["unmet"]

_FLOW_WORDS: Final = {
    "clientCredentials": "client credentials",
    "authorizationCode": "authorization code",
    "implicit": "implicit",
    "password": "password",
}


def _supplied(settings: ApiSettings, scheme: Mapping[str, Any]) -> bool:
    kind = scheme.get("type")
    auth = settings.auth
    if kind not in ("apiKey", "http", "oauth2", "openIdConnect"):
        return True  # mutualTLS, or a type of a later OpenAPI: not toolplug's to judge
    if auth is None:
        return False
    if auth == "oauth":
        if kind == "openIdConnect":
            return True
        flow = "clientCredentials" if _machine(settings) else "authorizationCode"
        return kind == "oauth2" and flow in (scheme.get("flows") or {})
    assert isinstance(auth, ApiAuth)
    where = str(scheme.get("in", "")).lower()
    header = (auth.name or "").lower()
    if auth.type == "query":
        return kind == "apiKey" and where == "query"
    if auth.type == "basic":
        return kind == "http" and scheme.get("scheme") == "basic"
    if auth.type == "bearer":
        if kind == "http":
            return scheme.get("scheme") == "bearer"
        return kind != "apiKey" or (where == "header" and
                                     str(scheme.get("name", "")).lower() == "authorization")
    # a header of the user's naming: an API key in a header (or a cookie, when it is the
    # Cookie header), or any scheme sent as Authorization
    if kind == "apiKey":
        return where == "header" or (where == "cookie" and header == "cookie")
    return header == "authorization"


def _machine(settings: ApiSettings) -> bool:
    oauth = settings.oauth_settings
    return oauth is not None and oauth.grant == "client_credentials"


def _signs_in(settings: ApiSettings, scheme: Mapping[str, Any]) -> bool:
    """Whether the scheme is one a person's sign-in (``grant = "authorization_code"``)
    supplies."""
    if settings.auth != "oauth" or _machine(settings):
        return False
    kind = scheme.get("type")
    return kind == "openIdConnect" or (
        kind == "oauth2" and "authorizationCode" in (scheme.get("flows") or {})
    )


def _named(name: str, scheme: Mapping[str, Any]) -> str:
    """The scheme in words: its name, type and what the description says of it."""
    kind = scheme.get("type")
    if kind == "apiKey":
        what = f"an API key in the {scheme.get('in', '?')} {scheme.get('name', '?')!r}"
    elif kind == "http":
        what = f"HTTP {scheme.get('scheme', '?')} authentication"
    elif kind == "openIdConnect":
        what = f"OpenID Connect, discovered at {scheme.get('openIdConnectUrl', '?')}"
    else:
        flows = scheme.get("flows") or {}
        said = []
        for flow, values in flows.items():
            urls = ", ".join(
                f"{key} {values[key]}"
                for key in ("tokenUrl", "authorizationUrl") if values.get(key)
            )
            said.append(_FLOW_WORDS.get(flow, flow) + (f" ({urls})" if urls else ""))
        what = "OAuth 2.0" + (f", flows: {'; '.join(said)}" if said else "")
    return f"the security scheme {name!r} ({kind}: {what})"


def _how(api: str, scheme: Mapping[str, Any]) -> str:
    """The configuration that supplies the scheme."""
    table = f"[openapi.{api}]"
    kind = scheme.get("type")
    secret = '{ env = "VAR" }'
    if kind == "apiKey":
        where = "query" if scheme.get("in") == "query" else "header"
        return (
            f'{table} auth = {{ type = "{where}", name = "{scheme.get("name", "NAME")}", '
            f"value = {secret} }}"
        )
    if kind == "http" and scheme.get("scheme") == "basic":
        return f'{table} auth = {{ type = "basic", username = ..., password = {secret} }}'
    if kind == "http":
        return f'{table} auth = {{ type = "bearer", token = {secret} }}'
    bearer = f'{table} auth = {{ type = "bearer", token = {secret} }} with a token you obtained'
    flows = scheme.get("flows") or {}
    ways = []
    if kind == "openIdConnect" or "authorizationCode" in flows:
        ways.append(f'{table} auth = "oauth" and a sign-in: `toolplug login {api}`')
    if kind == "openIdConnect" or "clientCredentials" in flows:
        ways.append(
            f'{table} auth = "oauth" with [openapi.{api}.oauth] grant = "client_credentials", '
            f"client_id and client_secret = {secret}"
        )
    return "; or ".join([*ways, bearer])


def unmet(
    settings: ApiSettings,
    requirements: Sequence[Sequence[str]] | None,
    schemes: Mapping[str, Mapping[str, Any]],
    *,
    signed_out: str | None = None,
) -> str | None:
    """Why the configuration meets none of an operation's security alternatives, or None
    when it meets one (or the operation asks for none). ``signed_out``: why the person's
    sign-in of ``auth = "oauth"`` cannot be used now (the schemes it supplies are unmet)."""
    if not requirements:
        return None
    missing: list[list[str]] = []

    def met(name: str) -> bool:
        scheme = schemes[name]
        if signed_out is not None and _signs_in(settings, scheme):
            return False
        return _supplied(settings, scheme)

    for names in requirements:
        lacking = [n for n in names if n in schemes and not met(n)]
        if not lacking:
            return None
        missing.append(lacking)
    said = []
    for lacking in missing:
        said.append(" and ".join(
            f"{_named(n, schemes[n])}: "
            + (signed_out if signed_out is not None and _signs_in(settings, schemes[n])
               else _how(settings.name, schemes[n]))
            for n in lacking
        ))
    unique = list(dict.fromkeys(said))
    if len(unique) == 1:
        return f"the API needs {unique[0]}"
    return "the API needs one of: " + "; or ".join(unique)
