"""Hook dispatch: the ``tool_call`` hooks around every call, run the way pluggy runs them,
with awaiting allowed.

Wrappers' code before and after their ``yield`` runs in order; a plain implementation may
be ``async def`` (its coroutine is awaited); the built-in implementation, registered here
when the engine starts, runs last and runs the call's pipeline awaited instead of blocking.
With only the built-in implementation there is nothing to intercept, and the engine skips
this machinery (the outcome is the same).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from toolplug.calls._validation import shown
from toolplug.contract._call import ToolCall
from toolplug.contract._hooks import hookimpl
from toolplug.contract._tool import ErrorType, ToolResult

__all__ = ["BUILTIN_NAME", "Dispatch", "tool_call"]

log = logging.getLogger("toolplug")

BUILTIN_NAME = "toolplug-calls"
"""The name the built-in ``tool_call`` implementation is registered under."""


@hookimpl(trylast=True)
def tool_call(call: ToolCall) -> ToolResult:
    """Run the tool: the innermost step of every call, after all interceptors."""
    return call.execute()


class Dispatch:
    """The ``tool_call`` hook of one plugin manager."""

    def __init__(self, plugin_manager: Any) -> None:
        if plugin_manager.get_plugin(BUILTIN_NAME) is None:
            plugin_manager.register(sys.modules[__name__], name=BUILTIN_NAME)
        self._hook = plugin_manager.hook.tool_call

    def only_builtin(self) -> bool:
        """True when no plugin intercepts calls."""
        return len(self._hook.get_hookimpls()) == 1

    async def run(
        self, call: ToolCall, execute: Callable[[ToolCall], Awaitable[ToolResult]]
    ) -> ToolResult:
        """The call through every ``tool_call`` implementation; ``execute`` is the built-in
        one's work. A hook's bug becomes an ``ExecutionError`` result, never the host's."""
        try:
            result = await self._multicall(call, execute)
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

    async def _multicall(
        self, call: ToolCall, execute: Callable[[ToolCall], Awaitable[ToolResult]]
    ) -> Any:
        import pluggy

        teardowns: list[tuple[Any, Any]] = []
        result: Any = None
        error: BaseException | None = None
        try:
            for impl in reversed(self._hook.get_hookimpls()):
                args = [call for _ in impl.argnames]
                if impl.wrapper or impl.hookwrapper:
                    generator = impl.function(*args)
                    next(generator)
                    teardowns.append((impl, generator))
                    continue
                if impl.function is tool_call:
                    value: Any = await execute(call)
                else:
                    value = impl.function(*args)
                    if inspect.isawaitable(value):
                        value = await value
                if value is not None:
                    result = value
                    break
        except BaseException as exc:
            error = exc
        for impl, generator in reversed(teardowns):
            if impl.hookwrapper:  # old style: the wrapper reads a pluggy Result
                outcome: Any = pluggy.Result(result, error)
                with contextlib.suppress(StopIteration):
                    generator.send(outcome)
                error = outcome.exception
                result = None if error is not None else outcome.get_result()
                continue
            try:
                if error is not None:
                    generator.throw(error)
                else:
                    generator.send(result)
            except StopIteration as stop:
                result, error = stop.value, None
            except BaseException as exc:
                error = exc
            else:
                error = RuntimeError(f"the tool_call wrapper of {impl.plugin_name} yielded twice")
        if error is not None:
            raise error
        return result
