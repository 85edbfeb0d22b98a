"""OpenTelemetry spans for tool calls, named and shaped by the GenAI semantic conventions.

Only with the OpenTelemetry API installed (``pip install "toolplug[otel]"``) and a tracer
provider set by the host; otherwise calls pay one dictionary look-up. Each call becomes
one span ``execute_tool {tool}`` around the interception hooks and the tool, current while
the tool runs (so spans of instrumented HTTP clients nest under it), with:

- ``gen_ai.operation.name`` = ``execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.type``,
  ``gen_ai.tool.description``, and ``gen_ai.tool.call.id`` (the host's ``call_id`` from
  ``context=``, else a generated one);
- on failure, ``error.type`` (the result's error type, or the exception's class) and an
  error status; an exception is recorded as an ``exception`` event; configured secrets are
  replaced by ``***`` in every message and stack;
- with ``[calls] telemetry_content = true`` only, ``gen_ai.tool.call.arguments`` and
  ``gen_ai.tool.call.result``, with configured secrets replaced by ``***``;
- for a call ``toolplug serve`` answers, the MCP semantic conventions' ``mcp.method.name``
  (``tools/call``), ``jsonrpc.request.id``, ``mcp.session.id`` (over HTTP),
  ``mcp.protocol.version``, ``network.transport`` (and ``network.protocol.name``), read
  from the host's context even for a call refused before it ran.

The span's parent is the span current at the call: under ``toolplug serve``, the MCP SDK's
server span, which continues the trace whose W3C context the request's ``_meta`` carries.
While the span is current, the SDK's client writes it into a mounted server's requests'
``_meta``, and an OpenAPI tool's requests send it as ``traceparent`` headers.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from toolplug.contract._version import toolplug_version

if TYPE_CHECKING:
    from toolplug.contract._call import ToolCall
    from toolplug.contract._tool import ToolResult

__all__ = ["Telemetry"]

_Ended = Callable[["ToolResult"], None]
_UNKNOWN: Any = object()


class Telemetry:
    """Starts call spans once the host has set an OpenTelemetry tracer provider."""

    def __init__(self, *, content: bool, redact: Callable[[str], str]) -> None:
        self._content = content
        self._redact = redact
        self._trace: Any = None
        self._tracer: Any = None
        self._from_env = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ

    def on(self) -> bool:
        """True once a tracer provider is set. toolplug never imports OpenTelemetry itself:
        a host that set a provider has imported it, and any other host pays nothing."""
        trace = sys.modules.get("opentelemetry.trace")
        if trace is None:
            return False
        # get_tracer_provider() reads the environment on every call while no provider is
        # set (a microsecond per call); the module's global answers "none set" directly.
        if getattr(trace, "_TRACER_PROVIDER", _UNKNOWN) is None and not self._from_env:
            return False
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return False
        self._trace = trace
        return True

    @contextlib.contextmanager
    def span(self, call: ToolCall, host: Mapping[str, Any] | None = None) -> Iterator[_Ended]:
        """A current span around one call; call what it yields with the call's result.
        ``host`` is the caller's context, read when the call has none (it was refused before
        running: an unknown tool, arguments its schema refuses)."""
        if self._tracer is None:
            self._tracer = self._trace.get_tracer("toolplug", toolplug_version())
        if call.context is not None:
            host = call.context.host
        host = host or {}
        call_id = host.get("call_id") or f"call_{uuid.uuid4().hex}"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": str(call_id),
        }
        if call.metadata is not None:
            attributes["gen_ai.tool.description"] = call.metadata.description
        served = host.get("mcp")
        if isinstance(served, dict):
            attributes.update(_mcp_attributes(served))
        if self._content:
            attributes["gen_ai.tool.call.arguments"] = self._text(call.arguments)
        with self._tracer.start_as_current_span(
            f"execute_tool {call.tool}",
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
            # the SDK would record the exception's message and stack raw: recorded below,
            # redacted
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield lambda result: self._ended(span, result)
            except BaseException as exc:  # cancelled, or a bug below: still say why
                span.set_attribute("error.type", type(exc).__qualname__)
                span.add_event("exception", {
                    "exception.type": type(exc).__qualname__,
                    "exception.message": self._redact(str(exc)),
                    "exception.stacktrace": self._redact("".join(traceback.format_exception(exc))),
                })
                description = self._redact(repr(exc))
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, description))
                raise

    def _ended(self, span: Any, result: ToolResult) -> None:
        if self._content:
            span.set_attribute("gen_ai.tool.call.result", self._redact(result.for_model()))
        if result.error is not None:
            span.set_attribute("error.type", result.error.type)
            message = self._redact(result.error.message)  # redacted already; a hook's own?
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message))

    def _text(self, value: Any) -> str:
        return self._redact(json.dumps(value, ensure_ascii=False, default=str, sort_keys=True))


def _mcp_attributes(served: dict[str, Any]) -> dict[str, Any]:
    """The MCP semantic conventions' attributes of a call ``toolplug serve`` answers: the
    method, the JSON-RPC request id, the session, the protocol version and the transport
    (``network.transport``: ``pipe`` for stdio, ``tcp`` with ``network.protocol.name`` =
    ``http`` for streamable HTTP)."""
    attributes: dict[str, Any] = {"mcp.method.name": str(served.get("method") or "tools/call")}
    for key, name in (
        ("request_id", "jsonrpc.request.id"), ("session", "mcp.session.id"),
        ("protocol_version", "mcp.protocol.version"),
    ):
        value = served.get(key)
        if value:
            attributes[name] = str(value)
    if served.get("transport") == "http":
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
    elif served.get("transport") == "stdio":
        attributes["network.transport"] = "pipe"
    return attributes
