"""What every remote source that a person signs in to shares, light enough for a load:
the reason of a source that wants a sign-in (``needs_sign_in``), the error of ``toolplug
login``/``logout`` (``SignInError``) and the browser the authorization URL opens in.

Mounted servers (``toolplug.sources.mcp``) and OpenAPI sources (``toolplug.sources.openapi``)
both use it; the flow itself, on the MCP SDK, is ``toolplug.sources._oauth_flow``.
"""

from __future__ import annotations

import asyncio
import contextlib
import webbrowser
from collections.abc import Awaitable, Callable
from pathlib import Path

from toolplug.state._tokens import TokenStore

__all__ = ["SignInError", "browser", "needs_sign_in", "store_for"]


def store_for(state_dir: Path, keep: str = "auto") -> TokenStore:
    """The user's token store: ``STATE_DIR/oauth/tokens.json``, every source's sign-ins,
    their secrets in the OS keyring where ``keep`` (``[oauth] store``) says so."""
    return TokenStore(state_dir / "oauth", keep)


class SignInError(Exception):
    """Why ``login``/``logout`` could not do what was asked, in words."""


def needs_sign_in(name: str, *, expired: bool = False, scope: str | None = None) -> str:
    """The reason of a source that wants a person to sign in (again); ``scope``: the
    scopes a step-up asks for (the server answered 403 ``insufficient_scope``)."""
    if scope is not None:
        said = f"needs a sign-in with more access (the scopes {scope})"
    else:
        said = "its sign-in expired" if expired else "needs a sign-in"
    return f"{said}: run `toolplug login {name}`"


def browser(
    say: Callable[[str], None], *, open_browser: bool = True
) -> Callable[[str], Awaitable[None]]:
    """Open the authorization URL in the user's browser where there is one; always print it
    (a terminal on another machine, or no browser at all, copies it from there)."""

    async def open_url(url: str) -> None:
        say(f"Open this address to sign in (waiting for the redirect):\n  {url}")
        if open_browser:
            with contextlib.suppress(webbrowser.Error):
                await asyncio.to_thread(webbrowser.open, url)

    return open_url
