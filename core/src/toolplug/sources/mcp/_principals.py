"""Whose sign-in a served principal's call of a mounted server goes with.

When toolplug serves others (``serve --http`` under ``[serve.auth]``), a client's token is
never passed on to a mounted server: it was issued for toolplug, not for the server (the
MCP authorization specification forbids passing it through). A server with
``auth = "oauth"`` and ``on_behalf_of = "principal"`` (the default of a person's grant)
is instead signed in to by each principal on its own:

- its tokens are kept by principal on the state backend (``PrincipalTokens``: Redis under
  ``[calls] store``, so every replica sees one sign-in; this process's memory otherwise);
- a call by a principal that has not signed in yet (or whose sign-in expired) fails with a
  reason naming a sign-in link: the server's authorization URL, made for that principal
  (PKCE, ``state``, the resource indicator), whose redirect comes back to this server's
  ``/oauth/callback`` (``CALLBACK_PATH``, on the origin of ``[serve.auth] audience``). The
  person opens it, signs in, and calls again. The pending sign-in waits on the backend
  ten minutes (``_served.PENDING_SECONDS``), so the redirect may reach any replica;
- each principal's calls go over a session of its own (``Principals``: at most ``MOST``
  kept open, the least recently used closed).

With ``on_behalf_of = "operator"`` (the only choice of client credentials) every call goes
with the operator's sign-in, as it does for a call that has no principal (the CLI, a
library, ``serve`` over stdio or without ``[serve.auth]``). The SDK's part (the link and
the code's exchange) is ``_served``, imported when a principal first needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from toolplug.contract._tool import ErrorType, ToolResult
from toolplug.sources.mcp import _host
from toolplug.state._shared import open_backend
from toolplug.state._tokens import PrincipalTokens

if TYPE_CHECKING:
    from toolplug.config._config import Config
    from toolplug.config._servers import ServerSettings
    from toolplug.state._backend import Backend

__all__ = [
    "CALLBACK_PATH", "MOST", "Principals", "complete", "principal_of",
    "principals_for",
]

CALLBACK_PATH: Final = "/oauth/callback"
"""Where a served principal's sign-in redirects back to (``serve --http`` answers it)."""
MOST: Final = 256
"""Principals' sessions of one server kept open at once."""
_ENTRIES: Final = 10_000

_backends: dict[str, Backend] = {}
"""One backend a ``[calls] store`` value per process: the mount and the callback must
share it (with ``memory``, the very same object)."""


def _backend(store: str) -> Backend:
    found = _backends.get(store)
    if found is None:
        found = _backends[store] = open_backend(store, entries=_ENTRIES, home=_host.loop)
    return found


def principal_of(host: Mapping[str, Any]) -> str | None:
    """The verified principal of a served call (``serve``'s owner of it), else None."""
    client = host.get("client")
    return client if isinstance(client, str) and client.startswith("principal:") else None


class Principals:
    """The principals of one mounted server: their tokens, sign-in links and sessions."""

    def __init__(self, resolved: _host.Resolved, *, store: str, callback: str) -> None:
        self.resolved = resolved
        self.name = resolved.settings.name
        self.store = store
        self.callback = callback
        self._open: OrderedDict[str, _host.Connection] = OrderedDict()

    @property
    def key(self) -> str:
        return self.resolved.settings.url or ""

    def tokens(self, principal: str) -> PrincipalTokens:
        """Where ``principal``'s tokens of every server are kept."""
        return PrincipalTokens(
            _backend(self.store).part("oauth-tokens:", entries=_ENTRIES), principal
        )

    def pending(self) -> Backend:
        """The sign-ins waiting for their redirect, by ``state`` (and each principal's
        current link of this server)."""
        return _backend(self.store).part("oauth-pending:", entries=_ENTRIES)

    def credentials(self, principal: str) -> Any:
        """The server's OAuth settings with ``principal``'s token store."""
        assert self.resolved.oauth is not None
        return dataclasses.replace(self.resolved.oauth, store=self.tokens(principal))

    async def connection(self, principal: str) -> _host.Connection | ToolResult:
        """``principal``'s session of the server, or (not signed in) the reason with the
        link that signs in. On the sessions' loop."""
        if "tokens" not in await self.tokens(principal).aentry(self.key):
            self._drop(principal)
            return await self.link(principal)
        found = self._open.get(principal)
        if found is None:
            resolved = dataclasses.replace(self.resolved, oauth=self.credentials(principal))
            found = self._open[principal] = _host.Connection(resolved)
            found.listens = False  # the operator's session hears the server's changes
            while len(self._open) > MOST:
                _oldest, gone = self._open.popitem(last=False)
                asyncio.ensure_future(gone.close())  # noqa: RUF006 - closing ends by itself
        self._open.move_to_end(principal)
        return found

    async def down(self, principal: str) -> ToolResult | None:
        """After ``principal``'s session failed to start: the link, when its sign-in is gone
        (a refresh the authorization server refused); None when it is not."""
        if "tokens" in await self.tokens(principal).aentry(self.key):
            return None
        self._drop(principal)
        return await self.link(principal)

    async def link(self, principal: str) -> ToolResult:
        """The reason of a call whose principal has no sign-in: the link that makes one."""
        from toolplug.sources.mcp import _served

        try:
            url = await _served.link(self, principal)
        except Exception as exc:
            return ToolResult.failure(
                ErrorType.UNAVAILABLE,
                f"MCP server {self.name!r} needs you to sign in to it, and no sign-in "
                f"could be started: {_served.problem(exc)}",
                retry_possible=True, details={"server": self.name},
            )
        minutes = round(_served.PENDING_SECONDS / 60)
        return ToolResult.failure(
            ErrorType.UNAVAILABLE,
            f"MCP server {self.name!r} needs you to sign in to it as yourself: open {url} "
            f"(within {minutes} minutes), sign in, then call again",
            retry_possible=True, details={"server": self.name, "sign_in_url": url},
        )

    def _drop(self, principal: str) -> None:
        gone = self._open.pop(principal, None)
        if gone is not None:
            asyncio.ensure_future(gone.close())  # noqa: RUF006 - closing ends by itself

    def connections(self) -> list[_host.Connection]:
        """Every principal's open session (closed with the mount)."""
        return list(self._open.values())


def principals_for(
    settings: ServerSettings, resolved: _host.Resolved, config: Config
) -> Principals | None:
    """The principals of a server whose served calls go each with its principal's sign-in
    (``auth = "oauth"``, ``on_behalf_of = "principal"``, ``[serve.auth]`` set), else None."""
    oauth = settings.oauth_settings
    auth = config.serve.auth
    if oauth is None or oauth.acts_for != "principal" or auth is None:
        return None
    origin = urlsplit(auth.audience)
    callback = f"{origin.scheme}://{origin.netloc}{CALLBACK_PATH}"
    return Principals(resolved, store=config.calls.store, callback=callback)


async def complete(
    servers: Mapping[str, Principals], query: Mapping[str, str]
) -> tuple[int, str]:
    """Take a served principal's redirect (``GET /oauth/callback?code=...&state=...``):
    the pending sign-in it answers (used once), the code exchanged, the tokens kept for
    that principal. The HTTP status and the words of the page the person sees."""
    state = query.get("state", "")
    taken = await _take(servers, state)
    if taken is None:
        return 400, (
            "This sign-in link expired or was used already. Call the tool again for a new one."
        )
    principals, pending = taken
    if "error" in query:
        said = query.get("error_description") or query["error"]
        return 400, f"The sign-in to {principals.name} was refused: {said}"
    from toolplug.sources.mcp import _served

    try:
        await _served.finish(principals, pending, code=query.get("code", ""), iss=query.get("iss"))
    except Exception as exc:
        return 400, f"The sign-in to {principals.name} did not complete: {_served.problem(exc)}"
    return 200, f"Signed in to {principals.name}: you can close this tab and call the tool again."


async def _take(
    servers: Mapping[str, Principals], state: str
) -> tuple[Principals, dict[str, Any]] | None:
    """The pending sign-in of ``state``, once: the first redirect takes it (compare-and-set),
    any other finds it gone."""
    if not state or not servers:
        return None
    pending = next(iter(servers.values())).pending()
    raw = await pending.get(f"state:{state}")
    if raw is None or not await pending.swap(f"state:{state}", raw, "", 0.001):
        return None
    with contextlib.suppress(Exception):
        await pending.delete(f"state:{state}")
    try:
        found = json.loads(raw)
    except ValueError:
        return None
    principals = servers.get(str(found.get("server"))) if isinstance(found, dict) else None
    if principals is None:
        return None
    return principals, found
