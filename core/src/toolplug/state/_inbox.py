"""Pending approval requests, kept in a state backend: what waits for a person's decision.

A request is one JSON record under ``request:ID`` (the id unguessable), listed in one
ordered index by its creation time. Its state moves once, by compare-and-set, from
``pending`` to ``approved``, ``denied``, ``expired``, ``cancelled`` (the waiting call
went away) or ``failed`` (the process holding the call stopped): a decision made twice, on
two replicas or by a replayed command, finds the record no longer pending and is refused,
saying who decided it and when.

The process whose call waits holds a lease on its request: a key ``lease:ID`` it writes
when it makes the request and rewrites every third of ``[approvals] lease_seconds``, each
time to live ``lease_seconds``. A process killed (SIGKILL, a lost machine) stops
rewriting it; whoever next lists the requests or decides this one finds the lease gone
and moves the request to ``failed`` ("the process waiting for this call stopped"), by the
same compare-and-set as a decision, so nothing is decided after that, and nothing twice
(the one whose move won is told, ``Inbox.swept``, and records it). A request belongs to
its owner (the verified principal, else the session, else the ``client`` a call's context
names); only that owner may decide it. A request with no owner (an
in-process call that named no client) is the operator's: anyone who can reach the store
decides it.

Who waits, and how: ``toolplug.engine._inbox``.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from toolplug.contract._errors import UsageError
from toolplug.state._events import masked_secrets

if TYPE_CHECKING:
    from toolplug.state._backend import Backend

__all__ = ["DecisionRefused", "Inbox", "PendingRequest", "RequestState"]

RequestState: TypeAlias = Literal[
    "pending", "approved", "denied", "expired", "cancelled", "failed"
]
"""Where a request is: waiting, decided, past its time, given up by its call, or lost with
the process that held its call."""

STOPPED: Final = "the process waiting for this call stopped"
"""The note of a request whose holder's lease lapsed."""

_INDEX: Final = "requests"
_LEASE: Final = "lease:"
_KEPT_SECONDS: Final = 7 * 24 * 3600.0
"""How long a request's record is kept after it expires (the history of decisions)."""
_MOST: Final = 10_000
"""The most requests kept; the oldest go first."""


class DecisionRefused(UsageError):
    """A decision that does not count: no such request, another owner's, already decided,
    expired, or failed with its holder. ``why`` names which (``unknown``, ``owner``,
    ``decided``, ``expired``, ``failed``)."""

    def __init__(self, message: str, *, why: str, request: PendingRequest | None = None) -> None:
        super().__init__(message)
        self.why = why
        self.request = request


@dataclass(frozen=True)
class PendingRequest:
    """A call that waits for a person's decision."""

    id: str
    """Unguessable; what ``toolplug approvals approve ID`` names."""
    tool: str
    """The tool the call would run."""
    arguments: Mapping[str, Any]
    """Its arguments as a person may see them: every configured secret (the caller
    redacts those) and every value under a secret-named key (``password``, ``token``,
    ``api_key``, ...: ``toolplug.state._events.masked_secrets``, as the record) replaced by
    ``***``. Masked whenever a request is made, so the store, the listings and the webhook
    never hold the real values; the waiting call runs with its own, kept in its memory."""
    reason: str
    """Why it needs approval (the setting, the flow guard's or a policy's reason)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """The flow guard's details: the rule, each argument's source call and its labels."""
    owner: str | None = None
    """Who may decide it: the caller's principal or session; None: the operator."""
    conversation: str | None = None
    """The conversation the call was made in, when it was in one."""
    created: float = 0.0
    """When it was asked (seconds since the epoch)."""
    expires: float = 0.0
    """When it stops waiting (seconds since the epoch)."""
    state: RequestState = "pending"
    decided_by: str | None = None
    """Who decided it (an owner, ``operator``), once decided."""
    decided_at: float | None = None
    note: str = ""
    """The decision's reason (shown to the model on a denial)."""
    remember: str = "once"
    """What the decision asked to remember: ``once``, ``conversation`` or ``always``."""
    lease: float = 0.0
    """The seconds the holder's lease lasts unless renewed; 0: none (the request lives as
    long as its record says, as before leases)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "arguments", masked_secrets(self.arguments))

    @staticmethod
    def new(
        tool: str, arguments: Mapping[str, Any], reason: str, *, wait_seconds: float,
        details: Mapping[str, Any] | None = None, owner: str | None = None,
        conversation: str | None = None, lease: float = 0.0,
    ) -> PendingRequest:
        """A fresh request, waiting ``wait_seconds`` from now, held under a lease of
        ``lease`` seconds (0: none)."""
        now = time.time()
        return PendingRequest(
            "apr_" + secrets.token_urlsafe(12), tool, dict(arguments), reason,
            dict(details or {}), owner, conversation, now, now + wait_seconds, lease=lease,
        )

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON-ready data."""
        return dataclasses.asdict(self)

    def dumps(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), default=str)

    @staticmethod
    def loads(raw: str) -> PendingRequest | None:
        """The request ``dumps`` wrote, or None when it cannot be read."""
        try:
            body = json.loads(raw)
            names = {f.name for f in dataclasses.fields(PendingRequest)}
            return PendingRequest(**{k: v for k, v in body.items() if k in names})
        except (ValueError, TypeError):
            return None

    @property
    def expired(self) -> bool:
        """Whether its time to wait is over (whatever its state says)."""
        return time.time() >= self.expires

    def describe(self) -> str:
        """One line for a person: the tool, the arguments, why."""
        shown = json.dumps(dict(self.arguments), sort_keys=True, ensure_ascii=False, default=str)
        if len(shown) > 300:
            shown = shown[:300] + "..."
        return f"{self.tool} {shown}: {self.reason}"


class Inbox:
    """The pending requests in one backend (this process's memory, a SQLite file, Redis)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend.part("approval:", entries=_MOST)
        self.swept: Callable[[PendingRequest], None] | None = None
        """Told each request this process's sweep moved to ``failed``: only the sweeper
        whose compare-and-set won, so once per request whoever else sweeps it meanwhile
        (the approvals record it: ``toolplug.engine._inbox``)."""

    async def put(self, request: PendingRequest) -> None:
        """Keep a new request (its lease first: it is never seen unheld)."""
        if request.lease > 0:
            await self.hold([request.id], request.lease)
        ttl = max(request.expires - time.time(), 1.0) + _KEPT_SECONDS
        await self.backend.set("request:" + request.id, request.dumps(), ttl)
        dropped = await self.backend.index_add(
            _INDEX, request.id, request.created, keep=_MOST,
            drop_below=time.time() - _KEPT_SECONDS, ttl=None,
        )
        if dropped:
            await self.backend.delete(*("request:" + d for d in dropped))

    async def hold(self, ids: Sequence[str], seconds: float) -> None:
        """Renew the lease on each of these requests for ``seconds``, in one round trip."""
        if ids:
            await self.backend.set_many({_LEASE + i: "1" for i in ids}, seconds)

    async def sweep(self, requests: Sequence[PendingRequest]) -> list[PendingRequest]:
        """Each of ``requests`` as it now is: a pending one whose holder's lease lapsed
        moved to ``failed`` first (by compare-and-set: what another decided meanwhile
        stands)."""
        leased = [r for r in requests if r.state == "pending" and r.lease > 0]
        if not leased:
            return list(requests)
        held = await self.backend.get_many([_LEASE + r.id for r in leased])
        swept = {}
        for request, lease in zip(leased, held, strict=True):
            if lease is None:
                swept[request.id], moved = await self._end(request.id, "failed", STOPPED)
                if moved and self.swept is not None:
                    self.swept(swept[request.id])
        return [swept.get(r.id, r) for r in requests]

    async def get(self, request_id: str) -> PendingRequest | None:
        """The request, or None when nobody knows it."""
        raw = await self.backend.get("request:" + request_id)
        return None if raw is None else PendingRequest.loads(raw)

    async def get_many(self, ids: Sequence[str]) -> list[PendingRequest | None]:
        """``get`` of each, in one round trip."""
        raws = await self.backend.get_many(["request:" + i for i in ids])
        return [None if r is None else PendingRequest.loads(r) for r in raws]

    async def listing(
        self, *, owner: str | None = None, every_owner: bool = False,
        states: Sequence[str] = ("pending",),
    ) -> list[PendingRequest]:
        """The requests in ``states``, newest first: ``owner``'s (and the operator's, with
        no owner), or with ``every_owner`` everyone's. A pending one past its time reads as
        ``expired``."""
        ids = [m for m, _ in await self.backend.index_newest(
            _INDEX, drop_below=time.time() - _KEPT_SECONDS
        )]
        found = []
        read = [r for r in await self.get_many(ids) if r is not None]
        for kept in await self.sweep(read):
            request = kept
            if kept.state == "pending" and kept.expired:
                request = dataclasses.replace(kept, state="expired")
            if request.state not in states:
                continue
            if every_owner or request.owner is None or request.owner == owner:
                found.append(request)
        return found

    async def decide(
        self, request_id: str, approved: bool, *, by: str | None, note: str = "",
        remember: str = "once",
    ) -> PendingRequest:
        """Decide a pending request, once: the decided record.

        ``by`` is who decides: the request's owner (None decides only requests with no
        owner). Raises ``DecisionRefused`` for an unknown id, another owner's request, one
        already decided (a replay) or one past its time.
        """
        state: RequestState = "approved" if approved else "denied"
        return await self._move(request_id, state, by=by, note=note, remember=remember)

    async def close(self, request_id: str, state: RequestState, note: str = "") -> PendingRequest:
        """End a pending request without a person: ``expired`` or ``cancelled``. The
        record as it now is (decided, when a decision came first)."""
        return (await self._end(request_id, state, note))[0]

    async def _end(
        self, request_id: str, state: RequestState, note: str
    ) -> tuple[PendingRequest, bool]:
        """``close``, and whether this call moved it (False: another's write came first)."""
        try:
            return await self._move(request_id, state, by=None, note=note, owned=False), True
        except DecisionRefused as refused:
            if refused.request is None:
                raise
            return refused.request, False

    async def _move(
        self, request_id: str, state: RequestState, *, by: str | None, note: str,
        remember: str = "once", owned: bool = True,
    ) -> PendingRequest:
        key = "request:" + request_id
        for _ in range(3):  # a concurrent write between the read and the swap: read again
            raw = await self.backend.get(key)
            request = None if raw is None else PendingRequest.loads(raw)
            if raw is None or request is None:
                raise DecisionRefused(
                    f"no approval request {request_id!r}: it was never made here, or it was "
                    "dropped long after it ended; list the pending ones with `toolplug "
                    "approvals list`", why="unknown",
                )
            if owned and request.owner is not None and by != request.owner:
                raise DecisionRefused(
                    f"approval request {request_id} belongs to another owner: only the "
                    "principal whose call waits may decide it (toolplug approvals --as OWNER)",
                    why="owner", request=request,
                )
            if owned and request.state == "pending" and request.lease > 0:
                (request,) = await self.sweep([request])
            if request.state == "failed":
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(request.decided_at or 0))
                raise DecisionRefused(
                    f"approval request {request_id} failed at {when} UTC: {request.note} "
                    "(killed, or it lost the store) before anyone decided; its call did not "
                    "run and no decision counts now; ask for the call again",
                    why="failed", request=request,
                )
            if request.state != "pending":
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(request.decided_at or 0))
                who = f" by {request.decided_by}" if request.decided_by else ""
                raise DecisionRefused(
                    f"approval request {request_id} was already {request.state}{who} at "
                    f"{when} UTC: a decision counts once", why="decided", request=request,
                )
            if owned and request.expired:
                await self.close(request_id, "expired", "nobody decided in time")
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(request.expires))
                raise DecisionRefused(
                    f"approval request {request_id} expired at {when} UTC: its call was "
                    "refused; ask for the call again", why="expired",
                    request=dataclasses.replace(request, state="expired"),
                )
            decided = dataclasses.replace(
                request, state=state, decided_by=by if owned else None,
                decided_at=time.time(), note=note, remember=remember,
            )
            ttl = max(request.expires - time.time(), 1.0) + _KEPT_SECONDS
            if await self.backend.swap(key, raw, decided.dumps(), ttl):
                return decided
        raise DecisionRefused(  # pragma: no cover - three writers racing one record
            f"approval request {request_id} changed while it was being decided; try again",
            why="decided",
        )
