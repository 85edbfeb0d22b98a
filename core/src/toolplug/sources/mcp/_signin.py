"""``toolplug login NAME`` and ``toolplug logout NAME``: signing in to a mounted server
that wants a person's OAuth sign-in, and out again (``_oauth`` runs the flow).

After a sign-in the server's cached tool list is dropped, so the next load asks the
server again instead of repeating the "needs a sign-in" reason it stored.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from toolplug.sources._signin import SignInError, browser
from toolplug.sources.mcp import _credentials
from toolplug.state._tokens import KeyringUnusable

if TYPE_CHECKING:
    from toolplug.config._config import Config

__all__ = ["SignInError", "browser", "sign_in", "sign_out"]


def _flow() -> ModuleType:
    """The OAuth flow (``_oauth``, on the MCP SDK), imported when a sign-in starts."""
    from toolplug.sources.mcp import _oauth

    return _oauth


def _credentials_of(config: Config, name: str, env: Mapping[str, str]) -> _credentials.Credentials:
    settings = config.mcp_servers.get(name)
    where = config.source
    if settings is None:
        known = ", ".join(sorted(config.mcp_servers)) or "none"
        raise SignInError(f"no [mcp_servers.{name}] in {where} (servers: {known})")
    found = _credentials.credentials(
        settings, state_dir=config.state_dir, env=env,
        base=config.path.parent if config.path else Path.cwd(), source=where, secrets=set(),
        keep=config.oauth.store,
    )
    if found is None:
        raise SignInError(
            f'[mcp_servers.{name}] in {where} has no auth = "oauth": nothing to sign in to'
        )
    if found.problem is not None:
        raise SignInError(found.problem)
    return found


def sign_in(
    config: Config, name: str, *, env: Mapping[str, str],
    open_url: Callable[[str], Awaitable[None]], timeout: float = 300.0,
) -> str:
    """Sign in to server ``name``; what happened, in words. Raises ``SignInError``."""
    _oauth = _flow()
    found = _credentials_of(config, name, env)
    oauth = found.settings.oauth_settings
    if oauth is not None and oauth.grant == "client_credentials":
        return (
            f"{name} signs in with its client credentials when it is mounted: "
            "no person's sign-in is needed"
        )
    try:
        said: str = asyncio.run(_oauth.login(found, open_url, timeout=timeout))
    except (_oauth.LoginError, KeyringUnusable) as exc:
        raise SignInError(f"{name}: {exc}") from None
    with contextlib.suppress(OSError):
        (config.cache_dir / "mcp" / f"{name}.json").unlink()
    return said


def sign_out(config: Config, name: str, *, env: Mapping[str, str]) -> str:
    """Forget (and revoke where offered) server ``name``'s tokens; what happened."""
    _oauth = _flow()
    found = _credentials_of(config, name, env)
    try:
        said: str = asyncio.run(_oauth.logout(found))
    except KeyringUnusable as exc:
        raise SignInError(f"{name}: {exc}") from None
    with contextlib.suppress(OSError):
        (config.cache_dir / "mcp" / f"{name}.json").unlink()
    return said
