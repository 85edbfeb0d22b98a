"""``toolplug serve``: the available tools as an MCP server, over stdio or streamable HTTP.

This module is the door: it checks what it can without the MCP SDK (the address, the
shutdown grace, authentication beyond loopback), then imports the server
(``serve/_app.py``) and its transports (``serve/_stdio.py``, ``serve/_http.py``) once,
in ``_sdk``, where a missing SDK becomes a ``UsageError`` with the line to install it.

The SDK is optional (``pip install "toolplug[mcp]"``) and imported only when serving.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from toolplug.contract._errors import UsageError
from toolplug.serve._address import is_loopback, parse_address

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from mcp.server.lowlevel import Server

    from toolplug.config._config import Toolset
    from toolplug.config._settings import AuthSettings
    from toolplug.runtime._registry import Registry
    from toolplug.serve._shutdown import Drain

__all__ = ["INSTALL_LINE", "ConsoleApp", "build_server", "parse_address", "serve"]

ConsoleApp: TypeAlias = "Callable[[Registry, AuthSettings, Path | None], Any]"
"""What makes the console's ASGI app (the registry served, its ``[serve.auth]``, the
configuration's folder): ``toolplug.cli._console._signin.served_console``."""

INSTALL_LINE: Final = 'pip install "toolplug[mcp]"'
"""What to run when the MCP SDK is missing."""

DEFAULT_GRACE_SECONDS: Final = 5.0
"""How long calls in flight may take to finish once shutdown begins, unless told."""


def serve(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    http: str | None = None,
    max_tools: int | None = None,
    task: str | None = None,
    grace: float = DEFAULT_GRACE_SECONDS,
    no_auth: bool = False,
    console: ConsoleApp | None = None,
) -> None:
    """Serve the registry's available tools over MCP until the client or a signal ends it.

    On SIGTERM or SIGINT the server takes no new requests, lets the calls in flight finish
    for up to ``grace`` seconds, answers each call still running then with a JSON-RPC
    error, and ends the way the signal ends a process (SIGINT raises KeyboardInterrupt).

    Args:
        registry: The loaded tools (``toolplug.load()``).
        toolset: Offer only this toolset's tools.
        http: ``HOST:PORT`` (or ``PORT``, or ``[IPv6]:PORT``) to serve streamable HTTP at
            ``http://HOST:PORT/mcp``; stdio when None.
        max_tools: List at most this many tools, and ``search_tools``, which adds the tools
            it finds to the session's list (see ``build_server``).
        task: With ``max_tools``: list the tools most relevant to this task first.
        grace: Seconds the calls in flight may take to finish once shutdown begins.
        no_auth: Serve HTTP beyond loopback without ``[serve.auth]``, on purpose.
        console: What makes the console's app, served at ``/console/`` over HTTP when
            ``[serve.auth] console_scope`` is set (``toolplug serve`` passes its own).

    Raises:
        UsageError: the MCP SDK is not installed, the toolset is unknown, the address is
            malformed, the port cannot be opened, ``grace`` is negative, or the address is
            beyond loopback with neither ``[serve.auth]`` nor ``no_auth``, or
            ``console_scope`` is set and no ``console`` given.
    """
    if not grace >= 0:
        raise UsageError(f"the shutdown grace is a number of seconds, 0 or more; got {grace}")
    address = parse_address(http) if http is not None else None
    auth = registry.config.serve.auth if address is not None else None
    if address is not None and auth is None and not no_auth and not is_loopback(address[0]):
        raise UsageError(
            f"serving on {address[0]} lets anyone who reaches it call these tools: configure "
            "[serve.auth] (docs/mcp.md, Running toolplug for others), bind 127.0.0.1, or "
            "pass --no-auth to serve without authentication on purpose"
        )
    if auth is not None and auth.console_scope is not None and console is None:
        raise UsageError(
            "[serve.auth] console_scope is set, and nothing serves the console: "
            "toolplug serve --http serves it (from Python, pass serve(..., console=...))"
        )
    sdk = _sdk()
    drain = sdk.drain(grace)
    server = sdk.build_server(
        registry, toolset=toolset, max_tools=max_tools, task=task, drain=drain, auth=auth
    )
    try:
        if address is None:
            received = sdk.run_stdio(server, drain)
        else:
            received = sdk.serve_http(
                server, *address, drain, settings=registry.config.serve, registry=registry,
                console=console,
            )
    finally:
        registry.close()
    if received is not None:
        # Every call is answered and the registry closed: end as the signal would have.
        signal.raise_signal(received)


def build_server(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    max_tools: int | None = None,
    task: str | None = None,
    drain: Drain | None = None,
    auth: AuthSettings | None = None,
) -> Server[Any]:
    """The MCP server for the registry's available tools (optionally one toolset's).

    With ``max_tools``, each session's ``tools/list`` starts with the ``max_tools`` tools
    most relevant to ``task`` and ``search_tools``; a search adds the tools it finds to that
    session's list and sends ``notifications/tools/list_changed``. Every available tool can
    be called at any time, listed or not. With ``drain``, each call is in flight there until
    it is answered, and shutdown can refuse or cancel it. With ``auth`` (``[serve.auth]``),
    ``tools/list`` shows each principal only the tools its token's scopes let it call.

    Raises:
        UsageError: the MCP SDK is not installed, or the toolset is unknown.
    """
    return _sdk().build_server(
        registry, toolset=toolset, max_tools=max_tools, task=task, drain=drain, auth=auth
    )


@dataclass(frozen=True)
class _Sdk:
    """The parts of the server that stand on the MCP SDK."""

    build_server: Callable[..., Server[Any]]
    """``serve/_app.py``: the server, its tool list and its answers."""
    serve_http: Callable[..., int | None]
    """``serve/_http.py``: streamable HTTP until a signal ends it; the signal's number."""
    drain: Callable[[float], Drain]
    """``serve/_shutdown.py``: the drain of calls in flight, with its grace in seconds."""
    run_stdio: Callable[[Server[Any], Drain], int | None]
    """``serve/_stdio.py`` run to the end: the number of the signal that ended it."""


def _sdk() -> _Sdk:
    """The server's modules, imported here once (the one place the SDK is asked for).

    Raises:
        UsageError: the MCP SDK (or a dependency of it) cannot be imported.
    """
    try:
        import anyio
        import mcp.server.lowlevel  # noqa: F401 - asked first: its absence is the common case

        from toolplug.serve import _app, _http, _shutdown, _stdio
    except ImportError as exc:
        raise UsageError(
            f"toolplug serve needs the MCP SDK, which could not be imported ({exc}); "
            f"install it with: {INSTALL_LINE}"
        ) from None

    def run_stdio(server: Server[Any], drain: Drain) -> int | None:
        return anyio.run(_stdio.serve_stdio, server, drain)

    return _Sdk(_app.build_server, _http.serve_http, _shutdown.Drain, run_stdio)
