"""``auth = "oauth"`` and its ``oauth`` table: how toolplug signs in to a remote source.

One model for every remote source that speaks OAuth 2.1 (mounted MCP servers today; an
OpenAPI description's ``securitySchemes`` can read the same table). Nothing here talks to
the network: ``toolplug.sources.mcp._oauth`` runs the flow, ``toolplug.state._tokens``
keeps what it is given.
"""

from __future__ import annotations

from typing import Final, Literal
from urllib.parse import urlparse

from pydantic import Field

from toolplug.config._settings import Value
from toolplug.contract._settings import StrictTable

__all__ = ["GRANTS", "OAuthSettings"]

GRANTS: Final = ("authorization_code", "client_credentials")


class OAuthSettings(StrictTable):
    """``[mcp_servers.NAME.oauth]``: the client toolplug is to the server's authorization
    server. Every key is optional: without ``client_id`` toolplug registers itself (a
    Client ID Metadata Document when ``client_metadata_url`` is set and the server takes
    one, else dynamic registration)."""

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
    token_endpoint_auth: Literal["client_secret_basic", "client_secret_post"] = Field(
        default="client_secret_basic",
        description='how the secret is sent to the token endpoint: "client_secret_basic" or '
        '"client_secret_post"',
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
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("client_secret needs the client_id it belongs to")
        if self.grant == "client_credentials":
            if self.client_id is None or self.client_secret is None:
                raise ValueError(
                    'grant = "client_credentials" needs client_id and client_secret'
                )
            if self.client_metadata_url is not None or self.redirect_port is not None:
                raise ValueError(
                    'client_metadata_url and redirect_port belong to grant = '
                    '"authorization_code" (a person signs in), not to client credentials'
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
    def scope(self) -> str | None:
        """The scopes as one space-separated string (None: let the server's word decide)."""
        return " ".join(self.scopes) if self.scopes else None
