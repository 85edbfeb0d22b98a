"""What an integration offers an agent, and how it runs one call: shared by every framework.

Each integration reads the registry's one selection (``Registry.select``) through
``offer``, so that ``toolset``, ``task`` and ``max_tools`` mean in every framework what they
mean to every renderer; and a call crosses toolplug the same way whatever framework made
it: the framework asks the person (its own approval flow, asked where
``Registry.needs_approval`` says so), and toolplug runs the approved call without asking
again (``approved=True``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import toolplug

if TYPE_CHECKING:
    from toolplug import Channel, Conversation, Registry, ToolMetadata, ToolResult, Toolset

__all__ = [
    "INFERRED",
    "Allow",
    "Offer",
    "aapproval_reason",
    "approval_reason",
    "bound_may_ask",
    "bounded",
    "checked",
    "describe_call",
    "error_text",
    "guard_may_ask",
    "inferred",
    "missing",
    "offer",
    "refines_per_call",
    "resolved",
    "run",
    "success_body",
    "system_prompt",
    "tool_description",
]

INFERRED: Final = "inferred"
"""``allow=INFERRED``: the effects read from the request itself (``Registry.conversation``'s
word for it)."""

Allow = Iterable[str] | Mapping[str, int | None] | str | None
"""An integration's ``allow=``: what ``Registry.conversation`` takes (``"inferred"``
too)."""

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
    """The selection, read once (the options of every renderer: docs/concepts.md).

    Raises:
        UsageError: ``toolset`` names no configured toolset.
        ValueError: ``max_tools`` is negative.
    """
    if max_tools is not None and max_tools < 0:
        raise ValueError(f"max_tools must be 0 or more, got {max_tools}")
    selection = registry.select(toolset=toolset, task=task, max_tools=max_tools)
    section = system_prompt(registry, toolset=toolset, task=task, max_tools=max_tools)
    return Offer(
        tools=tuple(sorted(selection.metadata, key=lambda m: m.name)),
        deferred=tuple(sorted((t.metadata for t in selection.deferred), key=lambda m: m.name)),
        section=section.strip(),
    )


def system_prompt(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    task: str | None = None,
    max_tools: int | None = None,
) -> str:
    """The optional-tools section, for the agent's system prompt (LangChain's
    ``create_agent(system_prompt=...)``, llm's ``system=`` or ``llm --sf toolplug:``).

    Args:
        registry: The loaded tools (``toolplug.load()``).
        toolset: Describe only this toolset's tools.
        task: Keep the tools most relevant to this task (with ``max_tools``).
        max_tools: Keep at most this many tools.
    """
    return toolplug.optional_tools_section(
        registry, toolset=toolset, task=task, max_tools=max_tools
    )


def tool_description(metadata: ToolMetadata) -> str:
    """The description a framework's tool carries: the tool's own, and its usage hint (the
    model reads nothing else about a tool it must use)."""
    hint = metadata.usage_hint.strip()
    return f"{metadata.description}\n\n{hint}" if hint else metadata.description


def refines_per_call(registry: Registry, name: str) -> bool:
    """Whether the tool refines its annotations per call (``Tool.annotations_for``), so that
    whether a call needs approval depends on its arguments."""
    refine = getattr(registry.get(name).cls.annotations_for, "__func__", None)
    return refine is not getattr(toolplug.Tool.annotations_for, "__func__", None)


def approval_reason(registry: Registry, name: str, arguments: Any) -> str | None:
    """Why the framework must ask its person about this call: the flow guard or a policy
    (in the current conversation), else toolplug's approval rule; None when it need not."""
    return _both(registry.guard_reason(name, arguments), registry.needs_approval(name, arguments))


async def aapproval_reason(registry: Registry, name: str, arguments: Any) -> str | None:
    """``approval_reason`` for a framework's async path: a guard check that would search
    long text runs off the event loop (``Registry.aguard_reason``)."""
    guarded = await registry.aguard_reason(name, arguments)
    return _both(guarded, registry.needs_approval(name, arguments))


def _both(guarded: str | None, reason: str | None) -> str | None:
    if guarded is None or reason is None:
        return guarded if guarded is not None else reason
    return f"{guarded}; and {reason}"


def guard_may_ask(registry: Registry, name: str) -> bool:
    """Whether the flow guard or a policy may ask about a call of ``name``: a policy names
    it, or its labels (declared or configured, not the cautious default) name sinks."""
    config = registry.config
    if name in config.policies:
        return True
    labels = registry.labels(name)
    cautious = toolplug.Trust.cautious(registry.get(name).metadata.parameters)
    return config.guard.enabled and bool(labels.sinks) and labels != cautious


def bound_may_ask(registry: Registry, name: str) -> bool:
    """Whether the effects rule may ask about a call of ``name`` in a bounded conversation
    (an integration's ``allow=``): the tool may change something or send it out, as the
    rule reads it (``FlowGuard._outside_effects``): it declares it is not read-only, or
    refines its annotations per call, or declares none and has sinks (its labels or the
    cautious default's)."""
    metadata = registry.get(name).metadata
    if "annotations" not in metadata.model_fields_set:
        return bool(registry.labels(name).sinks)
    return not metadata.annotations.read_only or refines_per_call(registry, name)


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
    passthrough: tuple[type[BaseException], ...] = (),
    channel: Channel | None = None,
) -> ToolResult:
    """One call through toolplug's engine; ``approved``: the framework's person said yes.

    ``call_id`` (the framework's id for the call) reaches the tool and the telemetry span;
    ``passthrough``: the framework's exceptions that pause its run, raised by a hook or the
    tool, leave the call unchanged. Cancelling the awaiting task cancels the tool
    (``Registry.acall``). ``channel``: the framework's end of the tool's talking back.
    """
    context = {"call_id": call_id} if call_id is not None else None
    return await registry.acall(
        name, arguments, context=context, approved=approved, passthrough=passthrough,
        channel=channel,
    )


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


def checked(allow: Allow) -> Allow:
    """``allow`` as given to an integration, checked at once (a ``TypeError`` saying what
    to give), not at the first call of a run: a conversation bounded by it is made and
    dropped, so the check is the one every conversation makes."""
    if allow is None or allow == INFERRED:
        return allow
    if not isinstance(allow, Mapping | str):
        # kept as a tuple: a generator (or any one-pass iterable) would be used up by this
        # check and leave the bound empty, every effect then asking
        allow = tuple(allow)
    toolplug.Conversation(allow=allow)  # a string other than "inferred" raises too
    return allow


def inferred(registry: Registry, request: str) -> frozenset[str]:
    """The effects ``request``'s words name, as ``allow="inferred"`` reads them."""
    effects = registry.conversation(request, allow=INFERRED).effects
    assert effects is not None  # "inferred" bounds, if only to nothing
    return effects


def resolved(
    registry: Registry, allow: Allow, request: str | None
) -> Iterable[str] | Mapping[str, int | None] | None:
    """``allow`` as a conversation inside another takes it: ``"inferred"`` read from
    ``request`` (``inferred``)."""
    if allow == INFERRED:
        return inferred(registry, request or "")
    return allow


def bounded(registry: Registry, opened: Conversation, allow: Allow) -> Conversation:
    """The conversation an integration's call runs in when the host opened ``opened``
    around the run: ``opened`` itself, or with ``allow`` given, a conversation inside it
    bounded by ``allow`` (``"inferred"``: from ``opened``'s trusted text), so a call must
    be inside both the host's bound and the integration's (``Conversation.child``)."""
    if allow is None:
        return opened
    return opened.child(exact=False, allow=resolved(registry, allow, opened.request))
