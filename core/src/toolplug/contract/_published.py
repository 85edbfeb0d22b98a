"""Prompts and resources a plugin publishes, beside its tools.

A prompt is a message template a person picks (a slash command in a chat host); a resource
is something a host reads by URI (a file, a record, a picture); a resource template is a
family of resources whose URI has variables (RFC 6570 level 1: ``notes://{day}/summary``).
A plugin registers them from ``register_prompts`` and ``register_resources``, and
``toolplug serve`` offers them over MCP; other hosts reach them through the registry
(``Registry.get_prompt``, ``Registry.read_resource``, ``Registry.complete``).

The decorators are the short way::

    @prompt(description="Review a piece of code.")
    def review(code: str, language: str = "python") -> str:
        return f"Review this {language} code:\\n{code}"

    @resource("notes://today", mime_type="text/plain")
    def today() -> str:
        return "Buy milk."

    @resource("notes://{day}/summary")
    def summary(day: str) -> str:
        return f"What happened on {day}."

The function's parameters are the prompt's arguments (one without a default is required),
or the template's variables; a parameter named ``context`` receives a
``PublishedContext``. A function may be ``async def``. A prompt returns text (one user
message) or a list of ``Message``; a resource returns ``str`` (text) or ``bytes`` (a
blob). The dataclasses (``Prompt``, ``Resource``, ``ResourceTemplate``) are the long way,
for items made at run time.

When a resource's contents change, ``resource_changed(uri)`` (or ``Resource.changed()``)
tells every host watching it: ``toolplug serve`` sends ``notifications/resources/updated``
to the MCP sessions subscribed to that URI.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, overload
from urllib.parse import unquote

from toolplug.contract._parts import Audio, EmbeddedResource, Image, Part, ResourceLink, Text

__all__ = [
    "Message",
    "Prompt",
    "PromptArgument",
    "PublishedContext",
    "RenderedPrompt",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "prompt",
    "resource",
    "resource_changed",
    "watch_resources",
]

Completer: TypeAlias = Callable[[str, str, Mapping[str, str]], Any]
"""``(argument or variable name, what the user typed so far, the other arguments)`` ->
a list of suggested values (or an awaitable of one)."""

_NAME: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_SCHEME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$")
_EXPRESSION: Final = re.compile(r"\{([^{}]*)\}")
_VARIABLE: Final = re.compile(r"^[A-Za-z0-9_]+$")
MESSAGE_PARTS: Final = (Text, Image, Audio, EmbeddedResource, ResourceLink)
"""The content a prompt message may carry besides plain text."""


@dataclass(frozen=True)
class PublishedContext:
    """What a prompt's render or a resource's read receives besides its arguments."""

    name: str
    """The prompt's name, or the URI being read."""
    host: Mapping[str, Any] = field(default_factory=dict)
    """Whatever the host passed as ``context=`` (``toolplug serve``: its transport and
    client)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The environment the registry was loaded with."""


@dataclass(frozen=True)
class PromptArgument:
    """One argument of a prompt: always a string, as MCP carries them."""

    name: str
    description: str = ""
    required: bool = False

    def __post_init__(self) -> None:
        if not _VARIABLE.match(self.name):
            raise ValueError(
                f"PromptArgument: {self.name!r} is not an argument name (letters, digits, _)"
            )


@dataclass(frozen=True)
class Message:
    """One message of a rendered prompt: a role and one content (text or a part)."""

    role: Literal["user", "assistant"]
    content: str | Part

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"Message: role is 'user' or 'assistant', not {self.role!r}")
        if not isinstance(self.content, (str, *MESSAGE_PARTS)):
            raise ValueError(
                f"Message: content {type(self.content).__name__} is not text nor one of "
                "Text, Image, Audio, EmbeddedResource, ResourceLink"
            )


@dataclass(frozen=True)
class Prompt:
    """A prompt a plugin publishes (``register_prompts``); made by ``@prompt`` or by hand.

    ``render(arguments, context)`` gets the arguments (a mapping of strings, the optional
    ones left out when not given) and a ``PublishedContext``; it returns text (one user
    message) or a list of ``Message`` (or an awaitable of either).
    """

    name: str
    render: Callable[[Mapping[str, str], PublishedContext], Any]
    description: str
    title: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    requires: tuple[str, ...] = ()
    """Capabilities it needs, as a tool's ``requires_capabilities``: missing one, it is not
    offered, and ``Registry.published_availability`` says why."""
    complete: Completer | None = None
    """Suggested values of its arguments, for a host's completion."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(
                f"Prompt: {self.name!r} is not a prompt name (letters, digits, _ . -; "
                "at most 128)"
            )
        if not self.description.strip():
            raise ValueError(f"Prompt {self.name!r}: description must not be empty")
        object.__setattr__(self, "arguments", tuple(self.arguments))
        object.__setattr__(self, "requires", tuple(self.requires))
        names = [a.name for a in self.arguments]
        if len(set(names)) != len(names):
            raise ValueError(f"Prompt {self.name!r}: an argument is named twice in {names}")


@dataclass(frozen=True)
class Resource:
    """A resource a plugin publishes (``register_resources``) at one URI.

    ``read(context)`` returns ``str`` (text, of ``mime_type`` or ``text/plain``) or
    ``bytes`` (a blob, of ``mime_type`` or ``application/octet-stream``), or an awaitable.
    """

    uri: str
    name: str
    read: Callable[[PublishedContext], Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    requires: tuple[str, ...] = ()
    """Capabilities it needs: missing one, it is not offered (as a tool)."""

    def __post_init__(self) -> None:
        if not _SCHEME.match(self.uri) or _EXPRESSION.search(self.uri):
            raise ValueError(
                f"Resource: {self.uri!r} is not a URI with a scheme such as 'notes://today' "
                "(a URI with {variables} is a ResourceTemplate)"
            )
        if not self.name:
            raise ValueError(f"Resource {self.uri!r}: name must not be empty")
        object.__setattr__(self, "requires", tuple(self.requires))

    def changed(self) -> None:
        """Tell the hosts watching this resource that its contents changed."""
        resource_changed(self.uri)


@dataclass(frozen=True)
class ResourceTemplate:
    """A family of resources whose URI has variables: ``test://template/{id}/data``.

    RFC 6570 level 1 only: each ``{name}`` matches one segment (no ``/``, ``?`` or ``#``),
    percent-decoded. ``read(variables, context)`` gets the matched variables.
    """

    uri_template: str
    name: str
    read: Callable[[Mapping[str, str], PublishedContext], Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    requires: tuple[str, ...] = ()
    complete: Completer | None = None
    """Suggested values of its variables, for a host's completion."""

    def __post_init__(self) -> None:
        if not _SCHEME.match(self.uri_template):
            raise ValueError(
                f"ResourceTemplate: {self.uri_template!r} is not a URI template with a scheme"
            )
        found = _EXPRESSION.findall(self.uri_template)
        bad = [v for v in found if not _VARIABLE.match(v)]
        if bad:
            raise ValueError(
                f"ResourceTemplate {self.uri_template!r}: {{{bad[0]}}} is not a level-1 "
                "variable; write {name} (letters, digits, _), one per segment"
            )
        if not found:
            raise ValueError(
                f"ResourceTemplate {self.uri_template!r} has no {{variable}}; publish a "
                "Resource for one URI"
            )
        if len(set(found)) != len(found):
            raise ValueError(f"ResourceTemplate {self.uri_template!r}: a variable repeats")
        if not self.name:
            raise ValueError(f"ResourceTemplate {self.uri_template!r}: name must not be empty")
        object.__setattr__(self, "requires", tuple(self.requires))

    @property
    def variables(self) -> tuple[str, ...]:
        """The variables of the template, in order."""
        return tuple(_EXPRESSION.findall(self.uri_template))

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables ``uri`` gives this template, or None when it is not one of its."""
        pattern = "".join(
            f"(?P<{piece}>[^/?#]+)" if index % 2 else re.escape(piece)
            for index, piece in enumerate(_EXPRESSION.split(self.uri_template))
        )
        found = re.fullmatch(pattern, uri)
        if found is None:
            return None
        return {name: unquote(value) for name, value in found.groupdict().items()}


# -- the decorators ----------------------------------------------------------------------


def _parameters(function: Callable[..., Any]) -> list[inspect.Parameter]:
    return [
        p for p in inspect.signature(function).parameters.values()
        if p.name != "context" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def _caller(function: Callable[..., Any]) -> Callable[[Mapping[str, str], Any], Any]:
    """``function(**arguments)``, with ``context=`` when it takes one."""
    takes_context = "context" in inspect.signature(function).parameters
    known = {p.name for p in _parameters(function)}

    def call(arguments: Mapping[str, str], context: Any) -> Any:
        given = {k: v for k, v in arguments.items() if k in known}
        return function(**given, context=context) if takes_context else function(**given)

    if inspect.iscoroutinefunction(function):  # stays async: awaited on the host's loop

        async def acall(arguments: Mapping[str, str], context: Any) -> Any:
            return await call(arguments, context)

        acall.__qualname__ = function.__qualname__
        return acall
    call.__qualname__ = function.__qualname__
    return call


def _without_variables(call: Callable[[Mapping[str, str], Any], Any]) -> Callable[[Any], Any]:
    """A resource's ``read(context)`` of a caller that takes arguments (none, here)."""
    if inspect.iscoroutinefunction(call):

        async def aread(context: Any) -> Any:
            return await call({}, context)

        aread.__qualname__ = call.__qualname__
        return aread

    def read(context: Any) -> Any:
        return call({}, context)

    read.__qualname__ = call.__qualname__
    return read


def _summary(function: Callable[..., Any]) -> str:
    return inspect.cleandoc(function.__doc__ or "").split("\n\n")[0].replace("\n", " ")


def prompt(
    name: str | None = None,
    *,
    description: str | None = None,
    title: str | None = None,
    arguments: Mapping[str, str] | None = None,
    requires: Sequence[str] = (),
    complete: Completer | None = None,
) -> Callable[[Callable[..., Any]], Prompt]:
    """Make a ``Prompt`` of a function whose parameters are its arguments.

    ``name`` defaults to the function's name, ``description`` to its docstring's first
    paragraph; ``arguments`` maps a parameter to its description. A parameter without a
    default is a required argument.

    Example:
        >>> @prompt(description="Greet someone.")
        ... def greet(who: str) -> str:
        ...     return f"Say hello to {who}."
        >>> greet.arguments[0].required
        True
    """
    described = dict(arguments or {})

    def make(function: Callable[..., Any]) -> Prompt:
        parameters = _parameters(function)
        unknown = sorted(set(described) - {p.name for p in parameters})
        if unknown:
            raise ValueError(f"prompt {function.__name__}: no parameter named {unknown[0]!r}")
        call = _caller(function)
        return Prompt(
            name=name or function.__name__,
            render=call,
            description=description or _summary(function),
            title=title,
            arguments=tuple(
                PromptArgument(p.name, described.get(p.name, ""), p.default is p.empty)
                for p in parameters
            ),
            requires=tuple(requires),
            complete=complete,
        )

    return make


@overload
def resource(
    uri: str, *, name: str | None = ..., title: str | None = ..., description: str | None = ...,
    mime_type: str | None = ..., requires: Sequence[str] = ..., complete: None = ...,
) -> Callable[[Callable[..., Any]], Resource | ResourceTemplate]: ...


@overload
def resource(
    uri: str, *, name: str | None = ..., title: str | None = ..., description: str | None = ...,
    mime_type: str | None = ..., requires: Sequence[str] = ..., complete: Completer,
) -> Callable[[Callable[..., Any]], ResourceTemplate]: ...


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    requires: Sequence[str] = (),
    complete: Completer | None = None,
) -> Callable[[Callable[..., Any]], Any]:
    """Make a ``Resource`` of a function (a ``ResourceTemplate``, when ``uri`` has
    ``{variables}``: the function's parameters are its variables).

    Example:
        >>> @resource("notes://{day}/summary", mime_type="text/plain")
        ... def summary(day: str) -> str:
        ...     return f"What happened on {day}."
        >>> summary.match("notes://monday/summary")
        {'day': 'monday'}
    """

    def make(function: Callable[..., Any]) -> Resource | ResourceTemplate:
        common: dict[str, Any] = {
            "name": name or function.__name__, "title": title, "mime_type": mime_type,
            "description": description or _summary(function) or None,
            "requires": tuple(requires),
        }
        call = _caller(function)
        if not _EXPRESSION.search(uri):
            return Resource(uri=uri, read=_without_variables(call), **common)
        template = ResourceTemplate(uri_template=uri, read=call, complete=complete, **common)
        missing = sorted(set(template.variables) - {p.name for p in _parameters(function)})
        if missing:
            raise ValueError(
                f"resource {uri!r}: {function.__name__} takes no parameter {missing[0]!r}"
            )
        return template

    return make


# -- change notifications ------------------------------------------------------------------

_WATCHERS: list[Callable[[str], None]] = []
_WATCHERS_LOCK: Final = threading.Lock()


def resource_changed(uri: str) -> None:
    """Tell every host watching ``uri`` that its contents changed; callable from any
    thread, it never raises (a watcher that fails is skipped)."""
    with _WATCHERS_LOCK:
        watchers = list(_WATCHERS)
    for watcher in watchers:
        try:
            watcher(uri)
        except Exception:  # one host's failure must not stop the author's code
            continue


def watch_resources(watcher: Callable[[str], None]) -> Callable[[], None]:
    """Call ``watcher(uri)`` on each ``resource_changed``; returns what stops it. For hosts
    (``toolplug serve`` watches to notify its subscribed sessions)."""
    with _WATCHERS_LOCK:
        _WATCHERS.append(watcher)

    def stop() -> None:
        with _WATCHERS_LOCK:
            if watcher in _WATCHERS:
                _WATCHERS.remove(watcher)

    return stop



# -- what a host gets back -------------------------------------------------------------------


@dataclass(frozen=True)
class RenderedPrompt:
    """A prompt rendered with arguments (``Registry.get_prompt``): its messages, in order."""

    name: str
    description: str
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class ResourceContents:
    """What reading a resource gave (``Registry.read_resource``): text or bytes."""

    uri: str
    mime_type: str
    text: str | None = None
    data: bytes | None = None
