"""Interception: the ``tool_call`` hooks around every call, as one async chain.

pluggy finds the implementations plugins install (``hook.tool_call.get_hookimpls()``, in
the order pluggy would call them); the chain adapts each into an async link that is
handed the call and ``call_next``, as FastMCP's middleware and pydantic-ai's wrapper
toolsets are, and ends in the pipeline:

* a new-style wrapper (``@hookimpl(wrapper=True)``): its code before ``yield`` runs, then
  the rest of the chain, whose result (or exception) goes back into its ``yield``;
* an old-style ``hookwrapper=True``: the same, with the outcome as a ``pluggy.Result``;
* a plain implementation (``firstresult``): a ``ToolResult`` answers the call and the rest
  of the chain does not run; None passes the call on. It may be ``async def``: its
  coroutine is awaited.

The built-in implementation (``call.execute()``, registered here, ``trylast``) is where
the chain ends: in the pipeline, awaited. The chain is built once for the implementations
installed and built again only if they change; with the built-in alone there is nothing
to intercept, and the engine goes straight to the pipeline (the outcome is the same).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pluggy

from toolplug.contract._call import ToolCall
from toolplug.contract._hooks import hookimpl
from toolplug.contract._tool import ErrorType, ToolResult
from toolplug.utilities._validation import shown

__all__ = ["BUILTIN_NAME", "Chain", "Next", "tool_call"]

log = logging.getLogger("toolplug")

BUILTIN_NAME = "toolplug-calls"
"""The name the built-in ``tool_call`` implementation is registered under."""

Next = Callable[[ToolCall], Awaitable[Any]]
"""The rest of the chain: hand it the call, await what it answers."""


@hookimpl(trylast=True)
def tool_call(call: ToolCall) -> ToolResult:
    """Run the tool: the innermost step of every call, after all interceptors."""
    return call.execute()


class Chain:
    """The ``tool_call`` implementations of one plugin manager as async links, outermost
    first, ending in ``end`` (the pipeline)."""

    def __init__(self, plugin_manager: Any, end: Next) -> None:
        if plugin_manager.get_plugin(BUILTIN_NAME) is None:
            plugin_manager.register(sys.modules[__name__], name=BUILTIN_NAME)
        self._hook = plugin_manager.hook.tool_call
        self._end = end
        self._built_for: list[Any] = []
        self._first: Next | None = None

    def links(self) -> Next | None:
        """The first link, or None when nothing intercepts calls (the built-in alone)."""
        impls = self._hook.get_hookimpls()
        if impls != self._built_for:  # a plugin registered since: built again, once
            self._first = _built(impls, self._end)
            self._built_for = impls
        return self._first

    async def run(self, call: ToolCall, first: Next) -> ToolResult:
        """The call through the chain from ``first`` (``links()``). A hook's bug becomes an
        ``ExecutionError`` result, never the host's."""
        try:
            result = await first(call)
        except call.passthrough:
            raise
        except Exception as exc:  # an interceptor's bug must not crash the host
            log.exception("a tool_call hook failed for %s", call.tool)
            return ToolResult.failure(
                ErrorType.EXECUTION,
                f"a tool_call hook failed: {type(exc).__name__}: {exc}",
            )
        if not isinstance(result, ToolResult):
            return ToolResult.failure(
                ErrorType.EXECUTION,
                f"the tool_call hooks returned {shown(result)}, not a ToolResult",
            )
        return result


def _built(impls: list[Any], end: Next) -> Next | None:
    """The links of ``impls`` (pluggy's order: called last first), ending in ``end`` where
    the built-in implementation stands; what pluggy would call after it never runs."""
    called = list(reversed(impls))
    outer = next((i for i, impl in enumerate(called) if impl.function is tool_call), None)
    if outer == 0:
        return None  # the built-in alone: nothing intercepts
    link = end
    for impl in reversed(called[:outer]):
        link = _link(impl, link)
    return link


def _link(impl: Any, call_next: Next) -> Next:
    """One implementation as a link around ``call_next``."""
    function = impl.function
    count = len(impl.argnames)
    name = impl.plugin_name

    if impl.hookwrapper:

        async def old_style(call: ToolCall) -> Any:
            generator = _opened(function(*(call,) * count), name)
            result: Any = None
            error: BaseException | None = None
            try:
                result = await call_next(call)
            except BaseException as exc:
                error = exc
            outcome: Any = pluggy.Result(result, error)
            with contextlib.suppress(StopIteration):
                generator.send(outcome)
            return outcome.get_result()

        return old_style

    if impl.wrapper:

        async def wrapper(call: ToolCall) -> Any:
            generator = _opened(function(*(call,) * count), name)
            try:
                result = await call_next(call)
            except BaseException as exc:
                try:
                    generator.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    generator.send(result)
                except StopIteration as stop:
                    return stop.value
            generator.close()
            raise RuntimeError(f"the tool_call wrapper of {name} yielded twice")

        return wrapper

    async def plain(call: ToolCall) -> Any:
        value = function(*(call,) * count)
        if inspect.isawaitable(value):
            value = await value
        if value is not None:
            return value
        return await call_next(call)

    return plain


def _opened(generator: Any, name: str) -> Any:
    """A wrapper's generator run to its ``yield``."""
    try:
        next(generator)
    except StopIteration:
        raise RuntimeError(f"the tool_call wrapper of {name} did not yield") from None
    return generator
