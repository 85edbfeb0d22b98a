"""The tool base class, what a call receives, and what it returns.

A tool's failure at run time is *returned*, never raised to the host: ``ToolResult.error``
carries a ``ToolError`` with a type from ``ErrorType`` (or a tool's own ``...Error`` name),
a message for the model, and whether a retry may help. Inside ``run`` a tool may raise
``ToolFailure`` to return such an error from deep in its code.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias

from toolplug.contract._metadata import Annotations, ToolMetadata, Trust
from toolplug.contract._network import NetworkPolicy
from toolplug.contract._parts import Part

if TYPE_CHECKING:
    from toolplug.contract._talk import Answer, LogLevel, Sampled, SamplingMessage, Talk

_tool_log = logging.getLogger("toolplug.tools")
_NO_HOST: Final = "this context has no host to ask (it was not made by a registry's call)"

__all__ = [
    "AskError",
    "Citation",
    "ErrorType",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolFailure",
    "ToolResult",
]


class ErrorType(StrEnum):
    """The error types every host can rely on; tools may return others named ``...Error``."""

    VALIDATION = "ValidationError"
    """The arguments break the schema (toolplug), or make no sense together (a tool)."""
    NOT_FOUND = "NotFoundError"
    """No tool has that name (toolplug), or what was asked for does not exist (a tool)."""
    PERMISSION = "PermissionError"
    """The network guard, a sandbox or a service refused."""
    TIMEOUT = "TimeoutError"
    """The call ran past its time limit, or a service did not answer in time."""
    RATE_LIMIT = "RateLimitError"
    """A configured rate limit or a service's quota is used up; try again later."""
    UNAVAILABLE = "UnavailableError"
    """The tool is disabled or unavailable here; ``details`` say why and how to fix it."""
    EXECUTION = "ExecutionError"
    """Anything else: a tool or a ``tool_call`` hook raised, or returned no ``ToolResult``."""
    NETWORK = "NetworkError"
    """A host could not be reached, or the connection broke."""
    PARSE = "ParseError"
    """A response could not be understood."""
    APPROVAL_REQUIRED = "ApprovalRequiredError"
    """A call needs a person's approval and no approver decided; ``details`` say how."""


@dataclass(frozen=True, slots=True)
class Citation:
    """A source the result came from."""

    title: str
    url: str

    def to_dict(self) -> dict[str, str]:
        """The citation as a plain dict."""
        return {"title": self.title, "url": self.url}


@dataclass(frozen=True, slots=True)
class ToolError:
    """Why a call failed, in a shape a model can act on."""

    type: str
    message: str
    retry_possible: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    """Structured context (the bad fields, the reset time ...) for hosts; not for the model."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one call: a success with output, or an error."""

    output: str = ""
    """Text for the model."""
    data: Any = None
    """Structured data (JSON-compatible)."""
    citations: tuple[Citation, ...] = ()
    warnings: tuple[str, ...] = ()
    error: ToolError | None = None
    spill: str | None = None
    """Where the whole output is, when the output budget cut it: a ``toolplug://results/ID``
    URI to read on from (``Registry.read``; a resource over MCP; ``ID/data`` for the data)."""
    trust: Trust | None = None
    """The result's labels, set by the engine: its tool's (``Registry.labels``), or the
    ``output`` and ``private`` labels the tool gave this result when it knows what the
    result holds (``ToolResult.success(..., trust=...)``: a channel's messages all written
    by members of the organisation are trusted although the tool's label says a channel
    may hold outside text). An ``untrusted`` result's text could have been written by
    anyone outside."""
    parts: tuple[Part, ...] = ()
    """What the result holds besides its text, in the order a host should show it after
    ``output``: images, audio, files, resource links, embedded resources, more text
    (``toolplug.Image`` and its siblings). Last of the fields, so results built by
    position before parts existed mean what they meant."""

    @property
    def ok(self) -> bool:
        """True for a success."""
        return self.error is None

    @classmethod
    def success(
        cls,
        output: str,
        data: Any = None,
        *,
        parts: tuple[Part, ...] | list[Part] = (),
        citations: tuple[Citation, ...] | list[Citation] = (),
        warnings: tuple[str, ...] | list[str] = (),
        trust: Trust | None = None,
    ) -> ToolResult:
        """A successful result; ``parts``: images, audio, files and resources after the
        text (``toolplug.Image`` ...); ``trust``: this result's own ``output`` and
        ``private`` labels, when they differ from the tool's (its sinks are the tool's)."""
        for index, part in enumerate(parts):
            if not isinstance(part, Part):
                raise TypeError(
                    f"parts[{index}] is a {type(part).__name__}, not a part: use "
                    "toolplug.Image, Audio, File, Text, ResourceLink or EmbeddedResource"
                )
        return cls(
            output=output, data=data, parts=tuple(parts), citations=tuple(citations),
            warnings=tuple(warnings), trust=trust,
        )

    @classmethod
    def failure(
        cls,
        type: str | ErrorType,
        message: str,
        *,
        retry_possible: bool = False,
        details: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """A failed result."""
        return cls(
            error=ToolError(
                type=str(type),
                message=message,
                retry_possible=retry_possible,
                details=dict(details or {}),
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-compatible data; errors in the seeds' shape, with the error's
        ``details`` (for hosts: an HTTP status and body, the bad fields) when it has any."""
        if self.error is not None:
            failure = self._failure()
            if self.error.details:
                failure["details"] = dict(self.error.details)
            return failure
        body: dict[str, Any] = {"error": False, "output": self.output, "data": self.data}
        if self.parts:
            body["parts"] = [part.to_dict() for part in self.parts]
        if self.citations:
            body["citations"] = [c.to_dict() for c in self.citations]
        if self.warnings:
            body["warnings"] = list(self.warnings)
        if self.spill:
            body["spill"] = self.spill
        return body

    def _failure(self) -> dict[str, Any]:
        """The error in the seeds' shape, without its details."""
        assert self.error is not None
        failure: dict[str, Any] = {
            "error": True,
            "error_type": self.error.type,
            "error_message": self.error.message,
            "retry_possible": self.error.retry_possible,
        }
        if "retry_after_seconds" in self.error.details:  # when to try again, for a model
            failure["retry_after_seconds"] = self.error.details["retry_after_seconds"]
        return failure

    def for_model(self) -> str:
        """What to hand back to a model that reads text only: the output, then each part in
        its place (a text part's text; for any other, what it is, such as ``[image:
        image/png, 4.1 KB]``, so nothing is dropped without a word), or the error as JSON
        in the seeds' shape (its ``details`` are for hosts, and left out)."""
        if self.error is not None:
            return json.dumps(self._failure(), ensure_ascii=False)
        text = self.output
        if self.parts:
            text = "\n\n".join([text, *(p.describe() for p in self.parts)] if text else
                               [p.describe() for p in self.parts])
        if self.warnings:
            notes = "\n".join(f"Warning: {w}" for w in self.warnings)
            return f"{text}\n\n{notes}" if text else notes
        return text


class ToolFailure(Exception):
    """Raise inside ``run`` to return a structured error result instead of a crash."""

    def __init__(
        self,
        type: str | ErrorType,
        message: str,
        *,
        retry_possible: bool = False,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.type = str(type)
        self.message = message
        self.retry_possible = retry_possible
        self.details = dict(details or {})

    def to_result(self) -> ToolResult:
        """The result this failure stands for."""
        return ToolResult.failure(
            self.type, self.message, retry_possible=self.retry_possible, details=self.details
        )


AskReason: TypeAlias = Literal[
    "unavailable", "timeout", "invalid_question", "invalid_answer", "failed"
]


class AskError(ToolFailure):
    """``ask`` or ``sample`` got no usable answer; ``reason`` says why.

    - ``unavailable``: this host cannot ask (``context.can_ask`` / ``can_sample`` is False);
    - ``timeout``: nobody answered within the wait;
    - ``invalid_question``: the form is not one MCP elicitation allows (the tool's bug);
    - ``invalid_answer``: the answer does not fit the form;
    - ``failed``: the host tried and could not (the client went away, refused sampling).

    Catch it to go on without the answer; uncaught, it ends the call as an error result of
    the matching type (``UnavailableError``, ``TimeoutError``, ``ValidationError``,
    ``ExecutionError``) whose details carry ``reason``.
    """

    _TYPES: Final = {
        "unavailable": ErrorType.UNAVAILABLE, "timeout": ErrorType.TIMEOUT,
        "invalid_question": ErrorType.VALIDATION, "invalid_answer": ErrorType.VALIDATION,
        "failed": ErrorType.EXECUTION,
    }

    def __init__(self, reason: AskReason, message: str, **details: Any) -> None:
        super().__init__(
            self._TYPES[reason], message, retry_possible=reason in ("timeout", "failed"),
            details={"reason": reason, **details},
        )
        self.reason: AskReason = reason



@dataclass(frozen=True)
class ToolContext:
    """What a tool receives besides its arguments."""

    tool: str
    """The name of the tool being called."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """The tool's ``[tools.<name>]`` settings: validated, defaults filled, secrets resolved."""
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    """The network guard's policy; every request goes through ``toolplug.http``."""
    cache_dir: Path = field(default_factory=lambda: Path.cwd() / ".toolplug-cache")
    """Where the tool may keep caches and downloads."""
    state_dir: Path = field(default_factory=lambda: Path.cwd() / ".toolplug-state")
    """Where the tool may keep durable state."""
    host: Mapping[str, Any] = field(default_factory=dict)
    """Whatever the host passed as ``context=`` to ``call``."""
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    """The environment the registry was loaded with (``toolplug.load(env=...)``); read
    secrets a tool resolves at run time from here, not from ``os.environ``."""
    talk: Talk | None = field(default=None, repr=False, compare=False)
    """The call's way back to its host (``report_progress``, ``log``, ``ask``, ``sample``
    use it); set by the registry."""

    # -- talking back (contract/_talk.py) -------------------------------------------

    @property
    def can_ask(self) -> bool:
        """Whether ``ask`` can reach a person here (else it raises ``AskError``)."""
        return self.talk is not None and self.talk.channel.can_ask

    @property
    def can_sample(self) -> bool:
        """Whether ``sample`` can reach the host's model here (else it raises ``AskError``)."""
        return self.talk is not None and self.talk.channel.can_sample

    def report_progress(
        self, done: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Say how far the call has got: ``done`` of ``total`` (None: unknown), with an
        optional ``message``. Never waits, never fails; from any thread."""
        if self.talk is not None:
            self.talk.progress(done, total, message)

    def log(self, level: LogLevel, message: str, data: Mapping[str, Any] | None = None) -> None:
        """A log line for whoever runs the tool (an MCP client sees it as
        ``notifications/message``); ``level`` is one of ``LOG_LEVELS``. Redacted; never
        waits, never fails."""
        if self.talk is not None:
            self.talk.log(level, message, data)
        else:  # a context built by hand (a test): Python's logger
            _tool_log.log(logging.getLevelNamesMapping().get(level.upper(), logging.INFO),
                          "%s", message)

    async def ask(self, message: str, schema: Mapping[str, Any] | None = None) -> Answer:
        """Ask the user ``message`` with a form of flat fields (a JSON Schema object;
        None: a plain confirmation), and wait for their ``Answer``.

        Raises:
            AskError: nobody can be asked here, nobody answered in time, the form is not
                one MCP elicitation allows, or the answer does not fit it.
        """
        if self.talk is None:
            raise AskError("unavailable", f"cannot ask the user: {_NO_HOST}")
        return await self.talk.ask(message, schema)

    async def sample(
        self,
        messages: str | SamplingMessage | Sequence[str | SamplingMessage],
        *,
        system: str | None = None,
        max_tokens: int = 1000,
        temperature: float | None = None,
        stop: Sequence[str] = (),
        model_hints: Sequence[str] = (),
    ) -> Sampled:
        """Ask the host's model to complete ``messages`` (text: one user message). The
        completion is the model's words: the flow guard treats it as untrusted.

        Raises:
            AskError: the host offers no model, refused, or did not answer in time.
        """
        if self.talk is None:
            raise AskError("unavailable", f"cannot ask the host's model: {_NO_HOST}")
        return await self.talk.sample(
            messages, system=system, max_tokens=max_tokens, temperature=temperature,
            stop=stop, model_hints=model_hints,
        )


class Tool:
    """Base class of every tool: set ``metadata`` and implement ``run``.

    ``run`` may be ``async def`` (run on the event loop) or a plain ``def`` (run in a worker
    thread). Keep heavy imports inside ``run`` so that listing tools stays cheap.

    Example:
        >>> class Echo(Tool):
        ...     metadata = ToolMetadata(
        ...         name="echo", description="Repeat the text.", category="utility"
        ...     )
        ...
        ...     async def run(self, arguments, context):
        ...         return ToolResult.success(arguments.get("text", ""))
    """

    metadata: ClassVar[ToolMetadata]
    answers_per_caller: ClassVar[bool] = False
    """True when what it answers depends on who calls (``ToolContext.host["client"]``: a
    mounted server each served principal signs in to on its own): the result cache then
    keeps each caller's results apart, never handing one caller's to another."""

    @classmethod
    def annotations_for(cls, arguments: Mapping[str, Any]) -> Annotations:
        """The annotations that hold for a call with these arguments.

        By default the declared ones. A tool whose effect depends on its arguments refines
        them per call, so that approvals ask only where they must: a fetch tool's GET is
        read-only, its POST is not. ``arguments`` are the model's, not yet validated: read
        them defensively (an exception here falls back to the declared annotations).
        """
        return cls.metadata.annotations

    def run(
        self, arguments: dict[str, Any], context: ToolContext
    ) -> ToolResult | Awaitable[ToolResult]:
        """Do the work for validated ``arguments``; return a ``ToolResult``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement run()")
