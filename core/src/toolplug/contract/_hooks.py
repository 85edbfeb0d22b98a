"""Hook specifications: every hook a toolplug plugin can implement.

Plugins import the marker from the package: ``from toolplug import hookimpl``. Each hook
is documented in ``docs/hooks.md`` with its signature and an example; a test fails when
a hook here is missing there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import pluggy

if TYPE_CHECKING:
    from toolplug.contract._approval import Approval, ApprovalRequest
    from toolplug.contract._call import ToolCall
    from toolplug.contract._capabilities import Capability
    from toolplug.contract._metadata import Category
    from toolplug.contract._published import Prompt, Resource, ResourceTemplate
    from toolplug.contract._tool import Tool, ToolResult

__all__ = ["CONTRACT_VERSION", "PROJECT_NAME", "hookimpl", "hookspec", "provides"]

PROJECT_NAME: Final = "toolplug"
CONTRACT_VERSION: Final = "1.2"
"""The contract this toolplug implements, ``MAJOR.MINOR``: what a tool and a plugin may
declare and rely on (metadata fields, hooks, results). A plugin's entry module states the one
it was written for as ``TOOLPLUG_CONTRACT = "1.0"``; one written for a newer minor, or for
another major, is reported when it loads (an error under ``strict``)."""

hookspec: Final = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl: Final = pluggy.HookimplMarker(PROJECT_NAME)
"""Marks a plugin's hook implementation: ``@hookimpl``, or ``@hookimpl(wrapper=True)``."""


@hookspec
def register_tools(register: Callable[[type[Tool] | Category], None]) -> None:
    """Register the plugin's tools (and any categories of its own).

    Call ``register(ToolClass)`` once for each tool class, and
    ``register(Category(name=..., description=...))`` for a category the five built-in ones
    do not cover. Each item is validated as it arrives; an invalid one is reported against
    this plugin and skipped, and the plugin's other items are still registered.
    """


@hookspec
def register_capabilities(register: Callable[[Capability], None]) -> None:
    """Register capabilities: named preconditions that tools can require.

    Call ``register(Capability(...))`` for each. A capability is evaluated once per run.
    """


@hookspec
def register_prompts(register: Callable[[Prompt], None]) -> None:
    """Register the plugin's prompts: message templates a person picks in a host.

    Call ``register(p)`` once for each ``toolplug.Prompt`` (``@toolplug.prompt`` makes one of
    a function)::

        @prompt(description="Review a piece of code.")
        def review(code: str) -> str:
            return f"Review this code:\n{code}"

        register_prompts = provides(review)

    An invalid item is reported against this plugin and skipped; a prompt name another
    plugin registered first is reported and this one ignored. A prompt whose ``requires``
    names a missing capability is not offered.
    """


@hookspec
def register_resources(register: Callable[[Resource | ResourceTemplate], None]) -> None:
    """Register the plugin's resources and resource templates: what a host reads by URI.

    Call ``register(r)`` once for each ``toolplug.Resource`` or ``toolplug.ResourceTemplate``
    (``@toolplug.resource(uri)`` makes either of a function)::

        @resource("notes://today", mime_type="text/plain")
        def today() -> str:
            return "Buy milk."

        register_resources = provides(today)

    Checked and reported as ``register_prompts``'s items are; a URI (or URI template)
    another plugin registered first is reported and this one ignored.
    """


@hookspec(firstresult=True)
def tool_call(call: ToolCall) -> ToolResult | None:
    """Intercept every call: observe, time, log, persist, redact, or answer it yourself.

    ``call`` carries the tool's name, the validated arguments (defaults filled), the
    metadata, the context, and ``call.rejection`` when toolplug already knows the call cannot
    run (unknown tool, unavailable, invalid arguments). The built-in implementation runs
    last and returns ``call.rejection`` or ``call.execute()`` (the tool, with its time limit,
    retries, cache and rate limit).

    * A wrapper (``@hookimpl(wrapper=True)``) gets the result of everything inside it from
      ``yield`` and returns it, or a replacement: time it, log it, persist it, redact it.
    * A plain implementation that returns a ``ToolResult`` answers the call; the tool does not
      run (an "intercepted tool"). Returning None passes the call on.

    Implementations run on the caller's event loop for ``acall`` (keep them from blocking);
    one that needs to await is an ``async def`` plain implementation that awaits
    ``call.aexecute()``. One that raises turns the call into an ``ExecutionError`` result.
    """


@hookspec(firstresult=True)
def approve_call(request: ApprovalRequest) -> Approval | bool | None:
    """Decide on a call that needs approval, when neither the call nor ``load()`` had an
    approver: ``Approval``, True/False, or an awaitable of one; None passes it on."""


@hookspec(firstresult=True)
def embed_texts(texts: list[str]) -> list[list[float]] | None:
    """Embed texts (one vector each) to make tool search hybrid; None: lexical only."""


def provides(*items: object) -> Callable[[Callable[[Any], None]], None]:
    """A hook implementation that registers ``items``, for a plugin's entry module.

    ``register_tools = provides(ReadFileTool, WriteFileTool)`` is the same as writing a
    ``@hookimpl def register_tools(register)`` that calls ``register`` once per item; so is
    ``register_capabilities = provides(TOKEN)``, ``register_prompts = provides(review)`` and
    ``register_resources = provides(today)``. pluggy matches the hook by the name the
    result is bound to, so bind it to one of those four names.
    """
    registered = tuple(items)

    @hookimpl
    def register_items(register: Callable[[Any], None]) -> None:
        for item in registered:
            register(item)

    return register_items
