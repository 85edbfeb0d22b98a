"""The engine's per-call approval API (issue 23), until it lands on the registry.

``registry.needs_approval(name, arguments)`` and ``registry.acall(..., approved=...,
passthrough=...)`` are being added to the engine. The integrations call them through the
two functions below, which use them when present and otherwise reach the same effect
through an approver. Delete this module, and call the registry directly, once they land.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolplug import ApprovalRequest, Registry, ToolResult

__all__ = ["acall", "call", "needs_approval"]

Approver = Callable[["ApprovalRequest"], Any]


def needs_approval(
    registry: Registry, name: str, arguments: Mapping[str, Any] | None = None
) -> str | None:
    """Why this call needs a person's approval, or None."""
    ask = getattr(registry, "needs_approval", None)
    if ask is not None:
        reason: str | None = ask(name, arguments)
        return reason
    from toolplug.contract._approval import approval_reason

    policy = registry.config.tools.get(name, {}).get("approval")
    return approval_reason(registry.get(name).metadata, policy)


_NATIVE: dict[type, bool] = {}


def _native(kind: Any) -> bool:
    """Whether this registry class takes ``approved`` and ``passthrough`` (asked once)."""
    known = _NATIVE.get(kind)
    if known is None:
        known = _NATIVE[kind] = "passthrough" in inspect.signature(kind.acall).parameters
    return known


def _approver(
    approver: Approver | None,
    approved: bool,
    passthrough: tuple[type[BaseException], ...],
    caught: list[BaseException],
) -> Approver:
    def decide(request: ApprovalRequest) -> Any:
        if approved:
            return True
        if approver is None:
            return None
        try:
            return approver(request)
        except passthrough as exc:
            caught.append(exc)
            return False

    return decide


async def acall(
    registry: Registry,
    name: str,
    arguments: Any,
    *,
    context: Mapping[str, Any] | None,
    approver: Approver | None,
    approved: bool,
    passthrough: tuple[type[BaseException], ...],
) -> ToolResult:
    """``registry.acall`` with ``approved`` and ``passthrough``."""
    if _native(type(registry)):
        result: ToolResult = await registry.acall(  # type: ignore[call-arg]
            name, arguments, context=context, approver=approver, approved=approved,
            passthrough=passthrough,
        )
        return result
    if approver is None and not approved:  # nothing to decide, nothing to let through
        return await registry.acall(name, arguments, context=context)
    caught: list[BaseException] = []
    decide = _approver(approver, approved, passthrough, caught)
    result = await registry.acall(name, arguments, context=context, approver=decide)
    if caught:
        raise caught[0]
    return result


def call(
    registry: Registry,
    name: str,
    arguments: Any,
    *,
    context: Mapping[str, Any] | None,
    approver: Approver | None,
    approved: bool,
    passthrough: tuple[type[BaseException], ...],
) -> ToolResult:
    """``registry.call`` with ``approved`` and ``passthrough``."""
    if _native(type(registry)):
        result: ToolResult = registry.call(  # type: ignore[call-arg]
            name, arguments, context=context, approver=approver, approved=approved,
            passthrough=passthrough,
        )
        return result
    if approver is None and not approved:  # nothing to decide, nothing to let through
        return registry.call(name, arguments, context=context)
    caught: list[BaseException] = []
    decide = _approver(approver, approved, passthrough, caught)
    result = registry.call(name, arguments, context=context, approver=decide)
    if caught:
        raise caught[0]
    return result
