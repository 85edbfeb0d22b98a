"""``auth = "oauth"`` and its ``oauth`` table: how toolplug signs in to a remote source.

One model for every remote source that speaks OAuth 2.1 (mounted MCP servers, and OpenAPI
sources whose description's ``securitySchemes`` name the authorization server). Nothing
here talks to the network: ``toolplug.sources.mcp._oauth`` and
``toolplug.sources.openapi._signin`` run the flow, ``toolplug.state._tokens`` keeps what it
is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal
from urllib.parse import urlparse

from pydantic import Field, ValidationError

from toolplug.config._settings import Algorithm, Value, _fail, _raiser
from toolplug.contract._settings import StrictTable

__all__ = ["GRANTS", "TOKEN_KEYS", "OAuthSettings", "TokenSettings", "parse_tokens"]

GRANTS: Final = ("authorization_code", "client_credentials")


class OAuthSettings(StrictTable):
    """``[mcp_servers.NAME.oauth]``: the client toolplug is to the server's authorization
    server. Every key is optional: without ``client_id`` toolplug registers itself (a
    Client ID Metadata Document when ``client_metadata_url`` is set and the server takes
    one, else dynamic registration). A machine-to-machine client (``grant =
    "client_credentials"``) proves itself with its ``client_secret`` or, with
    ``token_endpoint_auth = "private_key_jwt"``, with assertions its
    ``client_assertion_key`` signs."""

    grant: Literal["authorization_code", "client_credentials"] = Field(
        default="authorization_code",
        description='"authorization_code" (a person signs in: toolplug login NAME) or '
        '"client_credentials" (machine to machine: client_id and client_secret, no sign-in)',
    )
    client_id: str | None = Field(
        default=None, min_length=1, description="a pre-registered client id"
    )
    client_secret: Value | None = Field(
        default=None,
        description='the pre-registered client\'s secret: { env = "VAR" } or { file = "PATH" }',
    )
    token_endpoint_auth: Literal[
        "client_secret_basic", "client_secret_post", "private_key_jwt"
    ] = Field(
        default="client_secret_basic",
        description='how the client proves itself to the token endpoint: "client_secret_basic" '
        'or "client_secret_post" (its client_secret), or "private_key_jwt" (an assertion '
        "signed with its client_assertion_key, RFC 7523)",
    )
    client_assertion_key: Value | None = Field(
        default=None,
        description='the PEM private key that signs the client\'s assertions '
        '(token_endpoint_auth = "private_key_jwt"): { env = "VAR" } or { file = "PATH" }',
    )
    client_assertion_algorithm: Algorithm = Field(
        default="RS256",
        description="the JWS algorithm the assertions are signed with (the key's kind: RS*/PS* "
        "an RSA key, ES256/ES384/ES512 an EC key of P-256/P-384/P-521, EdDSA an Ed25519 key)",
    )
    scopes: list[str] | None = Field(
        default=None,
        description="a list of scopes to ask for (default: what the server's challenge or "
        "metadata names)",
    )
    client_metadata_url: str | None = Field(
        default=None,
        description="an https URL with a path: toolplug's Client ID Metadata Document",
    )
    redirect_port: int | None = Field(
        default=None, ge=1, le=65535,
        description="the loopback port toolplug login listens on (default: a free port)",
    )
    issuer: str | None = Field(
        default=None, pattern=r"^https?://",
        description="the authorization server the client credentials belong to",
    )
    on_behalf_of: Literal["principal", "operator"] | None = Field(
        default=None,
        description='when toolplug serves others ([serve.auth]): "principal" (each of its '
        'principals signs in to the server on its own, the default of a person\'s grant) or '
        '"operator" (every principal\'s call goes with the operator\'s sign-in, the only '
        "choice of client credentials)",
    )

    def problem(self) -> str | None:
        """What does not fit together, in words (None: nothing). The server's table checks
        it, so the error names its key as every other of its checks does."""
        try:
            self._check()
        except ValueError as exc:
            return str(exc)
        return None

    def _check(self) -> None:
        if isinstance(self.client_secret, str):
            raise ValueError(
                'client_secret must not be written in the file: use { env = "VAR" } or '
                '{ file = "PATH" }'
            )
        if isinstance(self.client_assertion_key, str):
            raise ValueError(
                'client_assertion_key must not be written in the file: use { env = "VAR" } or '
                '{ file = "PATH" }'
            )
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("client_secret needs the client_id it belongs to")
        signed = self.token_endpoint_auth == "private_key_jwt"
        if signed != (self.client_assertion_key is not None):
            raise ValueError(
                'token_endpoint_auth = "private_key_jwt" and client_assertion_key go together '
                "(the key signs the assertion that method sends)"
            )
        if signed and self.client_secret is not None:
            raise ValueError(
                'token_endpoint_auth = "private_key_jwt" signs with client_assertion_key: '
                "remove client_secret"
            )
        if signed and self.grant != "client_credentials":
            raise ValueError(
                'token_endpoint_auth = "private_key_jwt" belongs to grant = '
                '"client_credentials" (machine to machine)'
            )
        if self.grant == "client_credentials":
            if self.client_id is None or (self.client_secret is None and not signed):
                raise ValueError(
                    'grant = "client_credentials" needs client_id and client_secret (or '
                    'token_endpoint_auth = "private_key_jwt" with client_assertion_key)'
                )
            if self.client_metadata_url is not None or self.redirect_port is not None:
                raise ValueError(
                    'client_metadata_url and redirect_port belong to grant = '
                    '"authorization_code" (a person signs in), not to client credentials'
                )
        if self.grant == "client_credentials" and self.on_behalf_of == "principal":
            raise ValueError(
                'on_behalf_of = "principal" needs a person\'s sign-in (grant = '
                '"authorization_code"): client credentials are the operator\'s'
            )
        if self.client_metadata_url is not None:
            parsed = urlparse(self.client_metadata_url)
            if parsed.scheme != "https" or parsed.path in ("", "/") or not parsed.netloc:
                raise ValueError(
                    "client_metadata_url must be an https URL with a path "
                    f"(got {self.client_metadata_url!r})"
                )
        for scope in self.scopes or ():
            if not scope or any(c.isspace() for c in scope):
                raise ValueError(f"scopes: {scope!r} is not one scope (no spaces)")

    @property
    def acts_for(self) -> Literal["principal", "operator"]:
        """Whose sign-in a served principal's call goes with: ``on_behalf_of``, else
        "principal" for a person's grant and "operator" for client credentials."""
        if self.on_behalf_of is not None:
            return self.on_behalf_of
        return "operator" if self.grant == "client_credentials" else "principal"

    @property
    def scope(self) -> str | None:
        """The scopes as one space-separated string (None: let the server's word decide)."""
        return " ".join(self.scopes) if self.scopes else None


class TokenSettings(StrictTable):
    """The top-level ``[oauth]`` table: where the sign-ins of every source are kept.

        [oauth]
        store = "auto"      # "file" or "keyring"

    ``"file"``: ``STATE_DIR/oauth/tokens.json``, only its owner can read it (0600).
    ``"keyring"``: the tokens and client secrets in the OS keyring (the ``keyring``
    library of the ``toolplug[keyring]`` extra: macOS Keychain, Windows Credential
    Locker, Secret Service), service ``toolplug``, one entry per source; what is not a
    secret (the discovered metadata, the expiry) stays in the file. ``"auto"`` (the
    default): the keyring when one is usable, else the file."""

    store: Literal["auto", "file", "keyring"] = Field(
        default="auto",
        description='"auto" (the OS keyring when one is usable, else the file), "file" '
        '(STATE_DIR/oauth/tokens.json, 0600) or "keyring" (the OS keyring, toolplug[keyring])',
    )


TOKEN_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in TokenSettings.model_fields.items()
}


def parse_tokens(table: Mapping[str, Any], *, file: str, prefix: str = "") -> TokenSettings:
    """The ``[oauth]`` table, checked.

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """
    try:
        return TokenSettings.model_validate(dict(table))
    except ValidationError as exc:
        raise _fail(exc, TokenSettings, prefix + "oauth.", _raiser(file)) from None
