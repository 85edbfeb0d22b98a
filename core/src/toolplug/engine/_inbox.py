"""The person in the loop, for the pipeline: remembered decisions, and calls that wait in
the inbox (``[approvals] inbox = true``) until someone decides.

Before anyone is asked, a decision the call's owner remembered (``toolplug.state.
_remembered``) decides it. When every approver passed (nobody could be asked at once), the
call becomes a pending request (``toolplug.state._inbox``), a signed webhook is sent, and
the call waits: an awaited future, no thread. One watcher per event loop reads the state
of every request that loop waits for in one round trip (polling the store with backoff,
from 50 ms to 1 s; at once after a decision made in this process), so a decision made by
another process (``toolplug approvals approve ID``, another replica on Redis) resumes the
call. The same watcher renews this process's lease on each of those requests every third
of ``lease_seconds`` (one write for all, awaited like the reads: the loop never blocks), so
a request whose process was killed fails once its lease lapses (``toolplug.state.
_inbox``) and is never decided afterwards; the process whose sweep failed it records that,
once, when it has a record (``recorder``). A request past ``wait_seconds`` is refused with
that reason; a call cancelled while it waits marks its request ``cancelled``, so nobody
decides it afterwards.

A call made as a task (``toolplug.state._tasks``: its context's ``waiting``) says which
request it waits for while it waits, so the task's status can show it (an MCP task reads
``input_required``).

``Approvals`` is also the API a host decides with (``registry.approvals``): ``pending``,
``decide``, ``remembered``, ``forget``, each with a sync twin.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import ssl
import time
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit

from toolplug.config._settings import resolve_value
from toolplug.contract._approval import Approval, ApprovalRequest
from toolplug.engine._recording import request_failed
from toolplug.state._inbox import Inbox, PendingRequest
from toolplug.state._memory import MemoryBackend
from toolplug.state._remembered import Remembered, RememberedDecisions, pattern_of
from toolplug.state._shared import open_backend
from toolplug.state._sqlite_backend import SqliteBackend
from toolplug.trust._conversation import current

if TYPE_CHECKING:
    from toolplug.config._config import Config
    from toolplug.contract._call import ToolCall
    from toolplug.state._backend import Backend
    from toolplug.state._record import Recorder
    from toolplug.utilities._bridge import Bridge

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "Approvals", "open_approvals", "sign"]

log = logging.getLogger("toolplug")
_T = TypeVar("_T")

SIGNATURE_HEADER: Final = "X-Toolplug-Signature"
"""``sha256=HEX``: HMAC-SHA256 of ``TIMESTAMP.BODY`` under ``[approvals] webhook_secret``."""
TIMESTAMP_HEADER: Final = "X-Toolplug-Timestamp"
"""Seconds since the epoch when the webhook was signed (a receiver refuses old ones)."""
_POLL: Final = (0.05, 1.0)
"""The first and the longest pause between two reads of the waiting requests."""
_WEBHOOK_SECONDS: Final = 10.0


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The webhook's signature header value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class _Watch:
    """The requests one event loop waits for, read together."""

    def __init__(self, inbox: Inbox, loop: asyncio.AbstractEventLoop, lease: float) -> None:
        self.inbox = inbox
        self.loop = loop
        self.lease = lease
        self.futures: dict[str, asyncio.Future[PendingRequest]] = {}
        self.kick = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def add(self, request_id: str) -> asyncio.Future[PendingRequest]:
        future = self.loop.create_future()
        self.futures[request_id] = future
        self.kick.set()
        if self.task is None or self.task.done():
            self.task = self.loop.create_task(self._run())
        return future

    async def _run(self) -> None:
        pause = _POLL[0]
        renew = time.monotonic() + self.lease / 3  # put() took the first lease
        while self.futures:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.kick.wait(), max(min(pause, renew - time.monotonic()), 0)
                )
            kicked = self.kick.is_set()
            self.kick.clear()
            ids = [i for i, f in self.futures.items() if not f.done()]
            if ids and time.monotonic() >= renew:
                renew = time.monotonic() + self.lease / 3
                try:
                    await self.inbox.hold(ids, self.lease)
                except Exception as exc:  # the store away: the next renewal may reach it
                    log.warning("renewing the approval requests' lease failed (%s)", exc)
            try:
                found = await self.inbox.get_many(ids) if ids else []
            except Exception as exc:  # the store away: keep waiting, the request keeps
                log.warning("reading the approval requests failed (%s); retrying", exc)
                found = []
            changed = False
            for request_id, request in zip(ids, found, strict=False):
                if request is not None and request.state != "pending":
                    future = self.futures.get(request_id)
                    if future is not None and not future.done():
                        future.set_result(request)
                        changed = True
            pause = _POLL[0] if kicked or changed else min(pause * 1.5, _POLL[1])


class Approvals:
    """Pending requests and remembered decisions of one registry, and the calls waiting."""

    def __init__(
        self, backend: Backend, *, inbox: bool, wait_seconds: float,
        lease_seconds: float = 15.0, webhook_url: str | None = None,
        webhook_secret: bytes | None = None, bridge: Bridge | None = None,
        owns_backend: bool = True, reply_url: str | None = None,
    ) -> None:
        self.backend = backend
        self.inbox = Inbox(backend)
        """The pending requests (``toolplug.state._inbox``)."""
        self.decisions = RememberedDecisions(backend)
        """The remembered decisions (``toolplug.state._remembered``)."""
        self.waits = inbox
        """Whether a call nobody could be asked about waits (``[approvals] inbox``)."""
        self.wait_seconds = wait_seconds
        self.lease_seconds = lease_seconds
        """How long this process's hold on a request lasts unless renewed."""
        self._webhook = webhook_url
        self._secret = webhook_secret
        self.reply_url = reply_url
        """Where a receiver POSTs the person's signed decision (``toolplug.engine._reply``),
        told in each webhook: ``[approvals] reply_url``, else the one ``serve --http``
        answers at when it knows its address."""
        self._bridge = bridge
        self._owns = owns_backend
        self._watches: dict[asyncio.AbstractEventLoop, _Watch] = {}
        self._sent: set[asyncio.Task[None]] = set()
        self.recorder: Recorder | None = None
        """Where a request this process swept to ``failed`` is recorded (the engine's,
        the console's, ``toolplug approvals``' record), or None: not recorded here."""
        self.inbox.swept = self._swept

    def _swept(self, request: PendingRequest) -> None:
        """Record a request this process's sweep failed (once: its compare-and-set won)."""
        if self.recorder is not None:
            self.recorder.add(request_failed(request))

    @property
    def webhook_secret(self) -> bytes | None:
        """The key the webhook is signed with, and a signed reply must be."""
        return self._secret

    # -- the pipeline's ---------------------------------------------------------------

    @staticmethod
    def whose(call: ToolCall) -> tuple[str | None, str | None]:
        """The call's owner (its context's ``client``) and conversation."""
        host = call.context.host if call.context is not None else {}
        owner = host.get("client")
        conversation = host.get("conversation")
        if conversation is None:
            found = current()
            conversation = found.id if found is not None else None
        return (None if owner is None else str(owner),
                None if conversation is None else str(conversation))

    async def remembered_for(
        self, call: ToolCall, arguments: Mapping[str, Any]
    ) -> Approval | None:
        """The decision a remembered one makes for this call (redacted ``arguments``)."""
        owner, conversation = self.whose(call)
        found = await self.decisions.match(owner, call.tool, arguments, conversation)
        if found is None:
            return None
        because = f"remembered decision {found.id} ({found.scope})"
        if found.action == "allow":
            return Approval.approve(because)
        return Approval.deny(f"{because}{': ' + found.reason if found.reason else ''}")

    async def remember(
        self, call: ToolCall, arguments: Mapping[str, Any], decision: Approval,
        request_id: str | None = None,
    ) -> Remembered | None:
        """Keep ``decision`` when it asks to be remembered; the kept one."""
        if decision.remember == "once":
            return None
        owner, conversation = self.whose(call)
        if decision.remember == "conversation" and conversation is None:
            log.warning("a decision on %s asked to be remembered for this conversation, "
                        "and the call was made in none: it holds for this call only", call.tool)
            return None
        if decision.match is not None:
            argument, schema = decision.match.get("argument"), decision.match.get("schema", {})
        elif decision.remember == "conversation":  # every call of the tool, here
            argument, schema = None, {}
        else:
            argument, schema = pattern_of(arguments)
        kept = Remembered.new(
            call.tool, decision.approved, decision.remember, owner=owner,
            conversation=conversation, argument=argument, schema=schema,
            reason=decision.reason, request=request_id,
        )
        await self.decisions.add(kept)
        return kept

    async def wait(
        self, call: ToolCall, request: ApprovalRequest, details: Mapping[str, Any] | None
    ) -> tuple[Approval, PendingRequest]:
        """Put the call in the inbox and wait for a person's decision (or its expiry)."""
        owner, conversation = self.whose(call)
        pending = PendingRequest.new(
            request.tool, request.arguments, request.reason, wait_seconds=self.wait_seconds,
            details=details, owner=owner, conversation=conversation, lease=self.lease_seconds,
        )
        await self.inbox.put(pending)
        host = call.context.host if call.context is not None else {}
        waiting = host.get("waiting")  # a task's: its status names the request meanwhile
        if callable(waiting):
            waiting(pending)
        log.warning("%s waits for approval: toolplug approvals approve %s (or deny)",
                    request.tool, pending.id)
        if self._webhook is not None:
            task = asyncio.get_running_loop().create_task(self._notify(pending))
            self._sent.add(task)
            task.add_done_callback(self._sent.discard)
        loop = asyncio.get_running_loop()
        watch = self._watches.get(loop)
        if watch is None or watch.loop.is_closed():
            watch = self._watches[loop] = _Watch(self.inbox, loop, self.lease_seconds)
        future = watch.add(pending.id)
        try:
            try:
                decided = await asyncio.wait_for(future, max(pending.expires - time.time(), 0))
            except TimeoutError:
                decided = await self.inbox.close(pending.id, "expired", "nobody decided in time")
        except asyncio.CancelledError:
            await asyncio.shield(self.inbox.close(pending.id, "cancelled", "the call went away"))
            raise
        finally:
            watch.futures.pop(pending.id, None)
            if callable(waiting):
                waiting(None)
        return _approval_of(decided), decided

    async def _notify(self, request: PendingRequest) -> None:
        assert self._webhook is not None
        told: dict[str, Any] = {
            "event": "approval.requested", "request": request.to_dict(),
            "decide": f"toolplug approvals approve {request.id}",
        }
        if self._secret is not None:  # a reply counts only signed with the same key
            told["reply"] = {
                "url": self.reply_url, "request": request.id, "decisions": ["approve", "deny"],
            }
        body = json.dumps(told, sort_keys=True, default=str).encode()
        headers = {"X-Toolplug-Event": "approval.requested"}
        if self._secret is not None:
            stamp = str(int(time.time()))
            headers[TIMESTAMP_HEADER] = stamp
            headers[SIGNATURE_HEADER] = sign(self._secret, stamp, body)
        try:
            status = await asyncio.wait_for(
                post(self._webhook, body, headers), _WEBHOOK_SECONDS
            )
        except (OSError, TimeoutError, ValueError) as exc:
            log.warning("the approvals webhook %s failed: %s", self._webhook, exc)
            return
        if not 200 <= status < 300:
            log.warning("the approvals webhook %s answered %d", self._webhook, status)

    # -- a host's: deciding -------------------------------------------------------------

    async def apending(
        self, owner: str | None = None, *, every_owner: bool = False
    ) -> list[PendingRequest]:
        """The requests waiting for ``owner`` (and those with no owner), newest first."""
        return await self.inbox.listing(owner=owner, every_owner=every_owner)

    async def adecide(
        self, request_id: str, approved: bool, *, by: str | None = None, note: str = "",
        remember: str = "once",
    ) -> PendingRequest:
        """Decide a pending request as ``by`` (its owner); raises ``DecisionRefused``."""
        decided = await self.inbox.decide(
            request_id, approved, by=by, note=note, remember=remember
        )
        for watch in list(self._watches.values()):  # a call waiting here resumes at once
            if request_id in watch.futures and not watch.loop.is_closed():
                watch.loop.call_soon_threadsafe(watch.kick.set)
        return decided

    async def aremembered(
        self, owner: str | None = None, *, every_owner: bool = False
    ) -> list[Remembered]:
        """The remembered decisions of ``owner`` (or everyone's), newest first."""
        return await self.decisions.listing(owner=owner, every_owner=every_owner)

    async def aforget(self, decision_id: str, *, by: str | None = None) -> Remembered:
        """Revoke a remembered decision of ``by``'s; raises ``DecisionRefused``."""
        return await self.decisions.forget(decision_id, by=by)

    def _sync(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        if self._bridge is None:
            return asyncio.run(coroutine)
        return self._bridge.run(coroutine)

    def pending(
        self, owner: str | None = None, *, every_owner: bool = False
    ) -> list[PendingRequest]:
        """``apending`` for a caller that waits in its thread."""
        return self._sync(self.apending(owner, every_owner=every_owner))

    def decide(
        self, request_id: str, approved: bool, *, by: str | None = None, note: str = "",
        remember: str = "once",
    ) -> PendingRequest:
        """``adecide`` for a caller that waits in its thread."""
        return self._sync(self.adecide(request_id, approved, by=by, note=note, remember=remember))

    def remembered(
        self, owner: str | None = None, *, every_owner: bool = False
    ) -> list[Remembered]:
        """``aremembered`` for a caller that waits in its thread."""
        return self._sync(self.aremembered(owner, every_owner=every_owner))

    def forget(self, decision_id: str, *, by: str | None = None) -> Remembered:
        """``aforget`` for a caller that waits in its thread."""
        return self._sync(self.aforget(decision_id, by=by))

    async def aclose(self) -> None:
        """Release the store (when it is the approvals' own)."""
        if self._owns:
            await self.backend.aclose()


def _approval_of(request: PendingRequest) -> Approval:
    remember: Any = request.remember if request.remember in ("conversation", "always") else "once"
    who = f" by {request.decided_by}" if request.decided_by else ""
    if request.state == "approved":
        return Approval.approve(request.note or f"approved{who} (request {request.id})",
                                remember=remember)
    if request.state == "denied":
        return Approval.deny(request.note or f"denied{who} (request {request.id})",
                             remember=remember)
    return Approval.deny(f"request {request.id} {request.state}: {request.note}")


def open_approvals(
    config: Config, *, bridge: Bridge | None = None, calls_backend: Backend | None = None
) -> Approvals:
    """The approvals ``[approvals]`` configures: its store opened (the calls' own backend
    when it names the same Redis), on ``bridge``'s loop thread."""
    settings = config.approvals
    where = settings.store_for(config.calls.store, config.state_dir)
    owns = True
    backend: Backend
    if where == config.calls.store and calls_backend is not None and where != "memory":
        backend, owns = calls_backend, False
    elif where.startswith("sqlite:"):
        backend = SqliteBackend(Path(where.removeprefix("sqlite:")).expanduser())
    elif where == "memory":
        backend = MemoryBackend(10_000)
    else:
        home = (lambda: bridge.thread().loop) if bridge is not None else asyncio.get_running_loop
        backend = open_backend(where, entries=10_000, home=home)
    secret = None
    if settings.webhook_secret is not None:
        base = config.path.parent if config.path is not None else Path.cwd()
        text, _ = resolve_value(settings.webhook_secret, env=os.environ, base=base)
        if text is None:
            log.warning("[approvals] webhook_secret names an unset variable: the webhook "
                        "goes unsigned")
        secret = None if text is None else text.encode()
    return Approvals(
        backend, inbox=settings.inbox, wait_seconds=settings.wait_seconds,
        lease_seconds=settings.lease_seconds, webhook_url=settings.webhook_url,
        webhook_secret=secret, bridge=bridge, owns_backend=owns, reply_url=settings.reply_url,
    )


async def post(url: str, body: bytes, headers: Mapping[str, str]) -> int:
    """POST ``body`` as JSON to ``url`` (HTTP/1.1, a connection of its own); the status."""
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    if parts.hostname is None:
        raise ValueError(f"no host in {url!r}")
    port = parts.port or (443 if secure else 80)
    context = ssl.create_default_context() if secure else None
    reader, writer = await asyncio.open_connection(parts.hostname, port, ssl=context)
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc}",
                 "Content-Type: application/json", f"Content-Length: {len(body)}",
                 "Connection: close", "User-Agent: toolplug-approvals"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
        status = (await reader.readline()).split()
        if len(status) < 2 or not status[1].isdigit():
            raise ValueError("the webhook did not answer HTTP")
        return int(status[1])
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
