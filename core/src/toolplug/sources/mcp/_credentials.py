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
from toolplug.sources._signin import needs_sign_in, store_for
from toolplug.state._tokens import KeyringUnusable, Tokens
from toolplug.trust._redaction import Redactor

if TYPE_CHECKING:
    from toolplug.config._servers import ServerSettings

__all__ = [
    "Credentials", "attach", "credentials", "kept_in", "needs_sign_in", "setup_note", "store_for",
]


@dataclass
class Credentials:
    """A server's OAuth settings with its secret read (``{ env = }``/``{ file = }``)."""

    settings: ServerSettings
    store: Tokens
    client_secret: str | None = None
    client_assertion_key: str | None = None
    """The PEM private key that signs its assertions (``private_key_jwt``)."""
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
    source: str, secrets: set[str], keep: str = "auto",
) -> Credentials | None:
    """The credentials of an ``auth = "oauth"`` server (None for any other); its secret,
    once read, joins ``secrets`` (the redactor's); ``keep``: ``[oauth] store``."""
    oauth = settings.oauth_settings
    if oauth is None:
        return None
    found = Credentials(settings, store_for(state_dir, keep))
    for key, value in (
        ("client_secret", oauth.client_secret),
        ("client_assertion_key", oauth.client_assertion_key),
    ):
        if value is None:
            continue
        problems: list[str] = []
        where = f"[mcp_servers.{settings.name}.oauth] {key} in {source}"
        text, _secret = _gathered.resolved(value, where, env=env, base=base, problems=problems)
        if text is None:
            found.problem = found.problem or problems[-1]
            continue
        if key == "client_assertion_key" and "\n" not in text:
            text = text.replace("\\n", "\n")  # a PEM in one line of a variable, "\n"s kept
        if key == "client_assertion_key" and not _looks_like_a_private_key(text):
            found.problem = found.problem or (
                f"{where} is not a PEM private key (one that begins "
                "\"-----BEGIN PRIVATE KEY-----\", as `openssl genpkey` writes it)"
            )
            continue
        secrets.add(text)
        setattr(found, key, text)
    return found


def _looks_like_a_private_key(text: str) -> bool:
    """Whether ``text`` is a PEM private key (PKCS#8, or the RSA and EC forms): checked at
    load, so a wrong value is the server's reason, not a failure mid-flow."""
    first = text.lstrip().split("\n", 1)[0].strip()
    return first.startswith("-----BEGIN ") and first.endswith("PRIVATE KEY-----")


def setup_note(settings: ServerSettings) -> str:
    """What the setup line of an ``auth = "oauth"`` server adds ("" for any other)."""
    oauth = settings.oauth_settings
    if oauth is None:
        return ""
    if oauth.grant == "client_credentials":
        return " It signs in with its OAuth client credentials (no person needed)."
    return f" It needs a person's OAuth sign-in: `toolplug login {settings.name}`."


def kept_in(found: Credentials) -> str:
    """Where its sign-in is kept, in words (``toolplug doctor``): the file, or the keyring
    (found on first use), or why the keyring asked for cannot be used."""
    try:
        return found.store.where
    except KeyringUnusable as exc:
        return f"nowhere: {exc}"


def attach(found: Credentials | None, redactor: Redactor) -> None:
    """Add the tokens read from now on to ``redactor`` (the registry's, once attached)."""
    if found is not None:
        found.redactor = redactor
