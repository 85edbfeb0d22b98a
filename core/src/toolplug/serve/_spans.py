"""What the MCP SDK's server span of each request leaves out: the session and the transport.

The SDK wraps every request ``toolplug serve`` answers in a span of its own (its
``OpenTelemetryMiddleware``, kind ``SERVER``, named ``tools/call {tool}``), continuing the
trace whose W3C context (``traceparent``, ``tracestate``) the request's ``_meta`` carries;
toolplug's ``execute_tool`` span of a call is its child. The SDK's span has the method,
the request id and the protocol version; the middleware here, inside the SDK's, adds the
MCP semantic conventions' ``mcp.session.id`` (over HTTP with a session) and
``network.transport`` (``pipe`` for stdio; ``tcp`` with ``network.protocol.name`` =
``http``), as on toolplug's own span. Without OpenTelemetry loaded it costs a dictionary
look-up per request. ``served_context`` is what a served call's own context says of the
request, for toolplug's span and the record.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.context import CallNext, ServerRequestContext
    from mcp.server.lowlevel import Server

__all__ = ["install_span_attributes", "served_attributes", "served_context"]


def install_span_attributes(server: Server[Any]) -> None:
    """Add the session and transport to the SDK's span of every request ``server`` answers."""
    server.middleware.append(_attributed)


async def _attributed(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
    trace = sys.modules.get("opentelemetry.trace")  # toolplug never imports it itself
    if trace is not None:
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attributes(served_attributes(ctx))
    return await call_next(ctx)


def served_attributes(ctx: ServerRequestContext[Any, Any]) -> dict[str, str]:
    """``mcp.session.id`` (when the request came in a session) and the transport."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    if headers is None:
        return {"network.transport": "pipe"}
    attributes = {"network.transport": "tcp", "network.protocol.name": "http"}
    session = headers.get("mcp-session-id")
    if session:
        attributes["mcp.session.id"] = str(session)
    return attributes


def served_context(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    """What a served call's context adds for its span and its record: ``mcp`` (the method,
    the JSON-RPC request id, the session, the protocol version, the transport: the MCP
    semantic conventions' attributes, ``toolplug.engine._telemetry``) and ``session``."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    session = None if headers is None else headers.get("mcp-session-id")
    served: dict[str, Any] = {"mcp": {
        "method": ctx.method or "tools/call",
        "request_id": None if ctx.request_id is None else str(ctx.request_id),
        "session": session,
        "protocol_version": ctx.protocol_version or None,
        "transport": "stdio" if headers is None else "http",
    }}
    if session:
        served["session"] = str(session)
    return served
