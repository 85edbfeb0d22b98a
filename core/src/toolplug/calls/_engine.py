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
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from toolplug.calls._policy import CallPolicy, call_policy
from toolplug.contract._call import ToolCall
from toolplug.contract._tool import ErrorType, Tool, ToolFailure, ToolResult

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.runtime._registry import Registry

__all__ = ["Invoker", "validation_problems"]

log = logging.getLogger("toolplug")

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


class _RateLimiter:
    """At most ``calls`` per ``per_seconds``, over a sliding window."""

    def __init__(self, calls: int, per_seconds: float) -> None:
        self.calls = calls
        self.per = per_seconds
        self._stamps: deque[float] = deque()
        self._lock = threading.Lock()

    def acquire(self, *, wait: bool) -> float:
        """Take a slot; returns 0, or (when not waiting) the seconds until one frees up."""
        while True:
            with self._lock:
                now = time.monotonic()
                while self._stamps and now - self._stamps[0] >= self.per:
                    self._stamps.popleft()
                if len(self._stamps) < self.calls:
                    self._stamps.append(now)
                    return 0.0
                delay = self.per - (now - self._stamps[0])
            if not wait:
                return max(delay, 0.001)
            time.sleep(delay)


class Invoker:
    """Runs calls for one registry; holds compiled validators, tool instances and caches."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._compiled: dict[str, _Compiled] = {}
        self._instances: dict[str, tuple[Tool, bool]] = {}
        self._cache: dict[tuple[str, str], tuple[float, ToolResult]] = {}
        self._limiters: dict[str, _RateLimiter] = {}
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._hops: concurrent.futures.ThreadPoolExecutor | None = None
        self._names: list[str] | None = None
        self._policies: dict[str, CallPolicy] = {}
        self._hook = registry.plugin_manager.hook.tool_call

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
        details = {"reasons": list(availability.reasons), "setup": list(availability.setup)}
        if not registry.config.enabled(name):
            return ToolCall(
                name,
                raw,
                meta,
                None,
                rejection=ToolResult.failure(
                    ErrorType.UNAVAILABLE, f"{name} tool is disabled", details=details
                ),
            )
        if not availability.available:
            return ToolCall(
                name,
                raw,
                meta,
                None,
                rejection=ToolResult.failure(
                    ErrorType.UNAVAILABLE,
                    f"{name} is not available: " + "; ".join(availability.reasons),
                    details=details,
                ),
            )
        if isinstance(arguments, str | bytes):
            try:
                arguments = json.loads(arguments or "{}")
            except (ValueError, RecursionError) as exc:
                return ToolCall(
                    name,
                    raw,
                    meta,
                    None,
                    rejection=ToolResult.failure(
                        ErrorType.VALIDATION, f"the arguments for {name} are not valid JSON: {exc}"
                    ),
                )
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return ToolCall(
                name,
                raw,
                meta,
                None,
                rejection=ToolResult.failure(
                    ErrorType.VALIDATION,
                    f"the arguments for {name} must be a JSON object, received {_shown(arguments)}",
                ),
            )
        validated = self._validate(name, meta, arguments)
        if isinstance(validated, ToolResult):
            return ToolCall(name, dict(arguments), meta, None, rejection=validated)
        context = registry.context_for(name, host)
        return ToolCall(name, validated, meta, context, None, time.monotonic(), self._execute)

    def _validate(
        self, name: str, meta: ToolMetadata, arguments: Mapping[str, Any]
    ) -> dict[str, Any] | ToolResult:
        compiled = self._compile(name, meta.parameters)
        if None in arguments.values():
            # Null for an optional property that does not accept null means "not given":
            # what models in OpenAI's strict mode send for the properties they leave out.
            from toolplug.schema import drop_strict_nulls

            arguments = drop_strict_nulls(meta.parameters, arguments)
        # Strict-mode shapes (key/value lists for maps, JSON text) back to the declared ones.
        from toolplug.schema import restore_strict_arguments

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

    def call(self, name: str, arguments: Any, host: Mapping[str, Any] | None = None) -> ToolResult:
        """Run one call in this thread (sync tools inline, async tools on a fresh loop)."""
        call = self.prepare(name, arguments, host)
        return self._through_hooks(call)

    async def acall(
        self, name: str, arguments: Any, host: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """Run one call without blocking the event loop."""
        call = self.prepare(name, arguments, host)
        loop = asyncio.get_running_loop()
        previous = _LOOP.loop
        with self._lock:
            if self._hops is None:
                self._hops = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="toolplug")
            hops = self._hops
        # A pool of the engine's own, not the loop's default one: a call waits in its thread
        # for the tool's coroutine, which may itself need the default pool (asyncio.to_thread).
        run = contextvars.copy_context().run
        try:
            return await loop.run_in_executor(hops, run, self._through_hooks_in_worker, call, loop)
        finally:
            _LOOP.loop = previous

    def _through_hooks_in_worker(
        self, call: ToolCall, loop: asyncio.AbstractEventLoop
    ) -> ToolResult:
        _LOOP.loop = loop
        try:
            return self._through_hooks(call)
        finally:
            _LOOP.loop = None

    def _through_hooks(self, call: ToolCall) -> ToolResult:
        # With only the built-in implementation there is nothing to intercept: run the call
        # directly and save the hook machinery's microseconds (the outcome is the same).
        if len(self._hook.get_hookimpls()) == 1:
            return self._redacted(call.execute())
        try:
            result = self._hook(call=call)
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
        if output == result.output and error is result.error:
            return result
        return dataclasses.replace(result, output=output, error=error)

    def _execute(self, call: ToolCall) -> ToolResult:
        meta = call.metadata
        assert meta is not None
        assert call.context is not None
        policy = self._policies.get(call.tool)
        if policy is None:
            policy = self._policies.setdefault(
                call.tool, call_policy(self.registry.config, call.tool)
            )
        cache_key = None
        cacheable = (
            policy.cache_ttl_seconds > 0
            and meta.annotations.read_only
            and meta.annotations.idempotent
        )
        if cacheable:
            cache_key = (call.tool, json.dumps(call.arguments, sort_keys=True, default=repr))
            with self._lock:
                hit = self._cache.get(cache_key)
            if hit is not None and time.monotonic() < hit[0]:
                return hit[1]
        if policy.rate_limit_calls:
            delay = self._limiter(call.tool, policy).acquire(wait=policy.rate_limit_wait)
            if delay:
                return ToolResult.failure(
                    ErrorType.RATE_LIMIT,
                    f"{call.tool} allows {policy.rate_limit_calls} call(s) per "
                    f"{policy.rate_limit_per_seconds:g} s; try again in {delay:.1f} s",
                    retry_possible=True,
                    details={"retry_after_seconds": round(delay, 3)},
                )
        timeout = policy.timeout_seconds or meta.timeout_seconds
        result = self._attempts(call, policy, timeout)
        if cache_key is not None and result.ok:
            with self._lock:
                self._cache[cache_key] = (time.monotonic() + policy.cache_ttl_seconds, result)
        return result

    def _limiter(self, name: str, policy: CallPolicy) -> _RateLimiter:
        with self._lock:
            limiter = self._limiters.get(name)
            if limiter is None:
                limiter = _RateLimiter(policy.rate_limit_calls, policy.rate_limit_per_seconds)
                self._limiters[name] = limiter
            return limiter

    def _attempts(self, call: ToolCall, policy: CallPolicy, timeout: float) -> ToolResult:
        result = self._once(call, timeout)
        for attempt in range(policy.retries):
            if result.error is None or not result.error.retry_possible:
                break
            delay = policy.retry_backoff_seconds * (2**attempt) * random.uniform(0.5, 1.5)
            log.info("retrying %s in %.2f s after %s", call.tool, delay, result.error.type)
            time.sleep(delay)
            result = self._once(call, timeout)
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

    def _once(self, call: ToolCall, timeout: float) -> ToolResult:
        assert call.context is not None
        try:
            tool, is_async = self._instance(call.tool)
            loop = _LOOP.loop
            if is_async:
                outcome = self._run_async(tool, call, timeout, loop)
            elif loop is not None:
                outcome = self._run_sync_in_pool(tool, call, timeout)
            else:
                outcome = tool.run(call.arguments, call.context)
                if isinstance(outcome, Awaitable):  # a sync def that returned an awaitable
                    outcome = self._run_awaitable(outcome, timeout, None)
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

    def _run_async(
        self, tool: Tool, call: ToolCall, timeout: float, loop: asyncio.AbstractEventLoop | None
    ) -> Any:
        assert call.context is not None
        awaitable = tool.run(call.arguments, call.context)
        return self._run_awaitable(awaitable, timeout, loop)

    def _run_awaitable(
        self, awaitable: Any, timeout: float, loop: asyncio.AbstractEventLoop | None
    ) -> Any:
        async def limited() -> Any:
            async with asyncio.timeout(timeout):
                return await awaitable

        if loop is not None:  # acall: back onto the caller's loop
            return asyncio.run_coroutine_threadsafe(limited(), loop).result()
        if _running_loop() is None:
            return asyncio.run(limited())
        # A sync call made from inside a running loop: run on a loop of its own thread.
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="toolplug") as pool:
            return pool.submit(asyncio.run, limited()).result()

    def _run_sync_in_pool(self, tool: Tool, call: ToolCall, timeout: float) -> Any:
        assert call.context is not None
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    thread_name_prefix="toolplug-tool"
                )
            pool = self._pool
        future = pool.submit(tool.run, call.arguments, call.context)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError from None

    def close(self) -> None:
        """Release the worker threads (tools still running finish in the background)."""
        for pool in (self._pool, self._hops):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._hops = None


class _LoopSlot(threading.local):
    loop: asyncio.AbstractEventLoop | None = None


_LOOP = _LoopSlot()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
