"""``toolplug console``: the person in the loop, as pages in a browser.

A small ASGI app (Starlette, served by uvicorn: both come with the MCP SDK, the ``mcp``
extra). Every page is server-rendered HTML with plain forms (no JavaScript), one module a
page:

- ``_approvals``: the pending approval requests with approve and deny forms, the remembered
  decisions with a revoke form (``/``);
- ``_record``: the record's newest events with the filters of ``toolplug history``
  (``/history``), and a conversation's timeline: what it read, with its labels, and what
  the guard decided, with the rule, the labels and where each argument came from
  (``/conversations/ID``);
- ``_catalog``: every tool, available or not, why and how to set it up: what ``toolplug
  doctor`` says (``/catalog``);
- ``_page``: the shell, the escaping, the CSRF tokens and checks every page shares;
- ``_signin``: the console under ``serve --http`` (``[serve.auth] console_scope``), behind
  a token of the server's issuer.

``POST /approvals/decide`` takes a decision the webhook's receiver sends back, signed as the
webhook is (``toolplug.engine._reply``): no cookie, no CSRF token, the signature instead.

``toolplug console`` authenticates nobody: it listens on a loopback address only (a
non-loopback ``--host`` is refused) and answers only requests whose ``Host`` is a loopback
name (a page elsewhere that rebinds its name to 127.0.0.1 cannot reach it). Every form
carries a CSRF token: the HMAC, under a secret drawn when the process starts, of a random
session cookie (``SameSite=Strict``, ``HttpOnly``) the first page set, and of who decides.
A POST whose token is missing or does not match is answered 403 and changes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from toolplug.cli._console._approvals import decide, forget, home
from toolplug.cli._console._catalog import catalog
from toolplug.cli._console._page import Console, Viewer, foreign_host, loopback
from toolplug.cli._console._record import history, timeline
from toolplug.cli._parser import EXIT_OK, EXIT_USAGE, _Exit
from toolplug.serve._reply import REPLY_PATH, reply_route

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolplug.cli._console._signin import SignIn
    from toolplug.config._config import Config
    from toolplug.runtime._registry import Registry

__all__ = ["DEFAULT_PORT", "build_app", "routes", "run_console"]

DEFAULT_PORT: Final = 8765

_Page = Callable[[Console, "Request", Viewer], Awaitable["Response"]]


def run_console(args: argparse.Namespace, config: Config) -> int:
    """Serve the console until interrupted; the exit code."""
    if not loopback(args.host):
        raise _Exit(EXIT_USAGE, (
            f"toolplug console serves only a loopback address (127.0.0.1, ::1, localhost), "
            f"not {args.host!r}: it authenticates nobody, so anyone who reached it could "
            "decide your approvals. Reach it from elsewhere through an SSH tunnel "
            "(ssh -L 8765:127.0.0.1:8765 HOST), or serve it behind [serve.auth] with "
            "console_scope (toolplug serve --http; docs/approvals.md)"
        ))
    try:
        import uvicorn
    except ImportError as exc:
        raise _Exit(EXIT_USAGE, (
            f"toolplug console needs Starlette and uvicorn, which could not be imported ({exc});"
            ' install them with: pip install "toolplug[mcp]"'
        )) from None
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms delayed ACK
    try:
        listener.bind((args.host.strip("[]"), args.port))
        listener.listen(128)  # listening before the address is printed: a client may connect
    except OSError as exc:
        listener.close()
        raise _Exit(EXIT_USAGE, f"cannot listen on {args.host}:{args.port}: {exc}") from None
    port = listener.getsockname()[1]
    shown = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    app = build_app(config, owner=args.owner, every_owner=args.every_owner)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"toolplug console: http://{shown}:{port}/ (Ctrl-C stops it)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve(sockets=[listener]))
    listener.close()
    return EXIT_OK


def _loader(config: Config) -> Callable[[bool], Registry]:
    """How the catalog loads the registry (as doctor does: plugin problems reported, not
    raised; ``refresh`` asks mounted servers for their tools now)."""

    def load(refresh: bool) -> Registry:
        from toolplug.sources._load import load as loaded

        return loaded(config, refresh=refresh)

    return load


def build_app(config: Config, *, owner: str | None = None, every_owner: bool = False) -> Any:
    """``toolplug console``'s ASGI app, deciding as ``owner`` (``every_owner``: listing
    everyone's)."""
    from toolplug.config._record import record_target
    from toolplug.engine._inbox import open_approvals
    from toolplug.state._record import open_record

    console = Console(config, owner, every_owner, loads=_loader(config))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        console.approvals = open_approvals(config)
        if config.record.enabled:  # where refused decisions are recorded
            console.recorder = open_record(config.record, record_target(
                config.record, config.state_dir, config.path.parent if config.path else None
            ))
            console.approvals.recorder = console.recorder  # and requests swept to failed
        try:
            yield
        finally:
            await console.approvals.aclose()
            if console.recorder is not None:
                await asyncio.to_thread(console.recorder.close)
            if console.registry is not None:
                await asyncio.to_thread(console.registry.close)

    return routes(console, None, lifespan=lifespan)


def routes(console: Console, gate: SignIn | None, lifespan: Any = None) -> Any:
    """The Starlette app of ``console``'s pages, under ``console.root``; with ``gate``
    (served under ``serve --http``) its sign-in pages too."""
    from starlette.applications import Starlette
    from starlette.responses import RedirectResponse
    from starlette.routing import Route

    def guarded(handler: _Page) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            refused = foreign_host(console, request)
            if refused is not None:
                return refused
            viewer = console.viewer() if console.gate is None else await console.gate(request)
            if not isinstance(viewer, Viewer):
                return viewer
            return await handler(console, request, viewer)

        return answer

    root = console.root
    table = [
        Route(root + "/", guarded(home), methods=["GET"]),
        Route(root + "/history", guarded(history), methods=["GET"]),
        Route(root + "/conversations/{id:path}", guarded(timeline), methods=["GET"]),
        Route(root + "/catalog", guarded(catalog), methods=["GET"]),
        Route(root + "/approvals/{id}/{action}", guarded(decide), methods=["POST"]),
        Route(root + "/remembered/{id}/forget", guarded(forget), methods=["POST"]),
    ]
    if gate is None:  # served, the server answers it at its own root, beside the console
        table.append(reply_route(console.opened, lambda: console.recorder, root + REPLY_PATH))
    if gate is not None:
        async def asked(request: Request) -> Response:
            return gate.signing_in(request, 200, "")

        async def bare(_request: Request) -> Response:
            return RedirectResponse(root + "/", status_code=307)

        async def sign_out(c: Console, request: Request, viewer: Viewer) -> Response:
            return await gate.sign_out(request, viewer)

        table += [
            Route(root, bare, methods=["GET"]),
            Route(root + "/sign-in", asked, methods=["GET"]),
            Route(root + "/sign-in", gate.sign_in, methods=["POST"]),
            Route(root + "/sign-out", guarded(sign_out), methods=["POST"]),
        ]
    return Starlette(routes=table, lifespan=lifespan)
