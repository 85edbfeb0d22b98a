"""What an integration offers an agent, and how it runs one call: shared by every framework.

Each integration reads the registry through these functions only, so that ``toolset``,
``task`` and ``max_tools`` mean in every framework what they mean to every renderer, and a
call crosses toolplug the same way whatever framework made it: the framework asks the person
(its own approval flow), and toolplug runs the approved call without asking again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.contract._tool import ToolResult
    from toolplug.runtime._config import Toolset
    from toolplug.runtime._registry import Registry

__all__ = [
    "Offer",
    "approval_reason",
    "describe_call",
    "error_text",
    "fixed_reasons",
    "missing",
    "offer",
    "run",
    "success_body",
]

_SHOWN_ARGUMENTS: Final = 400
"""The longest argument text a description for a person quotes."""


@dataclass(frozen=True)
class Offer:
    """The tools an agent is offered, and the prompt section that goes with them."""

    tools: tuple[ToolMetadata, ...]
    """Offered in full, by name: at most ``max_tools``, the most relevant to ``task``."""
    deferred: tuple[ToolMetadata, ...]
    """The rest of the selection, by name: left to the framework's tool search."""
    section: str
    """The optional-tools section for the agent's instructions ("" when there is none)."""


def offer(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    task: str | None = None,
    max_tools: int | None = None,
) -> Offer:
    """The selection, read once (the options of every renderer: docs/concepts.md)."""
    from toolplug.render._prompt import optional_tools_section
    from toolplug.render._select import select_tools

    if max_tools is not None and max_tools < 0:
        raise ValueError(f"max_tools must be 0 or more, got {max_tools}")
    every = [t.metadata for t in registry.select(toolset=toolset)]
    chosen = select_tools(registry, toolset=toolset, task=task, max_tools=max_tools)
    names = {m.name for m in chosen}
    section = optional_tools_section(registry, toolset=toolset, task=task, max_tools=max_tools)
    return Offer(
        tools=tuple(m for m in every if m.name in names),
        deferred=tuple(m for m in every if m.name not in names),
        section=section.strip(),
    )


def approval_reason(registry: Registry, name: str, arguments: Mapping[str, Any]) -> str | None:
    """Why this call needs a person's approval, or None: toolplug's decision for the call."""
    ask = getattr(registry, "needs_approval", None)
    if ask is not None:
        reason: str | None = ask(name, arguments)
        return reason
    # Until Registry.needs_approval lands: the per-tool rule the engine applies.
    from toolplug.contract._approval import approval_reason as rule

    policy = registry.config.tools.get(name, {}).get("approval")
    return rule(registry.get(name).metadata, policy)


def fixed_reasons(registry: Registry, tools: Iterable[ToolMetadata]) -> dict[str, str | None]:
    """The approval answer of each tool whose answer cannot depend on the call's arguments.

    A tool refines its annotations per call only by defining ``annotations_for``; for the
    others the answer is worked out once, not on every call.
    """
    return {
        m.name: approval_reason(registry, m.name, {})
        for m in tools
        if not hasattr(registry.get(m.name).cls, "annotations_for")
    }


def describe_call(registry: Registry, name: str, arguments: Any, reason: str) -> str:
    """One paragraph for the person asked: what would run, with what, and why they are asked."""
    shown = registry.redact(json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str))
    if len(shown) > _SHOWN_ARGUMENTS:
        shown = shown[:_SHOWN_ARGUMENTS] + f"... ({len(shown) - _SHOWN_ARGUMENTS} more)"
    about = registry.get(name).metadata.description.rstrip(".")
    return f"{name} ({about}) would run with {shown}; approval is needed because {reason}"


async def run(
    registry: Registry,
    name: str,
    arguments: Any,
    *,
    approved: bool,
    call_id: str | None,
) -> ToolResult:
    """One call through toolplug's engine; ``approved``: the framework's person said yes.

    Cancelling the awaiting task cancels the tool (``Registry.acall``).
    """
    context = {"call_id": call_id} if call_id is not None else None
    if not approved:
        return await registry.acall(name, arguments, context=context)
    if _takes_approved(registry):
        return await registry.acall(  # type: ignore[call-arg,unused-ignore]
            name, arguments, context=context, approved=True
        )
    # Until acall(approved=True) lands: the framework's yes, given as the call's approver.
    from toolplug.calls._approval import Approval

    return await registry.acall(
        name, arguments, context=context, approver=lambda request: Approval.approve()
    )


def _takes_approved(registry: Registry) -> bool:
    import inspect

    return "approved" in inspect.signature(registry.acall).parameters


def success_body(result: ToolResult) -> dict[str, Any]:
    """What the model reads of a success: the text, the data, citations and warnings.

    The seeds' result shape without its ``error`` flag, and without the parts a result does
    not have, so a plain text result stays ``{"output": ...}``.
    """
    body: dict[str, Any] = {"output": result.output}
    if result.data is not None:
        body["data"] = result.data
    if result.citations:
        body["citations"] = [c.to_dict() for c in result.citations]
    if result.warnings:
        body["warnings"] = list(result.warnings)
    return body


def error_text(result: ToolResult) -> str:
    """An error as one line of text, for a framework that wraps it in its own encoding.

    pydantic-ai sends a failed tool result as ``{"error": TEXT}``: the seeds' JSON inside it
    would be JSON inside JSON. Whether a retry may help is said by the framework's signal
    (``ModelRetry`` or ``ToolFailed``), not in the text.
    """
    assert result.error is not None
    error = result.error
    text = f"{error.type}: {error.message}"
    after = error.details.get("retry_after_seconds")
    if after is not None:
        text += f" (try again in {after} s)"
    return text


def missing(framework: str, extra: str, error: ModuleNotFoundError) -> ImportError:
    """The ImportError to raise when a framework is not installed: with the pip line."""
    return ImportError(
        f"toolplug's {framework} integration needs {framework}, which is not installed "
        f"({error}); install it with: pip install \"toolplug[{extra}]\""
    )
