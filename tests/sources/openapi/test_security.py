"""A description's ``security`` against what ``[openapi.NAME]`` supplies: an operation
whose schemes the configuration cannot meet is unavailable, its reason naming the scheme
(type, flows and their URLs, discovery URL) and the configuration that supplies it; the
anonymous alternative ``{}`` keeps an operation available; the configured auth counts for
every scheme of its kind, so what works with ``headers``-style auth today keeps working."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug import ConfigError
from toolplug.sources.openapi import described, report

_SCHEMES = {
    "key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
    "token": {"type": "http", "scheme": "bearer"},
    "machine": {
        "type": "oauth2",
        "flows": {"clientCredentials": {
            "tokenUrl": "https://auth.example.com/token", "scopes": {"notes:read": "read"},
        }},
    },
    "person": {
        "type": "oauth2",
        "flows": {"authorizationCode": {
            "authorizationUrl": "https://auth.example.com/authorize",
            "tokenUrl": "https://auth.example.com/token", "scopes": {},
        }},
    },
    "oidc": {
        "type": "openIdConnect",
        "openIdConnectUrl": "https://auth.example.com/.well-known/openid-configuration",
    },
    "tls": {"type": "mutualTLS"},
}


def _op(operation_id: str, **more: Any) -> dict[str, Any]:
    return {"operationId": operation_id, "responses": {"200": {"description": "ok"}}, **more}


def _description(tmp_path: Path) -> Path:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "Secured", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "security": [{"token": []}],  # every operation, unless it says otherwise
        "components": {"securitySchemes": {
            **_SCHEMES, "ref": {"$ref": "#/components/securitySchemes/key"},
        }},
        "paths": {
            "/inherited": {"get": _op("inherited")},
            "/public": {"get": _op("public", security=[])},
            "/keyed": {"get": _op("keyed", security=[{"key": []}])},
            "/maybe": {"get": _op("maybe", security=[{}, {"key": []}])},
            "/machine": {"get": _op("machine", security=[{"machine": ["notes:read"]}])},
            "/person": {"get": _op("person", security=[{"person": []}])},
            "/oidc": {"get": _op("oidc", security=[{"oidc": []}])},
            "/both": {"get": _op("both", security=[{"key": [], "token": []}])},
            "/either": {"get": _op("either", security=[{"key": []}, {"token": []}])},
            "/tls": {"get": _op("tls", security=[{"tls": []}])},
            "/unknown": {"get": _op("unknown", security=[{"nowhere": []}])},
        },
    }
    path = tmp_path / "secured.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _load(tmp_path: Path, env: dict[str, str] | None = None, **api: Any) -> toolplug.Registry:
    return toolplug.load({
        "cache_dir": str(tmp_path / "cache"),
        "openapi": {"sec": {"spec": str(_description(tmp_path)), **api}},
    }, env=env or {})


def _available(registry: toolplug.Registry) -> set[str]:
    return {
        n.removeprefix("sec_") for n in registry.tools
        if n.startswith("sec_") and registry.availability(n).available
    }


def _reason(registry: toolplug.Registry, name: str) -> str:
    (reason,) = registry.availability(f"sec_{name}").reasons
    return reason


def test_without_credentials_each_secured_operation_names_the_scheme_it_needs(
    tmp_path: Path,
) -> None:
    registry = _load(tmp_path)
    # no security, the anonymous alternative, and schemes toolplug cannot judge stay offered
    assert _available(registry) == {"public", "maybe", "tls", "unknown"}
    keyed = _reason(registry, "keyed")
    assert "'key' (apiKey: an API key in the header 'X-Api-Key')" in keyed
    assert '[openapi.sec] auth = { type = "header", name = "X-Api-Key"' in keyed
    inherited = _reason(registry, "inherited")  # the document's own security
    assert "'token' (http: HTTP bearer authentication)" in inherited
    assert '[openapi.sec] auth = { type = "bearer", token = { env = "VAR" } }' in inherited
    machine = _reason(registry, "machine")
    assert "(oauth2: OAuth 2.0, flows: client credentials (tokenUrl " \
        "https://auth.example.com/token))" in machine
    assert 'auth = "oauth" with [openapi.sec.oauth] grant = "client_credentials"' in machine
    person = _reason(registry, "person")
    assert "authorization code (tokenUrl https://auth.example.com/token, authorizationUrl " \
        "https://auth.example.com/authorize)" in person
    assert 'type = "bearer"' in person
    assert '[openapi.sec] auth = "oauth" and a sign-in: `toolplug login sec`' in person
    assert 'grant = "client_credentials"' not in person
    oidc = _reason(registry, "oidc")
    assert "(openIdConnect: OpenID Connect, discovered at " \
        "https://auth.example.com/.well-known/openid-configuration)" in oidc
    assert 'auth = "oauth"' in oidc
    both = _reason(registry, "both")  # schemes that go together: both named
    assert "'key'" in both
    assert " and the security scheme 'token'" in both
    either = _reason(registry, "either")  # alternatives: each named
    assert either.count("; or the security scheme") == 1
    # each reason is a capability of its own, what doctor and list --all show
    assert keyed.startswith("capability 'openapi_sec_auth")
    found = described(registry)
    assert found is not None
    notes = [line for line in report(found) if "operation(s) unavailable" in line]
    assert len(notes) == 7  # inherited, keyed, machine, person, oidc, both, either
    assert any(line.startswith("    note: 1 operation(s) unavailable: the API needs the "
                               "security scheme 'key'") for line in notes)


def test_the_configured_auth_meets_every_scheme_of_its_kind(tmp_path: Path) -> None:
    env = {"V": "secret-value"}
    header = _load(tmp_path, env, auth={"type": "header", "name": "X-Other", "value": {"env": "V"}})
    # an API key in a header, whatever the header's name (the description may be loose)
    assert _available(header) >= {"keyed", "maybe", "public"}
    assert "inherited" not in _available(header)
    assert "'token'" in _reason(header, "both")
    assert "either" in _available(header)
    header.close()
    authorization = _load(
        tmp_path, env, auth={"type": "header", "name": "Authorization", "value": {"env": "V"}}
    )
    # a header sent as Authorization meets every Authorization scheme
    assert _available(authorization) >= {"inherited", "machine", "person", "oidc", "keyed"}
    authorization.close()
    bearer = _load(tmp_path, env, auth={"type": "bearer", "token": {"env": "V"}})
    assert _available(bearer) == {
        "public", "maybe", "tls", "unknown", "inherited", "machine", "person", "oidc", "either",
    }
    assert "'key'" in _reason(bearer, "keyed")
    bearer.close()
    query = _load(tmp_path, env, auth={"type": "query", "name": "k", "value": {"env": "V"}})
    assert "keyed" not in _available(query)  # the key goes in a header, not the query
    query.close()


def test_oauth_meets_client_credentials_and_openid_connect_schemes(tmp_path: Path) -> None:
    registry = _load(
        tmp_path, {"S": "s"}, auth="oauth",
        oauth={"grant": "client_credentials", "client_id": "c", "client_secret": {"env": "S"}},
    )
    def schemes(name: str) -> list[str]:
        reasons = registry.availability(f"sec_{name}").reasons
        return [r for r in reasons if "security scheme" in r]

    assert schemes("machine") == []
    assert schemes("oidc") == []
    # an authorization code flow only: a person's sign-in, which auth = "oauth" is not
    assert "'person'" in schemes("person")[0]
    registry.close()


def test_a_person_s_grant_meets_authorization_code_and_openid_connect_once_signed_in(
    tmp_path: Path,
) -> None:
    registry = toolplug.load({
        "cache_dir": str(tmp_path / "cache"), "state_dir": str(tmp_path / "state"),
        "openapi": {"sec": {"spec": str(_description(tmp_path)), "auth": "oauth"}},
    }, env={})
    for name in ("person", "oidc"):  # no sign-in yet: the scheme and the command
        assert _reason(registry, name).endswith("needs a sign-in: run `toolplug login sec`")
    assert "'person' (oauth2" in _reason(registry, "person")
    # a client credentials flow only: a person's sign-in does not meet it
    assert 'grant = "client_credentials"' in _reason(registry, "machine")
    assert {"public", "maybe"} <= _available(registry)
    registry.close()


def test_oauth_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="client_metadata_url belongs to mounted servers"):
        _load(tmp_path, auth="oauth", oauth={"client_metadata_url": "https://a.example/c"})
    with pytest.raises(ConfigError, match='needs auth = "oauth"'):
        _load(tmp_path, oauth={"client_id": "c"})
    with pytest.raises(ConfigError, match="needs client_id and client_secret"):
        _load(tmp_path, auth="oauth", oauth={"grant": "client_credentials"})
