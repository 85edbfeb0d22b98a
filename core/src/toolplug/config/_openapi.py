"""The ``[openapi.NAME]`` tables: HTTP APIs described by OpenAPI whose operations become tools.

Parsed once, with the rest of the configuration, into typed models; ``toolplug.sources.openapi``
reads the description and turns each operation into a toolplug tool. Credentials come
only from ``{ env = "VAR" }`` or ``{ file = "PATH" }``; they are resolved when the API is
loaded, against the environment the registry was loaded with.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Final, Literal

from pydantic import Field, model_validator

from toolplug.config._gathered import GatheredToolSettings
from toolplug.config._oauth import OAuthSettings
from toolplug.config._settings import FromEnv, FromFile, parse_named_tables
from toolplug.contract._settings import SINK_KINDS, Scope, StrictTable

__all__ = ["ApiAuth", "ApiSettings", "ApiTrust", "OperationSettings", "parse_openapi"]

API_NAME: Final = r"^[a-z][a-z0-9_]{0,31}$"
DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
"""The largest description read by default (GitHub's, the largest we know, is 13 MB)."""
DEFAULT_MAX_OPERATIONS: Final = 10_000
"""The most operations a description may have by default (GitHub's has about 1,200)."""
_SELECTORS: Final = ("tag:", "path:", "method:")

Secret = FromEnv | FromFile


class ApiTrust(StrictTable):
    """``trust = { output = "untrusted", private = true, sinks = [...], refs = [...],
    destinations = [...] }``: the labels of an API's tools (by default: untrusted output,
    private, the query and body arguments sinks, no refs or destinations). Each name applies
    to the operations that have that argument (as a sink, for refs and destinations)."""

    output: Literal["trusted", "untrusted"] = Field(
        default="untrusted", description='"trusted" or "untrusted"'
    )
    private: bool = Field(default=True, description="a boolean: the output is the user's own data")
    sinks: list[str] | None = Field(
        default=None,
        description="a list of argument names (default: every query and body argument)",
    )
    refs: list[str] = Field(
        default_factory=list,
        description="a list of argument names whose values name something the API holds "
        "(each a ref of the operations where it is a sink)",
    )
    destinations: list[str] = Field(
        default_factory=list,
        description="a list of argument names whose values say where a call goes (each a "
        "destination of the operations where it is a sink)",
    )
    url_sinks: list[str] = Field(
        default_factory=list,
        description="a list of argument names whose values are URLs (where each is a sink)",
    )
    address_sinks: list[str] = Field(
        default_factory=list,
        description="a list of argument names whose values are addresses (where each is a sink)",
    )
    path_sinks: list[str] = Field(
        default_factory=list,
        description="a list of argument names whose values are file paths (where each is a sink)",
    )


class ApiAuth(StrictTable):
    """``auth = { type = "bearer", token = { env = "VAR" } }`` and its three siblings."""

    type: Literal["bearer", "header", "query", "basic"] = Field(
        description='one of "bearer", "header", "query", "basic"'
    )
    token: Secret | None = Field(
        default=None, description='{ env = "VAR" } or { file = "PATH" } (bearer)'
    )
    name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$",
        description="the header or query parameter name (header, query)",
    )
    value: Secret | None = Field(
        default=None, description='{ env = "VAR" } or { file = "PATH" } (header, query)'
    )
    username: str | Secret | None = Field(
        default=None, description='a user name, { env = "VAR" } or { file = "PATH" } (basic)'
    )
    password: Secret | None = Field(
        default=None, description='{ env = "VAR" } or { file = "PATH" } (basic)'
    )

    @model_validator(mode="after")
    def _complete(self) -> ApiAuth:
        needs = {
            "bearer": ("token",),
            "header": ("name", "value"),
            "query": ("name", "value"),
            "basic": ("username", "password"),
        }[self.type]
        missing = [k for k in needs if getattr(self, k) is None]
        if missing:
            raise ValueError(f'auth type "{self.type}" needs {" and ".join(missing)}')
        extra = sorted(
            k for k in ("token", "name", "value", "username", "password")
            if k not in needs and getattr(self, k) is not None
        )
        if extra:
            raise ValueError(f'auth type "{self.type}" takes no {", ".join(extra)}')
        return self

    def secrets(self) -> dict[str, str | Secret]:
        """The values to resolve, by key."""
        return {
            k: getattr(self, k)
            for k in ("token", "value", "username", "password")
            if getattr(self, k) is not None
        }


class OperationSettings(GatheredToolSettings):
    """``[openapi.NAME.tools.OPERATION_ID]``: what toolplug adds to one operation's tool, and
    its call settings (every key of ``[tools.NAME]``)."""

    description: str | None = Field(
        default=None, min_length=1, description="one sentence on one line"
    )


class ApiSettings(StrictTable):
    """``[openapi.NAME]``: one HTTP API and the operations of its description to offer."""

    name: str = Field(pattern=API_NAME, description="a lower-case name, a letter first")
    spec: str = Field(
        min_length=1,
        description="the path (relative to the configuration) or http(s) URL of an OpenAPI "
        "3.0 or 3.1 description, JSON or YAML",
    )
    base_url: str | None = Field(
        default=None,
        pattern=r"^https?://",
        description="the http(s) URL requests go to (default: the description's first server)",
    )
    auth: ApiAuth | Literal["oauth"] | None = Field(
        default=None,
        description='a table: type = bearer|header|query|basic, and its values; or "oauth": '
        "an access token from the authorization server the description's oauth2 or "
        "openIdConnect scheme names (its table: oauth)",
    )
    oauth: OAuthSettings | None = Field(
        default=None,
        description='a table: grant = "authorization_code" (a person signs in: toolplug '
        'login NAME) or "client_credentials", client_id, client_secret, token_endpoint_auth, '
        'client_assertion_key, scopes, redirect_port, issuer (with auth = "oauth")',
    )
    enabled: bool = Field(default=True, description="a boolean")
    include: list[str] = Field(
        default_factory=list,
        description='a list of operationIds or globs, "tag:NAME", "path:/GLOB", "method:GET"',
    )
    exclude: list[str] = Field(
        default_factory=list,
        description='a list of operationIds or globs, "tag:NAME", "path:/GLOB", "method:GET"',
    )
    prefix: str | None = Field(
        default=None,
        pattern=r"^([a-z][a-z0-9_]{0,31})?$",
        description='lower-case letters, digits and "_", a letter first, or "" for none',
    )
    category: str = Field(
        default="utility", pattern=r"^[a-z][a-z0-9_]{0,31}$", description="a category name"
    )
    approval: Literal["auto", "always", "never"] = Field(
        default="auto",
        description='one of "auto", "always", "never": the default of every operation '
        '("auto": GET and HEAD run, other methods are asked)',
    )
    scopes: list[Scope] | None = Field(
        default=None,
        description="a list of OAuth scopes: the default of every operation under [serve.auth]",
    )
    trust: ApiTrust = Field(
        default_factory=ApiTrust,
        description=f"a table: output, private, sinks, {', '.join(SINK_KINDS)}",
    )
    timeout_seconds: float = Field(
        default=30.0, gt=0, description="a positive number of seconds per request"
    )
    spec_ttl_seconds: float = Field(
        default=86400.0, ge=0, description="a number of seconds a description read from a URL "
        "is trusted before it is read again"
    )
    max_bytes: int = Field(
        default=DEFAULT_MAX_BYTES, gt=0,
        description="a positive number of bytes: the largest description read",
    )
    max_operations: int = Field(
        default=DEFAULT_MAX_OPERATIONS, gt=0,
        description="a positive number: the most operations a description may have",
    )
    tools: dict[str, OperationSettings] = Field(
        default_factory=dict, description="a table of per-operation tables, by operationId"
    )

    @model_validator(mode="after")
    def _oauth(self) -> ApiSettings:
        if self.oauth is not None and self.auth != "oauth":
            raise ValueError('an oauth table needs auth = "oauth"')
        if self.auth != "oauth":
            return self
        oauth = self.oauth_settings
        assert oauth is not None
        if oauth.client_metadata_url is not None:
            raise ValueError(
                "oauth: client_metadata_url belongs to mounted servers; an OpenAPI source "
                "takes client_id, or registers itself where the discovery document offers it"
            )
        problem = oauth.problem()
        if problem:
            raise ValueError(f"oauth: {problem}")
        if oauth.on_behalf_of is not None:
            raise ValueError("oauth: on_behalf_of belongs to mounted servers")
        return self

    @property
    def oauth_settings(self) -> OAuthSettings | None:
        """The OAuth client's settings (defaults when ``auth = "oauth"`` has no table)."""
        if self.auth != "oauth":
            return None
        return self.oauth or OAuthSettings()

    @model_validator(mode="after")
    def _selectors(self) -> ApiSettings:
        for pattern in (*self.include, *self.exclude):
            if pattern.startswith("method:") and pattern[7:].lower() not in _METHODS:
                raise ValueError(
                    f"{pattern!r} names no HTTP method; use one of "
                    + ", ".join(f"method:{m.upper()}" for m in _METHODS)
                )
        return self

    @property
    def name_prefix(self) -> str:
        """What the API's tool names are prefixed with: ``prefix``, or ``NAME_``."""
        return f"{self.name}_" if self.prefix is None else self.prefix

    def selects(
        self, operation_id: str, *, method: str, path: str, tags: tuple[str, ...]
    ) -> bool:
        """Whether ``include`` and ``exclude`` keep an operation."""

        def hit(pattern: str) -> bool:
            if pattern.startswith("tag:"):
                return any(fnmatch.fnmatchcase(t, pattern[4:]) for t in tags)
            if pattern.startswith("path:"):
                return fnmatch.fnmatchcase(path, pattern[5:])
            if pattern.startswith("method:"):
                return method.lower() == pattern[7:].lower()
            return fnmatch.fnmatchcase(operation_id, pattern)

        included = not self.include or any(hit(p) for p in self.include)
        return included and not any(hit(p) for p in self.exclude)


_METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def parse_openapi(table: Any, *, file: str, prefix: str = "") -> dict[str, ApiSettings]:
    """The ``[openapi]`` table, checked: one ``ApiSettings`` per API.

    Raises:
        ConfigError: naming the file, the key and what is expected.
    """
    return parse_named_tables(
        table, ApiSettings, file=file, key=prefix + "openapi",
        expected="[openapi.NAME] tables",
        entry='spec = "PATH or URL of an OpenAPI description"',
        what="API name", longest=32,
        rule=lambda problems: next((p for p in problems if p["type"] == "value_error"), None),
    )
