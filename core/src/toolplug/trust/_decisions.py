"""What the flow guard decided, kept where a person can read it afterwards.

Each call the guard looked at (in a conversation that read untrusted content, or one a
``[policies]`` rule matched) leaves a ``Decision``: on ``Conversation.decisions`` (Python),
as a log record of the ``toolplug.guard`` logger (``allow`` at DEBUG, ``ask`` at INFO,
``deny`` at WARNING, the decision as JSON data in the record's ``guard`` attribute), and as
an event ``toolplug.guard`` on the call's OpenTelemetry span when a tracer provider is set
(``toolplug.engine._telemetry``). Values are redacted: the fragments a rule found, with
configured secrets replaced by ``***``; never a whole argument.
"""

from __future__ import annotations

import json
import logging
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, overload

__all__ = ["EVENT", "KEPT", "Carried", "Decision", "Decisions", "log", "quiet", "trace"]

log: Final = logging.getLogger("toolplug.guard")

EVENT: Final = "toolplug.guard"
"""The name of the span event and the logger."""

KEPT: Final = 1000
"""The decisions a conversation keeps, the latest (an MCP session's lasts as long as the
session: its log records and span events keep the rest)."""

_LEVELS: Final = {"allow": logging.DEBUG, "ask": logging.INFO, "deny": logging.WARNING}


@dataclass(frozen=True, slots=True)
class Carried:
    """One argument that carries outside data: what an approval request names."""

    argument: str
    rule: str
    """``flow.token``, ``flow.phrase``, ``flow.exact``, ``flow.reference``, ``flow.ref``,
    ``trifecta``."""
    fragment: str
    """What of the value the rule found in the source (redacted in a ``Decision``)."""
    source: Mapping[str, Any] | None
    """The source call (``Record.to_dict``: its tool, index, call id, labels), or None (the
    trifecta rule with ``trifecta = "always"``)."""
    label: str
    """``untrusted`` or ``private``: why that source's data may not go there unasked."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "argument": self.argument, "rule": self.rule, "fragment": self.fragment,
            "source": None if self.source is None else dict(self.source), "label": self.label,
        }


@dataclass(slots=True)
class Decision:
    """What the guard decided about one call."""

    tool: str
    action: Literal["allow", "ask", "deny"]
    rule: str | None
    """The rule that asked or refused (``flow.token``, ``effects``, ``policies.TOOL[0]``);
    None for ``allow``."""
    reason: str
    """The reason shown to the person asked (empty for ``allow``)."""
    looked: tuple[str, ...] = ()
    """The arguments the rules read (the tool's sinks), by name."""
    carried: tuple[Carried, ...] = ()
    """Each argument that carries outside data, with its source and label."""
    call: int = 0
    """How many calls the conversation had recorded before this one."""
    approved: bool = False
    """The call came approved already (a framework's own approval flow asked the person,
    ``approved=True``): an ``ask`` then ran without another question."""

    def to_dict(self) -> dict[str, Any]:
        """The decision as JSON data (the log record's ``guard`` attribute)."""
        return {
            "tool": self.tool, "action": self.action, "rule": self.rule, "reason": self.reason,
            "looked": list(self.looked), "carried": [c.to_dict() for c in self.carried],
            "call": self.call, "approved": self.approved,
        }


_Allowed = tuple[str, tuple[str, ...], int, bool]
"""An ``allow`` as it is kept until it is read: tool, looked, call, approved."""


class Decisions(Sequence[Decision]):
    """A conversation's decisions, oldest first, the last ``KEPT``: a sequence of
    ``Decision``. An ``allow`` nobody logs or traces is kept as a tuple of its four fields
    and made a ``Decision`` when first read (then kept as that one object): most calls in
    a conversation are allowed, and a ``Decision`` built for each cost a third of what the
    guard adds to such a call (bench/guard.py)."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: deque[Decision | _Allowed] = deque(maxlen=KEPT)

    def append(self, decision: Decision) -> None:
        """Keep ``decision`` (the oldest goes once ``KEPT`` are kept)."""
        self._kept.append(decision)

    def allowed(self, tool: str, looked: tuple[str, ...], call: int, approved: bool) -> None:
        """Keep an ``allow`` of ``tool``, its ``Decision`` made when read."""
        self._kept.append((tool, looked, call, approved))

    def _at(self, index: int) -> Decision:
        kept = self._kept[index]
        if type(kept) is tuple:
            tool, looked, call, approved = kept
            made = Decision(tool, "allow", None, "", looked, (), call, approved)
            self._kept[index] = made
            return made
        return kept  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self._kept)

    @overload
    def __getitem__(self, index: int) -> Decision: ...
    @overload
    def __getitem__(self, index: slice) -> list[Decision]: ...
    def __getitem__(self, index: int | slice) -> Decision | list[Decision]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self._kept)))]
        return self._at(index)

    def __iter__(self) -> Iterator[Decision]:
        for i in range(len(self._kept)):
            yield self._at(i)

    def __repr__(self) -> str:
        return f"Decisions({list(self)!r})"


def carried_of(details: Mapping[str, Any], redact: Callable[[str], str]) -> tuple[Carried, ...]:
    """The arguments a verdict's ``details`` name as carrying outside data, redacted."""
    found = details.get("arguments")
    if not found:
        return ()
    return tuple(
        Carried(
            item["argument"], item["rule"], redact(item["fragment"]), item["source"],
            item["label"],
        )
        for item in found
    )


def quiet() -> bool:
    """Whether an ``allow`` needs no more than its place on the conversation: the logger
    drops DEBUG records and OpenTelemetry is not loaded (the common case: ``trace`` then
    has nothing to do, and an allow costs a ``Decision`` and an append)."""
    return not log.isEnabledFor(logging.DEBUG) and "opentelemetry.trace" not in sys.modules


def trace(decision: Decision, decisions: Decisions | None) -> None:
    """Keep ``decision``: on ``decisions`` (the conversation's), in a log record, and as an
    event on the current span."""
    if decisions is not None:
        decisions.append(decision)
    level = _LEVELS[decision.action]
    if log.isEnabledFor(level):
        body = decision.to_dict()
        log.log(
            level, "guard %s %s%s", decision.action, decision.tool,
            f" ({decision.rule}): {decision.reason}" if decision.rule else "",
            extra={"guard": body},
        )
    trace_module = sys.modules.get("opentelemetry.trace")
    if trace_module is None:  # toolplug never imports OpenTelemetry itself
        return
    span = trace_module.get_current_span()
    if not span.is_recording():
        return
    attributes: dict[str, Any] = {
        "toolplug.guard.action": decision.action,
        "toolplug.guard.tool": decision.tool,
        "toolplug.guard.looked": list(decision.looked),
    }
    if decision.rule is not None:
        attributes["toolplug.guard.rule"] = decision.rule
        attributes["toolplug.guard.reason"] = decision.reason
    if decision.carried:
        attributes["toolplug.guard.arguments"] = [c.argument for c in decision.carried]
        attributes["toolplug.guard.carried"] = json.dumps(
            [c.to_dict() for c in decision.carried], ensure_ascii=False
        )
    span.add_event(EVENT, attributes)
