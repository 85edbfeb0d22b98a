"""Plans: several tool calls with dependencies, run as concurrently as they allow.

A plan is a list of steps (or ``{"steps": [...]}``)::

    {"id": 1, "action": "web_search", "parameters": {"query": "..."}, "reasoning": "..."}
    {
        "id": 2,
        "action": "link_validator",
        "parameters": {"urls": ["$step1.results"]},
        "dependencies": [1],
    }

A step's id is its ``id`` (a positive integer) or, without one, its position from 1. A
parameter whose whole value is a reference to step N is replaced by that part of step N's
result, as ``--result json`` shows it: ``$stepN.output`` (the text), ``$stepN.data.x``,
``$stepN.citations.0.url``, ``$stepN.warnings``, ``$stepN.spill``, ``$stepN.parts.0`` (a
part: its text, a link's URI, or its bytes as a ``data:`` URL, as
``contract._parts.as_argument`` says; ``$stepN.parts.0.mime_type`` one of its fields). A
first name that is not one of those fields is looked up in ``data`` (``$stepN.x`` is
``$stepN.data.x``, and ``$stepN`` alone is the whole ``data``). Inside a list, a reference
to a list is flattened into it. A step that references step N must list N in ``dependencies``.

A plan runs in a conversation of its own, inside the current one when there is one
(``toolplug.trust._guard``): a sink argument passed by ``$stepN`` reference from a step
whose output is untrusted is sent for approval, however it was shaped.

Everything is checked before anything runs. While running, a step starts when its
dependencies have succeeded; a failed or skipped step skips its dependents.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._errors import UsageError
from toolplug.contract._parts import as_argument
from toolplug.contract._tool import ToolResult
from toolplug.trust._conversation import Conversation, Record, current, derived_from

if TYPE_CHECKING:
    from toolplug.runtime._registry import Registry

__all__ = ["Plan", "PlanError", "PlanResult", "Step", "StepOutcome", "parse_plan", "run_plan"]

_REFERENCE: Final = re.compile(r"^\$step(\d+)((?:\.[A-Za-z0-9_\-]+)*)$")
RESULT_FIELDS: Final = ("output", "data", "citations", "warnings", "spill", "parts")
"""The fields of a result a reference may name first; any other first name is in ``data``."""


class PlanError(UsageError):
    """A plan is malformed; the message lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid plan: " + "; ".join(problems))


@dataclass(frozen=True)
class Step:
    """One step of a plan."""

    id: int
    action: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    dependencies: tuple[int, ...] = ()
    reasoning: str = ""


@dataclass(frozen=True)
class Plan:
    """Checked steps, in the order they were written."""

    steps: tuple[Step, ...]


@dataclass
class StepOutcome:
    """What happened to one step."""

    id: int
    action: str
    status: str = "pending"
    """``ok``, ``failed`` or ``skipped``."""
    result: ToolResult | None = None
    reason: str = ""
    """Why a step was skipped, or could not be prepared."""
    started_ms: float = 0.0
    """Milliseconds after the plan started."""
    elapsed_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON-compatible data."""
        body: dict[str, Any] = {
            "id": self.id,
            "action": self.action,
            "status": self.status,
            "started_ms": round(self.started_ms, 1),
            "elapsed_ms": round(self.elapsed_ms, 1),
        }
        if self.reason:
            body["reason"] = self.reason
        if self.result is not None:
            body["result"] = self.result.to_dict()
        return body


@dataclass
class PlanResult:
    """Every step's outcome, in plan order."""

    steps: list[StepOutcome]
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every step succeeded."""
        return all(s.status == "ok" for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        """The plan's result as JSON-compatible data."""
        return {
            "ok": self.ok,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "steps": [s.to_dict() for s in self.steps],
        }


def _references(value: Any) -> list[tuple[int, tuple[str, ...]]]:
    found: list[tuple[int, tuple[str, ...]]] = []
    if isinstance(value, str):
        match = _REFERENCE.match(value)
        if match:
            path = tuple(p for p in match.group(2).split(".") if p)
            found.append((int(match.group(1)), path))
    elif isinstance(value, Mapping):
        for item in value.values():
            found += _references(item)
    elif isinstance(value, list):
        for item in value:
            found += _references(item)
    return found


def parse_plan(document: Any, registry: Registry | None = None) -> Plan:  # noqa: C901, PLR0912 - every problem of a plan collected in one pass
    """Check a plan document and build a ``Plan``.

    Raises:
        PlanError: listing every problem: malformed steps, unknown or unavailable tools,
            references to missing or later steps, references without a dependency,
            dependency cycles.
    """
    raw = document.get("steps") if isinstance(document, Mapping) else document
    if not isinstance(raw, list) or not raw:
        raise PlanError(['a plan is a non-empty list of steps, or {"steps": [...]}'])
    problems: list[str] = []
    steps: list[Step] = []
    for position, item in enumerate(raw, start=1):
        label = f"step at position {position}"
        if not isinstance(item, Mapping):
            problems.append(f"{label} is not an object")
            continue
        unknown = sorted(set(item) - {"id", "action", "parameters", "dependencies", "reasoning"})
        if unknown:
            problems.append(f"{label} has unknown keys: {', '.join(unknown)}")
        step_id = item.get("id", position)
        if not isinstance(step_id, int) or isinstance(step_id, bool) or step_id < 1:
            problems.append(f"{label}: id must be a positive integer, got {step_id!r}")
            continue
        action = item.get("action")
        if not isinstance(action, str) or not action:
            problems.append(f"step {step_id}: action must be a tool name")
            continue
        parameters = item.get("parameters", {})
        if not isinstance(parameters, Mapping):
            problems.append(f"step {step_id}: parameters must be an object")
            continue
        dependencies = item.get("dependencies", [])
        if not isinstance(dependencies, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in dependencies
        ):
            problems.append(f"step {step_id}: dependencies must be a list of step ids")
            continue
        reasoning = item.get("reasoning", "")
        steps.append(
            Step(step_id, action, dict(parameters), tuple(dependencies), str(reasoning or ""))
        )
    ids = [s.id for s in steps]
    for duplicate in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"step id {duplicate} is used more than once")
    order = {s.id: index for index, s in enumerate(steps)}
    for step in steps:
        if registry is not None:
            if step.action not in registry.tools:
                problems.append(f"step {step.id}: unknown tool {step.action!r}")
            elif not registry.availability(step.action).available:
                reasons = "; ".join(registry.availability(step.action).reasons)
                problems.append(f"step {step.id}: tool {step.action!r} is not available: {reasons}")
        for dep in step.dependencies:
            if dep not in order:
                problems.append(f"step {step.id} depends on step {dep}, which does not exist")
            elif dep == step.id:
                problems.append(f"step {step.id} depends on itself")
        for ref, path in _references(step.parameters):
            text = "$step" + str(ref) + "".join("." + p for p in path)
            if ref not in order:
                problems.append(f"step {step.id} references {text}: there is no step {ref}")
            elif order[ref] >= order[step.id]:
                problems.append(
                    f"step {step.id} references {text}: step {ref} does not come before it"
                )
            elif ref not in step.dependencies:
                problems.append(
                    f"step {step.id} references {text} but does not list {ref} in dependencies"
                )
    problems += _cycles(steps)
    if problems:
        raise PlanError(problems)
    return Plan(tuple(steps))


def _cycles(steps: list[Step]) -> list[str]:
    graph = {s.id: [d for d in s.dependencies if d != s.id] for s in steps}
    state: dict[int, int] = {}
    found: list[str] = []

    def visit(node: int, trail: list[int]) -> None:
        state[node] = 1
        for nxt in graph.get(node, []):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycle = [*trail[trail.index(nxt) :], nxt] if nxt in trail else [node, nxt]
                found.append("dependency cycle: " + " -> ".join(f"step {n}" for n in cycle))
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


class _Unresolved(Exception):
    pass


def _part_lookup(result: ToolResult, ref: int, path: tuple[str, ...]) -> Any:
    """``$stepN.parts``: every part as an argument; ``.K``: one; ``.K.FIELD``: a field of
    its JSON form (``kind``, ``mime_type``, ``name``, ``uri``, ``text``, ``data`` in
    base64) or its ``size``."""
    text = f"$step{ref}" + "".join("." + p for p in path)
    if len(path) == 1:
        return [as_argument(p) for p in result.parts]
    index = path[1]
    if not index.isdigit() or int(index) >= len(result.parts):
        count = len(result.parts)
        held = f"{count} part{'' if count == 1 else 's'}" if count else "no parts"
        raise _Unresolved(
            f"{text}: step {ref}'s result holds {held}; write $step{ref}.parts.K with K "
            "a number below that"
        )
    part = result.parts[int(index)]
    if len(path) == 2:
        return as_argument(part)
    fields = {**part.to_dict(), "size": part.size}
    if len(path) > 3 or path[2] not in fields:
        raise _Unresolved(
            f"{text}: part {index} of step {ref} ({part.kind}) has "
            f"{', '.join(sorted(fields))}; "
            f"$step{ref}.parts.{index} alone passes the part itself"
        )
    return fields[path[2]]


def _lookup(result: ToolResult, ref: int, path: tuple[str, ...]) -> Any:
    if path and path[0] == "parts":
        return _part_lookup(result, ref, path)
    node: Any = result.data
    if path and path[0] in RESULT_FIELDS:
        node = {
            "output": result.output,
            "data": result.data,
            "citations": [c.to_dict() for c in result.citations],
            "warnings": list(result.warnings),
            "spill": result.spill,
        }
    for depth, part in enumerate(path):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            text = f"$step{ref}" + "".join("." + p for p in path)
            if depth == 0:
                raise _Unresolved(
                    f"{text}: the result has no {part!r} (a result has "
                    f"{', '.join(RESULT_FIELDS)}; any other first name is looked up in its data)"
                )
            reached = f"$step{ref}" + "".join("." + p for p in path[:depth])
            raise _Unresolved(f"{text}: {reached} has no {part!r}")
    return node


def _resolve(value: Any, results: Mapping[int, ToolResult]) -> Any:
    if isinstance(value, str):
        match = _REFERENCE.match(value)
        if not match:
            return value
        ref = int(match.group(1))
        path = tuple(p for p in match.group(2).split(".") if p)
        return _lookup(results[ref], ref, path)
    if isinstance(value, Mapping):
        return {k: _resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            resolved = _resolve(item, results)
            if isinstance(item, str) and _REFERENCE.match(item) and isinstance(resolved, list):
                out.extend(resolved)  # a list reference inside a list is flattened
            else:
                out.append(resolved)
        return out
    return value


def _untrusted_references(
    step: Step, results: Mapping[int, ToolResult], actions: Mapping[int, str]
) -> dict[str, Record]:
    """The step's top-level parameters that reference an untrusted step's result."""
    found: dict[str, Record] = {}
    for key, value in step.parameters.items():
        for ref, _path in _references(value):
            trust = results[ref].trust if ref in results else None
            if trust is not None and trust.untrusted:
                found[key] = Record(ref, actions[ref], f"$step{ref}", trust, "")
                break
    return found


async def run_plan(
    registry: Registry,
    plan: Plan | Any,
    *,
    context: Mapping[str, Any] | None = None,
    approver: Any = None,
) -> PlanResult:
    """Check (if needed) and run a plan; every step's outcome is reported.

    ``approver`` decides on steps that need approval; a denied step fails, and the steps
    that depend on it are skipped.

    Raises:
        PlanError: the plan is malformed (nothing has run).
    """
    if not isinstance(plan, Plan):
        plan = parse_plan(plan, registry)
    started = time.monotonic()
    outcomes = {s.id: StepOutcome(s.id, s.action) for s in plan.steps}
    done = {s.id: asyncio.Event() for s in plan.steps}
    results: dict[int, ToolResult] = {}

    async def run_step(step: Step) -> None:
        outcome = outcomes[step.id]
        try:
            for dep in step.dependencies:
                await done[dep].wait()
            blocked = [d for d in step.dependencies if outcomes[d].status != "ok"]
            if blocked:
                outcome.status = "skipped"
                outcome.reason = "skipped because " + ", ".join(
                    f"step {d} {outcomes[d].status}" for d in blocked
                )
                return
            try:
                arguments = _resolve(dict(step.parameters), results)
            except _Unresolved as exc:
                outcome.status = "failed"
                outcome.result = ToolResult.failure("ValidationError", str(exc))
                return
            outcome.started_ms = (time.monotonic() - started) * 1000
            derived_from(_untrusted_references(step, results, actions))  # this step's task
            result = await registry.acall(
                step.action, arguments, context=context, approver=approver
            )
            outcome.elapsed_ms = (time.monotonic() - started) * 1000 - outcome.started_ms
            outcome.result = result
            outcome.status = "ok" if result.ok else "failed"
            if result.ok:
                results[step.id] = result
        finally:
            done[step.id].set()

    actions = {s.id: s.action for s in plan.steps}
    outer = current()
    with outer.child() if outer is not None else Conversation(exact=True):
        await asyncio.gather(*(run_step(s) for s in plan.steps))
    return PlanResult([outcomes[s.id] for s in plan.steps], (time.monotonic() - started) * 1000)
