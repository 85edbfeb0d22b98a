"""``toolplug login NAME`` and ``toolplug logout NAME`` for ``[openapi.NAME]``: the API's
description read (``_api.describe``), then its person's sign-in (``_signin.SignIn``) run or
forgotten. A module of its own so that ``_api``, which makes each API's ``SignIn``, and the
sign-in do not import each other."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from toolplug.sources._signin import SignInError
from toolplug.sources.openapi._api import describe
from toolplug.sources.openapi._signin import SignIn

if TYPE_CHECKING:
    from toolplug.config._config import Config

__all__ = ["sign_in", "sign_out"]


def _found(config: Config, name: str, env: Mapping[str, str]) -> SignIn | str:
    """The sign-in of ``[openapi.NAME]`` (its description read), or what to say instead."""
    settings = config.openapi.get(name)
    where = config.source
    if settings is None:
        known = ", ".join(sorted(config.openapi)) or "none"
        raise SignInError(f"no [openapi.{name}] in {where} (APIs: {known})")
    oauth = settings.oauth_settings
    if oauth is None:
        raise SignInError(
            f'[openapi.{name}] in {where} has no auth = "oauth": nothing to sign in to'
        )
    if oauth.grant == "client_credentials":
        return (
            f"{name} gets its token with its client credentials when it is called: "
            "no person's sign-in is needed"
        )
    if not settings.enabled:
        raise SignInError(f"[openapi.{name}] in {where} is not enabled (enabled = false)")
    described = describe(config, env=env)
    try:
        api = described.apis[name]
    finally:
        described.close()
    if not isinstance(api.grant, SignIn):
        raise SignInError(f"{name}: cannot sign in: {api.problem or 'no sign-in is known'}")
    if api.refused:
        raise SignInError(f"{name}: the network guard refuses its base URL: {api.refused}")
    return api.grant


def sign_in(
    config: Config, name: str, *, env: Mapping[str, str],
    open_url: Callable[[str], Awaitable[None]], timeout: float = 300.0,
) -> str:
    """Sign in to API ``name``; what happened, in words. Raises ``SignInError``."""
    from toolplug.sources._oauth_flow import LoginError  # the MCP SDK, once signing in

    found = _found(config, name, env)
    if isinstance(found, str):
        return found
    try:
        return asyncio.run(found.login(open_url, config.network, timeout=timeout))
    except LoginError as exc:
        raise SignInError(f"{name}: {exc}") from None


def sign_out(config: Config, name: str, *, env: Mapping[str, str]) -> str:
    """Forget (and revoke where offered) API ``name``'s tokens; what happened."""
    found = _found(config, name, env)
    if isinstance(found, str):
        return found
    return asyncio.run(found.logout(config.network))
