"""Asking for approval: the request a person sees, their decision, and who is asked.

For a call that needs approval (``toolplug.contract._approval.approval_reason``) the engine
asks, in order, the approver given to the call (``registry.call(..., approver=...)``), the
one given to ``toolplug.load(approver=...)``, then the ``approve_call`` hook. The first
that decides wins; an approver that returns None passes the request on. With no decision
the call fails with ``ApprovalRequiredError``; a denial fails it with ``PermissionError``.
Either way the tool does not run.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from toolplug.contract._tool import ErrorType, ToolResult

if TYPE_CHECKING:
    from toolplug.contract._call import ToolCall
    from toolplug.contract._metadata import ToolMetadata

__all__ = ["Approval", "ApprovalRequest", "Approver", "ask"]

_SHOWN_ARGUMENTS: Final = 400
"""The longest argument text an approval message quotes."""


@dataclass(frozen=True)
class ApprovalRequest:
    """A call that waits for a person's decision."""

    tool: str
    """The tool's name."""
    arguments: Mapping[str, Any]
    """The validated arguments, with every configured secret replaced by ``***``."""
    metadata: ToolMetadata = field(repr=False)
    """The tool's metadata (description, annotations)."""
    reason: str
    """Why this call needs approval."""
    call_id: str | None = None
    """The host's id for the call (``context={"call_id": ...}``), when it gave one."""

    def describe(self) -> str:
        """One paragraph for a person: what would run, with which arguments, and why ask."""
        shown = json.dumps(dict(self.arguments), sort_keys=True, ensure_ascii=False)
        if len(shown) > _SHOWN_ARGUMENTS:
            shown = shown[:_SHOWN_ARGUMENTS] + f"... ({len(shown) - _SHOWN_ARGUMENTS} more)"
        return (
            f"{self.tool} ({self.metadata.description.rstrip('.')}) would run with "
            f"{shown}; approval is needed because {self.reason}"
        )


@dataclass(frozen=True)
class Approval:
    """A person's decision on an ``ApprovalRequest``."""

    approved: bool
    """True to let the call run."""
    reason: str = ""
    """Why; shown to the model when the call is denied."""

    @classmethod
    def approve(cls, reason: str = "") -> Approval:
        """Let the call run."""
        return cls(True, reason)

    @classmethod
    def deny(cls, reason: str = "") -> Approval:
        """Refuse the call; the model sees ``reason``."""
        return cls(False, reason)


Decision: TypeAlias = "Approval | bool | None"
Approver: TypeAlias = Callable[[ApprovalRequest], "Decision | Awaitable[Decision]"]
"""Decides on a request: ``Approval``, True/False, or an awaitable of either (None passes
the request on to the next approver)."""


async def ask(
    call: ToolCall,
    reason: str,
    approvers: tuple[Approver | None, ...],
    redact: Callable[[str], str],
) -> ToolResult | None:
    """None when the call may run, else the result that says why it may not."""
    assert call.metadata is not None
    arguments = json.loads(redact(json.dumps(call.arguments, default=str)))
    host = call.context.host if call.context is not None else {}
    call_id = host.get("call_id")
    request = ApprovalRequest(
        call.tool, arguments, call.metadata, reason, None if call_id is None else str(call_id)
    )
    decision: Any = None
    try:
        for approver in approvers:
            if approver is None:
                continue
            decision = approver(request)
            if inspect.isawaitable(decision):
                decision = await decision
            if decision is not None:
                break
    except Exception as exc:  # an approver's bug: the call does not run, the host goes on
        return ToolResult.failure(
            ErrorType.EXECUTION,
            f"the approver of {call.tool} failed: {type(exc).__name__}: {exc}",
        )
    if decision is None:
        return _required(request)
    if isinstance(decision, bool):
        decision = Approval(decision)
    if not isinstance(decision, Approval):
        return ToolResult.failure(
            ErrorType.EXECUTION,
            f"the approver of {call.tool} returned {type(decision).__name__}; expected an "
            "Approval, True, False or None",
        )
    if decision.approved:
        return None
    because = f": {decision.reason}" if decision.reason else ""
    return ToolResult.failure(
        ErrorType.PERMISSION,
        f"the call of {call.tool} was denied by the person approving it{because}. Do not "
        "retry it; tell the user.",
        details={"denied": True, "reason": decision.reason},
    )


def _required(request: ApprovalRequest) -> ToolResult:
    tool = request.tool
    return ToolResult.failure(
        ErrorType.APPROVAL_REQUIRED,
        f"{request.describe()}. Nobody was asked: run it where a person can answer "
        f"(`toolplug call` on a terminal, or with --yes), give toolplug.load() or the call "
        f"an approver, implement the approve_call hook, or set [tools.{tool}] "
        f'approval = "never" to run it unasked',
        details={"tool": tool, "arguments": dict(request.arguments), "reason": request.reason},
    )
