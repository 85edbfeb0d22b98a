"""A person's decision sent back by the webhook's receiver: signed as the webhook is.

A Slack workflow, a mail gateway or a pager that carried an ``approval.requested`` webhook
POSTs the person's answer to ``REPLY_PATH`` (``toolplug console`` answers it, and
``serve --http`` beside its MCP endpoint) as JSON::

    {"request": "apr_...", "decision": "approve", "note": "fine", "by": "alice"}

(``decision``: ``approve`` or ``deny``; ``note``, ``by`` and ``remember``, one of ``once``,
``conversation``, ``always``, optional) with the two headers the webhook carries:
``X-Toolplug-Timestamp``, the seconds since the epoch when it was signed, and
``X-Toolplug-Signature``, ``sha256=`` and the hex HMAC-SHA256 of the timestamp, a dot and
the body, under ``[approvals] webhook_secret``.

The signature is the reply's whole authentication (no token, no cookie): whoever holds the
secret is trusted as the operator is, and decides as the owner the request names. ``by``
says who the person was; it goes in the decision's note and the record, never in the owner
check. Refused, each with a JSON ``{"error", "why"}`` and recorded (an ``approval.decision``
event of status ``refused``, ``rule`` ``webhook``, when the record is on):

- no secret configured: 404 ``unconfigured`` (not recorded: signed decisions are off, and
  the path answers on every ``serve --http``);
- no signature or timestamp: 401 ``unsigned``; a signature that does not match: 401
  ``signature``;
- a timestamp more than five minutes old, or more than ``_SKEW`` seconds ahead: 401
  ``stale`` (a captured reply cannot be sent again later);
- a body that is not the JSON above: 400 ``body``;
- an unknown request: 404 ``unknown``; one decided already (the same reply sent again,
  within the five minutes: the inbox's compare-and-set counts a decision once): 409
  ``decided``; expired or failed: 409 ``expired``, ``failed``.
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from toolplug.engine._inbox import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from toolplug.engine._recording import decision_refused
from toolplug.state._inbox import DecisionRefused

if TYPE_CHECKING:
    from toolplug.engine._inbox import Approvals
    from toolplug.state._inbox import PendingRequest
    from toolplug.state._record import Recorder

__all__ = ["MAX_AGE", "MAX_BODY", "REPLY_PATH", "signed_reply"]

REPLY_PATH: Final = "/approvals/decide"
"""Where a signed decision is POSTed (under ``toolplug console``'s root)."""
MAX_AGE: Final = 300.0
"""The oldest a reply's timestamp may be, in seconds."""
_SKEW: Final = 30.0
"""How far ahead of this machine's clock a reply's timestamp may be (clocks differ)."""
MAX_BODY: Final = 64 * 1024
_REMEMBER: Final = ("once", "conversation", "always")
_STATUS: Final = {"unknown": 404, "unconfigured": 404, "body": 400}


class _Refused(Exception):
    def __init__(self, why: str, said: str, status: int = 401) -> None:
        super().__init__(said)
        self.why, self.status = why, status


def _checked(
    secret: bytes | None, headers: Mapping[str, str], body: bytes, now: float
) -> dict[str, Any]:
    """The reply's fields, once its signature and time hold."""
    if secret is None:
        raise _Refused("unconfigured", (
            "signed decisions are off: set [approvals] webhook_secret (the key the webhook "
            "is signed with) to accept them here"), 404)
    stamp, given = headers.get(TIMESTAMP_HEADER.lower()), headers.get(SIGNATURE_HEADER.lower())
    if not stamp or not given:
        raise _Refused("unsigned", (
            f"an unsigned decision: send {TIMESTAMP_HEADER} (seconds since the epoch) and "
            f'{SIGNATURE_HEADER}: sha256=HMAC-SHA256(webhook_secret, timestamp + "." + '
            "body), as the webhook is signed"))
    if not hmac.compare_digest(sign(secret, stamp, body), given.strip()):
        raise _Refused("signature", (
            f"the {SIGNATURE_HEADER} does not match this body and timestamp under "
            "[approvals] webhook_secret: sign the exact bytes sent, with the same key"))
    try:
        age = now - float(stamp)
    except ValueError:
        age = float("inf")
    if not -_SKEW <= age <= MAX_AGE:
        raise _Refused("stale", (
            f"the {TIMESTAMP_HEADER} {stamp[:20]!r} is {'ahead of' if age < 0 else 'older than'}"
            f" this server's clock by more than {int(_SKEW if age < 0 else MAX_AGE)} seconds: "
            "sign each reply when it is sent (a reply cannot be sent again later)"))
    try:
        fields = json.loads(body)
    except ValueError:
        fields = None
    if (
        not isinstance(fields, dict) or not isinstance(fields.get("request"), str)
        or fields.get("decision") not in ("approve", "deny")
        or not isinstance(fields.get("note", ""), str) or not isinstance(fields.get("by", ""), str)
        or fields.get("remember", "once") not in _REMEMBER
    ):
        raise _Refused("body", (
            'the body is not {"request": ID, "decision": "approve" or "deny"} with an '
            'optional "note", "by" (who decided) and "remember" ("once", "conversation" '
            'or "always")'), 400)
    return fields


async def signed_reply(
    approvals: Approvals, recorder: Recorder | None, headers: Mapping[str, str], body: bytes,
    *, now: float | None = None,
) -> tuple[int, dict[str, Any]]:
    """Decide the request a signed reply names: the HTTP status and the JSON to answer
    (``headers``: lower-case names)."""
    fields: dict[str, Any] = {}
    found: PendingRequest | None = None
    try:
        if len(body) > MAX_BODY:
            raise _Refused("body", f"the body is larger than {MAX_BODY} bytes", 413)
        fields = _checked(approvals.webhook_secret, headers, body,
                          time.time() if now is None else now)
        found = await approvals.inbox.get(fields["request"])
        if found is None:
            raise DecisionRefused(
                f"no approval request {fields['request'][:200]!r}: it was never made here, "
                "or it was dropped long after it ended", why="unknown")
        person = fields.get("by") or ""
        note = fields.get("note") or ""
        if person:
            note = f"{note} ({person}, by a signed reply)" if note else (
                f"{'approved' if fields['decision'] == 'approve' else 'denied'} by {person} "
                "(a signed reply)")
        decided = await approvals.adecide(  # as the owner the request names: the secret's
            found.id, fields["decision"] == "approve", by=found.owner, note=note,
            remember=fields.get("remember", "once"),
        )
    except (_Refused, DecisionRefused) as refused:
        why = refused.why
        status = refused.status if isinstance(refused, _Refused) else (
            _STATUS.get(why, 409)
        )
        if isinstance(refused, DecisionRefused) and refused.request is not None:
            found = refused.request
        if recorder is not None and why != "unconfigured":  # off: nothing was to decide
            await _record(approvals, recorder, refused, fields or _claimed(body), found,
                          verified=bool(fields))
        return status, {"error": str(refused), "why": why}
    return 200, {"request": decided.id, "state": decided.state, "owner": decided.owner,
                 "note": decided.note}


def _claimed(body: bytes) -> dict[str, Any]:
    """What an unverified body says, for the record: its ``request`` and ``decision``."""
    try:
        fields = json.loads(body) if len(body) <= MAX_BODY else None
    except ValueError:
        fields = None
    if not isinstance(fields, dict):
        return {}
    return {k: fields[k] for k in ("request", "decision") if isinstance(fields.get(k), str)}


async def _record(
    approvals: Approvals, recorder: Recorder, refused: Exception, fields: Mapping[str, Any],
    found: PendingRequest | None, *, verified: bool,
) -> None:
    """Record a refused reply: the request it named (looked up), and who decided only when
    the signature held (an unverified ``by`` is anyone's claim)."""
    target = str(fields.get("request") or "-")
    if found is None and target != "-":
        try:
            found = await approvals.inbox.get(target)
        except Exception:  # the store away: the refusal is recorded all the same
            found = None
    person = fields.get("by") if verified else None
    recorder.add(decision_refused(
        found, target=target, action=str(fields.get("decision") or "decide"),
        why=str(getattr(refused, "why", "")), reason=str(refused),
        by=person if isinstance(person, str) and person else None, via="webhook",
    ))
