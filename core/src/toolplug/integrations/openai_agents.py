"""The installed tools as OpenAI Agents SDK function tools: ``function_tools``, ``instructions``.

How toolplug's concepts map to the SDK's::

    the selection (toolset, task, max_tools)  the FunctionTools: at most max_tools, the most
                                              relevant to task
    the parameters schema                     toolplug's strict Responses export; the call's
                                              strict arguments (nulls for left-out
                                              properties, maps as key/value lists) are
                                              restored by toolplug before the tool runs
    the optional-tools section                instructions(), for Agent(instructions=...)
    an agent run                              a conversation (toolplug.Conversation) carrying
                                              the user's input as trusted text and the
                                              calls' results with their labels; one opened
                                              around the run is used instead (and is the
                                              way to carry it across a resumed RunState)
    allow=                                    the effects the user's input asked for: each
                                              call of these tools runs in a conversation
                                              bounded by them inside the run's (or inside
                                              one opened around the run, never wider), so
                                              tool lists with different bounds in one run
                                              each keep their own
    a call that needs approval, or that the   needs_approval, answered per call by toolplug:
    flow guard or a policy asks about
                                              the run stops with interruptions; the person's
                                              state.approve() runs the call once, unasked by
                                              toolplug; state.reject() never runs it
    the tool's time limit                     toolplug's engine (per attempt), and the
                                              FunctionTool's timeout_seconds as a backstop
    an error                                  text the model reads: the error's type,
                                              message and retry_possible, as JSON
    a success                                 the text, data, citations and warnings, as JSON
    its parts                                 after that JSON (a ToolOutputText), in order:
                                              ToolOutputImage (a picture as a data URL, or
                                              an http(s) image link), ToolOutputFileContent
                                              (a file as a data URL with its name, or an
                                              http(s) link), ToolOutputText (text, other
                                              links); the SDK has no audio type: a
                                              recording is its description, logged
    a tool's context.ask, context.sample,     the Channel the host gives as the run's context
    progress and log lines                    (Runner.run(agent, input, context=channel)), or
                                              as its context's toolplug_channel attribute:
                                              the SDK cannot pause a running tool, so the
                                              host answers while the tool waits; without
                                              one, ask and sample fail saying so, and log
                                              lines go to Python logging
    cancelling the run                        cancels the tool (Registry.acall)

Install with ``pip install "toolplug[openai-agents]"``.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, cast

from toolplug import Channel, Conversation, export_tool
from toolplug.integrations._offer import (
    Allow,
    aapproval_reason,
    bound_may_ask,
    bounded,
    checked,
    guard_may_ask,
    missing,
    offer,
    refines_per_call,
    run,
    success_body,
)
from toolplug.integrations._parts import binary, carried, data_url, file_name, text_of, web_link
from toolplug.schema import restore_strict_arguments

try:
    from agents import (
        FunctionTool,
        RunContextWrapper,
        Tool,
        ToolOutputFileContent,
        ToolOutputImage,
        ToolOutputText,
    )
    from agents.tool_context import ToolContext
except ModuleNotFoundError as exc:  # pragma: no cover - tested in a process without the SDK
    raise missing("openai-agents", "openai-agents", exc) from exc

if TYPE_CHECKING:
    from toolplug import Part, Registry, ToolMetadata, ToolResult, Toolset

__all__ = ["channel_of", "function_tools", "instructions"]

ToolOutput = ToolOutputText | ToolOutputImage | ToolOutputFileContent
"""One item of a function tool's output, in the SDK's types."""

_GRACE_SECONDS: Final = 1.0
"""How long past toolplug's own limit the SDK waits, so that toolplug's answer comes first."""


def function_tools(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    task: str | None = None,
    max_tools: int | None = None,
    allow: Allow = None,
) -> list[Tool]:
    """The registry's selected tools as ``FunctionTool``s, sorted by name.

    Typed as the SDK's ``Tool``, what ``Agent(tools=...)`` takes.

    ``Agent(tools=function_tools(toolplug.load()), instructions=instructions(...))``.

    Args:
        registry: The loaded tools (``toolplug.load()``).
        toolset: Offer only this toolset's tools.
        task: With ``max_tools``: offer the tools most relevant to this task.
        max_tools: Offer at most this many tools.
        allow: The effects the user's request asked for (``Registry.conversation``'s
            ``allow``: tool names or categories, counts, or ``"inferred"`` from the run's
            input): each call of these tools is bounded by them, in a conversation of this
            list's inside the run's (another list with its own ``allow`` in the same run
            keeps its own bound), and in a conversation the host opened around the run, by
            both (docs/security.md).

    Raises:
        TypeError: ``allow`` is malformed (said at once, not at a run's first call).
    """
    allow = checked(allow)
    key = object()  # this list's: its bound gets a conversation of its own in each run
    chosen = offer(registry, toolset=toolset, task=task, max_tools=max_tools)
    tools: list[Tool] = []
    for metadata in chosen.tools:
        name = metadata.name
        exported = export_tool(metadata, "openai-responses", strict=True)
        per_call = (
            refines_per_call(registry, name)
            or _guarded(registry, name)
            or (allow is not None and bound_may_ask(registry, name))
        )
        gated = per_call or registry.needs_approval(name) is not None
        tools.append(
            FunctionTool(
                name=metadata.name,
                description=exported["description"],
                params_json_schema=exported["parameters"],
                on_invoke_tool=_invoker(registry, name, allow, key, gated=gated),
                strict_json_schema=True,
                needs_approval=(
                    _approval(registry, metadata, allow, key) if per_call else gated
                ),
                timeout_seconds=_time_limit(registry, metadata) + _GRACE_SECONDS,
                timeout_error_function=_timed_out(metadata.name),
            )
        )
    return tools


def instructions(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    task: str | None = None,
    max_tools: int | None = None,
) -> str:
    """The optional-tools section for the agent's instructions ("" when no tool is optional).

    Pass the options given to ``function_tools``, so the section describes the tools offered.
    """
    return offer(registry, toolset=toolset, task=task, max_tools=max_tools).section


def _invoker(
    registry: Registry, name: str, allow: Allow, key: object, *, gated: bool
) -> Callable[[ToolContext[Any], str], Awaitable[str | list[ToolOutput]]]:
    async def invoke(context: ToolContext[Any], arguments: str) -> str | list[ToolOutput]:
        call_id = context.tool_call_id
        # Only a call the person approved in this run is run as approved: a tool whose
        # needs_approval was turned off by the host still meets toolplug's own gate.
        approved = gated and context.is_tool_approved(name, call_id) is True
        with _conversation(registry, context, allow, key):
            result = await run(
                registry, name, arguments, approved=approved, call_id=call_id,
                channel=channel_of(context),
            )
        if result.error is not None:
            return result.for_model()
        text = json.dumps(success_body(result), ensure_ascii=False)
        if not result.parts:
            return text
        return [ToolOutputText(text=text), *_outputs(name, result)]

    return invoke


class _Unasked(Channel):
    why_not = (
        "the Agents SDK cannot pause a running tool to ask; give the run a toolplug Channel "
        "that asks: Runner.run(agent, input, context=channel), or a context whose "
        "toolplug_channel attribute is one"
    )


_UNASKED: Final = _Unasked()


def channel_of(context: RunContextWrapper[Any]) -> Channel:
    """The host's ``Channel`` in a run's context: the context itself, or its
    ``toolplug_channel`` attribute; else one that cannot ask, and says what to do."""
    given = context.context
    if isinstance(given, Channel):
        return given
    found = getattr(given, "toolplug_channel", None)
    return found if isinstance(found, Channel) else _UNASKED


def _outputs(name: str, result: ToolResult) -> list[ToolOutput]:
    """The result's parts in the SDK's types, each in its place (``carried``)."""
    # mypy solves carried's type variable as the union's base, BaseModel: named back here
    items = cast(list[ToolOutput | str], carried(result, "the OpenAI Agents SDK", name, _native))
    return [ToolOutputText(text=item) if isinstance(item, str) else item for item in items]


def _native(part: Part) -> ToolOutput | None:
    """One part in the SDK's type; None for a recording, which it has no type for."""
    text = text_of(part)
    if text is not None:
        return ToolOutputText(text=text)
    held = binary(part)
    if held is not None:
        if held.kind == "image":
            return ToolOutputImage(image_url=data_url(held))
        if held.kind == "file":
            return ToolOutputFileContent(file_data=data_url(held), filename=file_name(held))
        return None
    link = web_link(part)
    if link is None or link.mime_type is None or link.mime_type.startswith("audio/"):
        return None
    if link.mime_type.startswith("image/"):
        return ToolOutputImage(image_url=link.uri)
    return ToolOutputFileContent(file_url=link.uri, filename=link.name)


def _approval(
    registry: Registry, metadata: ToolMetadata, allow: Allow, key: object
) -> Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]:
    """toolplug's answer for each call of a tool that refines its annotations per call.

    The others answer with a plain bool (``function_tools``): the SDK pauses for a person
    whenever it cannot parse the arguments for a callable, and toolplug answers bad JSON
    better, as a ValidationError the model reads.
    """
    parameters = metadata.parameters

    async def needs_approval(
        context: RunContextWrapper[Any], arguments: dict[str, Any], call_id: str
    ) -> bool:
        # Asked about the call the tool would run: strict shapes back to the declared ones.
        declared = restore_strict_arguments(parameters, arguments)
        with _conversation(registry, context, allow, key):
            return await aapproval_reason(registry, metadata.name, declared) is not None

    return needs_approval


def _guarded(registry: Registry, name: str) -> bool:
    """Whether toolplug answers ``needs_approval`` per call because the guard may ask.

    Not for a tool under the cautious default (no labels declared or configured): the SDK
    pauses a callable's call whose arguments it cannot parse, and such a tool's guard asks
    reach the model as an ``ApprovalRequiredError`` instead (docs/security.md).
    """
    return guard_may_ask(registry, name)


class _Run:
    """One run's conversations: the run's own, begun with the user's input and bounded by
    nothing, and inside it one per tool list given an ``allow`` (``bounded``), so that two
    lists with different bounds in one run each hold their calls to their own."""

    __slots__ = ("bounded", "conversation")

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.bounded: dict[object, Conversation] = {}


_RUNS: dict[int, tuple[weakref.ref[Any], _Run]] = {}
"""The conversations of each run in progress, by its ``Usage`` (one object per run)."""


def _conversation(
    registry: Registry, context: RunContextWrapper[Any], allow: Allow, key: object
) -> Conversation:
    """The conversation a call of the tool list ``key`` runs in: the one opened around the
    run (inside it, one bounded by ``allow`` too), else the run's own (one per run, begun
    with the user's input), inside it one bounded by ``allow`` for this list."""
    opened = Conversation.current()
    if opened is not None:
        return bounded(registry, opened, allow)
    usage = context.usage
    found = _RUNS.get(id(usage))
    if found is not None and found[0]() is usage:
        state = found[1]
    else:
        state = _Run(registry.conversation(_request(context.turn_input)))
        _RUNS[id(usage)] = (weakref.ref(usage), state)
        weakref.finalize(usage, _RUNS.pop, id(usage), None)
    if allow is None:
        return state.conversation
    inside = state.bounded.get(key)
    if inside is None:
        inside = state.bounded[key] = bounded(registry, state.conversation, allow)
    return inside


def _request(items: Any) -> str:
    """The text of the user's messages in the run's input."""
    if isinstance(items, str):
        return items
    texts: list[str] = []
    for item in items or ():
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                str(part.get("text", "")) for part in content if isinstance(part, dict)
            )
    return "\n".join(texts)


def _time_limit(registry: Registry, metadata: ToolMetadata) -> float:
    """The time toolplug's engine may take for a call: ``[tools.NAME] timeout_seconds`` (or
    the tool's own) for each attempt its ``retries`` allow, and the longest backoffs between
    them (the engine doubles the backoff each time, with up to 50% jitter)."""
    settings = registry.config.tool_settings(metadata.name)
    limit = float(settings.timeout_seconds or metadata.timeout_seconds)
    backoffs = sum(settings.retry_backoff_seconds * 1.5 * 2.0**i for i in range(settings.retries))
    return limit * (1 + settings.retries) + backoffs


def _timed_out(name: str) -> Callable[[RunContextWrapper[Any], Exception], str]:
    def message(context: RunContextWrapper[Any], error: Exception) -> str:
        return json.dumps(
            {
                "error": True,
                "error_type": "TimeoutError",
                "error_message": f"{name} did not finish in time: {error}",
                "retry_possible": True,
            }
        )

    return message
