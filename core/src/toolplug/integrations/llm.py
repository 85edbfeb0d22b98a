"""llm (Simon Willison's command line and library): toolplug's tools as the ``Toolplug`` toolbox.

This module is an llm plugin (entry point ``toolplug`` in llm's group ``llm``): it registers
the ``Toolplug`` toolbox, so that ``llm tools list`` shows the available tools and ``llm -T
Toolplug ...`` lets the model call them, and the fragment loader ``toolplug:``, so that
``llm --sf toolplug: ...`` puts the optional-tools section into the system prompt; the
plugins' resources and prompts load as fragments too (``-f toolplug-resource:URI``, ``-f
'toolplug-prompt:NAME?ARGUMENT=VALUE'``), their bytes as attachments.

Each tool keeps its JSON Schema; a failed call reaches the model as toolplug's error text
(its type, message and whether a retry may help). A call that needs a person's approval is
asked in llm's own ways: a ``before_call`` made by ``approve_calls`` (its yes is not asked
again, its no cancels the call), or an approver that raises ``llm.PauseChain`` to pause the
chain until the person answers (``pause_until_decided``).

A tool's ``context.ask`` is answered in llm's ways too: at the terminal for a
``Toolplug`` made by llm's command line, by the ``asker`` given to ``toolbox()``, or, with
``toolbox(answers=...)``, by pausing the chain (``ToolQuestion``, an ``llm.PauseChain``)
until the host puts the user's answer in that mapping and resumes: the tool then runs
again from its start. ``context.sample`` asks the llm model given as ``toolbox(model=...)``.
Progress and log lines go to Python logging (logger ``toolplug.tools``).

A result's parts go with its text as an ``llm.ToolOutput``: a picture, recording or file
(or an embedded resource's bytes) as an ``llm.Attachment`` of its bytes and MIME type, an
http(s) resource link with a MIME type as an attachment of its URL; text, and any other
link, is appended to the output text. llm hands the attachments to the model after the
tool results; whether the model reads that type is its plugin's to say.

Install with ``pip install "toolplug[llm]"``; docs/integrations/llm.md shows a whole chain.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias
from urllib.parse import parse_qsl

try:
    import click  # llm's command line, for asking at the terminal
    import llm
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        'toolplug.integrations.llm needs llm: pip install "toolplug[llm]"'
    ) from exc

import toolplug
from toolplug.integrations._offer import (
    Allow,
    aapproval_reason,
    approval_reason,
    bounded,
    checked,
    system_prompt,
    tool_description,
)
from toolplug.integrations._parts import binary, carried, text_of, web_link, without_parts

if TYPE_CHECKING:
    from toolplug import (
        Answer,
        Approval,
        ApprovalRequest,
        Conversation,
        Part,
        Question,
        Registry,
        Sampled,
        SamplingRequest,
        ToolMetadata,
        ToolResult,
    )

# llm imports every plugin at its start, for every command: toolplug's names are imported
# when a toolplug tool or the section is first used, not then.

__all__ = [
    "ToolQuestion",
    "Toolplug",
    "ToolplugCallError",
    "approve_calls",
    "pause_until_decided",
    "register_fragment_loaders",
    "register_tools",
    "system_prompt",
    "toolbox",
]

Decision: TypeAlias = "Approval | bool"
Ask: TypeAlias = Callable[["ApprovalRequest"], "Decision | Awaitable[Decision]"]
"""Asks a person about one call: an ``Approval`` or True/False, or an awaitable of one."""

Asker: TypeAlias = Callable[["Question"], "Answer | Awaitable[Answer]"]
"""Puts a tool's question to the user: their ``Answer``, or an awaitable of it."""
Answers: TypeAlias = "Mapping[str, Answer | Sequence[Answer]]"
"""The user's answers by llm's tool call id: one, or one per question the call asks."""

_tool_log: Final = logging.getLogger("toolplug.tools")

_RESULTS_KEPT: Final = 256
"""How many results a toolbox keeps for its host (``Toolplug.results``)."""
_JSON_TYPES: Final[dict[str, type]] = {
    "string": str, "integer": int, "number": float, "boolean": bool, "array": list,
    "object": dict,
}

_PAUSES: Final = (llm.PauseChain, llm.CancelToolCall)
"""llm's exceptions that stop a call or a chain; toolplug lets them through unchanged."""

_DEFAULT: dict[str, Registry] = {}
_DEFAULT_LOCK: Final = threading.Lock()


def _default_registry() -> Registry:
    """The registry the llm command line uses: ``toolplug.load()``, made once."""
    with _DEFAULT_LOCK:
        if "registry" not in _DEFAULT:
            _DEFAULT["registry"] = toolplug.load()
        return _DEFAULT["registry"]


class ToolplugCallError(Exception):
    """A toolplug call failed; llm shows the model ``Error: `` and this text.

    The text is toolplug's error for the model (``ToolResult.for_model()``): its type, its
    message and ``retry_possible``. ``result`` is the whole ``ToolResult``, for the host.
    """

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.for_model())
        self.result = result




class ToolQuestion(llm.PauseChain):
    """A tool asked its user something no answer in ``toolbox(answers=...)`` holds: the chain
    pauses. ``question`` is what was asked (its message and form), ``tool_call`` (set by llm)
    the call; put the ``Answer`` under its ``tool_call_id`` and resume the chain with its
    messages: the tool runs again from its start, and its question returns the answer."""

    def __init__(self, question: Question) -> None:
        super().__init__(f"{question.tool} asks: {question.message}")
        self.question = question


class _ChainChannel(toolplug.Channel):
    """A call's channel in llm: asks the box's asker, else its answers (pausing the chain
    for a missing one); samples the box's model."""

    pauses = (llm.PauseChain,)
    why_not = (
        "nobody can be asked here: run llm at a terminal, or give "
        "toolbox(registry, asker=...) a function that asks, or toolbox(registry, "
        "answers={}) to pause the chain (ToolQuestion) until the answer is there"
    )

    def __init__(self, box: Toolplug, call_id: str | None) -> None:
        self._box, self._call_id, self._asked = box, call_id, 0
        self.can_ask = box._asker is not None or box._answers is not None
        self.can_sample = box._model is not None
        unsampled = "no llm model to sample: give toolbox(registry, model=...) one"
        if not self.can_sample:
            self.why_not = unsampled if self.can_ask else f"{self.why_not}; {unsampled}"

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        _tool_log.debug("progress %g of %s: %s", done, total, message)

    async def ask(self, question: Question) -> Answer:
        box = self._box
        index, self._asked = self._asked, self._asked + 1
        if box._asker is not None:
            answer = box._asker(question)
            return await answer if inspect.isawaitable(answer) else answer
        given = (box._answers or {}).get(self._call_id or "")
        listed = [given] if isinstance(given, toolplug.Answer) else list(given or ())
        if index < len(listed):
            return listed[index]
        raise ToolQuestion(question)

    async def sample(self, request: SamplingRequest) -> Sampled:
        model = self._box._model
        if model is None:
            return await super().sample(request)
        texts = []
        for message in request.messages:
            if not isinstance(message.content, str):
                raise toolplug.AskError("invalid_question", "llm's sampling takes text only")
            texts.append(
                message.content if len(request.messages) == 1
                else f"{message.role}: {message.content}"
            )
        prompt = "\n\n".join(texts)
        if isinstance(model, llm.AsyncModel):
            response = model.prompt(prompt, system=request.system)
            text = await response.text()
        else:
            text = await asyncio.to_thread(
                lambda: model.prompt(prompt, system=request.system).text()
            )
        return toolplug.Sampled(text, model.model_id)


def _ask_question_at_the_terminal(question: Question) -> Any:
    """A tool's question at the terminal: each field prompted for (in a thread)."""

    def prompt() -> Answer:
        click.echo(click.style(f"{question.tool} asks: {question.message}", bold=True), err=True)
        if not click.confirm("Answer it?", default=True, err=True):
            return toolplug.Answer("decline")
        content: dict[str, Any] = {}
        for name, spec, required in question.fields():
            label = str(spec.get("title") or name)
            kind = spec.get("type")
            if kind == "boolean":
                content[name] = click.confirm(label, default=spec.get("default"), err=True)
                continue
            shown: Any = {"integer": int, "number": float}.get(str(kind), str)
            if "enum" in spec:
                shown = click.Choice([str(v) for v in spec["enum"]])
            value = click.prompt(
                label, default=spec.get("default", None if required else ""), type=shown,
                err=True, show_default=True,
            )
            if value != "" or required:
                content[name] = value
        return toolplug.Answer("accept", content)

    return asyncio.to_thread(prompt)


class Toolplug(llm.Toolbox):  # type: ignore[no-untyped-call]  # llm's __init_subclass__
    """toolplug's tools that are available here (toolplug.load(): toolplug.toml, the
    environment). Options: toolset (a configured toolset's name), task and max_tools (keep
    the max_tools tools most relevant to task), request (the user's own words: the
    toolbox's calls run in one conversation carrying them, and the flow guard asks before
    a sink carries untrusted text not in it), allow (the effects that request asked for:
    tool names or categories, or "inferred" from it; once untrusted content entered, a
    call outside them asks). For the optional-tools section in the system prompt add
    --sf toolplug: (or toolplug:TOOLSET)."""

    results: dict[str, ToolResult]
    """The last results by llm's tool call id, for the host (the data, citations,
    warnings); the model sees the text."""

    def __init__(
        self, toolset: str | None = None, task: str | None = None, max_tools: int | None = None,
        request: str | None = None, allow: Allow = None,
    ) -> None:
        self._toolset, self._task, self._max_tools = toolset, task, max_tools
        self._request_text = request
        self._allow = checked(allow)
        self._conversation: Conversation | None = None
        self._registry: Registry | None = None
        # Made by llm's command line (or by hand): a person at the terminal is asked.
        self._approver: Callable[[ApprovalRequest], Any] | None = _ask_at_the_terminal
        terminal = sys.stdin.isatty() and sys.stderr.isatty()
        self._asker: Asker | None = _ask_question_at_the_terminal if terminal else None
        self._answers: Answers | None = None
        self._model: llm.Model | llm.AsyncModel | None = None
        self._built: list[llm.Tool] | None = None
        self._approved: set[str] = set()
        self._lock = threading.Lock()
        self.results = {}

    def conversation(self) -> Conversation:
        """The conversation this toolbox's calls run in, bounded by ``allow``: one opened
        around them wins (inside it, one bounded by ``allow`` too, so a call must be inside
        both), else the toolbox's own, carrying ``request``."""
        opened = toolplug.Conversation.current()
        if opened is not None:
            return bounded(self._tools_registry, opened, self._allow)
        if self._conversation is None:
            self._conversation = self._tools_registry.conversation(
                self._request_text, allow=self._allow
            )
        return self._conversation

    @property
    def _tools_registry(self) -> Registry:
        if self._registry is None:
            self._registry = _default_registry()
        return self._registry

    def tools(self) -> Iterable[llm.Tool]:
        """One ``llm.Tool`` per chosen tool, the most relevant to ``task`` first."""
        if self._built is None:
            chosen = self._tools_registry.select(
                toolset=self._toolset, task=self._task, max_tools=self._max_tools
            )
            self._built = [self._tool(meta) for meta in chosen.metadata]
        return list(self._built)

    @classmethod
    def method_tools(cls) -> list[llm.Tool]:
        """The tools of a default ``Toolplug()``: what ``llm tools list`` shows."""
        return list(cls().tools())

    def _tool(self, meta: ToolMetadata) -> llm.Tool:
        tool = llm.Tool(
            name=meta.name,
            description=tool_description(meta),
            input_schema=copy.deepcopy(meta.parameters),
            implementation=_Call(self, meta.name, meta.parameters),
        )
        tool.plugin = getattr(self, "plugin", None)
        return tool

    # -- approvals -------------------------------------------------------------------

    def _request(self, tool_call: llm.ToolCall) -> ApprovalRequest | None:
        """The approval request of this call, or None when it needs none."""
        registry = self._tools_registry
        arguments = dict(tool_call.arguments or {})
        with self.conversation():
            reason = approval_reason(registry, tool_call.name, arguments)
        return self._approval_request(tool_call, arguments, reason)

    async def _arequest(self, tool_call: llm.ToolCall) -> ApprovalRequest | None:
        """``_request`` in llm's async chain: a long guard check runs off its loop."""
        arguments = dict(tool_call.arguments or {})
        with self.conversation():
            reason = await aapproval_reason(self._tools_registry, tool_call.name, arguments)
        return self._approval_request(tool_call, arguments, reason)

    def _approval_request(
        self, tool_call: llm.ToolCall, arguments: dict[str, Any], reason: str | None
    ) -> ApprovalRequest | None:
        if reason is None:
            return None
        registry = self._tools_registry
        shown = registry.redactor.redact_data(arguments)
        return toolplug.ApprovalRequest(
            tool_call.name, shown, registry.get(tool_call.name).metadata, reason,
            tool_call.tool_call_id,
        )

    def _settle(self, tool_call: llm.ToolCall, decision: Any) -> None:
        """Remember a yes for the call to use; turn a no into llm's cancellation."""
        if isinstance(decision, bool):
            decision = toolplug.Approval(decision)
        if not isinstance(decision, toolplug.Approval):
            raise TypeError(
                f"the approval function returned {type(decision).__name__}; expected an "
                "Approval, True or False"
            )
        if not decision.approved:
            because = f": {decision.reason}" if decision.reason else ""
            raise llm.CancelToolCall(
                f"the person approving it denied the call of {tool_call.name}{because}. "
                "Do not retry it; tell the user."
            )
        if tool_call.tool_call_id is not None:
            with self._lock:
                self._approved.add(tool_call.tool_call_id)

    def _take_approval(self, call_id: str | None) -> bool:
        if call_id is None or not self._approved:  # no lock when nothing is waiting
            return False
        with self._lock:
            if call_id not in self._approved:
                return False
            self._approved.discard(call_id)
            return True

    def _keep(self, call_id: str | None, result: ToolResult) -> None:
        if call_id is None:
            return
        with self._lock:
            self.results[call_id] = result
            while len(self.results) > _RESULTS_KEPT:
                del self.results[next(iter(self.results))]


class _Call:
    """The implementation of one tool: a toolplug call.

    llm awaits what a tool returns when its chain is async, so one plain callable serves
    both: it returns the awaitable call when this thread runs an event loop, the result
    otherwise.
    """

    def __init__(self, box: Toolplug, name: str, parameters: Mapping[str, Any]) -> None:
        self.box, self.name = box, name
        self.__signature__ = _signature(parameters)
        self.__name__ = name

    def __call__(self, llm_tool_call: llm.ToolCall | None = None, **arguments: Any) -> Any:
        call_id = llm_tool_call.tool_call_id if llm_tool_call is not None else None
        box = self.box
        registry = box._tools_registry
        conversation = box.conversation()
        # llm's sync chain calls with no loop running (registry.call's bridge waits for the
        # result); its async chain calls on its loop and awaits what this returns
        if _loop_running():
            return self._acall(conversation, call_id, arguments)
        with conversation:
            asks = call_id is not None and (
                approval_reason(registry, self.name, arguments) is not None
            )
            keywords = self._keywords(call_id, asks)
            return self._answer(call_id, registry.call(self.name, arguments, **keywords))

    async def _acall(
        self, conversation: Conversation, call_id: str | None, arguments: Any
    ) -> str | llm.ToolOutput:
        registry = self.box._tools_registry
        with conversation:
            asks = call_id is not None and (
                await aapproval_reason(registry, self.name, arguments) is not None
            )
            keywords = self._keywords(call_id, asks)
            result = await registry.acall(self.name, arguments, **keywords)
        return self._answer(call_id, result)

    def _keywords(self, call_id: str | None, asks: bool) -> dict[str, Any]:
        """The call's options. The call id travels to whoever is asked for approval; a
        call that needs none is spared building a context of its own."""
        box = self.box
        return {
            "context": {"call_id": call_id} if asks else None,
            "approver": box._approver,
            "approved": box._take_approval(call_id),
            "passthrough": _PAUSES,
            "channel": _ChainChannel(box, call_id),
        }

    def _answer(self, call_id: str | None, result: ToolResult) -> str | llm.ToolOutput:
        self.box._keep(call_id, result)
        if result.error is not None:
            raise ToolplugCallError(result)
        if not result.parts:
            return result.for_model()
        texts, attachments = [without_parts(result).for_model()], []
        for item in carried(result, "llm", self.name, _attachment):
            if isinstance(item, str):
                texts.append(item)
            else:
                attachments.append(item)
        text = "\n\n".join(t for t in texts if t)
        return llm.ToolOutput(output=text, attachments=attachments) if attachments else text


def _attachment(part: Part) -> llm.Attachment | None:
    """A part of bytes, or a link a provider can fetch, as an attachment; None for text."""
    if text_of(part) is not None:
        return None
    held = binary(part)
    if held is not None:
        return llm.Attachment(type=held.mime_type, content=held.data)
    link = web_link(part)
    if link is None:
        return None
    return llm.Attachment(type=link.mime_type, url=link.uri)


def _signature(parameters: Mapping[str, Any]) -> inspect.Signature:
    """What ``llm tools list`` prints: the schema's properties as keyword arguments."""
    required = set(parameters.get("required", ()))
    shown = []
    for name, schema in (parameters.get("properties") or {}).items():
        if not name.isidentifier():
            continue
        kind = schema.get("type") if isinstance(schema, dict) else None
        annotation = _JSON_TYPES.get(kind, inspect.Parameter.empty) if isinstance(
            kind, str
        ) else inspect.Parameter.empty
        default: Any = inspect.Parameter.empty
        if name not in required:
            default = schema.get("default") if isinstance(schema, dict) else None
        shown.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
            )
        )
    shown.append(
        inspect.Parameter("llm_tool_call", inspect.Parameter.KEYWORD_ONLY, default=None)
    )
    return inspect.Signature(shown)


def toolbox(
    registry: Registry,
    *,
    toolset: str | None = None,
    task: str | None = None,
    max_tools: int | None = None,
    approver: Callable[[ApprovalRequest], Any] | None = None,
    request: str | None = None,
    asker: Asker | None = None,
    answers: Answers | None = None,
    model: llm.Model | llm.AsyncModel | None = None,
    allow: Allow = None,
) -> Toolplug:
    """A ``Toolplug`` toolbox of this registry's tools, for ``model.chain(tools=[...])``.

    Args:
        registry: The loaded tools (``toolplug.load()``).
        toolset: Offer only this toolset's tools.
        task: With ``max_tools``: keep the tools most relevant to this task.
        max_tools: Offer at most this many tools.
        approver: Decides on calls that need approval before the registry's own approvers;
            it may raise ``llm.PauseChain`` to pause the chain (``pause_until_decided``).
            (A ``Toolplug()`` made by llm's command line asks at the terminal instead.)
        request: The user's own words: the toolbox's calls run in one conversation carrying
            them (docs/security.md).
        asker: Puts a tool's question (``context.ask``) to the user and returns the
            ``Answer`` (it may be async).
        answers: Without ``asker``: the answers by tool call id; a question without one
            pauses the chain (``ToolQuestion``) until the host puts it there and resumes.
        model: The llm model a tool's ``context.sample`` asks.
        allow: The effects the user's request asked for (``Registry.conversation``'s
            ``allow``: tool names or categories, counts, or ``"inferred"`` from
            ``request``): once untrusted content entered, a call outside them asks; in a
            conversation the host opened, a call must be inside its bound too
            (docs/security.md).

    Raises:
        TypeError: ``allow`` is malformed.
    """
    box = Toolplug(
        toolset=toolset, task=task, max_tools=max_tools, request=request, allow=allow
    )
    box._registry = registry
    box._approver = approver
    box._asker, box._answers, box._model = asker, answers, model
    return box


# -- approvals in llm's ways ---------------------------------------------------------


def _loop_running() -> bool:
    """Whether an event loop runs in this thread: llm's async chain, not its sync one
    (asyncio's public check; its exception costs 0.2 us, not worth a private name)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _ask_at_the_terminal(request: ApprovalRequest) -> Any:
    """On a terminal, the person is asked y/N (in a thread when an event loop runs);
    elsewhere nobody decides, and the registry's own approvers are asked."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    def confirm() -> Approval:
        click.echo(click.style(request.describe(), fg="yellow", bold=True), err=True)
        approved = click.confirm("Approve the call?", default=False, err=True)
        return toolplug.Approval(approved, "at the terminal")

    if _loop_running():
        return asyncio.to_thread(confirm)
    return confirm()



def approve_calls(ask: Ask) -> Callable[[llm.Tool | None, llm.ToolCall], Any]:
    """A ``before_call`` for ``model.chain(...)`` that asks a person about the toolplug calls
    that need approval (and no other call).

    A yes lets the call run without toolplug asking again; a no cancels it with
    ``llm.CancelToolCall``, so the model reads why. With an async chain ``ask`` may be
    async.

    Args:
        ask: Called with the ``ApprovalRequest``; returns an ``Approval`` or True/False.
    """

    def before_call(tool: llm.Tool | None, tool_call: llm.ToolCall) -> Any:
        implementation = getattr(tool, "implementation", None)
        if not isinstance(implementation, _Call):
            return None  # not one of toolplug's tools
        box = implementation.box
        if _loop_running():  # llm's async chain, which awaits what this returns
            return _ask_later(box, tool_call, ask)
        request = box._request(tool_call)
        if request is None:
            return None
        decision = ask(request)
        if inspect.isawaitable(decision):
            return _settle_later(box, tool_call, decision)
        box._settle(tool_call, decision)
        return None

    return before_call


async def _ask_later(box: Toolplug, tool_call: llm.ToolCall, ask: Ask) -> None:
    request = await box._arequest(tool_call)
    if request is not None:
        decision = ask(request)
        box._settle(tool_call, await decision if inspect.isawaitable(decision) else decision)


async def _settle_later(box: Toolplug, tool_call: llm.ToolCall, decision: Awaitable[Any]) -> None:
    box._settle(tool_call, await decision)


def pause_until_decided(
    decisions: Mapping[str, Decision],
) -> Callable[[ApprovalRequest], Decision]:
    """An approver that pauses the chain (``llm.PauseChain``) for a call nobody has answered.

    ``decisions`` maps llm's tool call id to the person's answer. The first time a call
    needs approval it is not there: the chain stops with ``PauseChain`` (its
    ``tool_call`` names the call); put the answer in ``decisions`` and resume the chain
    with its messages, and the call runs, or is denied, as the person said.
    """

    def approver(request: ApprovalRequest) -> Decision:
        if request.call_id is not None and request.call_id in decisions:
            return decisions[request.call_id]
        raise llm.PauseChain(request.describe())

    return approver


# -- the plugin ----------------------------------------------------------------------


@llm.hookimpl
def register_tools(register: Callable[..., None]) -> None:
    """llm's hook: the ``Toolplug`` toolbox."""
    register(Toolplug)


@llm.hookimpl
def register_fragment_loaders(register: Callable[..., None]) -> None:
    """llm's hook: ``toolplug:`` (or ``toolplug:TOOLSET``, or ``toolplug:toolset=NAME&
    task=TEXT&max_tools=N``) loads the optional-tools section; ``toolplug-resource:URI``
    a plugin's resource, ``toolplug-prompt:NAME?ARGUMENT=VALUE&...`` a plugin's prompt."""
    register("toolplug", _section_fragment)
    register("toolplug-resource", _resource_fragment)
    register("toolplug-prompt", _prompt_fragment)


def _resource_fragment(uri: str) -> llm.Fragment | llm.Attachment:
    """A plugin's resource: its text as a fragment, its bytes as an attachment (which llm
    takes with ``-f`` too, and hands the model as it does ``-a``)."""
    contents = _default_registry().read_resource(uri)
    if contents.text is not None:
        return llm.Fragment(contents.text, source=f"toolplug-resource:{uri}")  # type: ignore[no-untyped-call]
    return llm.Attachment(type=contents.mime_type, content=contents.data)


def _prompt_fragment(argument: str) -> list[llm.Fragment | llm.Attachment]:
    """A plugin's prompt, rendered: each text message a fragment, each picture, recording
    or file an attachment. llm's prompt is the user's turn: a prompt with an assistant
    message is refused."""
    name, _, query = argument.partition("?")
    arguments = dict(parse_qsl(query, keep_blank_values=True))
    rendered = _default_registry().get_prompt(name, arguments)
    made: list[llm.Fragment | llm.Attachment] = []
    for index, message in enumerate(rendered.messages):
        if message.role != "user":
            raise ValueError(
                f"toolplug-prompt:{name}: message {index} is the assistant's, and an llm "
                "prompt holds the user's turn only; render it with Registry.get_prompt"
            )
        content = message.content
        source = f"toolplug-prompt:{argument}#{index}"
        held = None if isinstance(content, str) else binary(content)
        if held is not None:
            made.append(llm.Attachment(type=held.mime_type, content=held.data))
            continue
        text = content if isinstance(content, str) else content.describe()
        made.append(llm.Fragment(text, source=source))  # type: ignore[no-untyped-call]
    return made


def _section_fragment(argument: str) -> llm.Fragment:
    options: dict[str, Any] = {}
    if "=" in argument:
        for key, value in parse_qsl(argument, keep_blank_values=False, strict_parsing=True):
            if key not in ("toolset", "task", "max_tools"):
                raise ValueError(
                    f"toolplug:{argument}: unknown option {key!r}; use toolset, task or max_tools"
                )
            if key == "max_tools":
                if not value.isdigit():
                    raise ValueError(
                        f"toolplug:{argument}: max_tools={value}: max_tools takes a whole number"
                    )
                options[key] = int(value)
            else:
                options[key] = value
    elif argument:
        options["toolset"] = argument
    text = system_prompt(_default_registry(), **options)
    return llm.Fragment(text, source=f"toolplug:{argument}")  # type: ignore[no-untyped-call]
