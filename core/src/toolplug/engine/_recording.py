"""What the engine tells the record (``toolplug.state._record``) and the call's span.

Four events, each one ``RecordEvent`` in the record and, when a span is recording, one span event
named as in the table (``toolplug.engine._telemetry`` makes the span):

=====================  =============================  ====================================
record ``kind``        span event                     when
=====================  =============================  ====================================
``guard``              ``toolplug.guard``             the guard or a policy looked at a call
``approval.request``   ``toolplug.approval.request``  a person was asked
``approval.decision``  ``toolplug.approval.decision`` the answer (or that nobody answered)
``call``               (the span itself)              the call's result
=====================  =============================  ====================================

On the event loop a call pays a tuple and a ``deque`` append (``Recorder.later``); the
writer thread redacts and measures its arguments and result and makes its row
(``call_row``) straight from the call's pieces.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import TYPE_CHECKING, Any, Final

from toolplug.state._events import RecordEvent, arguments_text, encoded, recorded_arguments

if TYPE_CHECKING:
    from toolplug.contract._approval import ApprovalRequest
    from toolplug.contract._call import ToolCall
    from toolplug.contract._tool import ToolResult
    from toolplug.runtime._registry import Registry
    from toolplug.state._inbox import PendingRequest
    from toolplug.state._record import Recorder
    from toolplug.trust._conversation import Conversation
    from toolplug.trust._decisions import Decision

__all__ = [
    "approval_asked", "approval_decided", "call_row", "decision_refused", "guard_decided",
    "request_failed", "span_ids",
]


def span_ids() -> tuple[str | None, str | None]:
    """The current span's trace and span ids (hex), or Nones."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None, None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None, None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def _who(call: ToolCall) -> tuple[str | None, str | None, str | None]:
    host = call.context.host if call.context is not None else {}
    call_id, client, session = host.get("call_id"), host.get("client"), host.get("session")
    return (
        None if call_id is None else str(call_id),
        None if client is None else str(client),
        None if session is None else str(session),
    )


_LABELS: Final = {
    (False, False): "[]", (True, False): '["untrusted"]', (False, True): '["private"]',
    (True, True): '["untrusted","private"]',
}
"""A call's labels column, by (untrusted, private): the JSON ``labels_text`` writes."""
_SIZE: Final = json.JSONEncoder(ensure_ascii=False, default=str).encode
"""``json.dumps(data, ensure_ascii=False, default=str)``, its encoder made once: a result's
data is measured as that JSON."""


def call_row(  # noqa: PLR0917 - the writer thread calls it with what the call left
    replica: str, null: Any, registry: Registry, call: ToolCall, result: ToolResult,
    conversation: Conversation | None, ended: float, duration: float,
    ids: tuple[str | None, str | None],
) -> tuple[Any, ...]:
    """The ``call`` event of one call, as its row (``RecordEvent.row(null)``: the record's
    ``COLUMNS``), built in the writer thread: no ``RecordEvent`` made on the way."""
    host = call.context.host if call.context is not None else None
    if host:
        call_id, principal, session = host.get("call_id"), host.get("client"), host.get("session")
        call_id = null if call_id is None else str(call_id)
        principal = null if principal is None else str(principal)
        session = null if session is None else str(session)
    else:
        call_id = principal = session = null
    error = result.error
    size = len(result.output)
    if result.data is not None:
        with contextlib.suppress(TypeError, ValueError, RecursionError):
            size += len(_SIZE(result.data))
    trust = result.trust
    labels = "[]" if trust is None else _LABELS[trust.output == "untrusted", bool(trust.private)]
    detail = "{}"
    if error is not None or result.parts:
        details: dict[str, Any] = {}
        if error is not None:
            details["error"] = registry.redact(error.message)[:500]
        if result.parts:
            details["parts"] = len(result.parts)
        detail = encoded(details)
    arguments = arguments_text(
        call.arguments, registry.redactor, registry.config.record.max_argument_chars
    )
    trace_id, span_id = ids
    return (
        ended, "call", call.tool, call_id, principal, session,
        null if conversation is None else conversation.root.id, replica,
        "ok" if error is None else str(error.type), size, round(duration * 1000, 3), null,
        null, labels, "[]", null if arguments is None else arguments,
        null if trace_id is None else trace_id, null if span_id is None else span_id, detail,
    )


def _now_event(  # noqa: PLR0917 - the three decisions' shared columns, in the record's order
    kind: Any, call: ToolCall, conversation: Conversation | None, status: str,
    rule: str | None, reason: str | None, **rest: Any,
) -> RecordEvent:
    """An event of ``call`` happening now, in the current span, with its owner and session."""
    call_id, principal, session = _who(call)
    trace_id, span_id = span_ids()
    return RecordEvent(
        kind, time.time(), call.tool, call_id, principal, session,
        None if conversation is None else conversation.root.id, "", status, None, None,
        rule, reason, trace_id=trace_id, span_id=span_id, **rest,
    )


def guard_decided(
    recorder: Recorder | None, registry: Registry, call: ToolCall, decision: Decision,
    conversation: Conversation | None,
) -> None:
    """Record what the guard decided about ``call`` (its span event is the guard's own)."""
    if recorder is None:
        return
    arguments, text = recorded_arguments(
        call.arguments, registry.redactor.redact_data, registry.config.record.max_argument_chars
    )
    recorder.add(_now_event(
        "guard", call, conversation, decision.action, decision.rule, decision.reason or None,
        labels=sorted({c.label for c in decision.carried}),
        sources=[c.to_dict() for c in decision.carried],
        arguments=arguments, arguments_text=text,
        detail={"looked": list(decision.looked), "approved": decision.approved},
    ))


def approval_asked(
    recorder: Recorder | None, call: ToolCall, request: ApprovalRequest,
    conversation: Conversation | None, details: Any = None,
) -> None:
    """Record that a person is asked about ``call`` (``request``: redacted already)."""
    rule = str(details.get("rule")) if details and details.get("rule") else "approval"
    sources = list(details.get("arguments") or ()) if details else []
    _span_event("toolplug.approval.request", {
        "gen_ai.tool.name": call.tool, "toolplug.approval.reason": request.reason,
        "toolplug.approval.rule": rule,
    })
    if recorder is None:
        return
    # the question shows them whole; the record masks secret-named keys as a call's
    arguments, text = recorded_arguments(
        dict(request.arguments), _same, recorder.settings.max_argument_chars
    )
    recorder.add(_now_event(
        "approval.request", call, conversation, "asked", rule, request.reason,
        labels=sorted({str(s.get("label")) for s in sources if isinstance(s, dict)}),
        sources=[dict(s) for s in sources if isinstance(s, dict)],
        arguments=arguments, arguments_text=text,
    ))


def approval_decided(  # noqa: PLR0917 - one line in the pipeline, every part of the answer
    recorder: Recorder | None, call: ToolCall, status: str, reason: str | None,
    conversation: Conversation | None, by: str | None = None,
) -> None:
    """Record the answer: ``approved``, ``denied`` or ``unanswered`` (nobody could be
    asked), with the denial's reason and who answered (``by``) when known."""
    attributes: dict[str, Any] = {"gen_ai.tool.name": call.tool, "toolplug.approval.status": status}
    if reason:
        attributes["toolplug.approval.reason"] = reason
    _span_event("toolplug.approval.decision", attributes)
    if recorder is None:
        return
    recorder.add(_now_event(
        "approval.decision", call, conversation, status, "approval", reason,
        detail={"by": by} if by else {},
    ))


def decision_refused(
    request: Any, *, target: str, action: str, why: str, reason: str, by: str | None,
    via: str,
) -> RecordEvent:
    """The event of a decision (or a revocation) refused: ``why`` the ``DecisionRefused``'s
    (``unknown``, ``owner``, ``decided``, ``expired``, ``failed``) or ``csrf``; ``request``
    the pending request it named, when known; ``via`` who refused it (``console``,
    ``command line``)."""
    return RecordEvent(
        "approval.decision", time.time(), request.tool if request is not None else "-",
        principal=by, conversation=request.conversation if request is not None else None,
        status="refused", rule=via, reason=reason[:500],
        detail={
            "why": why, "action": action, "target": target[:200], "by": by,
            "owner": request.owner if request is not None else None,
        },
    )


def request_failed(request: PendingRequest) -> RecordEvent:
    """The event of a request the sweep moved to ``failed`` (its holder's lease lapsed:
    ``toolplug.state._inbox``), recorded by the process that swept it, whichever that is."""
    return RecordEvent(
        "approval.decision", request.decided_at or time.time(), request.tool,
        principal=request.owner, conversation=request.conversation, status="failed",
        rule="lease", reason=request.note,
        detail={"request": request.id, "owner": request.owner},
    )


def _same(value: Any) -> Any:
    return value  # the request's arguments are redacted already


def _span_event(name: str, attributes: dict[str, Any]) -> None:
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:  # toolplug never imports OpenTelemetry itself
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event(name, attributes)
