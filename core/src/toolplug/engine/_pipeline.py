"""The policy pipeline: what happens to an accepted call, in order.

    approve -> result cache -> rate limit -> attempts (concurrency slots, time limit, run,
    retries with backoff for retryable errors)

Approval comes first, so that a person's pause holds no slot and uses no rate. Who is asked,
in order: the call's own approver (``registry.call(..., approver=...)``), the one given to
``toolplug.load(approver=...)``, then the ``approve_call`` hook; the first that decides wins
and one that returns None passes the request on. A host whose own framework already asked a
person passes ``approved=True``: one gate, not two. With no decision the call fails with
``ApprovalRequiredError``; a denial fails it with ``PermissionError``; either way the tool
does not run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._approval import Approval, ApprovalRequest, Approver
from toolplug.contract._call import ToolCall
from toolplug.contract._settings import ToolSettings
from toolplug.contract._tool import ErrorType, Tool, ToolContext, ToolFailure, ToolResult
from toolplug.engine._inbox import Approvals
from toolplug.engine._recording import approval_asked, approval_decided, guard_decided
from toolplug.engine._slots import Slots
from toolplug.state._inbox import PendingRequest
from toolplug.state._store import Store, cache_key
from toolplug.trust._conversation import current
from toolplug.trust._guard import FlowGuard, Verdict
from toolplug.utilities._bridge import Bridge, QueueTimeout, limited, loop_running, pause, settled
from toolplug.utilities._limits import malformed_part

if TYPE_CHECKING:
    from toolplug.runtime._registry import Registry
    from toolplug.state._record import Recorder

__all__ = ["Pipeline"]

log = logging.getLogger("toolplug")


class Pipeline:
    """Runs accepted calls of one registry's tools with their settings."""

    def __init__(
        self, registry: Registry, store: Store, bridge: Bridge, *, approver: Approver | None = None,
        approvals: Approvals,
    ) -> None:
        self.registry = registry
        self.approvals = approvals
        """Remembered decisions and the inbox (``toolplug.engine._inbox``)."""
        self.store = store
        self._approver = approver
        settings = registry.config.calls
        self.bridge = bridge
        self.workers = bridge.workers
        self._max_part_bytes = settings.max_part_bytes
        self._all_slots = Slots(settings.max_concurrency) if settings.max_concurrency else None
        self._tool_slots: dict[str, tuple[Slots, ...]] = {}
        self._instances: dict[str, tuple[Tool, bool]] = {}
        self._lock = threading.Lock()
        self.guard = FlowGuard(registry)
        """The flow guard and the ``[policies]`` rules (``toolplug.trust._guard``)."""
        self.recorder: Recorder | None = None
        """Where calls, approvals and guard decisions are recorded (the engine's)."""

    def instance(self, name: str) -> tuple[Tool, bool]:
        """The tool's one instance, and whether its ``run`` is a coroutine function."""
        found = self._instances.get(name)
        if found is None:
            with self._lock:
                cls = self.registry.tools[name].cls
                found = self._instances.setdefault(
                    name, (cls(), inspect.iscoroutinefunction(cls.run))
                )
        return found

    def cannot_wait(self, call: ToolCall) -> bool:
        """Whether the call cannot suspend: a sync tool with nothing to wait for (the
        bridge's fast path may then run it with no loop)."""
        assert call.settings is not None
        if self._all_slots is not None or not self.store.local:
            return False
        _tool, is_async = self.instance(call.tool)
        if is_async or call.settings.max_concurrency or self.guard.active(call.tool):
            return False
        return call.approved or self.registry.needs_approval(call.tool, call.arguments) is None

    async def run(self, call: ToolCall) -> ToolResult:
        """The tool with its settings: approval, cache, rate limit, attempts."""
        if call.rejection is not None:
            return call.rejection
        meta, settings = call.metadata, call.settings
        assert meta is not None
        assert settings is not None
        asked = call.approved
        guard = self.guard
        if guard.active(call.tool):  # the policies, then the flow guard
            verdict = (  # in a worker thread when it would search long text
                await guard.check_off_loop(call.tool, call.arguments, meta)
                if guard.long(call.tool, call.arguments)
                else guard.check(call.tool, call.arguments, meta)
            )
            # kept: a log record, a span event, on the conversation, in the record
            self._decided(call, verdict, asked)
            if verdict is not None:
                if verdict.action == "deny":
                    return _refused(call.tool, verdict)
                if not asked:  # one question, with every reason to ask it
                    also = self.registry.needs_approval(call.tool, call.arguments)
                    both = verdict.reason if also is None else f"{verdict.reason}; and {also}"
                    refused = await self._asked(call, both, verdict.details)
                    if refused is not None:
                        return refused
                    asked = True
        if not asked:
            reason = self.registry.needs_approval(call.tool, call.arguments)
            if reason is not None:  # asked before any limit: a person's pause holds no slot
                refused = await self._asked(call, reason)
                if refused is not None:
                    return refused
        key = None
        hints = meta.annotations
        if settings.cache_ttl_seconds > 0 and hints.read_only and hints.idempotent:
            key = cache_key(call.tool, call.arguments, self._caller(call))
            hit = await self.store.cached(key)
            if hit is not None:
                return hit
        timeout = settings.timeout_seconds or meta.timeout_seconds
        if settings.rate_limit is not None:
            refused = await self._admit(call, settings, timeout)
            if refused is not None:
                return refused
        result = await self._attempts(call, settings, timeout)
        if key is not None and result.ok:  # the store may be a Redis server: no secrets
            await self.store.keep(key, result, settings.cache_ttl_seconds, self.registry.redactor)
        return result

    def _caller(self, call: ToolCall) -> str | None:
        """Who a cached result is kept for: the calling client when the tool answers each
        caller on its own (``Tool.answers_per_caller``), else None (any caller)."""
        tool, _is_async = self.instance(call.tool)
        if not type(tool).answers_per_caller or call.context is None:
            return None
        client = call.context.host.get("client")
        return "" if client is None else str(client)

    def _decided(self, call: ToolCall, verdict: Verdict | None, asked: bool) -> None:
        recorder = self.recorder
        decision = self.guard.decided(
            call.tool, call.arguments, verdict, approved=asked, wanted=recorder is not None
        )
        if decision is not None and recorder is not None:
            guard_decided(recorder, self.registry, call, decision, current())

    # -- approve ---------------------------------------------------------------------

    async def _asked(
        self, call: ToolCall, reason: str, details: Mapping[str, Any] | None = None
    ) -> ToolResult | None:
        """``_ask``, its question and answer recorded (``toolplug.engine._recording``)."""
        assert call.metadata is not None
        conversation = current()
        arguments = self.registry.redactor.redact_data(call.arguments)
        request = ApprovalRequest(call.tool, arguments, call.metadata, reason, None)
        approval_asked(self.recorder, call, request, conversation, details)
        refused, by = await self._ask(call, reason, details)
        error = refused.error if refused is not None else None
        status = (
            "approved" if error is None else "unanswered"
            if error.type == ErrorType.APPROVAL_REQUIRED else "denied"
            if error.type == ErrorType.PERMISSION else "failed"
        )
        why = None if error is None or not error.details else error.details.get("reason")
        swept = status == "unanswered" and bool(error and error.details.get("state") == "failed")
        # a request failed with its lease: the process that swept it recorded that, once
        approval_decided(None if swept else self.recorder, call, status, why, conversation, by)
        return refused

    async def _ask(
        self, call: ToolCall, reason: str, details: Mapping[str, Any] | None = None
    ) -> tuple[ToolResult | None, str | None]:
        """None when the call may run, else the result that says why it may not; and who
        decided, when a person did in the inbox (``PendingRequest.decided_by``)."""
        assert call.metadata is not None
        registry = self.registry
        arguments = registry.redactor.redact_data(call.arguments)
        call_id = call.context.host.get("call_id") if call.context is not None else None
        request = ApprovalRequest(
            call.tool, arguments, call.metadata, reason, None if call_id is None else str(call_id)
        )
        hook = registry.plugin_manager.hook.approve_call
        approvers: tuple[Callable[[ApprovalRequest], Any] | None, ...] = (
            call.approver,
            self._approver,
            lambda r: hook(request=r),
        )
        people = self.approvals  # decisions remembered, the inbox (engine/_inbox.py)
        decision: Any = None
        pending = None
        try:
            decision = await people.remembered_for(call, arguments)
            for approver in approvers if decision is None else ():
                if approver is None:
                    continue
                decision = approver(request)
                if inspect.isawaitable(decision):
                    decision = await decision
                if decision is not None:
                    break
            if decision is None and people.waits:  # nobody at once: a person, later
                decision, pending = await people.wait(
                    call, request, None if details is None else registry.redactor.redact_data(
                        dict(details)))
                if pending.state not in ("approved", "denied"):
                    return _expired(call.tool, pending), None
        except call.passthrough:
            raise  # a framework pausing its run (LangGraph's interrupt, llm's PauseChain)
        except Exception as exc:  # an approver's bug: the call does not run, the host goes on
            return ToolResult.failure(
                ErrorType.EXECUTION,
                f"the approver of {call.tool} failed: {type(exc).__name__}: {exc}",
            ), None
        if decision is None:
            return _required(request, details), None
        if isinstance(decision, bool):
            decision = Approval(decision)
        if not isinstance(decision, Approval):
            return ToolResult.failure(
                ErrorType.EXECUTION,
                f"the approver of {call.tool} returned {type(decision).__name__}; expected an "
                "Approval, True, False or None",
            ), None
        if decision.remember != "once":
            kept_for = None if pending is None else pending.id
            await people.remember(call, arguments, decision, kept_for)
        by = None if pending is None else pending.decided_by
        if decision.approved:
            return None, by
        because = f": {decision.reason}" if decision.reason else ""
        return ToolResult.failure(
            ErrorType.PERMISSION,
            f"the call of {call.tool} was denied by the person approving it{because}. Do not "
            "retry it; tell the user.",
            details={"denied": True, "reason": decision.reason},
        ), by

    # -- rate limit ------------------------------------------------------------------

    async def _admit(
        self, call: ToolCall, settings: ToolSettings, timeout: float
    ) -> ToolResult | None:
        """Take a rate-limit slot (the tool's, or with ``per = "client"`` the calling
        client's), waiting for one at most the call's time limit."""
        rate = settings.rate_limit
        assert rate is not None
        tool = call.tool
        window = tool
        if rate.per == "client":
            client = call.context.host.get("client") if call.context is not None else None
            window = f"{tool}\nclient:{client if client is not None else ''}"
        deadline = time.monotonic() + timeout
        while True:
            delay = await self.store.admit(window, rate.calls, rate.per_seconds)
            if not delay:
                return None
            left = deadline - time.monotonic()
            if not rate.wait or delay > left:
                why = "" if not rate.wait else (
                    f" (longer than the {timeout:g} s time limit allows waiting)"
                )
                return ToolResult.failure(
                    ErrorType.RATE_LIMIT,
                    f"{tool} allows {rate.calls} call(s) per {rate.per_seconds:g} s; try "
                    f"again in {delay:.1f} s{why}",
                    retry_possible=True,
                    details={"retry_after_seconds": round(delay, 3)},
                )
            await pause(delay)

    # -- attempts --------------------------------------------------------------------

    async def _attempts(
        self, call: ToolCall, settings: ToolSettings, timeout: float
    ) -> ToolResult:
        result = await self._once(call, settings, timeout)
        for attempt in range(settings.retries):
            if result.error is None or not result.error.retry_possible:
                break
            delay = settings.retry_backoff_seconds * (2**attempt) * random.uniform(0.5, 1.5)
            log.info("retrying %s in %.2f s after %s", call.tool, delay, result.error.type)
            await pause(delay)
            result = await self._once(call, settings, timeout)
        return result

    async def _once(
        self, call: ToolCall, settings: ToolSettings, timeout: float
    ) -> ToolResult:
        context = call.context
        assert context is not None
        try:
            tool, is_async = self.instance(call.tool)
            outcome: Any
            if not (is_async or loop_running()):
                # the bridge's fast path: no loop runs this call, so the sync tool runs in
                # the caller's own thread (and its time limit cannot hold)
                outcome = tool.run(call.arguments, context)
            elif (limits := self._slots_for(call.tool, settings)) is not _NO_LIMIT:
                async with _waited(limits, timeout):
                    outcome = await self._run(tool, is_async, call, context, timeout)
            else:  # the common path: no slot to wait for
                outcome = await self._run(tool, is_async, call, context, timeout)
            if type(outcome) is not ToolResult and inspect.isawaitable(outcome):
                outcome = await settled(outcome, timeout, self.bridge)  # a sync def's
        except call.passthrough:
            raise
        except ToolFailure as failure:
            return failure.to_result()
        except QueueTimeout as waited:
            return ToolResult.failure(
                ErrorType.TIMEOUT,
                f"{call.tool} did not start: {waited}; the tool itself did not run, so its "
                "time limit was not used. Try again when fewer calls are running",
                retry_possible=True,
                details={"queued_seconds": waited.seconds},
            )
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
        return self.checked_parts(call, outcome)

    def checked_parts(self, call: ToolCall, outcome: ToolResult) -> ToolResult:
        """``outcome`` with its parts checked (``malformed_part``: the refusal naming the
        first bad one) and held as a tuple; the tool's before any cache, and again after
        the ``tool_call`` links when one added parts."""
        parts: Any = outcome.parts
        if type(parts) is not tuple or parts:
            refused = malformed_part(outcome, call.tool, self._max_part_bytes)
            if refused is not None:
                return refused
            if type(parts) is not tuple:
                return dataclasses.replace(outcome, parts=tuple(parts))
        return outcome

    def _run(
        self, tool: Tool, is_async: bool, call: ToolCall, context: ToolContext, timeout: float
    ) -> Awaitable[Any]:
        """The tool's ``run`` once, to await: on this loop, or a sync one in a worker thread.
        Not a coroutine itself: one frame less on every call."""
        if is_async:
            return limited(tool.run(call.arguments, context), timeout)
        return self.workers.run(
            tool.run, call.arguments, context, limit=timeout, queue_limit=timeout
        )

    def _slots_for(
        self, tool: str, settings: ToolSettings
    ) -> contextlib.AbstractAsyncContextManager[Any]:
        """The concurrency limits a call of ``tool`` takes a slot of (tool's, then all)."""
        limits = self._tool_slots.get(tool)
        if limits is None:
            chain: list[Slots] = []
            if settings.max_concurrency:
                chain.append(Slots(settings.max_concurrency))
            if self._all_slots is not None:
                chain.append(self._all_slots)
            limits = self._tool_slots.setdefault(tool, tuple(chain))
        if not limits:
            return _NO_LIMIT
        if len(limits) == 1:
            return limits[0]
        return _Both(limits[0], limits[1])


@contextlib.asynccontextmanager
async def _waited(limits: contextlib.AbstractAsyncContextManager[Any], bound: float) -> Any:
    """Hold a concurrency slot, waiting at most ``bound`` seconds for it (``QueueTimeout``);
    the wait is not part of the tool's time limit."""
    if limits is _NO_LIMIT:
        yield
        return
    try:
        async with asyncio.timeout(bound):
            await limits.__aenter__()
    except TimeoutError:
        raise QueueTimeout("a free concurrency slot", bound) from None
    try:
        yield
    finally:
        await limits.__aexit__(None, None, None)


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


def _refused(tool: str, verdict: Verdict) -> ToolResult:
    return ToolResult.failure(
        ErrorType.PERMISSION,
        f"{tool} was refused: {verdict.reason}. Do not retry it with these arguments; tell "
        "the user.",
        details={"denied": True, **verdict.details},
    )


def _expired(tool: str, request: PendingRequest) -> ToolResult:
    """A call whose request nobody decided in time (or that ended without a decision)."""
    why = "nobody decided in time" if request.state == "expired" else (
        f"it {request.state} before anyone decided ({request.note})"
    )
    return ToolResult.failure(
        ErrorType.APPROVAL_REQUIRED,
        f"{tool} waited for a person's approval (request {request.id}) and {why}: the "
        f"request {request.state} and the call did not run. Tell the user.",
        details={"tool": tool, "request": request.id, "state": request.state,
                 "expired": request.state == "expired", "by_setting": False},
    )


def _unapproved(tool: str, why: str | None = None) -> str:
    """What a model reads of a call nobody could approve: short, and no configuration keys
    (how an operator would approve such calls goes to the log and the error's details).
    ``why`` is the flow guard's or a policy's reason, which is about the conversation the
    model is in; an approval setting's is the operator's, and left out."""
    because = f" because {why}" if why else ""
    return (
        f"{tool} needs a person's approval{because}, and nobody here could give it: the call "
        "did not run. Tell the user."
    )


def _required(request: ApprovalRequest, extra: Mapping[str, Any] | None = None) -> ToolResult:
    tool = request.tool
    if extra:  # the flow guard or a policy asked: setting approval would not help
        advice = (
            "run it where a person can answer, or give toolplug.load() or the call an approver"
        )
    else:
        advice = (
            "run it where a person can answer (`toolplug call` on a terminal, or with --yes), "
            "give toolplug.load() or the call an approver, implement the approve_call hook, "
            f'or set [tools.{tool}] approval = "never" to run it unasked'
        )
    log.info("%s. Nobody was asked: to approve calls like this one, %s", request.describe(), advice)
    return ToolResult.failure(
        ErrorType.APPROVAL_REQUIRED,
        _unapproved(tool, request.reason if extra else None),
        details={"tool": tool, "arguments": dict(request.arguments),
                 "reason": request.reason, "advice": advice,
                 # whether [tools.NAME] approval decides it (not when the guard asked)
                 "by_setting": not extra, **(extra or {})},
    )
