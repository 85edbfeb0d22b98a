"""``toolplug serve --http``: the MCP server over streamable HTTP, behind uvicorn.

The Host and Origin check and the JSON-RPC envelope check in front of the SDK's app, the OAuth 2.1
resource server of ``[serve.auth]``, and the drain of calls in flight when a signal ends
serving. Imported by ``toolplug.serve._server`` once it knows the SDK is installed.
"""

from __future__ import annotations

import asyncio
import html
import socket
import sys
from typing import TYPE_CHECKING, Any, Final

import uvicorn
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import AuthSettings as SdkAuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import ProtectedResourceMetadata
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from toolplug.serve._address import is_address, is_loopback, listen
from toolplug.serve._app import tool_scopes
from toolplug.serve._auth import (
    METADATA_PATH,
    BareChallenge,
    ScopeGate,
    Verifier,
    metadata_url,
)
from toolplug.serve._envelope import MAX_BODY_BYTES, EnvelopeCheck
from toolplug.serve._hosts import HostCheck, HostRules
from toolplug.serve._reply import REPLY_PATH, reply_route
from toolplug.sources.mcp import mounted
from toolplug.sources.mcp._principals import CALLBACK_PATH, complete

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from toolplug.config._settings import AuthSettings, ServeSettings
    from toolplug.runtime._registry import Registry
    from toolplug.serve._server import ConsoleApp
    from toolplug.serve._shutdown import Drain

__all__ = ["CONSOLE_PATH", "HTTP_PATH", "serve_http"]

HTTP_PATH: Final = "/mcp"
"""Where the streamable HTTP endpoint answers."""
CONSOLE_PATH: Final = "/console"
"""Where the console answers, with ``[serve.auth] console_scope``."""


def serve_http(
    server: Server[Any], host: str, port: int, drain: Drain, *,
    settings: ServeSettings, registry: Registry, console: ConsoleApp | None = None,
) -> int | None:
    """Serve until a signal ends serving; the signal's number. With ``[serve.auth]
    console_scope``, ``console`` makes the console's app, answered at ``/console/``."""
    listener = listen(host, port)
    bound = listener.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"toolplug: MCP server at http://{shown}:{bound}{HTTP_PATH}", file=sys.stderr)
    auth = settings.auth
    if auth is None and not is_loopback(host):
        print(
            "toolplug: warning: the server has no authentication (--no-auth); anyone who "
            f"can reach {host} can call these tools",
            file=sys.stderr,
        )
    # HostCheck checks Host and Origin on every bind address and path; the SDK's own check
    # covers loopback names only, and would refuse [serve] allowed_hosts.
    unguarded = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    if auth is None:
        app = server.streamable_http_app(
            streamable_http_path=HTTP_PATH, host=host, max_request_body_size=MAX_BODY_BYTES,
            transport_security=unguarded,
        )
    else:
        app = _authenticating_app(server, host, auth, registry, unguarded)
    envelope = EnvelopeCheck(app, HTTP_PATH, max_body=MAX_BODY_BYTES)
    served: Any = envelope
    # Signed decisions (engine/_reply.py): the signature is their authentication, so they
    # are answered beside the MCP app (no bearer token) and the console (no console scope);
    # without [approvals] webhook_secret the route says to set it.
    approvals = registry.approvals
    replies = Starlette(routes=[reply_route(lambda: approvals, lambda: registry.record)])
    served = _Beside(served, replies, REPLY_PATH)
    if approvals.webhook_secret is not None:
        if approvals.reply_url is None and not _unspecified(host):
            approvals.reply_url = f"http://{shown}:{bound}{REPLY_PATH}"
        print(f"toolplug: signed approval decisions at http://{shown}:{bound}{REPLY_PATH}",
              file=sys.stderr)
    if auth is not None and auth.console_scope is not None and console is not None:
        base = registry.config.path.parent if registry.config.path else None
        served = _Beside(served, console(registry, auth, base), CONSOLE_PATH)
        print(f"toolplug: console at http://{shown}:{bound}{CONSOLE_PATH}/ (scope "
              f"{auth.console_scope})", file=sys.stderr)
    rules = HostRules(
        bound=listener.getsockname()[0],
        name=None if is_address(host) else host,
        allowed_hosts=settings.allowed_hosts,
        allowed_origins=settings.allowed_origins,
    )
    config = uvicorn.Config(
        HostCheck(served, rules),
        log_level="warning",
        # By the time uvicorn shuts down, every call is answered: what is left are idle
        # connections and the clients' notification streams.
        timeout_graceful_shutdown=2,
        lifespan="on",
    )
    runner = _draining_server(uvicorn.Server)(config, drain, envelope)
    try:
        runner.run(sockets=[listener])
    finally:
        listener.close()
    return runner.received[0] if runner.received else None


def _unspecified(host: str) -> bool:
    """Whether ``host`` is the any-address (no address a receiver could be told)."""
    return host.strip("[]") in ("0.0.0.0", "::", "")


class _Beside:
    """ASGI: the requests under ``prefix`` to ``beside`` (the console), the rest to
    ``app`` (the MCP server, which alone sees the lifespan)."""

    def __init__(self, app: Any, beside: Any, prefix: str) -> None:
        self.app, self.beside, self.prefix = app, beside, prefix

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == self.prefix or path.startswith(self.prefix + "/"):
            await self.beside(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def _authenticating_app(
    server: Server[Any], host: str, auth: AuthSettings, registry: Registry, security: Any
) -> Any:
    """The streamable HTTP app as an OAuth 2.1 resource server: the SDK's bearer middleware
    with our ``Verifier`` (401 and its ``WWW-Authenticate``), the scope gate inside it (403),
    and the protected resource metadata at both its paths."""
    base = registry.config.path.parent if registry.config.path else None
    verifier = Verifier(auth, base=base)  # its secrets: redacted since load() (_serve_secrets)
    sdk_auth = SdkAuthSettings.model_validate({
        "issuer_url": auth.issuer,
        "resource_server_url": auth.audience,
        "validate_token_resource": True,  # the verifier has checked aud; this checks it again
    })
    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH, host=host, max_request_body_size=MAX_BODY_BYTES,
        auth=sdk_auth, token_verifier=verifier, transport_security=security,
    )
    needed = tool_scopes(registry, auth)
    served = [tool.name for tool in registry.select()]
    supported = sorted(
        {*auth.required_scopes, auth.read_scope, auth.write_scope}.union(
            *(needed(name) for name in served)
        )
    )
    # The SDK publishes the metadata at the path-suffixed URL without scopes_supported:
    # ours says which scopes there are, at that URL and at the bare one.
    app.router.routes = [
        route for route in app.router.routes
        if not str(getattr(route, "path", "")).startswith(METADATA_PATH)
    ]
    metadata = ProtectedResourceMetadata.model_validate({  # URLs exactly as configured
        "resource": auth.audience,
        "authorization_servers": [auth.issuer],
        "scopes_supported": supported,
        "resource_name": "toolplug tools",
    })
    handler = cors_middleware(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])
    suffixed = metadata_url(auth.audience).split("://", 1)[1].partition("/")[2]
    for path in sorted({METADATA_PATH, "/" + suffixed}):
        app.router.routes.append(Route(path, handler, methods=["GET", "OPTIONS"]))
    signing_in = _sign_in_route(registry)
    if signing_in is not None:
        app.router.routes.append(signing_in)
    # Its own 401 for a request without a token: the SDK's says error="invalid_token".
    app.user_middleware.append(
        Middleware(BareChallenge, resource_metadata=metadata_url(auth.audience))
    )
    # Innermost, so it sees the user the SDK's middleware verified.
    app.user_middleware.append(
        Middleware(
            ScopeGate, needed=needed, required=list(auth.required_scopes),
            resource_metadata=metadata_url(auth.audience),
        )
    )
    return app


def _sign_in_route(registry: Registry) -> Route | None:
    """``GET /oauth/callback``, where a principal's sign-in to a mounted server comes back
    (``on_behalf_of = "principal"``; sources/mcp/_principals.py), when a server has one."""
    mounts = mounted(registry)
    servers = {
        name: server.principals for name, server in (mounts.servers if mounts else {}).items()
        if server.principals is not None
    }
    if not servers:
        return None

    async def callback(request: Request) -> HTMLResponse:
        status, said = await complete(servers, dict(request.query_params))
        body = f"<!doctype html><title>toolplug</title><p>{html.escape(said)}</p>"
        return HTMLResponse(body, status_code=status, headers={"cache-control": "no-store"})

    return Route(CALLBACK_PATH, callback, methods=["GET"])


def _draining_server(base: type[Any]) -> type[Any]:
    """uvicorn's ``Server``, draining calls in flight before it shuts down.

    uvicorn's own handling of SIGTERM and SIGINT starts its shutdown at once, and the
    event streams that carry MCP answers close when it starts (sse-starlette watches for
    it), cutting every call in flight. Here the first signal starts the drain
    (``_shutdown``: new calls are refused, each with an error it can read, and the calls in
    flight finish or are cancelled), and only then lets uvicorn shut down, which closes
    the listener. A second signal cuts the grace period short; a third stops at once.
    """

    class Draining(base):  # type: ignore[misc]
        def __init__(self, config: Any, drain: Drain, envelope: Any) -> None:
            super().__init__(config)
            self.drain, self.envelope = drain, envelope
            self.received: list[int] = []
            self.loop: asyncio.AbstractEventLoop | None = None
            self.draining: asyncio.Task[None] | None = None

        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            self.loop = asyncio.get_running_loop()
            await super().serve(sockets)

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.received.append(sig)
            if len(self.received) == 2:
                self.drain.hurry()
            elif len(self.received) > 2 or self.loop is None:
                self.should_exit = self.force_exit = True
            else:
                self.loop.call_soon_threadsafe(self._begin)

        def _begin(self) -> None:
            assert self.loop is not None
            self.draining = self.loop.create_task(self._drain_then_exit())

        async def _drain_then_exit(self) -> None:
            try:
                # The listener stays open meanwhile: a client that cannot connect fails
                # its own way, one that is refused a call reads why.
                await self.drain.drain(idle=lambda: self.envelope.active == 0)
            finally:
                self.should_exit = True

    return Draining
