"""LangChain and LangGraph: toolplug's tools as a ``BaseToolkit`` of ``StructuredTool`` s.

Each tool keeps its JSON Schema as its ``args_schema`` (toolplug validates the call), answers
with ``response_format="content_and_artifact"`` (the text for the model, the result's data
as the artifact; a result's pictures and files as LangChain's standard content blocks in
the ``ToolMessage``'s content, after the text), and turns a failed call into a
``ToolException`` that LangChain hands the model as an error message. A call that needs a
person's approval is asked in LangGraph's own way: through ``interrupt()`` inside the tool,
or, for the tools named by ``ToolplugToolkit.interrupt_on()``, by
``HumanInTheLoopMiddleware`` before the tool runs; a call the middleware let through is
not asked again. The flow guard asks the same way:
open ``registry.conversation(prompt)`` around the agent's run (LangChain hands context
variables on to the threads its tools run in), and a call whose sink carries untrusted
text the prompt did not hold is asked about, with the source call named.

A tool's ``context.ask`` is a LangGraph ``interrupt()`` too (``{"type": "tool_question",
...}``): resumed with ``Command(resume={"action": "accept", "content": {...}})``, the tool
runs again from its start, as LangGraph nodes do, and its question returns that answer.
Its progress goes to the run's ``custom`` stream; ``context.sample`` asks the chat model
given as ``ToolplugToolkit(registry, model=...)``.

A result's parts, in order after the text block: an ``image`` block (``base64`` and
``mime_type``) for a picture, a ``file`` block (with its ``filename``) for any other file,
a ``text`` block for text; an http(s) resource link with a MIME type as a block's ``url``,
any other link as its text. LangChain's tool messages take no audio block (a list holding
one would be sent as its JSON text): a recording is its description, and logged.

The plugins' prompts and resources reach LangChain as langchain-mcp-adapters hands an MCP
server's: ``load_prompt`` renders a prompt as ``HumanMessage`` and ``AIMessage`` s (a picture
or recording as a standard content block), ``load_resources`` reads resources as ``Blob`` s
(``metadata["uri"]``, ``mimetype``), each with its ``a...`` form for async code.

Install with ``pip install "toolplug[langchain]"``; docs/integrations/langchain.md shows a
whole agent run.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import copy
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

try:
    from langchain_core.documents.base import Blob
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
    from langchain_core.tools import BaseTool, BaseToolkit, StructuredTool, ToolException
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        'toolplug.integrations.langchain needs LangChain: pip install "toolplug[langchain]"'
    ) from exc
from pydantic import ConfigDict, PrivateAttr

from toolplug import (
    Answer,
    Approval,
    ApprovalRequest,
    AskError,
    Channel,
    Conversation,
    Question,
    Registry,
    Sampled,
    SamplingRequest,
    ToolResult,
)
from toolplug.integrations._offer import (
    Allow,
    aapproval_reason,
    approval_reason,
    bound_may_ask,
    bounded,
    checked,
    guard_may_ask,
    system_prompt,
    tool_description,
)
from toolplug.integrations._parts import (
    binary,
    carried,
    file_name,
    text_of,
    web_link,
    without_parts,
)

_interrupt: Callable[..., Any] | None
_graph_config: Callable[[], Any] | None
try:  # LangGraph pauses a run to ask; langchain-core alone runs without it
    from langgraph.config import get_config as _graph_config
    from langgraph.errors import GraphBubbleUp
    from langgraph.types import interrupt as _interrupt
except ImportError:  # no graph: nobody to pause, nothing to let through
    _GRAPH_BUBBLES: tuple[type[BaseException], ...] = ()
    _interrupt = _graph_config = None
else:
    _GRAPH_BUBBLES = (GraphBubbleUp,)
    """The exceptions LangGraph raises to pause or steer a run; toolplug lets them through."""

if TYPE_CHECKING:
    from langchain.agents.middleware import InterruptOnConfig
    from langchain.agents.middleware.human_in_the_loop import DecisionType

    from toolplug import Part, RenderedPrompt, ResourceContents, Selection, ToolMetadata, Toolset

__all__ = [
    "ToolplugToolkit",
    "aload_prompt",
    "aload_resources",
    "load_prompt",
    "load_resources",
    "system_prompt",
]

DECISIONS: Final[tuple[DecisionType, ...]] = ("approve", "edit", "reject")
"""The decisions ``interrupt_on`` allows a reviewer by default."""
_REMEMBERED: Final = 1024
"""How many calls the middleware is asked about are remembered until they run."""
_THREADS_KEPT: Final = 256
"""How many LangGraph threads' conversations a toolkit with ``allow`` keeps (the oldest
go first) when the host opened none around the run."""

_CALL_ID: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar(
    "toolplug_langchain_call_id", default=None
)
"""The id of the model's tool call being run (LangChain passes it to ``run``, not to the
function)."""




def _decision(answer: Any) -> Approval:
    """The person's answer to an ``interrupt()``, as toolplug's decision."""
    if isinstance(answer, Approval):
        return answer
    if isinstance(answer, bool):
        return Approval(answer)
    if isinstance(answer, dict):
        kind = answer.get("type")
        if kind == "approve":
            return Approval.approve()
        if kind == "reject":
            return Approval.deny(str(answer.get("message") or ""))
    raise ValueError(
        "resume the approval interrupt with {'type': 'approve'}, {'type': 'reject', "
        f"'message': '...'}}, True or False; got {answer!r}"
    )


def _interrupt_approver(request: ApprovalRequest) -> Approval | None:
    """Ask through LangGraph: pause the run here; on resume, the person's answer."""
    if _interrupt is None:  # langchain-core alone: nobody to pause
        return None
    value = {
        "type": "tool_approval",
        "tool_call_id": request.call_id,
        "name": request.tool,
        "args": dict(request.arguments),
        "description": request.describe(),
        "reason": request.reason,
    }
    try:
        answer = _interrupt(value)
    except (RuntimeError, KeyError):
        # Not inside a LangGraph run (no runnable context, or one without a graph's
        # scratchpad): pass the request on to the registry's own approvers.
        return None
    return _decision(answer)


_SCRATCHPAD: Final = "__pregel_scratchpad"
"""The entry of a LangGraph task's configuration ``interrupt()`` needs: there, it can pause."""


def _graph_task() -> Any:
    """The configuration of the LangGraph task this call runs in, or None outside one."""
    if _graph_config is None:
        return None
    try:
        config = _graph_config()
    except RuntimeError:  # no runnable context: a tool called by hand or by a plain chain
        return None
    configurable = config.get("configurable") or {}
    return configurable if _SCRATCHPAD in configurable else None


def _resumed_answer(value: Any) -> Answer:
    """The value a question's interrupt was resumed with, as the user's ``Answer``."""
    if isinstance(value, Answer):
        return value
    if isinstance(value, dict) and value.get("action") in ("accept", "decline", "cancel"):
        content = value.get("content") or {}
        if isinstance(content, dict):
            return Answer(value["action"], content)
    raise AskError(
        "invalid_answer",
        "resume a tool_question interrupt with Command(resume={'action': 'accept', "
        "'content': {...}}), {'action': 'decline'} or {'action': 'cancel'}; "
        f"got {value!r}",
    )


class _GraphChannel(Channel):
    """A call's channel in LangChain: a question is a LangGraph ``interrupt()`` (the run
    pauses; resumed, the tool runs again from its start and the question returns the
    resume value); progress goes to the run's ``custom`` stream; sampling goes to the
    toolkit's ``model`` when it was given one."""

    pauses = _GRAPH_BUBBLES

    def __init__(self, call_id: str | None, model: Any) -> None:
        task = _graph_task()
        self.can_ask = task is not None
        self.can_sample = model is not None
        reasons = []
        if task is None:
            reasons.append(
                "the tool runs outside a LangGraph run, and only a graph can pause to ask "
                "(run it in create_agent or a StateGraph with a checkpointer)"
            )
        if model is None:
            reasons.append(
                "no chat model to sample: give ToolplugToolkit(registry, model=...) the model"
            )
        self.why_not = "; ".join(reasons) or self.why_not
        self._call_id, self._model = call_id, model
        runtime = task.get("__pregel_runtime") if task is not None else None
        self._writer: Callable[[Any], None] | None = getattr(runtime, "stream_writer", None)

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        if self._writer is not None:
            self._writer({
                "type": "tool_progress", "tool_call_id": self._call_id,
                "progress": done, "total": total, "message": message,
            })

    async def ask(self, question: Question) -> Answer:
        assert _interrupt is not None  # can_ask says a graph runs
        value = {
            "type": "tool_question", "tool_call_id": self._call_id, "name": question.tool,
            "message": question.message, "schema": dict(question.schema),
        }
        form = {
            "type": "object",
            "properties": {
                "action": {"enum": ["accept", "decline", "cancel"]},
                "content": dict(question.schema),
            },
            "required": ["action"],
        }
        return _resumed_answer(_interrupt(value, response_schema=form))

    async def sample(self, request: SamplingRequest) -> Sampled:
        if self._model is None:
            return await super().sample(request)
        messages: list[BaseMessage] = []
        if request.system is not None:
            messages.append(SystemMessage(request.system))
        for message in request.messages:
            if not isinstance(message.content, str):
                raise AskError(
                    "invalid_question",
                    "ToolplugToolkit samples text only; send a picture or recording "
                    "through the agent itself",
                )
            kind = HumanMessage if message.role == "user" else AIMessage
            messages.append(kind(message.content))
        reply = await self._model.ainvoke(messages, stop=list(request.stop) or None)
        name = getattr(self._model, "model_name", None) or getattr(self._model, "model", None)
        return Sampled(reply.text, str(name or type(self._model).__name__))


class _ToolplugTool(StructuredTool):
    """A ``StructuredTool`` that lets its function know the model's tool call id."""

    def run(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        token = _CALL_ID.set(kwargs.get("tool_call_id"))
        try:
            return super().run(tool_input, *args, **kwargs)
        finally:
            _CALL_ID.reset(token)

    async def arun(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        token = _CALL_ID.set(kwargs.get("tool_call_id"))
        try:
            return await super().arun(tool_input, *args, **kwargs)
        finally:
            _CALL_ID.reset(token)


class ToolplugToolkit(BaseToolkit):
    """The registry's chosen tools as LangChain tools.

    Example:
        >>> toolkit = ToolplugToolkit(toolplug.load(), toolset="research")  # doctest: +SKIP
        >>> agent = create_agent(model, toolkit.get_tools(),  # doctest: +SKIP
        ...                      system_prompt=toolkit.system_prompt())
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    registry: Registry
    """The loaded tools (``toolplug.load()``)."""
    toolset: Any = None
    """Offer only this toolset's tools (a name or a ``Toolset``)."""
    task: str | None = None
    """With ``max_tools``: keep the tools most relevant to this task."""
    max_tools: int | None = None
    """Offer at most this many tools."""
    model: Any = None
    """The chat model a tool's ``context.sample`` asks (LangChain gives a tool no handle
    on the agent's own model: pass the one the agent uses); None: a tool cannot sample."""
    allow: Any = None
    """The effects the user's request asked for (``Registry.conversation``'s ``allow``:
    tool names or categories, counts, or ``"inferred"`` from the request of the
    conversation the host opened): each call is bounded by them inside the host's
    conversation, and by both the host's bound and these (docs/security.md). With none
    opened, the toolkit keeps a conversation of its own per LangGraph thread, bounded by
    them (``"inferred"`` then reads no request: every effect asks once untrusted content
    entered)."""

    _tools: list[BaseTool] = PrivateAttr(default_factory=list)
    _reviewed: collections.OrderedDict[str, None] = PrivateAttr(
        default_factory=collections.OrderedDict
    )
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _passthrough: tuple[type[BaseException], ...] = PrivateAttr(default=())
    _selection: Selection = PrivateAttr()
    _threads: collections.OrderedDict[Any, Conversation] = PrivateAttr(
        default_factory=collections.OrderedDict
    )

    def __init__(
        self,
        registry: Registry,
        *,
        toolset: str | Toolset | None = None,
        task: str | None = None,
        max_tools: int | None = None,
        model: Any = None,
        allow: Allow = None,
    ) -> None:
        """Raises ``TypeError`` at once for a malformed ``allow``."""
        # The fields are this class's; mypy checks the keywords against BaseToolkit's.
        super().__init__(  # type: ignore[call-arg]
            registry=registry, toolset=toolset, task=task, max_tools=max_tools, model=model,
            allow=checked(allow),
        )
        self._passthrough = _GRAPH_BUBBLES
        self._selection = registry.select(toolset=toolset, task=task, max_tools=max_tools)
        self._tools = [self._tool(meta) for meta in self._selection.metadata]

    def get_tools(self) -> list[BaseTool]:
        """The tools, the most relevant to ``task`` first (else by name)."""
        return list(self._tools)

    def system_prompt(self) -> str:
        """The optional-tools section of these tools, for the agent's system prompt."""
        return system_prompt(
            self.registry, toolset=self.toolset, task=self.task, max_tools=self.max_tools
        )

    # -- approvals through HumanInTheLoopMiddleware ----------------------------------

    def interrupt_on(
        self, allowed_decisions: Sequence[DecisionType] = DECISIONS
    ) -> dict[str, bool | InterruptOnConfig]:
        """The ``interrupt_on`` of a ``HumanInTheLoopMiddleware`` for these tools.

        Names every tool whose calls may need a person's approval (toolplug's rule, a
        policy, or the flow guard for a tool whose labels name sinks); for each call the
        middleware asks toolplug (its ``when``) whether this call does. A call the
        middleware asked about and let through runs without toolplug asking again.

        Args:
            allowed_decisions: What the reviewer may answer (the middleware's decisions).
        """
        config: dict[str, bool | InterruptOnConfig] = {}
        names = set(self._selection.approvals)
        registry = self.registry
        bound = self.allow is not None
        names.update(
            m.name
            for m in self._selection.metadata
            if guard_may_ask(registry, m.name) or (bound and bound_may_ask(registry, m.name))
        )
        for name in sorted(names):
            config[name] = {
                "allowed_decisions": list(allowed_decisions),
                "description": self._describe,
                "when": self._when,
            }
        return config

    def _conversation(self) -> contextlib.AbstractContextManager[Any]:
        """What a call runs in: the conversation the host opened (inside it, one bounded
        by ``allow`` too), else, with ``allow``, the toolkit's own for this LangGraph
        thread; without ``allow``, the current one as it is (none: nothing guarded)."""
        allow = self.allow
        if allow is None:
            return contextlib.nullcontext()
        opened = Conversation.current()
        if opened is not None:
            return bounded(self.registry, opened, allow)
        task = _graph_task()
        key = task.get("thread_id") if task is not None else None
        with self._lock:
            found = self._threads.get(key)
            if found is None:
                found = self._threads[key] = self.registry.conversation(None, allow=allow)
                while len(self._threads) > _THREADS_KEPT:
                    self._threads.popitem(last=False)
            else:
                self._threads.move_to_end(key)
        return found

    def _when(self, request: Any) -> bool:
        """The middleware's question: does this call need a person? Remembers a yes."""
        call = request.tool_call
        with self._conversation():
            reason = approval_reason(self.registry, call["name"], call.get("args") or {})
        if reason is not None and call.get("id"):
            with self._lock:
                self._reviewed[call["id"]] = None
                while len(self._reviewed) > _REMEMBERED:  # a rejected call never runs
                    self._reviewed.popitem(last=False)
        return reason is not None

    def _describe(self, tool_call: Any, state: Any, runtime: Any) -> str:
        with self._conversation():
            reason = approval_reason(
                self.registry, tool_call["name"], tool_call.get("args") or {}
            )
        return f"{tool_call['name']} needs approval because {reason}"

    def _reviewed_by_middleware(self, call_id: str | None) -> bool:
        if call_id is None:
            return False
        with self._lock:
            if call_id not in self._reviewed:
                return False
            del self._reviewed[call_id]
            return True

    # -- the tools -------------------------------------------------------------------

    def _tool(self, meta: ToolMetadata) -> BaseTool:
        name = meta.name
        registry = self.registry
        passthrough = self._passthrough

        def settings(
            call_id: str | None, reason: str | None
        ) -> tuple[dict[str, Any] | None, bool]:
            if call_id is None or reason is None:
                return None, False  # nobody will be asked: no context of its own to build
            return {"call_id": call_id}, self._reviewed_by_middleware(call_id)

        def run(**arguments: Any) -> tuple[str | list[dict[str, Any]], Any]:
            call_id = _CALL_ID.get()
            with self._conversation():
                reason = None if call_id is None else approval_reason(registry, name, arguments)
                context, approved = settings(call_id, reason)
                result = registry.call(
                    name, arguments, context=context, approver=_interrupt_approver,
                    approved=approved, passthrough=passthrough,
                    channel=_GraphChannel(call_id, self.model),
                )
            return _answer(name, result)

        async def arun(**arguments: Any) -> tuple[str | list[dict[str, Any]], Any]:
            call_id = _CALL_ID.get()
            with self._conversation():
                reason = (
                    None if call_id is None
                    else await aapproval_reason(registry, name, arguments)
                )
                context, approved = settings(call_id, reason)
                result = await registry.acall(
                    name, arguments, context=context, approver=_interrupt_approver,
                    approved=approved, passthrough=passthrough,
                    channel=_GraphChannel(call_id, self.model),
                )
            return _answer(name, result)

        return _ToolplugTool(
            name=name,
            description=tool_description(meta),
            args_schema=copy.deepcopy(meta.parameters),
            func=run,
            coroutine=arun,
            response_format="content_and_artifact",
            handle_tool_error=True,
            metadata={"toolplug": True},
        )


def _answer(name: str, result: ToolResult) -> tuple[str | list[dict[str, Any]], Any]:
    """``content_and_artifact``: the text for the model (with the parts, content blocks
    after it) and the data; a failure raised."""
    if result.error is not None:
        raise ToolException(result.for_model())
    if not result.parts:
        return result.for_model(), result.data
    text = without_parts(result).for_model()
    blocks = [{"type": "text", "text": text}] if text else []
    for item in carried(result, "LangChain", name, _block):
        blocks.append({"type": "text", "text": item} if isinstance(item, str) else item)
    return blocks, result.data


def _block(part: Part) -> dict[str, Any] | None:
    """One part as a standard content block; None for a recording (no tool-message block)."""
    text = text_of(part)
    if text is not None:
        return {"type": "text", "text": text}
    held = binary(part)
    if held is not None:
        if held.kind == "audio":
            return None
        block = {"type": held.kind, "base64": held.base64(), "mime_type": held.mime_type}
        if held.kind == "file":
            block["filename"] = file_name(held)
        return block
    link = web_link(part)
    if link is None or link.mime_type is None or link.mime_type.startswith("audio/"):
        return None
    kind = "image" if link.mime_type.startswith("image/") else "file"
    return {"type": kind, "url": link.uri, "mime_type": link.mime_type}


# -- prompts and resources (docs/prompts-and-resources.md) --------------------------------


def load_prompt(
    registry: Registry, name: str, arguments: Mapping[str, str] | None = None
) -> list[HumanMessage | AIMessage]:
    """The prompt ``name`` rendered with ``arguments``, as LangChain messages.

    A message of text is a message of that text; one of a part, a message of one standard
    content block (``image``, ``audio``, ``file`` with ``base64`` and ``mime_type``; an http(s)
    link with a MIME type as the block's ``url``; any other link, and a resource's text, as
    a ``text`` block).

    Raises:
        PublishedError: no such prompt is offered, or an argument is missing or unknown.
    """
    return _messages(registry.get_prompt(name, arguments))


async def aload_prompt(
    registry: Registry, name: str, arguments: Mapping[str, str] | None = None
) -> list[HumanMessage | AIMessage]:
    """``load_prompt`` from async code (a plain ``def`` prompt runs in a worker thread)."""
    return _messages(await registry.aget_prompt(name, arguments))


def load_resources(registry: Registry, uris: Iterable[str] | None = None) -> list[Blob]:
    """The resources at ``uris`` (by default every resource offered, templates aside) as
    ``Blob`` s: text or bytes, with ``mimetype`` and ``metadata["uri"]``.

    Raises:
        PublishedError: nothing offered has one of the URIs (``kind``, ``uri``).
    """
    chosen = [r.uri for r in registry.resources()] if uris is None else list(uris)
    return [_blob(registry.read_resource(uri)) for uri in chosen]


async def aload_resources(registry: Registry, uris: Iterable[str] | None = None) -> list[Blob]:
    """``load_resources`` from async code, one read after another."""
    chosen = [r.uri for r in registry.resources()] if uris is None else list(uris)
    return [_blob(await registry.aread_resource(uri)) for uri in chosen]


def _messages(rendered: RenderedPrompt) -> list[HumanMessage | AIMessage]:
    made: list[HumanMessage | AIMessage] = []
    for message in rendered.messages:
        kind = HumanMessage if message.role == "user" else AIMessage
        content = message.content
        if isinstance(content, str):
            made.append(kind(content))
            continue
        block = _audio_block(content) or _block(content)
        made.append(kind(content=[block or {"type": "text", "text": content.describe()}]))
    return made


def _audio_block(part: Part) -> dict[str, Any] | None:
    """A recording as a chat message's ``audio`` block (tool messages take none: ``_block``)."""
    held = binary(part)
    if held is None or held.kind != "audio":
        return None
    return {"type": "audio", "base64": held.base64(), "mime_type": held.mime_type}


def _blob(contents: ResourceContents) -> Blob:
    data = contents.text if contents.text is not None else contents.data or b""
    return Blob.from_data(data, mime_type=contents.mime_type, metadata={"uri": contents.uri})
