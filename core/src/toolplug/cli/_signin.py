"""``toolplug login NAME`` and ``toolplug logout NAME``: a person's OAuth sign-in to a
mounted server (``[mcp_servers.NAME]``) or an OpenAPI source (``[openapi.NAME]``), each
source's own ``sign_in``/``sign_out`` on the flow they share (``toolplug.sources._signin``).
"""

from __future__ import annotations

import argparse
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from toolplug.cli._parser import EXIT_FAILED, _Exit

if TYPE_CHECKING:
    from toolplug.config._config import Config

__all__ = ["login", "logout"]


def _source(config: Config, name: str) -> ModuleType:
    """The source whose ``sign_in``/``sign_out`` serve ``name``: an [openapi.NAME] that is
    not also a mounted server's name, else the mounts (whose error names what is known)."""
    from toolplug.sources._signin import SignInError

    if name in config.openapi and name not in config.mcp_servers:
        import toolplug.sources.openapi as api

        return api
    if config.openapi and not config.mcp_servers:
        known = ", ".join(sorted(config.openapi))
        raise SignInError(
            f"no [openapi.{name}] or [mcp_servers.{name}] in {config.source} (APIs: {known})"
        )
    from toolplug.sources import mcp

    return mcp


def login(args: argparse.Namespace, config: Config) -> str:
    """Sign in to ``args.name``; what happened, in words (``_Exit`` when it did not)."""
    from toolplug.sources._signin import SignInError, browser

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    opener = browser(say, open_browser=not args.no_browser)
    try:
        said: str = _source(config, args.name).sign_in(
            config, args.name, env=os.environ, open_url=opener, timeout=args.timeout
        )
    except SignInError as exc:
        raise _Exit(EXIT_FAILED, str(exc)) from None
    return said


def logout(args: argparse.Namespace, config: Config) -> str:
    """Forget ``args.name``'s tokens; what happened, in words (``_Exit`` when it could not)."""
    from toolplug.sources._signin import SignInError

    try:
        said: str = _source(config, args.name).sign_out(config, args.name, env=os.environ)
    except SignInError as exc:
        raise _Exit(EXIT_FAILED, str(exc)) from None
    return said
