"""A mounted server's OAuth settings as this process holds them: the client secret read,
the user's token store, the redactor its tokens are added to. Light on purpose: the
mount makes one per ``auth = "oauth"`` server at load, and a load that reads its tools
from the cache must not import the MCP SDK (``_oauth`` does, when a session starts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from toolplug.sources import _gathered
from toolplug.state._tokens import TokenStore
from toolplug.trust._redaction import Redactor

if TYPE_CHECKING:
    from toolplug.config._servers import ServerSettings

__all__ = ["Credentials", "attach", "credentials", "needs_sign_in", "setup_note", "store_for"]


def store_for(state_dir: Path) -> TokenStore:
    """The user's token store: ``STATE_DIR/oauth/tokens.json``."""
    return TokenStore(state_dir / "oauth")


def needs_sign_in(name: str, *, expired: bool = False, scope: str | None = None) -> str:
    """The reason of a server that wants a person to sign in (again); ``scope``: the
    scopes a step-up asks for (the server answered 403 ``insufficient_scope``)."""
    if scope is not None:
        said = f"needs a sign-in with more access (the scopes {scope})"
    else:
        said = "its sign-in expired" if expired else "needs a sign-in"
    return f"{said}: run `toolplug login {name}`"


@dataclass
class Credentials:
    """A server's OAuth settings with its secret read (``{ env = }``/``{ file = }``)."""

    settings: ServerSettings
    store: TokenStore
    client_secret: str | None = None
    redactor: Redactor | None = None
    problem: str | None = None
    """Why it cannot sign in with these values (its secret's variable is unset ...)."""

    @property
    def key(self) -> str:
        """What its tokens are kept by: the server's URL."""
        return self.settings.url or ""

    def hide(self, *secrets: str | None) -> None:
        """Tell the redactor about secrets as they are read."""
        if self.redactor is None:
            return
        for secret in secrets:
            if secret:
                self.redactor.add(secret)


def credentials(
    settings: ServerSettings, *, state_dir: Path, env: Mapping[str, str], base: Path,
    source: str, secrets: set[str],
) -> Credentials | None:
    """The credentials of an ``auth = "oauth"`` server (None for any other); its secret,
    once read, joins ``secrets`` (the redactor's)."""
    oauth = settings.oauth_settings
    if oauth is None:
        return None
    found = Credentials(settings, store_for(state_dir))
    if oauth.client_secret is not None:
        problems: list[str] = []
        where = f"[mcp_servers.{settings.name}.oauth] client_secret in {source}"
        text, _secret = _gathered.resolved(
            oauth.client_secret, where, env=env, base=base, problems=problems
        )
        if text is None:
            found.problem = problems[-1]
        else:
            secrets.add(text)
            found.client_secret = text
    return found


def setup_note(settings: ServerSettings) -> str:
    """What the setup line of an ``auth = "oauth"`` server adds ("" for any other)."""
    oauth = settings.oauth_settings
    if oauth is None:
        return ""
    if oauth.grant == "client_credentials":
        return " It signs in with its OAuth client credentials (no person needed)."
    return f" It needs a person's OAuth sign-in: `toolplug login {settings.name}`."


def attach(found: Credentials | None, redactor: Redactor) -> None:
    """Add the tokens read from now on to ``redactor`` (the registry's, once attached)."""
    if found is not None:
        found.redactor = redactor
