"""The plugins' prompts and resources as a host reaches them: offered or not, rendered, read.

``Registry`` delegates here (``prompts``, ``get_prompt``, ``read_resource``, ``complete``
and their ``a...`` forms). A prompt or resource whose ``requires`` names a missing
capability is not offered, and ``availability`` says why, as for a tool. Text a plugin
renders or reads goes through the registry's redactor (the secrets it knows become
``***``), as results do; bytes are passed as they are.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from toolplug.contract._errors import PluginError, PublishedError
from toolplug.contract._parts import EmbeddedResource, Text
from toolplug.contract._published import (
    Message,
    Prompt,
    PublishedContext,
    RenderedPrompt,
    Resource,
    ResourceContents,
    ResourceTemplate,
)
from toolplug.runtime._capabilities import Availability

if TYPE_CHECKING:
    from toolplug.runtime._capabilities import CapabilityChecker
    from toolplug.runtime._loaded import Loaded
    from toolplug.trust._redaction import Redactor

__all__ = ["Publications", "run_async", "run_sync"]

Ref = Literal["prompt", "resource"]


def _failed(function: Callable[..., Any], exc: Exception) -> PluginError:
    """A plugin's function that raised, as the ``PluginError`` a host catches."""
    name = getattr(function, "__qualname__", repr(function))
    return PluginError(f"{name} raised {type(exc).__name__}: {exc}")


def run_sync(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` to its end from code that is not async: an awaitable it returns
    runs on a loop of its own (in a thread, when the caller is on a running loop). What it
    raises comes back as a ``PluginError``."""
    try:
        return _run_sync(function, *args)
    except (PluginError, PublishedError):
        raise
    except Exception as exc:  # the plugin's failure, named as such
        raise _failed(function, exc) from exc


def _run_sync(function: Callable[..., Any], *args: Any) -> Any:
    result = function(*args)
    if not inspect.isawaitable(result):
        return result
    awaitable = result

    async def finish() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(finish())
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(finish())
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=worker, name="toolplug-published")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def run_async(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` from the event loop: a plain function in a worker thread (it may
    block), an async one awaited here. What it raises comes back as a ``PluginError``."""
    try:
        if inspect.iscoroutinefunction(function):
            return await function(*args)
        result = await asyncio.to_thread(function, *args)
        return await result if inspect.isawaitable(result) else result
    except (PluginError, PublishedError):
        raise
    except Exception as exc:  # the plugin's failure, named as such
        raise _failed(function, exc) from exc


class Publications:
    """The prompts, resources and resource templates of a registry's plugins."""

    def __init__(
        self, loaded: Loaded, checker: CapabilityChecker, redactor: Redactor,
        env: Mapping[str, str],
    ) -> None:
        self._loaded, self._checker, self._redactor, self._env = loaded, checker, redactor, env

    # -- offered or not ------------------------------------------------------------------

    def availability(self, item: Prompt | Resource | ResourceTemplate) -> Availability:
        """Whether the item is offered: every capability it requires is present."""
        reasons: list[str] = []
        setup: list[str] = []
        for name in item.requires:
            state = self._checker.state(name)
            if not state.present:
                reasons.append(f"capability {name!r} is missing: {state.reason}")
                if state.setup:
                    setup.append(state.setup)
        return Availability(not reasons, tuple(reasons), tuple(dict.fromkeys(setup)))

    def _offered(self, items: Iterable[Any]) -> list[Any]:
        return [item for item in items if self.availability(item).available]

    def prompts(self) -> list[Prompt]:
        """The prompts offered, by name."""
        return self._offered(self._loaded.prompts.values())

    def resources(self) -> list[Resource]:
        """The resources offered, by URI."""
        return self._offered(self._loaded.resources.values())

    def templates(self) -> list[ResourceTemplate]:
        """The resource templates offered, by URI template."""
        return self._offered(self._loaded.templates.values())

    def registered(self) -> tuple[list[Prompt], list[Resource], list[ResourceTemplate]]:
        """Every registered prompt, resource and template, offered or not."""
        loaded = self._loaded
        return (list(loaded.prompts.values()), list(loaded.resources.values()),
                list(loaded.templates.values()))

    def plugin_of(self, key: str) -> str:
        """Who registered a prompt (``prompt:NAME``) or a resource (its URI or template)."""
        return self._loaded.published_by.get(key, "unknown")

    # -- prompts ---------------------------------------------------------------------------

    def prompt(self, name: str) -> Prompt:
        """The offered prompt of that name; ``PublishedError`` naming it when there is none."""
        found = self._loaded.prompts.get(name)
        if found is None:
            offered = ", ".join(p.name for p in self.prompts()) or "none"
            raise PublishedError(
                f"unknown prompt {name!r}; the prompts offered: {offered}",
                kind="unknown_prompt", prompt=name,
            )
        why = self.availability(found)
        if not why.available:
            raise PublishedError(
                f"prompt {name!r} is not offered: {'; '.join(why.reasons)}",
                kind="unavailable", prompt=name,
            )
        return found

    def checked_arguments(
        self, prompt: Prompt, arguments: Mapping[str, Any] | None
    ) -> dict[str, str]:
        """The arguments, checked against the prompt's: every required one given (not
        blank), none it does not take, each a string."""
        given = dict(arguments or {})
        known = {a.name for a in prompt.arguments}
        for name in sorted(given):
            if name not in known:
                takes = ", ".join(sorted(known)) or "none"
                raise PublishedError(
                    f"prompt {prompt.name!r} takes no argument {name!r}; its arguments: {takes}",
                    kind="unknown_argument", prompt=prompt.name, argument=name,
                )
            if not isinstance(given[name], str):
                raise PublishedError(
                    f"prompt {prompt.name!r}: argument {name!r} must be a string, not "
                    f"{type(given[name]).__name__}",
                    kind="invalid_argument", prompt=prompt.name, argument=name,
                )
        for argument in prompt.arguments:
            if argument.required and not (given.get(argument.name) or "").strip():
                what = f" ({argument.description})" if argument.description else ""
                raise PublishedError(
                    f"prompt {prompt.name!r} needs the argument {argument.name!r}{what}",
                    kind="missing_argument", prompt=prompt.name, argument=argument.name,
                )
        return given

    def rendered(self, prompt: Prompt, value: Any) -> RenderedPrompt:
        """What ``render`` returned, as messages, its text redacted."""
        raw: Sequence[Any] = (
            value if isinstance(value, Sequence) and not isinstance(value, str) else [value]
        )
        messages: list[Message] = []
        for each in raw:
            item = Message("user", each) if isinstance(each, str) else each
            if not isinstance(item, Message):
                raise PluginError(
                    f"prompt {prompt.name!r} rendered {type(item).__name__}; expected text or "
                    "a list of toolplug.Message",
                    plugin=self.plugin_of(f"prompt:{prompt.name}"),
                )
            messages.append(Message(item.role, self._redacted(item.content)))
        return RenderedPrompt(prompt.name, self._redactor.redact(prompt.description),
                              tuple(messages))

    def _redacted(self, content: Any) -> Any:
        if isinstance(content, str):
            return self._redactor.redact(content)
        if isinstance(content, Text):
            return Text(self._redactor.redact(content.text))
        if isinstance(content, EmbeddedResource) and content.text is not None:
            return EmbeddedResource(content.uri, text=self._redactor.redact(content.text),
                                    mime_type=content.mime_type)
        return content

    def context(self, name: str, host: Mapping[str, Any] | None) -> PublishedContext:
        """What a render or a read receives."""
        return PublishedContext(name, dict(host or {}), self._env)

    # -- resources -------------------------------------------------------------------------

    def reader(self, uri: str) -> tuple[Callable[..., Any], tuple[Any, ...], str | None]:
        """The read function for ``uri``, its arguments but the context, and its MIME type:
        a resource of that URI, else the first template (in sorted order) it matches."""
        found = self._loaded.resources.get(uri)
        if found is not None:
            self._offered_or_raise(found, uri)
            return found.read, (), found.mime_type
        for template in self._loaded.templates.values():
            variables = template.match(uri)
            if variables is not None:
                self._offered_or_raise(template, uri)
                return template.read, (variables,), template.mime_type
        raise PublishedError(f"resource not found: {uri}", kind="unknown_resource", uri=uri)

    def _offered_or_raise(self, item: Resource | ResourceTemplate, uri: str) -> None:
        why = self.availability(item)
        if not why.available:
            raise PublishedError(
                f"resource {uri} is not offered: {'; '.join(why.reasons)}",
                kind="unavailable", uri=uri,
            )

    def contents(self, uri: str, mime_type: str | None, value: Any) -> ResourceContents:
        """What ``read`` returned, as contents: text (redacted) or bytes; contents a
        source made itself (a mounted server's, with its own MIME type) pass as they are,
        their text redacted."""
        if isinstance(value, ResourceContents):
            if value.text is None:
                return value
            return ResourceContents(value.uri, value.mime_type,
                                    text=self._redactor.redact(value.text))
        if isinstance(value, str):
            return ResourceContents(uri, mime_type or "text/plain",
                                    text=self._redactor.redact(value))
        if isinstance(value, bytes | bytearray | memoryview):
            return ResourceContents(uri, mime_type or "application/octet-stream",
                                    data=bytes(value))
        raise PluginError(
            f"resource {uri} read {type(value).__name__}; expected str or bytes",
            plugin=self.plugin_of(uri),
        )

    # -- completion ------------------------------------------------------------------------

    def completer(self, ref: Ref, name: str, argument: str) -> Callable[..., Any] | None:
        """The completion function for ``argument`` of a prompt (``ref`` "prompt", ``name``
        its name) or of a resource template (``ref`` "resource", ``name`` its URI
        template); None when it has none. ``PublishedError`` naming what is unknown."""
        if ref == "prompt":
            prompt = self.prompt(name)
            if argument not in {a.name for a in prompt.arguments}:
                raise PublishedError(
                    f"prompt {name!r} takes no argument {argument!r}",
                    kind="unknown_argument", prompt=name, argument=argument,
                )
            return prompt.complete
        template = self._loaded.templates.get(name)
        if template is None or not self.availability(template).available:
            raise PublishedError(
                f"no resource template is {name!r}", kind="unknown_resource", uri=name
            )
        if argument not in template.variables:
            raise PublishedError(
                f"resource template {name!r} has no variable {argument!r}",
                kind="unknown_argument", uri=name, argument=argument,
            )
        return template.complete

    @staticmethod
    def values(found: Any, key: str) -> list[str]:
        """A completion function's answer, checked: a list of strings."""
        if found is None:
            return []
        if isinstance(found, str) or not all(isinstance(v, str) for v in found):
            raise PluginError(f"the completion of {key} returned {found!r}; expected a list "
                              "of strings")
        return list(found)

