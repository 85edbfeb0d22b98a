"""The Approvals page (``/``): the requests waiting, with approve and deny forms, and the
remembered decisions, with a revoke form; and the POSTs those forms make.

A decision is ``Approvals.adecide`` (as ``toolplug approvals approve`` calls it), so a
forged, replayed or expired one is refused the same way. A signed-in principal (the console
under ``serve --http``) decides only its own requests: the operator's (with no owner) and
another principal's are refused here before the inbox is asked. Every refused decision or
revocation, a bad CSRF token's too, is recorded (an ``approval.decision`` event of status
``refused``, ``detail.why`` saying why) when the record is on.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from toolplug.cli._console._page import Console, Viewer, checked_form, e, hidden, page, when
from toolplug.engine._recording import decision_refused
from toolplug.state._inbox import DecisionRefused

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolplug.state._inbox import PendingRequest

__all__ = ["decide", "forget", "home", "refused_decision"]

REMEMBER: Final = ("once", "conversation", "always")


def _request_html(console: Console, request: PendingRequest) -> str:
    arguments = json.dumps(dict(request.arguments), indent=2, sort_keys=True,
                           ensure_ascii=False, default=str)
    carried = "".join(
        f"<li><code>{e(c.get('argument'))}</code> from "
        f"<code>{e((c.get('source') or {}).get('tool', '?'))}</code> "
        f"({e(c.get('label', ''))}, rule {e(c.get('rule', ''))})</li>"
        for c in request.details.get("arguments") or () if isinstance(c, dict)
    )
    rid = e(request.id)
    target = quote(request.id, safe="")
    choices = "".join(f'<option value="{r}">{r}</option>' for r in REMEMBER)
    forms = "".join(
        f'<form method="post" action="{console.link(f"/approvals/{target}/{action}")}">'
        f"{hidden()}"
        f'<label for="note-{action}-{rid}">Note</label> '
        f'<input id="note-{action}-{rid}" name="note" type="text"> '
        f'<label for="remember-{action}-{rid}">Remember</label> '
        f'<select id="remember-{action}-{rid}" name="remember">{choices}</select> '
        f'<button type="submit">{word} {e(request.tool)}</button></form><br>'
        for action, word in (("approve", "Approve"), ("deny", "Deny"))
    )
    conversation = ""
    if request.conversation:
        link = console.link(f"/conversations/{quote(request.conversation, safe='')}")
        conversation = (f'<dt>Conversation</dt><dd><a href="{link}">'
                        f"{e(request.conversation)}</a> (its timeline)</dd>")
    return (
        f'<section aria-labelledby="h-{rid}"><h3 id="h-{rid}">{e(request.tool)} '
        f"<small>(request <code>{rid}</code>)</small></h3>"
        f"<dl><dt>Arguments (redacted)</dt><dd><pre>{e(arguments)}</pre></dd>"
        f"<dt>Reason</dt><dd>{e(request.reason)}</dd>"
        + (f"<dt>Where the arguments came from</dt><dd><ul>{carried}</ul></dd>" if carried else "")
        + f"<dt>Owner</dt><dd>{e(request.owner or '- (the operator)')}</dd>"
        + conversation
        + f"<dt>Asked</dt><dd>{when(request.created)}</dd>"
        f"<dt>Waits until</dt><dd>{when(request.expires)}</dd></dl>{forms}</section>"
    )


def _remembered_html(console: Console, kept: Any) -> str:
    rid = e(kept.id)
    action = console.link(f"/remembered/{quote(kept.id, safe='')}/forget")
    return (
        f"<li><pre>{e(kept.rule())}</pre>"
        f'<form method="post" action="{action}">'
        f'{hidden()}<button type="submit">Revoke {rid}</button></form></li>'
    )


async def home(console: Console, request: Request, viewer: Viewer) -> Response:
    approvals = console.opened()
    pending = await approvals.apending(viewer.owner, every_owner=viewer.every_owner)
    kept = await approvals.aremembered(viewer.owner, every_owner=viewer.every_owner)
    if viewer.own_only:
        pending = [p for p in pending if p.owner == viewer.owner]
    who = "every owner" if viewer.every_owner else (
        f"{viewer.shown()}" if viewer.own_only else
        f"owner {viewer.owner} and the operator" if viewer.owner else "the operator"
    )
    body = [f"<p>Deciding as <strong>{e(viewer.shown())}</strong>; "
            f"showing the requests of {e(who)}.</p>"]
    if not console.config.approvals.inbox:
        body.append("<p>The inbox is off: a call nobody can be asked about is refused, not "
                    "kept here. <code>[approvals] inbox = true</code> keeps it.</p>")
    body.append(f"<h2>Waiting for a decision ({len(pending)})</h2>")
    body += [_request_html(console, p) for p in pending] or [
        "<p>No approval request is waiting.</p>"
    ]
    body.append(f"<h2>Remembered decisions ({len(kept)})</h2>")
    body.append(f"<ul>{''.join(_remembered_html(console, k) for k in kept)}</ul>" if kept
                else "<p>No decision is remembered.</p>")
    return page(console, request, viewer, "Approvals", "\n".join(body))


def _refusal(console: Console, request: Request, viewer: Viewer, said: str) -> Response:
    back = console.link("/")
    return page(console, request, viewer, "Refused",
                f'<p role="alert">{e(said)}</p><p><a href="{back}">Back</a></p>', 409)


async def decide(console: Console, request: Request, viewer: Viewer) -> Response:
    request_id, action = request.path_params["id"], request.path_params["action"]
    form = await checked_form(console, request, viewer)
    if not isinstance(form, dict):
        await refused_decision(console, viewer, request_id, action, "csrf", str(form.body, "utf-8"))
        return form
    remember = form.get("remember", "once")
    if action not in ("approve", "deny") or remember not in REMEMBER:
        return page(console, request, viewer, "Not decided",
                    "<p>Unknown action or remember choice.</p>", 400)
    approvals = console.opened()
    try:
        if viewer.own_only:
            found = await approvals.inbox.get(request_id)
            if found is not None and found.owner != viewer.owner:
                raise DecisionRefused(
                    f"approval request {request_id} belongs to another owner: only the "
                    "principal whose call waits may decide it", why="owner", request=found,
                )
        decided = await approvals.adecide(
            request_id, action == "approve", by=viewer.owner, note=form.get("note", ""),
            remember=remember,
        )
    except DecisionRefused as refusal:
        await refused_decision(console, viewer, request_id, action, refusal.why, str(refusal),
                               refusal.request)
        return _refusal(console, request, viewer, str(refusal))
    return page(console, request, viewer, f"Request {decided.state}",
                f"<p>{e(decided.id)} {e(decided.state)}: {e(decided.describe())}</p>"
                f'<p><a href="{console.link("/")}">Back to the approvals</a></p>')


async def forget(console: Console, request: Request, viewer: Viewer) -> Response:
    decision_id = request.path_params["id"]
    form = await checked_form(console, request, viewer)
    if not isinstance(form, dict):
        await refused_decision(console, viewer, decision_id, "forget", "csrf",
                               str(form.body, "utf-8"))
        return form
    try:
        forgotten = await console.opened().aforget(decision_id, by=viewer.owner)
    except DecisionRefused as refusal:
        await refused_decision(console, viewer, decision_id, "forget", refusal.why, str(refusal))
        return _refusal(console, request, viewer, str(refusal))
    return page(console, request, viewer, "Decision revoked",
                f"<p>Forgot {e(forgotten.id)}:</p><pre>{e(forgotten.rule())}</pre>"
                f'<p><a href="{console.link("/")}">Back to the approvals</a></p>')


async def refused_decision(  # noqa: PLR0917 - every part of the refusal
    console: Console, viewer: Viewer, target: str, action: str, why: str, said: str,
    found: PendingRequest | None = None,
) -> None:
    """Record a decision (or a revocation) the console refused: who tried, on what, why."""
    recorder = console.recorder
    if recorder is None:
        return
    if found is None and action != "forget":
        try:
            found = await console.opened().inbox.get(target)
        except Exception:  # the store away: the refusal is recorded all the same
            found = None
    recorder.add(decision_refused(found, target=target, action=action, why=why, reason=said,
                                  by=viewer.owner, via="console"))
