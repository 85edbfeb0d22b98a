"""Tools that talk back: progress, log lines, a question for the user, a request for the
host's model.

A tool reaches whoever runs it through its ``ToolContext``: ``report_progress`` and ``log``
(never fail, never wait), ``ask`` (a question with a small form, answered accept, decline
or cancel) and ``sample`` (messages in, the host model's completion out). Each host offers
what it can through a ``Channel``: ``toolplug serve`` as MCP progress and log notifications,
elicitation and sampling; ``toolplug call`` on the terminal; the integrations through their
frameworks. ``context.can_ask`` and ``context.can_sample`` say beforehand what this host
offers; where it offers nothing, ``ask`` and ``sample`` raise ``AskError`` (reason
``unavailable``), which a tool may catch, and which otherwise ends the call as a structured
error.

``Talk`` is what sits between the two: it checks a question's form against what MCP
elicitation allows (``form_problem``) and the answer against the form, redacts what goes
out, bounds the wait (``[calls] ask_timeout_seconds``), and tells the flow guard what came
back (an answer is the user's words, trusted; a completion is the model's, untrusted).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from toolplug.contract._parts import Audio, Image
from toolplug.contract._tool import AskError

__all__ = [
    "LOG_LEVELS", "Answer", "AskError", "Channel", "LogLevel", "Question", "Sampled",
    "SamplingMessage", "SamplingRequest", "Talk", "answer_problem", "form_problem",
]

LogLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
LOG_LEVELS: Final[tuple[str, ...]] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
)
"""The log levels, least severe first: syslog's, as MCP's ``notifications/message`` has them."""

_PYTHON_LEVELS: Final = {
    "debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
    "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
    "alert": logging.CRITICAL, "emergency": logging.CRITICAL,
}
DEFAULT_ASK_SECONDS: Final = 300.0
"""How long ``ask`` and ``sample`` wait for an answer unless ``[calls]`` says otherwise."""

tool_log = logging.getLogger("toolplug.tools")
"""Where a tool's log lines go when its host takes none (``Channel.log``)."""

@dataclass(frozen=True, slots=True)
class Question:
    """What a tool asks its user: a message, and the form of the answer.

    ``schema`` is a JSON Schema object of flat fields (``form_problem`` says which), or
    None for a plain yes-or-no confirmation (accept with no fields).
    """

    message: str
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    tool: str = ""
    """The tool that asks."""

    def fields(self) -> list[tuple[str, Mapping[str, Any], bool]]:
        """Each field of the form: its name, its schema, whether it is required."""
        required = set(self.schema.get("required") or ())
        properties: Mapping[str, Any] = self.schema.get("properties") or {}
        return [(name, spec, name in required) for name, spec in properties.items()]


@dataclass(frozen=True, slots=True)
class Answer:
    """The user's answer to a ``Question``.

    ``action`` is ``accept`` (``content`` holds the fields they filled in, defaults
    applied), ``decline`` (they said no) or ``cancel`` (they dismissed it without choosing).
    """

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (and ``content`` holds their answer)."""
        return self.action == "accept"


@dataclass(frozen=True, slots=True)
class SamplingMessage:
    """One message of a sampling request: text, an image or a recording."""

    role: Literal["user", "assistant"]
    content: str | Image | Audio


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """What a tool asks the host's model (``ToolContext.sample``)."""

    messages: tuple[SamplingMessage, ...]
    system: str | None = None
    max_tokens: int = 1000
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()
    """Model names the tool would prefer, best first (the host chooses)."""
    tool: str = ""
    """The tool that asks."""


@dataclass(frozen=True, slots=True)
class Sampled:
    """The host model's completion: its text, and which model wrote it."""

    text: str
    model: str = ""
    stop_reason: str | None = None


class Channel:
    """A host's end of a tool's talking back. Subclass it and override what the host offers.

    This base offers nothing to ask: ``can_ask`` and ``can_sample`` are False, and ``ask``
    and ``sample`` raise ``AskError`` (``unavailable``). Log lines go to the Python logger
    ``toolplug.tools``; progress goes nowhere. ``progress`` and ``log`` may be called from
    any thread and must not wait; ``ask`` and ``sample`` are awaited on the host's loop.
    """

    can_ask: bool = False
    """Whether ``ask`` can reach a person."""
    can_sample: bool = False
    """Whether ``sample`` can reach a model."""
    why_not: str = "this host offers no way to ask its user or its model"
    """Why ``ask`` or ``sample`` cannot, in words (for the error the tool receives)."""
    pauses: tuple[type[BaseException], ...] = ()
    """The exceptions this host's ``ask`` raises to pause its run (a framework's interrupt,
    answered on resume): they reach the host as raised, not as an ``AskError``."""

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        """How far the call has got (dropped by this base)."""

    def log(self, level: LogLevel, message: str, data: Mapping[str, Any] | None) -> None:
        """A log line of the tool: to the ``toolplug.tools`` logger in this base."""
        tool_log.log(_PYTHON_LEVELS[level], "%s", message, extra={"toolplug_data": data})

    async def ask(self, question: Question) -> Answer:
        """Put ``question`` to the user and return their answer."""
        raise AskError("unavailable", f"cannot ask the user: {self.why_not}")

    async def sample(self, request: SamplingRequest) -> Sampled:
        """Ask the host's model for a completion of ``request``."""
        raise AskError("unavailable", f"cannot ask the host's model: {self.why_not}")


NO_CHANNEL: Final = Channel()
"""The channel of a host that gave none."""

_PRIMITIVES: Final = frozenset({"string", "number", "integer", "boolean"})
_STRING_FORMATS: Final = frozenset({"email", "uri", "date", "date-time"})
_KEYS: Final = {
    "string": frozenset(
        {"type", "title", "description", "minLength", "maxLength", "format", "default",
         "enum", "enumNames", "oneOf"}
    ),
    "number": frozenset({"type", "title", "description", "minimum", "maximum", "default"}),
    "boolean": frozenset({"type", "title", "description", "default"}),
    "array": frozenset(
        {"type", "title", "description", "minItems", "maxItems", "items", "default"}
    ),
}
_KEYS["integer"] = _KEYS["number"]


def form_problem(schema: Any) -> str | None:
    """What makes ``schema`` a form MCP elicitation does not allow, or None when it is one.

    A form is ``{"type": "object", "properties": {...}, "required": [...]}`` whose fields
    are flat: a string (``minLength``, ``maxLength``, ``format`` email/uri/date/date-time,
    or a choice by ``enum`` or by ``oneOf`` of ``{"const", "title"}``), a number or integer
    (``minimum``, ``maximum``), a boolean, or an array of choices (``items`` with ``enum``
    or ``anyOf``; ``minItems``, ``maxItems``); each may have a ``title``, a ``description``
    and a ``default``. No nesting, no references.
    """
    if not isinstance(schema, Mapping):
        return f"the form must be a JSON Schema object, not {type(schema).__name__}"
    if schema.get("type") != "object":
        return 'the form\'s top level must be {"type": "object", "properties": {...}}'
    extra = set(schema) - {"type", "properties", "required", "title", "description", "$schema"}
    if extra:
        return f"the form's top level takes no {sorted(extra)[0]!r}"
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return "the form's properties must be an object of fields"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "the form's required must be a list of field names"
    missing = [r for r in required if r not in properties]
    if missing:
        return f"required names {missing[0]!r}, which is not a field of the form"
    for name, spec in properties.items():
        problem = _field_problem(spec)
        if problem is not None:
            return f"field {name!r}: {problem}"
    return None


def _field_problem(spec: Any) -> str | None:
    if not isinstance(spec, Mapping):
        return "must be a JSON Schema object"
    kind = spec.get("type")
    if kind not in _PRIMITIVES and kind != "array":
        return (
            f"type {kind!r} is not one a form may ask for: string, number, integer, "
            "boolean, or an array of choices (no objects, no nesting)"
        )
    extra = set(spec) - _KEYS[kind]
    if extra:
        return f"a {kind} field takes no {sorted(extra)[0]!r} in a form"
    if kind == "string" and "format" in spec and spec["format"] not in _STRING_FORMATS:
        return f"format {spec['format']!r} is not email, uri, date or date-time"
    if kind == "string" and "oneOf" in spec:
        options = spec["oneOf"]
        if not isinstance(options, list) or not all(
            isinstance(o, Mapping) and isinstance(o.get("const"), str) for o in options
        ):
            return 'oneOf must list choices as {"const": "value", "title": "shown"}'
    if "enum" in spec and not (
        isinstance(spec["enum"], list) and all(isinstance(v, str) for v in spec["enum"])
    ):
        return "enum must be a list of strings"
    if kind == "array":
        items = spec.get("items")
        if not isinstance(items, Mapping) or not (
            isinstance(items.get("enum"), list) or isinstance(items.get("anyOf"), list)
        ):
            return "an array field is a multiple choice: items needs enum or anyOf"
    return None


def answer_problem(question: Question, content: Mapping[str, Any]) -> str | None:
    """What makes an accepted answer not fit the question's form, or None."""
    from jsonschema import Draft202012Validator  # the form is small: checked once per answer

    errors = sorted(
        Draft202012Validator(dict(question.schema)).iter_errors(dict(content)),
        key=lambda e: list(map(str, e.path)),
    )
    if not errors:
        return None
    where = "/".join(str(p) for p in errors[0].absolute_path) or "the answer"
    return f"{where}: {errors[0].message}"


def _with_defaults(question: Question, content: Mapping[str, Any]) -> dict[str, Any]:
    """The answer with each field the user left out that has a default filled in."""
    filled = dict(content)
    for name, spec, _required in question.fields():
        if name not in filled and "default" in spec:
            filled[name] = spec["default"]
    return filled


Messages: TypeAlias = "str | SamplingMessage | Sequence[str | SamplingMessage]"


class Talk:
    """A call's talking back, checked: between the tool's ``ToolContext`` and the host's
    ``Channel``. Built by the registry for each call that has a host channel (and once per
    tool for calls that have none)."""

    __slots__ = ("_answered", "_legacy", "_redact", "_redact_data", "_sampled", "_seconds",
                 "channel", "tool")

    def __init__(
        self,
        tool: str,
        channel: Channel = NO_CHANNEL,
        *,
        legacy_progress: Callable[..., None] | None = None,
        seconds: float = DEFAULT_ASK_SECONDS,
        redact: Callable[[str], str] = str,
        redact_data: Callable[[Any], Any] = lambda value: value,
        answered: Callable[[str, Answer], None] | None = None,
        sampled: Callable[[str, Sampled], None] | None = None,
    ) -> None:
        self.tool = tool
        self.channel = channel
        self._legacy = _reporter(legacy_progress) if legacy_progress is not None else None
        self._seconds = seconds
        self._redact, self._redact_data = redact, redact_data
        self._answered, self._sampled = answered, sampled

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        """Pass on a progress report: to the host's ``progress`` entry when it gave one
        (the older way), else to the channel. A report that is not numbers is dropped."""
        if not _finite(done) or (total is not None and not _finite(total)):
            tool_log.debug("%s: progress report dropped: %r of %r", self.tool, done, total)
            return
        if message is not None:
            message = self._redact(str(message))
        if self._legacy is not None:
            self._legacy(float(done), None if total is None else float(total), message)
        else:
            self.channel.progress(float(done), None if total is None else float(total), message)

    def log(self, level: str, message: str, data: Mapping[str, Any] | None) -> None:
        """Pass on a log line, redacted; an unknown level is logged as ``warning`` saying so."""
        if level not in LOG_LEVELS:
            message = f"(unknown log level {level!r}) {message}"
            level = "warning"
        shown = self._redact(str(message))
        kept = self._redact_data(dict(data)) if data else None
        self.channel.log(level, shown, kept)  # type: ignore[arg-type]

    async def ask(self, message: str, schema: Mapping[str, Any] | None) -> Answer:
        """Ask the user through the channel; the answer checked against the form."""
        form = schema if schema is not None else {"type": "object", "properties": {}}
        problem = form_problem(form)
        if problem is not None:
            raise AskError(
                "invalid_question",
                f"{self.tool} asked a question whose form MCP elicitation does not allow: "
                f"{problem}",
            )
        question = Question(self._redact(str(message)), form, self.tool)
        if not self.channel.can_ask:
            raise AskError("unavailable", f"cannot ask the user: {self.channel.why_not}")
        answer = await self._waited(self.channel.ask(question), "the user's answer")
        if not isinstance(answer, Answer):
            raise AskError("failed", f"the host answered {type(answer).__name__}, not an Answer")
        if answer.accepted:
            filled = _with_defaults(question, answer.content)
            wrong = answer_problem(question, filled)
            if wrong is not None:
                raise AskError(
                    "invalid_answer", f"the answer does not fit the question's form: {wrong}"
                )
            answer = Answer("accept", filled)
        if self._answered is not None:
            self._answered(self.tool, answer)
        return answer

    async def sample(
        self, messages: Messages, *, system: str | None, max_tokens: int,
        temperature: float | None, stop: Sequence[str], model_hints: Sequence[str],
    ) -> Sampled:
        """Ask the host's model through the channel; what went out redacted."""
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise AskError("invalid_question", f"max_tokens must be 1 or more; got {max_tokens!r}")
        request = SamplingRequest(
            tuple(self._message(m) for m in _listed(messages)),
            None if system is None else self._redact(system), max_tokens, temperature,
            tuple(stop), tuple(model_hints), self.tool,
        )
        if not request.messages:
            raise AskError("invalid_question", "a sampling request needs at least one message")
        if not self.channel.can_sample:
            raise AskError("unavailable", f"cannot ask the host's model: {self.channel.why_not}")
        sampled = await self._waited(self.channel.sample(request), "the model's completion")
        if not isinstance(sampled, Sampled):
            raise AskError("failed", f"the host answered {type(sampled).__name__}, not Sampled")
        if self._sampled is not None:
            self._sampled(self.tool, sampled)
        return sampled

    def _message(self, message: str | SamplingMessage) -> SamplingMessage:
        if isinstance(message, str):
            return SamplingMessage("user", self._redact(message))
        if not isinstance(message, SamplingMessage):
            raise AskError(
                "invalid_question",
                f"a sampling message is text or a SamplingMessage, not {type(message).__name__}",
            )
        if isinstance(message.content, str):
            return SamplingMessage(message.role, self._redact(message.content))
        return message

    async def _waited(self, pending: Awaitable[Any], what: str) -> Any:
        try:
            async with asyncio.timeout(self._seconds):
                return await pending
        except TimeoutError:
            raise AskError(
                "timeout",
                f"{what} did not come within {self._seconds:g} s "
                "([calls] ask_timeout_seconds)",
            ) from None
        except AskError:
            raise
        except Exception as exc:  # the host's channel failed (the tool decides what next),
            # or paused its run (the host's to handle)
            if isinstance(exc, self.channel.pauses):
                raise
            raise AskError("failed", f"asking failed: {type(exc).__name__}: {exc}") from exc


def _listed(messages: Messages) -> list[str | SamplingMessage]:
    if isinstance(messages, str | SamplingMessage):
        return [messages]
    return list(messages)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _reporter(report: Callable[..., None]) -> Callable[[float, float | None, str | None], None]:
    """A host's ``progress`` entry called with what it takes: ``(done, total)`` or also
    the message."""
    try:
        takes = len(inspect.signature(report).parameters)
    except (TypeError, ValueError):
        takes = 2
    if takes >= 3:
        return report

    def two(done: float, total: float | None, message: str | None) -> None:
        report(done, total)

    return two
