"""Approvals: which calls need a person's decision, the request they see, and their answer.

The rule (``approval_reason``), per call: ``[tools.NAME] approval = "always"`` asks for every
call and ``"never"`` for none. Under ``"auto"`` (the default) a call is asked about when the
annotations that hold *for that call* say it is destructive, or neither read-only nor
closed-world. Those annotations are the tool's declared ones, refined by the tool's
``annotations_for(arguments)`` when it defines one (url_fetch's GET is read-only, its POST is
not). A tool that declares no annotations is not gated. Where the annotations are toolplug's
assumption (``ToolMetadata.annotations_assumed``: a mounted server whose annotations the
configuration does not trust), the reason says so and why, rather than "annotated".

Who is asked, and in which order: ``toolplug.engine._pipeline``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

if TYPE_CHECKING:
    from toolplug.contract._metadata import Annotations, ToolMetadata

__all__ = [
    "APPROVAL_POLICIES",
    "Approval",
    "ApprovalRequest",
    "Approver",
    "Decision",
    "Remember",
    "approval_reason",
]

APPROVAL_POLICIES: Final = ("auto", "always", "never")
Remember: TypeAlias = Literal["once", "conversation", "always"]
"""How long a person's decision holds: this call, this conversation, always."""
_SHOWN_ARGUMENTS: Final = 400
"""The longest argument text an approval message quotes."""


def approval_reason(
    metadata: ToolMetadata, policy: str | None = "auto", annotations: Annotations | None = None
) -> str | None:
    """Why a call needs approval under ``policy``, or None when it does not.

    ``annotations`` are the ones that hold for this call (the tool's ``annotations_for``);
    by default the declared ones.
    """
    if policy == "always":
        return f'[tools.{metadata.name}] approval = "always"'
    if policy == "never" or "annotations" not in metadata.model_fields_set:
        return None
    hints = metadata.annotations if annotations is None else annotations
    assumed = metadata.annotations_assumed
    if hints.destructive:
        if assumed:
            return f"toolplug assumes it may destroy or overwrite data: {assumed}"
        return "it may destroy or overwrite data (annotated destructive)"
    if not hints.read_only and hints.open_world:
        if assumed:
            return f"toolplug assumes it changes something outside this session: {assumed}"
        return "it changes something outside this session (not read-only, open-world)"
    return None


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
        shown = json.dumps(dict(self.arguments), sort_keys=True, ensure_ascii=False, default=str)
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
    remember: Remember = "once"
    """Whether the decision holds beyond this call: ``once``, ``conversation`` (the calls
    of this tool in this conversation) or ``always`` (this tool's calls whose arguments
    match ``match``); kept per owner in the approvals' store (``toolplug approvals
    remembered``)."""
    match: Mapping[str, Any] | None = None
    """With ``remember``: ``{"argument": NAME, "schema": {...}}``, the pattern the calls it
    holds for match (a ``[policies]`` rule's); None: these arguments exactly."""

    @classmethod
    def approve(
        cls, reason: str = "", *, remember: Remember = "once",
        match: Mapping[str, Any] | None = None,
    ) -> Approval:
        """Let the call run (and, with ``remember``, the calls like it)."""
        return cls(True, reason, remember, match)

    @classmethod
    def deny(
        cls, reason: str = "", *, remember: Remember = "once",
        match: Mapping[str, Any] | None = None,
    ) -> Approval:
        """Refuse the call (and, with ``remember``, the calls like it); the model sees
        ``reason``."""
        return cls(False, reason, remember, match)


Decision: TypeAlias = "Approval | bool | None"
Approver: TypeAlias = Callable[[ApprovalRequest], "Decision | Awaitable[Decision]"]
"""Decides on a request: ``Approval``, True/False, or an awaitable of either (None passes
the request on to the next approver)."""
