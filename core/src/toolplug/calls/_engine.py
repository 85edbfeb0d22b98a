"""Calls: validate the model's arguments, run the tool, and always answer with a result.

The path of one call::

    call(name, arguments)
      -> prepare: find the tool, check it is available, validate and fill defaults
      -> hook tool_call (wrappers and interceptors; the built-in one runs last)
           -> ToolCall.execute: result cache, rate limit, attempts with a time limit,
              retries with backoff for retryable errors

No exception escapes for a tool's or a caller's fault: every failure is a ``ToolResult``
whose error names what went wrong. A tool's unexpected exception is logged with its
traceback for the host, and the model sees only its type and message.

Validation uses a compiled validator (fastjsonschema) for the keywords whose meaning is the
same in draft 7 and 2020-12, and jsonschema's 2020-12 validator for everything else and for
the error report, which names every bad field.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import copy
import dataclasses
import difflib
import inspect
import json
import logging
import random
import threading
import time
import types
import weakref
from collections.abc import Callable, Coroutine, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from toolplug.calls._approval import ApprovalRequest, Approver, ask
from toolplug.calls._limits import argument_problem, bounded, loads_bounded
from toolplug.calls._policy import CallPolicy, call_policy, calls_settings
from toolplug.calls._slots import Slots
from toolplug.calls._store import Store, cache_key, open_store
from toolplug.calls._telemetry import Telemetry
from toolplug.contract._approval import approval_reason
from toolplug.contract._call import ToolCall
from toolplug.contract._tool import ErrorType, Tool, ToolFailure, ToolResult
from toolplug.runtime._builtin import tool_call as _builtin_tool_call
from toolplug.schema import drop_strict_nulls, restore_strict_arguments

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.runtime._registry import Registry

__all__ = ["Invoker", "validation_problems"]

log = logging.getLogger("toolplug")

_T = TypeVar("_T")

# Keywords that fastjsonschema (draft 7) and 2020-12 read the same way. A schema that uses
# anything else is validated by jsonschema alone.
_PORTABLE: Final = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "default",
        "description",
        "title",
        "examples",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "$schema",
        "$comment",
        "readOnly",
        "writeOnly",
        "deprecated",
        "propertyNames",
        "patternProperties",
        "contentMediaType",
        "contentEncoding",
    }
)
_MAX_SHOWN: Final = 60


def _portable(schema: Any) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping):
        return False
    for key, value in schema.items():
        if key not in _PORTABLE:
            return False
        if key in ("properties", "patternProperties"):
            if not all(_portable(v) for v in value.values()):
                return False
        elif key in ("items", "additionalProperties", "not", "propertyNames"):
            if isinstance(value, list) or not _portable(value):  # items as a list is draft 7 only
                return False
        elif key in ("anyOf", "oneOf", "allOf") and not all(_portable(v) for v in value):
            return False
    return True


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def validation_problems(validator: Any, arguments: Any) -> list[dict[str, str]]:
    """Every problem jsonschema finds, as ``{"field", "expected", "received"}``, sorted."""
    problems: list[dict[str, str]] = []
    for error in validator.iter_errors(arguments):
        where = _path(error.absolute_path)
        kind = error.validator
        if kind == "required":
            missing = [n for n in error.validator_value if n not in (error.instance or {})]
            for name in missing:
                problems.append(
                    {
                        "field": f"{where}.{name}" if where else name,
                        "expected": "a value (required)",
                        "received": "nothing",
                    }
                )
            continue
        if kind == "additionalProperties" and isinstance(error.instance, Mapping):
            allowed = sorted(error.schema.get("properties", {}))
            for name in sorted(set(error.instance) - set(allowed)):
                problems.append(
                    {
                        "field": f"{where}.{name}" if where else name,
                        "expected": "only known properties ("
                        + (", ".join(allowed) or "none")
                        + ")",
                        "received": _shown(error.instance[name]),
                    }
                )
            continue
        if kind == "type":
            expected = error.validator_value
            expected = " or ".join(expected) if isinstance(expected, list) else str(expected)
            expected = f"type {expected}"
        elif kind == "enum":
            expected = "one of " + ", ".join(_shown(v) for v in error.validator_value)
        elif kind in (
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
            "pattern",
            "multipleOf",
            "const",
            "format",
        ):
            expected = f"{kind} {_shown(error.validator_value)}"
        else:
            expected = error.message
        problems.append(
            {
                "field": where or "(arguments)",
                "expected": expected,
                "received": _shown(error.instance),
            }
        )
    problems.sort(key=lambda p: (p["field"], p["expected"]))
    return problems


@dataclass
class _Compiled:
    jsonschema: Any
    fast: Callable[[Any], Any] | None
    defaults: dict[str, Any]


class Invoker:
    """Runs calls for one registry; holds compiled validators, tool instances and the store."""

    def __init__(self, registry: Registry, *, approver: Approver | None = None) -> None:
        self.registry = registry
        self._approver = approver
        self._approvals: dict[str, str | None] = {}
        self._settings = calls_settings(registry.config)
        self._store: Store = open_store(
            self._settings.store,
            entries=self._settings.cache_entries,
            home=lambda: self._loop_thread().loop,
        )
        self._compiled: dict[str, _Compiled] = {}
        self._instances: dict[str, tuple[Tool, bool]] = {}
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._thread: _LoopThread | None = None
        self._names: list[str] | None = None
        self._policies: dict[str, CallPolicy] = {}
        self._all_slots = (
            Slots(self._settings.max_concurrency) if self._settings.max_concurrency else None
        )
        self._tool_slots: dict[str, tuple[Slots, ...]] = {}
        self._hook = registry.plugin_manager.hook.tool_call
        self._telemetry = Telemetry(
            content=self._settings.telemetry_content, redact=registry.redact
        )

    @property
    def store(self) -> Store:
        """Where the cache and rate limits live."""
        return self._store

    # -- preparing -------------------------------------------------------------------

    def _compile(self, name: str, schema: dict[str, Any]) -> _Compiled:
        compiled = self._compiled.get(name)
        if compiled is None:
            from jsonschema import Draft202012Validator

            fast = None
            if _portable(schema):
                import fastjsonschema

                try:
                    fast = fastjsonschema.compile(schema, use_default=True)
                except Exception:  # an exotic pattern or format: jsonschema still checks
                    fast = None
            defaults = {
                key: sub["default"]
                for key, sub in schema.get("properties", {}).items()
                if isinstance(sub, Mapping) and "default" in sub
            }
            compiled = _Compiled(Draft202012Validator(schema), fast, defaults)
            self._compiled[name] = compiled
        return compiled

    def prepare(self, name: str, arguments: Any, host: Mapping[str, Any] | None = None) -> ToolCall:
        """Everything up to running the tool: lookup, availability, validation."""
        registry = self.registry
        tool = registry.tools.get(name) if isinstance(name, str) else None
        raw = arguments if isinstance(arguments, dict) else {}
        if tool is None:
            return ToolCall(str(name), raw, None, None, rejection=self._unknown(name))
        meta = tool.metadata
        availability = registry.availability(name)
        if not registry.config.enabled(name) or not availability.available:
            return ToolCall(name, raw, meta, None, rejection=self._unavailable(name, availability))
        if type(arguments) is not dict:
            rejected, arguments = self._arguments_object(name, arguments)
            if rejected is not None:
                return ToolCall(name, raw, meta, None, rejection=rejected)
        problem = argument_problem(arguments)
        if problem is not None:
            failure = ToolResult.failure(
                ErrorType.VALIDATION, f"invalid arguments for {name}: {problem}"
            )
            return ToolCall(name, {}, meta, None, rejection=failure)
        validated = self._validate(name, meta, arguments)
        if isinstance(validated, ToolResult):
            return ToolCall(name, dict(arguments), meta, None, rejection=validated)
        context = registry.context_for(name, host)
        return ToolCall(
            name,
            validated,
            meta,
            context,
            None,
            time.monotonic(),
            self._execute_blocking,
            self._execute,
            registry,
        )

    def _unavailable(self, name: str, availability: Any) -> ToolResult:
        details = {"reasons": list(availability.reasons), "setup": list(availability.setup)}
        if not self.registry.config.enabled(name):
            return ToolResult.failure(
                ErrorType.UNAVAILABLE, f"{name} tool is disabled", details=details
            )
        return ToolResult.failure(
            ErrorType.UNAVAILABLE,
            f"{name} is not available: " + "; ".join(availability.reasons),
            details=details,
        )

    @staticmethod
    def _arguments_object(name: str, arguments: Any) -> tuple[ToolResult | None, Any]:
        """Arguments that are not a dict: JSON text, None, another mapping, or a mistake."""
        if isinstance(arguments, str | bytes):
            try:
                arguments = loads_bounded(arguments or "{}")
            except ValueError as exc:
                return ToolResult.failure(
                    ErrorType.VALIDATION, f"the arguments for {name} are not valid JSON: {exc}"
                ), None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return ToolResult.failure(
                ErrorType.VALIDATION,
                f"the arguments for {name} must be a JSON object, received {_shown(arguments)}",
            ), None
        return None, arguments

    def _validate(
        self, name: str, meta: ToolMetadata, arguments: Mapping[str, Any]
    ) -> dict[str, Any] | ToolResult:
        compiled = self._compile(name, meta.parameters)
        if None in arguments.values():
            # Null for an optional property that does not accept null means "not given":
            # what models in OpenAI's strict mode send for the properties they leave out.
            arguments = drop_strict_nulls(meta.parameters, arguments)
        # Strict-mode shapes (key/value lists for maps, JSON text) back to the declared ones.
        arguments = restore_strict_arguments(meta.parameters, arguments)
        if compiled.fast is not None:
            try:
                # fastjsonschema fills defaults into the dict it is given: a fresh copy here
                filled: dict[str, Any] = compiled.fast(dict(arguments))
                return filled
            except Exception:  # invalid (or too deep for the generated code): report below
                pass
        try:
            problems = validation_problems(compiled.jsonschema, arguments)
        except RecursionError:
            problems = [
                {
                    "field": "(arguments)",
                    "expected": "a reasonably shallow value",
                    "received": "a value nested too deeply to check",
                }
            ]
        if not problems:
            filled = dict(arguments)
            for key, value in compiled.defaults.items():
                filled.setdefault(key, copy.deepcopy(value))
            return filled
        lines = "; ".join(
            f"{p['field']}: expected {p['expected']}, received {p['received']}" for p in problems
        )
        return ToolResult.failure(
            ErrorType.VALIDATION,
            f"invalid arguments for {name}: {lines}",
            details={"problems": problems},
        )

    def _unknown(self, name: Any) -> ToolResult:
        if self._names is None:
            self._names = sorted(self.registry.tools)
        text = str(name)
        close = difflib.get_close_matches(text, self._names, n=3, cutoff=0.5)
        available = [n for n in self._names if self.registry.availability(n).available]
        hint = (
            f"; did you mean {', '.join(close)}?"
            if close
            else f"; available tools: {', '.join(available) or 'none'}"
        )
        return ToolResult.failure(
            ErrorType.NOT_FOUND,
            f"no tool named {_shown(text)}{hint}",
            details={"close_matches": close},
        )

    # -- running ---------------------------------------------------------------------
    #
    # One engine, written as coroutines. ``acall`` awaits it on the caller's loop. The sync
    # ``call`` drives the same coroutines: without a loop when nothing in them can wait (a
    # sync tool, the in-process store, no interceptors, no concurrency limit), else on the
    # registry's own loop thread.

    def call(
        self,
        name: str,
        arguments: Any,
        host: Mapping[str, Any] | None = None,
        approver: Approver | None = None,
    ) -> ToolResult:
        """Run one call and wait for its result in this thread."""
        call = self.prepare(name, arguments, host)
        if self._inline(call):
            return _drive(self._intercepted(call, inline=True))
        token = _APPROVER.set(approver)
        try:
            return self._wait_for(self._intercepted(call, inline=False))
        finally:
            _APPROVER.reset(token)

    def _wait_for(self, coroutine: Coroutine[Any, Any, ToolResult]) -> ToolResult:
        """Run the coroutine to its end for a caller that waits in its thread."""
        if _running_loop() is None:  # this thread's own loop: no hop to another thread
            return _thread_loop().run_until_complete(coroutine)
        # Sync code called from async code: the registry's loop thread, since this thread's
        # loop is busy running that async code.
        return self._loop_thread().run(coroutine)

    async def acall(
        self,
        name: str,
        arguments: Any,
        host: Mapping[str, Any] | None = None,
        approver: Approver | None = None,
    ) -> ToolResult:
        """Run one call on the running loop; cancelling the caller cancels the tool."""
        call = self.prepare(name, arguments, host)
        token = _APPROVER.set(approver)
        try:
            return await self._intercepted(call, inline=False)
        finally:
            _APPROVER.reset(token)

    def _inline(self, call: ToolCall) -> bool:
        if call.rejection is not None:
            return self._only_builtin()
        if self._settings.max_concurrency or not self._store.local or not self._only_builtin():
            return False
        _tool, is_async = self._instance(call.tool)
        if is_async or self._policy(call.tool).max_concurrency:
            return False
        return self._approval_reason(call) is None  # an approver may need to await

    def _only_builtin(self) -> bool:
        return len(self._hook.get_hookimpls()) == 1

    async def _intercepted(self, call: ToolCall, *, inline: bool) -> ToolResult:
        telemetry = self._telemetry
        if not telemetry.on():
            return self._bounded(call, await self._hooked(call, inline=inline))
        with telemetry.span(call) as ended:
            result = self._bounded(call, await self._hooked(call, inline=inline))
            ended(result)
            return result

    def _bounded(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """The result within the call's output budget (``toolplug.calls._limits``)."""
        meta = call.metadata
        budget = (
            (self._policy(call.tool).max_output_chars or meta.max_output_chars)
            if meta is not None
            else None
        ) or self._settings.max_output_chars
        plain = result.error is None and result.data is None and not result.citations
        if plain and len(result.for_model()) <= budget:
            return result  # the common case, without a look at the arguments
        pages = meta is not None and "offset" in meta.parameters.get("properties", {})
        return bounded(result, call.arguments, budget, pages=pages)

    async def _hooked(self, call: ToolCall, *, inline: bool) -> ToolResult:
        # With only the built-in implementation there is nothing to intercept: run the call
        # directly and save the hook machinery's microseconds (the outcome is the same).
        if inline or self._only_builtin():
            return self._finished(await self._execute(call, inline=inline))
        try:
            result = await self._multicall(call)
        except Exception as exc:  # an interceptor's bug must not crash the host
            log.exception("a tool_call hook failed for %s", call.tool)
            return ToolResult.failure(
                ErrorType.EXECUTION,
                f"a tool_call hook failed: {type(exc).__name__}: {exc}",
            )
        if not isinstance(result, ToolResult):
            return ToolResult.failure(
                ErrorType.EXECUTION,
                f"the tool_call hooks returned {_shown(result)}, not a ToolResult",
            )
        return self._finished(result)

    async def _multicall(self, call: ToolCall) -> Any:
        """The ``tool_call`` hooks, run the way pluggy runs them, with awaiting allowed.

        Wrappers' code before and after their ``yield`` runs here, in order; a plain
        implementation may be ``async def`` (its coroutine is awaited); the built-in one
        runs the tool awaited instead of blocking.
        """
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
                if impl.function is _builtin_tool_call:
                    value: Any = await self._execute(call, inline=False)
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

    def _finished(self, result: ToolResult) -> ToolResult:
        warning = self._store.warning()
        if warning is not None and warning not in result.warnings:
            result = dataclasses.replace(result, warnings=(*result.warnings, warning))
        return self._redacted(result)

    def _redacted(self, result: ToolResult) -> ToolResult:
        """The result with configured secrets replaced by ``***`` in its texts."""
        redactor = self.registry.redactor
        if not redactor:
            return result
        output = redactor.redact(result.output)
        error = result.error
        if error is not None:
            error = dataclasses.replace(error, message=redactor.redact(error.message))
        warnings = tuple(redactor.redact(w) for w in result.warnings)
        if output == result.output and error is result.error and warnings == result.warnings:
            return result
        return dataclasses.replace(result, output=output, error=error, warnings=warnings)

    def _policy(self, tool: str) -> CallPolicy:
        policy = self._policies.get(tool)
        if policy is None:
            policy = self._policies.setdefault(tool, call_policy(self.registry.config, tool))
        return policy

    def _execute_blocking(self, call: ToolCall) -> ToolResult:
        """``ToolCall.execute``: the tool with its policy, waited for in this thread."""
        if self._inline(call):
            return _drive(self._execute(call, inline=True))
        return self._wait_for(self._execute(call, inline=False))

    async def _execute(self, call: ToolCall, *, inline: bool = False) -> ToolResult:
        """The tool with its policy: cache, rate limit, attempts; ``ToolCall.aexecute``."""
        if call.rejection is not None:
            return call.rejection
        meta = call.metadata
        assert meta is not None
        reason = self._approval_reason(call)
        if reason is not None:  # asked before any limit: a person's pause holds no slot
            approvers = (_APPROVER.get(), self._approver, self._hook_approver)
            refused = await ask(call, reason, approvers, self.registry.redact)
            if refused is not None:
                return refused
        policy = self._policy(call.tool)
        key = None
        annotations = meta.annotations
        if policy.cache_ttl_seconds > 0 and annotations.read_only and annotations.idempotent:
            key = cache_key(call.tool, call.arguments)
            hit = await self._store.cached(key)
            if hit is not None:
                return hit
        timeout = policy.timeout_seconds or meta.timeout_seconds
        if policy.rate_limit_calls:
            refused = await self._admit(call.tool, policy, timeout, inline=inline)
            if refused is not None:
                return refused
        result = await self._attempts(call, policy, timeout, inline=inline)
        if key is not None and result.ok:
            await self._store.keep(key, result, policy.cache_ttl_seconds)
        return result

    def _approval_reason(self, call: ToolCall) -> str | None:
        """Why calls of this tool need approval, or None (worked out once per tool)."""
        tool = call.tool
        if tool not in self._approvals:
            policy = self.registry.config.tools.get(tool, {}).get("approval")
            assert call.metadata is not None
            self._approvals[tool] = approval_reason(call.metadata, policy)
        return self._approvals[tool]

    def _hook_approver(self, request: ApprovalRequest) -> Any:
        """The ``approve_call`` hook as the last approver (None without implementations)."""
        return self.registry.plugin_manager.hook.approve_call(request=request)

    async def _admit(
        self, tool: str, policy: CallPolicy, timeout: float, *, inline: bool
    ) -> ToolResult | None:
        """Take a rate-limit slot, waiting for one at most the call's time limit."""
        deadline = time.monotonic() + timeout
        while True:
            delay = await self._store.admit(
                tool, policy.rate_limit_calls, policy.rate_limit_per_seconds
            )
            if not delay:
                return None
            left = deadline - time.monotonic()
            if not policy.rate_limit_wait or delay > left:
                why = "" if not policy.rate_limit_wait else (
                    f" (longer than the {timeout:g} s time limit allows waiting)"
                )
                return ToolResult.failure(
                    ErrorType.RATE_LIMIT,
                    f"{tool} allows {policy.rate_limit_calls} call(s) per "
                    f"{policy.rate_limit_per_seconds:g} s; try again in {delay:.1f} s{why}",
                    retry_possible=True,
                    details={"retry_after_seconds": round(delay, 3)},
                )
            await _pause(delay, inline=inline)

    async def _attempts(
        self, call: ToolCall, policy: CallPolicy, timeout: float, *, inline: bool
    ) -> ToolResult:
        result = await self._once(call, policy, timeout, inline=inline)
        for attempt in range(policy.retries):
            if result.error is None or not result.error.retry_possible:
                break
            delay = policy.retry_backoff_seconds * (2**attempt) * random.uniform(0.5, 1.5)
            log.info("retrying %s in %.2f s after %s", call.tool, delay, result.error.type)
            await _pause(delay, inline=inline)
            result = await self._once(call, policy, timeout, inline=inline)
        return result

    def _instance(self, name: str) -> tuple[Tool, bool]:
        """The tool's one instance, and whether its ``run`` is a coroutine function."""
        found = self._instances.get(name)
        if found is None:
            with self._lock:
                cls = self.registry.tools[name].cls
                found = self._instances.setdefault(
                    name, (cls(), inspect.iscoroutinefunction(cls.run))
                )
        return found

    async def _once(
        self, call: ToolCall, policy: CallPolicy, timeout: float, *, inline: bool
    ) -> ToolResult:
        assert call.context is not None
        try:
            tool, is_async = self._instance(call.tool)
            if inline:  # a sync tool in the caller's thread: its time limit cannot hold
                outcome = tool.run(call.arguments, call.context)
                if type(outcome) is not ToolResult and inspect.isawaitable(outcome):
                    # a sync def that returned an awaitable
                    outcome = _await_elsewhere(outcome, timeout)
            elif is_async and (limits := self._slots_for(call.tool, policy)) is _NO_LIMIT:
                outcome = await _limited(tool.run(call.arguments, call.context), timeout)
            else:
                limits = self._slots_for(call.tool, policy)
                async with asyncio.timeout(timeout), limits:
                    if is_async:
                        outcome = await tool.run(call.arguments, call.context)  # type: ignore[misc]
                    else:
                        outcome = await self._in_worker(tool, call)
                    if type(outcome) is not ToolResult and inspect.isawaitable(outcome):
                        outcome = await outcome
        except ToolFailure as failure:
            return failure.to_result()
        except TimeoutError:
            return ToolResult.failure(
                ErrorType.TIMEOUT,
                f"{call.tool} did not finish within {timeout:g} s",
                retry_possible=True,
            )
        except Exception as exc:
            log.error("tool %s raised", call.tool, exc_info=exc)
            return ToolResult.failure(
                ErrorType.EXECUTION,
                f"{call.tool} failed: {type(exc).__name__}: {exc}",
                details={"exception": type(exc).__name__},
            )
        if not isinstance(outcome, ToolResult):
            return ToolResult.failure(
                ErrorType.EXECUTION,
                f"{call.tool} returned {type(outcome).__name__}, not a ToolResult",
            )
        return outcome

    def _slots_for(
        self, tool: str, policy: CallPolicy
    ) -> contextlib.AbstractAsyncContextManager[Any]:
        """The concurrency limits a call of ``tool`` takes a slot of (tool's, then all)."""
        limits = self._tool_slots.get(tool)
        if limits is None:
            chain: list[Slots] = []
            if policy.max_concurrency:
                chain.append(Slots(policy.max_concurrency))
            if self._all_slots is not None:
                chain.append(self._all_slots)
            limits = self._tool_slots.setdefault(tool, tuple(chain))
        if not limits:
            return _NO_LIMIT
        if len(limits) == 1:
            return limits[0]
        return _Both(limits[0], limits[1])

    async def _in_worker(self, tool: Tool, call: ToolCall) -> Any:
        """A sync tool in the bounded worker pool; abandoned (not stopped) at its limit."""
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = concurrent.futures.ThreadPoolExecutor(
                        self._settings.sync_workers, thread_name_prefix="toolplug-tool"
                    )
                pool = self._pool
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        arguments, tool_context = call.arguments, call.context
        return await loop.run_in_executor(
            pool,
            lambda: context.run(tool.run, arguments, tool_context),  # type: ignore[arg-type]
        )

    def _loop_thread(self) -> _LoopThread:
        thread = self._thread
        if thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = _LoopThread()
                    # A registry dropped without close() must not leave its thread behind.
                    weakref.finalize(self, self._thread.stop)
                thread = self._thread
        return thread

    def close(self) -> None:
        """Release the worker threads, the loop thread and the store's connections."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.run(self._store.aclose())
            thread.stop()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


class _Both:
    """Two concurrency limits taken in order and given back in reverse."""

    def __init__(self, first: Slots, second: Slots) -> None:
        self.first, self.second = first, second

    async def __aenter__(self) -> None:
        await self.first.__aenter__()
        try:
            await self.second.__aenter__()
        except BaseException:
            await self.first.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> None:
        await self.second.__aexit__(None, None, None)
        await self.first.__aexit__(None, None, None)


_NO_LIMIT: Final = contextlib.nullcontext()
_APPROVER: Final[contextvars.ContextVar[Approver | None]] = contextvars.ContextVar(
    "toolplug_approver", default=None
)
"""The approver given to the call being made (``registry.call(..., approver=...)``)."""


class _LoopHolder:
    """One thread's event loop for sync calls, shared by every registry; closed when the
    thread ends (its thread-locals are dropped then, outside any garbage cycle)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        loop = self.loop
        if loop.is_running() or loop.is_closed():
            return
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


_THREAD_LOOPS: Final = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    """The calling thread's own event loop for sync calls, made on its first call."""
    holder: _LoopHolder | None = getattr(_THREAD_LOOPS, "holder", None)
    if holder is None:
        holder = _THREAD_LOOPS.holder = _LoopHolder()
    return holder.loop


class _LoopThread:
    """An event loop in a daemon thread of its own: where sync ``call`` runs what awaits."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="toolplug-loop", daemon=True
        )
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` on the loop (with the caller's context) and wait for it."""
        if threading.current_thread() is self.thread:
            # Called from this loop's own thread (an interceptor calling call.execute()):
            # waiting here would wait for ourselves, so use a short-lived loop elsewhere.
            with concurrent.futures.ThreadPoolExecutor(1, "toolplug") as pool:
                return pool.submit(asyncio.run, coroutine).result()
        context = contextvars.copy_context()
        done: concurrent.futures.Future[_T] = concurrent.futures.Future()
        holder: list[asyncio.Task[_T]] = []

        def start() -> None:
            task = self.loop.create_task(coroutine, context=context)
            holder.append(task)
            task.add_done_callback(lambda t: _settle(done, t))

        self.loop.call_soon_threadsafe(start)
        try:
            return done.result()
        except BaseException:  # KeyboardInterrupt in the caller: stop the call too
            if holder and not done.done():
                self.loop.call_soon_threadsafe(holder[0].cancel)
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is self.thread:
            return  # dropped on its own thread: run_forever returns, the loop stays open
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


def _settle(done: concurrent.futures.Future[Any], task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        done.cancel()
    elif task.exception() is not None:
        done.set_exception(task.exception())
    else:
        done.set_result(task.result())


async def _limited(coroutine: Any, timeout: float) -> Any:
    """Await a tool's coroutine under its time limit, arming the timer only if it waits.

    Most calls that return at once never suspend: their first step runs here directly,
    and the timer (a third of an immediate call's cost) is armed only when the coroutine
    does suspend, with the deadline counted from the start.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        first = coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    except BaseException:
        coroutine.close()
        raise
    async with asyncio.timeout_at(started + timeout):
        return await _resumed(coroutine, first)


@types.coroutine
def _resumed(coroutine: Any, first: Any) -> Generator[Any, Any, Any]:
    """Go on with a coroutine whose first step already ran (what ``await`` would do)."""
    value = first
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:
            try:
                value = coroutine.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                value = coroutine.send(sent)
            except StopIteration as stop:
                return stop.value


def _drive(coroutine: Coroutine[Any, Any, ToolResult]) -> ToolResult:
    """Run a coroutine that never suspends to its end, without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        result: ToolResult = stop.value
        return result
    coroutine.close()
    raise RuntimeError("toolplug: a call chosen to run without a loop tried to wait")


async def _pause(seconds: float, *, inline: bool) -> None:
    """Wait: awaited on a loop; in the sync caller's own thread when there is none."""
    if inline:
        time.sleep(seconds)
    else:
        await asyncio.sleep(seconds)


def _await_elsewhere(awaitable: Any, timeout: float) -> Any:
    """An awaitable returned by a sync tool under the sync ``call``: run it to its end."""

    async def limited() -> Any:
        async with asyncio.timeout(timeout):
            return await awaitable

    if _running_loop() is None:
        return asyncio.run(limited())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="toolplug") as pool:
        return pool.submit(asyncio.run, limited()).result()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
