"""The record's pages: the History (``/history``: the newest events, filtered as ``toolplug
history`` filters them) and a conversation's timeline (``/conversations/ID``: every event
the record holds of one conversation, oldest first).

The timeline is what the flow guard saw and did: each call the conversation made, with the
labels of what it read (``untrusted``, ``private``), and each guard decision, approval
question and answer, with its rule, its labels and, for each argument that carried outside
data, the call its value came from. Both read the store ``[record]`` names, in a worker
thread (``toolplug.cli._history.open_record``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlencode

from toolplug.cli._console._page import Console, Viewer, e, page, when
from toolplug.cli._history import describe, open_record
from toolplug.cli._parser import _moment
from toolplug.state._events import KINDS, RecordFilters
from toolplug.state._record import SqliteStore

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolplug.config._config import Config
    from toolplug.state._events import RecordEvent

__all__ = ["SHOWN", "TIMELINE", "history", "timeline"]

SHOWN: Final = 100
"""The newest events the history page shows."""
TIMELINE: Final = 1000
"""The oldest events of a conversation its timeline shows."""


async def history(console: Console, request: Request, viewer: Viewer) -> Response:
    asked = request.query_params
    tool = asked.get("tool") or None
    kind = asked.get("kind") or None
    since_text = asked.get("since") or ""
    problems = []
    if kind is not None and kind not in KINDS:
        problems.append(f"kind must be one of {', '.join(KINDS)}")
    since = None
    if since_text:
        try:
            since = _moment(since_text)
        except argparse.ArgumentTypeError as exc:
            problems.append(f"since: {exc}")
    form = _filters_form(console, tool, kind, since_text)
    if problems:
        said = "".join(f"<li>{e(p)}</li>" for p in problems)
        return page(console, request, viewer, "History", f'{form}<ul role="alert">{said}</ul>',
                    400)
    filters = RecordFilters(tool=tool, kind=kind, since=since, limit=SHOWN,
                            principal=viewer.owner if viewer.own_only else None)
    events, missing = await asyncio.to_thread(_query, console.config, filters)
    body = [form, f"<p>The {len(events)} newest matching events (at most {SHOWN}).</p>"]
    if missing is not None:
        body.append(_no_record(console, missing))
    body.append(_events_table(console, events) if events else
                "<p>No events recorded match.</p>")
    return page(console, request, viewer, "History", "\n".join(body))


def _no_record(console: Console, missing: str) -> str:
    return (f"<p>No record at <code>{e(missing)}</code>"
            + ("" if console.config.record.enabled else
               " (<code>[record] enabled = true</code> keeps one)") + ".</p>")


def _query(config: Config, filters: RecordFilters) -> tuple[list[RecordEvent], str | None]:
    """The matching events, and where the record would be when there is none."""
    store = open_record(config)
    try:
        if isinstance(store, SqliteStore) and not store.path.exists():
            return [], store.where
        return store.query(filters), None
    finally:
        store.close()


def _filters_form(console: Console, tool: str | None, kind: str | None, since: str) -> str:
    kinds = '<option value="">any</option>' + "".join(
        f'<option value="{k}"{" selected" if k == kind else ""}>{k}</option>' for k in KINDS
    )
    return (
        f'<form method="get" action="{console.link("/history")}" role="search">'
        '<label for="tool">Tool</label> '
        f'<input id="tool" name="tool" type="text" value="{e(tool)}"> '
        f'<label for="kind">Kind</label> <select id="kind" name="kind">{kinds}</select> '
        '<label for="since">Since (15m, 2h, 7d or an ISO date)</label> '
        f'<input id="since" name="since" type="text" value="{e(since)}"> '
        '<button type="submit">Filter</button></form>'
    )


def _conversation_link(console: Console, conversation: str | None) -> str:
    if not conversation:
        return "-"
    href = console.link(f"/conversations/{quote(conversation, safe='')}")
    return f'<a href="{href}">{e(_short(conversation))}</a>'


def _short(text: str, most: int = 16) -> str:
    return text if len(text) <= most else text[: most - 1] + "\u2026"


def _events_table(console: Console, events: Iterable[RecordEvent]) -> str:
    tool_link = console.link("/history")
    rows = "".join(
        f"<tr><td>{when(ev.time)}</td><td>{e(ev.kind)}</td>"
        f'<td><a href="{tool_link}?{e(urlencode({"tool": ev.tool}))}">{e(ev.tool)}</a></td>'
        f"<td>{e(ev.status or '-')}</td><td>{e(ev.principal or '-')}</td>"
        f"<td>{_conversation_link(console, ev.conversation)}</td>"
        f"<td>{e(describe(ev))}</td></tr>"
        for ev in events
    )
    return (
        "<table><caption>Recorded events, newest first</caption><thead><tr>"
        '<th scope="col">Time</th><th scope="col">Kind</th><th scope="col">Tool</th>'
        '<th scope="col">Status</th><th scope="col">Principal</th>'
        '<th scope="col">Conversation</th><th scope="col">What</th>'
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


# -- a conversation's timeline ----------------------------------------------------------------


async def timeline(console: Console, request: Request, viewer: Viewer) -> Response:
    conversation = request.path_params["id"]
    if not conversation or len(conversation) > 200:
        return page(console, request, viewer, "No such conversation",
                    '<p role="alert">A conversation id is 1 to 200 characters.</p>', 400)
    filters = RecordFilters(conversation=conversation, limit=TIMELINE, oldest_first=True,
                            principal=viewer.owner if viewer.own_only else None)
    events, missing = await asyncio.to_thread(_query, console.config, filters)
    title = f"Conversation {_short(conversation, 40)}"
    body = [f"<p>Conversation <code>{e(conversation)}</code>: what it read and what the "
            "guard decided, oldest first, as the record holds them.</p>"]
    if missing is not None:
        body.append(_no_record(console, missing))
    if not events:
        body.append("<p>The record holds no event of this conversation.</p>")
        return page(console, request, viewer, title, "\n".join(body), 404)
    more = f" (the first {TIMELINE})" if len(events) == TIMELINE else ""
    body.append(_sources_table(events))
    body.append(f'<h2 id="timeline">Timeline ({len(events)} events{more})</h2>')
    body.append('<ol class="timeline" aria-labelledby="timeline">'
                + "".join(_event_item(ev) for ev in events) + "</ol>")
    return page(console, request, viewer, title, "\n".join(body))


def _labels(labels: Iterable[Any]) -> str:
    listed = [str(label) for label in labels]
    return ", ".join(listed) if listed else "trusted"


def _sources_table(events: list[RecordEvent]) -> str:
    """What the conversation read: each call that ran, and the labels of its result (a
    refused or failed call read nothing)."""
    calls = [ev for ev in events if ev.kind == "call" and ev.status == "ok"]
    rows = "".join(
        f"<tr><td>{n}</td><td>{when(ev.time)}</td><td>{e(ev.tool)}</td>"
        f"<td>{e(_labels(ev.labels))}</td><td>{e(ev.status or '-')}</td>"
        f"<td>{e('-' if ev.size is None else ev.size)}</td></tr>"
        for n, ev in enumerate(calls, 1)
    )
    if not rows:
        return "<h2>What it read</h2><p>No call of this conversation ran.</p>"
    return (
        "<h2>What it read</h2><table><caption>The conversation's calls and the labels of "
        "what each returned</caption><thead><tr><th scope=\"col\">Call</th>"
        '<th scope="col">Time</th><th scope="col">Tool</th><th scope="col">Labels</th>'
        '<th scope="col">Status</th><th scope="col">Characters</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


_KIND_WORDS: Final = {
    "call": "call", "guard": "guard decision", "approval.request": "approval asked",
    "approval.decision": "approval answered",
}


def _event_item(ev: RecordEvent) -> str:
    heading = (f"<h3>{when(ev.time)}: {e(_KIND_WORDS.get(ev.kind, ev.kind))} "
               f"<code>{e(ev.tool)}</code>: {e(ev.status or '-')}</h3>")
    facts: list[tuple[str, str]] = []
    if ev.kind == "call":
        # a call that failed or was refused read nothing: its labels are the tool's
        facts.append(("Read" if ev.status == "ok" else "Labels", e(_labels(ev.labels))))
        if ev.size is not None:
            facts.append(("Result", f"{ev.size} characters"
                          + ("" if ev.duration_ms is None else f", {ev.duration_ms:g} ms")))
        if ev.detail.get("error"):
            facts.append(("Error", e(ev.detail["error"])))
    else:
        if ev.rule:
            facts.append(("Rule", f"<code>{e(ev.rule)}</code>"))
        if ev.labels:
            facts.append(("Labels", e(", ".join(str(label) for label in ev.labels))))
        if ev.reason:
            facts.append(("Reason", e(ev.reason)))
        if ev.detail.get("by"):
            facts.append(("By", e(ev.detail["by"])))
    if ev.arguments is not None and ev.kind != "approval.decision":
        shown = json.dumps(ev.arguments, sort_keys=True, ensure_ascii=False, default=str)
        facts.append(("Arguments (redacted)", f"<code>{e(shown)}</code>"))
    if ev.principal:
        facts.append(("Principal", e(ev.principal)))
    listed = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    return f"<li>{heading}<dl>{listed}</dl>{_carried_table(ev)}</li>"


def _carried_table(ev: RecordEvent) -> str:
    """Which argument's value came from which earlier call, and why that matters."""
    carried = [s for s in ev.sources if isinstance(s, dict)]
    if not carried:
        return ""
    rows = []
    for item in carried:
        source = item.get("source") or {}
        came = "-" if not source else (
            f"{source.get('tool', '?')} (call {source.get('index', '?')}"
            + (f", id {source['call_id']}" if source.get("call_id") else "") + ")"
        )
        rows.append(
            f"<tr><td><code>{e(item.get('argument'))}</code></td><td>{e(came)}</td>"
            f"<td>{e(item.get('label', ''))}</td><td><code>{e(item.get('rule', ''))}</code></td>"
            f"<td>{e(item.get('fragment', ''))}</td></tr>"
        )
    return (
        "<table><caption>Where the arguments came from</caption><thead><tr>"
        '<th scope="col">Argument</th><th scope="col">Came from</th><th scope="col">Label</th>'
        '<th scope="col">Rule</th><th scope="col">What matched</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
