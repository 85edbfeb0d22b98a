"""The installed tools as a pydantic-ai toolset: ``ToolplugToolset``.

How toolplug's concepts map to pydantic-ai's::

    the selection (toolset, task, max_tools)  the toolset's tools; the ones beyond max_tools
                                              are marked defer_loading, for pydantic-ai's
                                              own tool search
    the optional-tools section                get_instructions (the agent's instructions)
    an agent run                              a conversation (toolplug.Conversation) carrying
                                              the user's prompt as trusted text, the calls'
                                              results with their labels (a resumed run
                                              picks them up from the message history); one
                                              opened around the run is used instead
    a call that needs approval, or that the   ApprovalRequired: the run ends with
    flow guard or a policy asks about
                                              DeferredToolRequests; resumed with the person's
                                              DeferredToolResults, the approved call runs
                                              once, unasked by toolplug
    an error with retry_possible              ModelRetry (counts against the tool's retries)
    an error without                          ToolFailed: the model reads it, no retry loop
                                              (either as one line of text: "TYPE: message")
    a success                                 ToolReturn: the model reads the text, data,
                                              citations and warnings; the ToolResult is the
                                              return's metadata
    its parts                                 in the return value after that text, in order:
                                              BinaryContent (pictures, recordings, files,
                                              an embedded resource's bytes), ImageUrl,
                                              AudioUrl, VideoUrl, DocumentUrl (an http(s)
                                              resource link with a MIME type), str (text,
                                              other links); pydantic-ai turns a file the
                                              model cannot read into a note itself
    a tool's context.ask                      ApprovalRequired whose metadata is the question
                                              ("type": "tool_question"): the run ends with
                                              DeferredToolRequests; resumed with answers()
                                              (the call approved, its metadata the answers),
                                              the tool runs again from its start and its
                                              questions return the answers, in order; a
                                              ToolDenied refuses: the model reads why
    a tool's context.sample                   the agent's own model (ctx.model), called
                                              directly (pydantic_ai.direct.model_request)
    a tool's progress and log lines           Python logging (logger toolplug.tools)
    a plugin's prompt                         prompt_content: the user prompt of agent.run
                                              (str, BinaryContent, ImageUrl...); or
                                              prompt_messages: a message history
                                              (ModelRequest of UserPromptPart, ModelResponse
                                              of TextPart or FilePart)
    a plugin's resource                       resource_content: str (text) or BinaryContent
                                              (bytes), as pydantic-ai's MCPToolset reads one
    a hook deferring a call                   ApprovalRequired or CallDeferred raised by a
                                              tool_call hook passes through toolplug as is
    cancelling the run                        cancels the tool (Registry.acall)

Install with ``pip install "toolplug[pydantic-ai]"``.
"""

from __future__ import annotations

import copy
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from toolplug import (
    Answer,
    AskError,
    Channel,
    Conversation,
    Question,
    Sampled,
    SamplingRequest,
    ToolResult,
    Trust,
)
from toolplug.integrations._offer import (
    INFERRED,
    Allow,
    aapproval_reason,
    bounded,
    checked,
    describe_call,
    error_text,
    inferred,
    missing,
    offer,
    run,
    success_body,
)
from toolplug.integrations._parts import binary, carried, text_of, web_link

try:
    from pydantic_ai import (
        ApprovalRequired,
        AudioUrl,
        BinaryContent,
        CallDeferred,
        DeferredToolRequests,
        DeferredToolResults,
        DocumentUrl,
        FilePart,
        ImageUrl,
        InstructionPart,
        ModelRequest,
        ModelResponse,
        ModelRetry,
        RunContext,
        SystemPromptPart,
        TextPart,
        ToolFailed,
        ToolReturn,
        ToolReturnPart,
        UserPromptPart,
        VideoUrl,
    )
    from pydantic_ai.direct import model_request
    from pydantic_ai.messages import FileUrl, ModelMessage, UserContent
    from pydantic_ai.tools import AgentDepsT, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_core import SchemaValidator, core_schema
except ModuleNotFoundError as exc:  # pragma: no cover - tested in a process without pydantic-ai
    raise missing("pydantic-ai", "pydantic-ai", exc) from exc

if TYPE_CHECKING:
    from toolplug import (
        Message,
        Part,
        Registry,
        RenderedPrompt,
        ResourceContents,
        ToolMetadata,
        Toolset,
    )

__all__ = [
    "ToolplugToolset",
    "answers",
    "aprompt_content",
    "aprompt_messages",
    "aresource_content",
    "prompt_content",
    "prompt_messages",
    "resource_content",
]

# toolplug validates every call against the tool's schema and names each bad field; the
# framework only checks that the model sent an object.
_ANY_OBJECT = SchemaValidator(
    core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
)


_log: Final = logging.getLogger("toolplug.tools")

_RUNS_KEPT: Final = 256
"""Conversations of runs a toolset remembers (the oldest are dropped)."""

_PAUSES: tuple[type[BaseException], ...] = (ApprovalRequired, CallDeferred)
"""pydantic-ai's exceptions that pause a run: a ``tool_call`` hook (or a tool) may raise one
to defer a call to a person or to work done elsewhere, and it reaches pydantic-ai as raised."""


class ToolplugToolset(AbstractToolset[AgentDepsT]):
    """The registry's selected tools as a pydantic-ai toolset.

    ``Agent(model, toolsets=[ToolplugToolset(toolplug.load())])`` (docs/integrations/).

    Args:
        registry: The loaded tools (``toolplug.load()``).
        toolset: Offer only this toolset's tools.
        task: With ``max_tools``: the tools most relevant to this task come in full.
        max_tools: At most this many tools in full; the others are deferred to pydantic-ai's
            tool search.
        id: The toolset's id, unique among the agent's toolsets (durable execution needs one).
        max_retries: How often the model may retry a call whose error allows a retry
            (None: the agent's setting).
        instructions: Give the optional-tools section as the toolset's instructions.
        allow: The effects the user's request asked for (``Registry.conversation``'s
            ``allow``: tool names or categories, counts, or ``"inferred"`` from each run's
            prompt): each run's conversation is bounded by them, and in a conversation the
            host opened around the run, each call is bounded by both (docs/security.md).
    """

    def __init__(
        self,
        registry: Registry,
        *,
        toolset: str | Toolset | None = None,
        task: str | None = None,
        max_tools: int | None = None,
        id: str | None = "toolplug",
        max_retries: int | None = None,
        instructions: bool = True,
        allow: Allow = None,
    ) -> None:
        self.registry = registry
        """The registry whose tools are offered."""
        self.offer = offer(registry, toolset=toolset, task=task, max_tools=max_tools)
        """The tools offered, the deferred ones and the section, chosen once."""
        self._id = id
        self._max_retries = max_retries
        self._instructions = instructions
        self._allow = checked(allow)
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._definitions = [
            *(_definition(m, deferred=False) for m in self.offer.tools),
            *(_definition(m, deferred=True) for m in self.offer.deferred),
        ]

    @property
    def id(self) -> str | None:
        """The toolset's id (``"toolplug"`` unless given)."""
        return self._id

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> InstructionPart | None:
        """The optional-tools section: when to reach for each tool, and when not to.

        Static (``dynamic=False``): it is chosen once, with the tools, so a provider's prompt
        cache can keep it.
        """
        if not self._instructions or not self.offer.section:
            return None
        return InstructionPart(self.offer.section, dynamic=False, name="optional-tools")

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """The selected tools, with their parameter schemas as the tools declare them."""
        retries = self._max_retries if self._max_retries is not None else ctx.max_retries
        return {
            definition.name: ToolsetTool(
                toolset=self,
                tool_def=definition,
                max_retries=retries,
                args_validator=_ANY_OBJECT,
            )
            for definition in self._definitions
        }

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
    ) -> Any:
        """Run one call through toolplug, or defer it to a person first.

        Raises:
            ApprovalRequired: the call needs approval and the run has not had it yet.
            ModelRetry: the call failed with an error a retry may fix.
            ToolFailed: the call failed otherwise; the model reads why.
        """
        channel = _RunChannel(ctx, name)
        approved = channel.approved
        with self._conversation(ctx):
            if not approved:
                reason = await aapproval_reason(self.registry, name, tool_args)
                if reason is not None:
                    raise ApprovalRequired(
                        metadata={
                            "reason": reason,
                            "description": describe_call(self.registry, name, tool_args, reason),
                        }
                    )
            result = await run(
                self.registry,
                name,
                tool_args,
                approved=approved,
                call_id=ctx.tool_call_id,
                passthrough=_PAUSES,
                channel=channel,
            )
        if result.error is None:
            return _return(name, result)
        if result.error.retry_possible:
            raise ModelRetry(error_text(result))
        raise ToolFailed(error_text(result))


    def _conversation(self, ctx: RunContext[AgentDepsT]) -> Conversation:
        """The run's conversation: the one opened around it, else one per run id, begun with
        the user's prompts and the labelled results already in the message history."""
        opened = Conversation.current()
        if opened is not None:
            return bounded(self.registry, opened, self._allow)
        key = ctx.run_id or str(id(ctx.messages))
        found = self._conversations.get(key)
        if found is not None:
            self._conversations.move_to_end(key)
            return found
        allow = self._allow
        conversation = self.registry.conversation(None, allow=None if allow == INFERRED else allow)
        _replay(conversation, ctx)
        if allow == INFERRED:  # from every prompt of the run, its history's too
            conversation.allow(*inferred(self.registry, conversation.request))
        self._conversations[key] = conversation
        while len(self._conversations) > _RUNS_KEPT:
            self._conversations.popitem(last=False)
        return conversation


QUESTION: Final = "tool_question"
"""The ``type`` of a deferred request's metadata when it is a tool's question."""


def answers(
    requests: DeferredToolRequests, given: Mapping[str, Answer | Mapping[str, Any]]
) -> DeferredToolResults:
    """The ``DeferredToolResults`` that answer the tools' questions among ``requests``.

    ``given`` maps a call's ``tool_call_id`` to the user's ``Answer`` (or its dict,
    ``{"action": "accept", "content": {...}}``). Each answered call is approved, and its
    metadata carries its earlier answers and this one: resumed, the tool runs again from
    its start, and its questions return them in order. Add approvals of your own to the
    result (``results.approvals[...] = ...``) before resuming.

    Raises:
        ValueError: a call id is not one of the questions in ``requests``.
    """
    results = DeferredToolResults()
    for call_id, answer in given.items():
        asked = requests.metadata.get(call_id) or {}
        if asked.get("type") != QUESTION:
            raise ValueError(
                f"{call_id!r} is not a tool's question among these requests: "
                f"the questions are {sorted(_questions(requests))}"
            )
        shown = (
            {"action": answer.action, "content": dict(answer.content)}
            if isinstance(answer, Answer) else dict(answer)
        )
        results.approvals[call_id] = True
        results.metadata[call_id] = {
            "answers": [*asked.get("answers", []), shown], "approved": asked.get("approved"),
        }
    return results


def _questions(requests: DeferredToolRequests) -> list[str]:
    return [k for k, v in requests.metadata.items() if (v or {}).get("type") == QUESTION]


class _RunChannel(Channel):
    """A call's channel in a pydantic-ai run: a question defers the call
    (``ApprovalRequired`` with the question), its answers come back in the approved call's
    metadata; sampling asks the run's own model; log lines and progress go to logging."""

    can_ask = True
    can_sample = True
    pauses = _PAUSES

    def __init__(self, ctx: RunContext[Any], tool: str) -> None:
        self._ctx, self._tool = ctx, tool
        metadata = ctx.tool_call_metadata if ctx.tool_call_approved else None
        given = metadata.get("answers") if isinstance(metadata, dict) else None
        self._answers: list[Any] = list(given) if isinstance(given, list) else []
        self.answering = isinstance(given, list)
        """Whether this run of the call resumes a question (not an approval)."""
        self.approved = (
            metadata.get("approved") is True
            if isinstance(metadata, dict) and self.answering
            else ctx.tool_call_approved
        )
        """Whether the person approved this call (a question's approval is not one)."""
        self._asked = 0

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        _log.debug("%s: %g of %s%s", self._tool, done, total, f": {message}" if message else "")

    async def ask(self, question: Question) -> Answer:
        index = self._asked
        self._asked += 1
        if index < len(self._answers):
            return _answer(self._answers[index])
        raise ApprovalRequired(
            metadata={
                "type": QUESTION, "name": question.tool, "message": question.message,
                "schema": dict(question.schema), "answers": self._answers[:index],
                "approved": self.approved,
            }
        )

    async def sample(self, request: SamplingRequest) -> Sampled:
        parts: list[Any] = [] if request.system is None else [SystemPromptPart(request.system)]
        history: list[ModelRequest | ModelResponse] = []
        for message in request.messages:
            content = message.content
            if message.role == "assistant":
                if not isinstance(content, str):
                    raise AskError("invalid_question", "an assistant message is text only")
                if parts:
                    history.append(ModelRequest(parts=parts))
                    parts = []
                history.append(ModelResponse(parts=[TextPart(content)]))
                continue
            said = content if isinstance(content, str) else BinaryContent(
                content.data, media_type=content.mime_type
            )
            parts.append(UserPromptPart([said]))
        if parts:
            history.append(ModelRequest(parts=parts))
        settings: dict[str, Any] = {"max_tokens": request.max_tokens}
        if request.temperature is not None:
            settings["temperature"] = request.temperature
        if request.stop:
            settings["stop_sequences"] = list(request.stop)
        reply = await model_request(self._ctx.model, history, model_settings=settings)  # type: ignore[arg-type]
        return Sampled(
            reply.text or "", reply.model_name or self._ctx.model.model_name, reply.finish_reason
        )


def _answer(given: Any) -> Answer:
    if isinstance(given, dict) and given.get("action") in ("accept", "decline", "cancel"):
        content = given.get("content") or {}
        if isinstance(content, dict):
            return Answer(given["action"], content)
    raise AskError(
        "invalid_answer",
        "a tool question's answer is {'action': 'accept', 'content': {...}}, "
        f"{{'action': 'decline'}} or {{'action': 'cancel'}} (see answers()); got {given!r}",
    )


def _return(name: str, result: ToolResult) -> ToolReturn:
    """A success as pydantic-ai returns it: the text's body, then the parts in its types."""
    body = success_body(result)
    if not result.parts:
        return ToolReturn(return_value=body, metadata=result)
    items = carried(result, "pydantic-ai", name, _native)
    return ToolReturn(return_value=[body, *items], metadata=result)


def _native(part: Part) -> BinaryContent | FileUrl | str | None:
    """One part in pydantic-ai's type (``carried``)."""
    text = text_of(part)
    if text is not None:
        return text
    held = binary(part)
    if held is not None:
        name = getattr(held, "name", None)
        if name:
            return BinaryContent(held.data, media_type=held.mime_type, identifier=name)
        return BinaryContent(held.data, media_type=held.mime_type)
    link = web_link(part)
    if link is None or link.mime_type is None:
        return None
    family = link.mime_type.split("/")[0]
    url = {"image": ImageUrl, "audio": AudioUrl, "video": VideoUrl}.get(family, DocumentUrl)
    made: FileUrl = url(link.uri, media_type=link.mime_type)
    return made


def _replay(conversation: Conversation, ctx: RunContext[Any]) -> None:
    """What the run's messages hold: the user's words, and the results toolplug labelled."""
    prompt_seen = False
    for message in ctx.messages:
        if isinstance(message, ModelResponse) or not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                conversation.trust(_text(part.content))
                prompt_seen = True
            elif isinstance(part, ToolReturnPart):
                result = part.metadata
                if isinstance(result, dict) and isinstance(result.get("trust"), dict):
                    # a history kept as JSON: the ToolResult came back as a dict
                    result = ToolResult(
                        output=str(result.get("output") or ""), data=result.get("data"),
                        trust=Trust.model_validate(result["trust"]),
                    )
                if isinstance(result, ToolResult) and result.trust is not None:
                    conversation.record(part.tool_name, result.trust, result, part.tool_call_id)
    if not prompt_seen and ctx.prompt is not None:
        conversation.trust(_text(ctx.prompt))


def _text(content: Any) -> str:
    """The text parts of a user prompt."""
    if isinstance(content, str):
        return content
    return "\n".join(item for item in content if isinstance(item, str))


def _definition(metadata: ToolMetadata, *, deferred: bool) -> ToolDefinition:
    return ToolDefinition(
        name=metadata.name,
        description=metadata.description,
        parameters_json_schema=copy.deepcopy(metadata.parameters),
        metadata={
            "toolplug": {
                "category": metadata.category,
                "annotations": metadata.annotations.model_dump(),
            }
        },
        defer_loading=deferred,
    )


# -- prompts and resources (docs/prompts-and-resources.md) --------------------------------


def prompt_content(
    registry: Registry, name: str, arguments: Mapping[str, str] | None = None
) -> list[UserContent]:
    """The prompt ``name`` rendered, as the user prompt of ``agent.run``: its messages'
    content in order (text as ``str``, pictures, recordings and files as ``BinaryContent``,
    an http(s) link with a MIME type as an ``ImageUrl``, ``AudioUrl``... , other links as
    their text).

    Raises:
        PublishedError: no such prompt is offered, or an argument is missing or unknown.
        ValueError: the prompt has an assistant message, which a user prompt cannot hold
            (use ``prompt_messages`` as the message history).
    """
    return _user_content(registry.get_prompt(name, arguments))


async def aprompt_content(
    registry: Registry, name: str, arguments: Mapping[str, str] | None = None
) -> list[UserContent]:
    """``prompt_content`` from async code (a plain ``def`` prompt runs in a worker thread)."""
    return _user_content(await registry.aget_prompt(name, arguments))


def prompt_messages(
    registry: Registry, name: str, arguments: Mapping[str, str] | None = None
) -> list[ModelMessage]:
    """The prompt ``name`` rendered, as a message history (``agent.run(...,
    message_history=...)``): each run of user messages one ``ModelRequest`` (a
    ``UserPromptPart`` each), each run of assistant messages one ``ModelResponse`` (text as
    ``TextPart``, a picture or file as ``FilePart``)."""
    return _history(registry.get_prompt(name, arguments))


async def aprompt_messages(
    registry: Registry, name: str, arguments: Mapping[str, str] | None = None
) -> list[ModelMessage]:
    """``prompt_messages`` from async code."""
    return _history(await registry.aget_prompt(name, arguments))


def resource_content(registry: Registry, uri: str) -> str | BinaryContent:
    """A plugin's resource for a user prompt: its text, or its bytes as ``BinaryContent``
    (of the resource's MIME type, named by its URI).

    Raises:
        PublishedError: nothing offered has that URI (``kind`` ``unknown_resource``).
    """
    return _resource(registry.read_resource(uri))


async def aresource_content(registry: Registry, uri: str) -> str | BinaryContent:
    """``resource_content`` from async code."""
    return _resource(await registry.aread_resource(uri))


def _resource(contents: ResourceContents) -> str | BinaryContent:
    if contents.text is not None:
        return contents.text
    return BinaryContent.narrow_type(BinaryContent(
        contents.data or b"", media_type=contents.mime_type, identifier=contents.uri
    ))


def _content(message: Message) -> UserContent:
    content = message.content
    if isinstance(content, str):
        return content
    made = _native(content)
    if isinstance(made, BinaryContent):
        return BinaryContent.narrow_type(made)
    if made is None:
        return content.describe()
    return cast("UserContent", made)  # _native's FileUrl is one of ImageUrl, AudioUrl...


def _user_content(rendered: RenderedPrompt) -> list[UserContent]:
    said = [m for m in rendered.messages if m.role == "assistant"]
    if said:
        raise ValueError(
            f"prompt {rendered.name!r} has {len(said)} assistant message(s), which a user "
            "prompt cannot hold; pass prompt_messages(...) as the message_history instead"
        )
    return [_content(m) for m in rendered.messages]


def _history(rendered: RenderedPrompt) -> list[ModelMessage]:
    history: list[ModelMessage] = []
    for message in rendered.messages:
        content = _content(message)
        if message.role == "user":
            part = UserPromptPart(content if isinstance(content, str) else [content])
            if history and isinstance(history[-1], ModelRequest):
                history[-1].parts = [*history[-1].parts, part]
            else:
                history.append(ModelRequest(parts=[part]))
            continue
        if isinstance(content, BinaryContent):
            reply: FilePart | TextPart = FilePart(content)
        else:  # text, or a link's URL: what a reply can say
            said = content if isinstance(content, str) else str(getattr(content, "url", ""))
            reply = TextPart(said)
        if history and isinstance(history[-1], ModelResponse):
            history[-1].parts = [*history[-1].parts, reply]
        else:
            history.append(ModelResponse(parts=[reply]))
    return history
