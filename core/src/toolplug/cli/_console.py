"""``toolplug console``: the person in the loop, as pages in a browser.

A small ASGI app (Starlette, served by uvicorn: both come with the MCP SDK, the ``mcp``
extra) on a loopback address only: nothing here authenticates a person yet, so a
non-loopback ``--host`` is refused. Every page is server-rendered HTML with plain forms
(no JavaScript): the pending approval requests with approve and deny forms, the remembered
decisions with a revoke form, and the record's newest calls with the filters of
``toolplug history``.

Nothing here decides or lists on its own: a decision is ``Approvals.adecide`` (as
``toolplug approvals approve`` calls it), so a forged, replayed or expired one is refused
the same way; the history is ``toolplug.cli._history.open_record`` and the store's
``query``, as ``toolplug history`` reads it.

Every form carries a CSRF token: the HMAC, under a secret drawn when the process starts, of
a random session cookie (``SameSite=Strict``, ``HttpOnly``) the first page set. A POST whose
token is missing or does not match that cookie is answered 403 and changes nothing. A
request whose ``Host`` is not a loopback name is refused too (a page elsewhere that rebinds
its name to 127.0.0.1 cannot reach the console).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import hmac
import html
import ipaddress
import secrets
import socket
import time
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, quote, urlencode

from toolplug.cli._history import describe, open_record
from toolplug.cli._parser import EXIT_OK, EXIT_USAGE, _Exit, _moment
from toolplug.engine._inbox import open_approvals
from toolplug.state._events import RecordFilters
from toolplug.state._inbox import DecisionRefused
from toolplug.state._record import SqliteStore

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolplug.config._config import Config
    from toolplug.engine._inbox import Approvals
    from toolplug.state._events import RecordEvent

__all__ = ["DEFAULT_PORT", "build_app", "run_console"]

DEFAULT_PORT: Final = 8765
SHOWN: Final = 100
"""The newest events the history page shows."""
COOKIE: Final = "toolplug_console"
_KINDS: Final = ("call", "approval.request", "approval.decision", "guard")
_REMEMBER: Final = ("once", "conversation", "always")
_MOST_BODY: Final = 64 * 1024
_LOOPBACK_NAMES: Final = ("localhost",)


def _loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_console(args: argparse.Namespace, config: Config) -> int:
    """Serve the console until interrupted; the exit code."""
    if not _loopback(args.host):
        raise _Exit(EXIT_USAGE, (
            f"toolplug console serves only a loopback address (127.0.0.1, ::1, localhost), "
            f"not {args.host!r}: authentication is not built yet, so anyone who reached it "
            "could decide your approvals. Reach it from elsewhere through an SSH tunnel "
            "(ssh -L 8765:127.0.0.1:8765 HOST)"
        ))
    try:
        import uvicorn
    except ImportError as exc:
        raise _Exit(EXIT_USAGE, (
            f"toolplug console needs Starlette and uvicorn, which could not be imported ({exc});"
            ' install them with: pip install "toolplug[mcp]"'
        )) from None
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms delayed ACK
    try:
        listener.bind((args.host.strip("[]"), args.port))
        listener.listen(128)  # listening before the address is printed: a client may connect
    except OSError as exc:
        listener.close()
        raise _Exit(EXIT_USAGE, f"cannot listen on {args.host}:{args.port}: {exc}") from None
    port = listener.getsockname()[1]
    shown = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    app = build_app(config, owner=args.owner, every_owner=args.every_owner)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"toolplug console: http://{shown}:{port}/ (Ctrl-C stops it)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve(sockets=[listener]))
    listener.close()
    return EXIT_OK


@dataclasses.dataclass
class _Console:
    config: Config
    owner: str | None
    every_owner: bool
    secret: bytes = dataclasses.field(default_factory=lambda: secrets.token_bytes(32))
    approvals: Approvals | None = None

    def token(self, session: str) -> str:
        return hmac.new(self.secret, session.encode(), hashlib.sha256).hexdigest()

    def opened(self) -> Approvals:
        assert self.approvals is not None, "the console's lifespan opens the approvals"
        return self.approvals


def build_app(config: Config, *, owner: str | None = None, every_owner: bool = False) -> Any:
    """The console's ASGI app, deciding as ``owner`` (``every_owner``: listing everyone's)."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    console = _Console(config, owner, every_owner)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        console.approvals = open_approvals(config)
        try:
            yield
        finally:
            await console.approvals.aclose()

    async def home(request: Request) -> Response:
        return await _home(console, request)

    async def history(request: Request) -> Response:
        return await _history(console, request)

    async def decide(request: Request) -> Response:
        return await _decide(console, request)

    async def forget(request: Request) -> Response:
        return await _forget(console, request)

    return Starlette(routes=[
        Route("/", home, methods=["GET"]),
        Route("/history", history, methods=["GET"]),
        Route("/approvals/{id}/{action}", decide, methods=["POST"]),
        Route("/remembered/{id}/forget", forget, methods=["POST"]),
    ], lifespan=lifespan)


# -- the guards -----------------------------------------------------------------------------


def _foreign_host(request: Request) -> Response | None:
    """A refusal when the ``Host`` header names no loopback address (DNS rebinding)."""
    from starlette.responses import PlainTextResponse

    host = request.headers.get("host", "")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    if _loopback(name):
        return None
    return PlainTextResponse("the console answers only on a loopback address", status_code=421)


def _session(request: Request) -> tuple[str, bool]:
    """The browser's session cookie, and whether it is new (to be set)."""
    found = request.cookies.get(COOKIE, "")
    if len(found) >= 32 and found.isalnum():
        return found, False
    return secrets.token_hex(32), True


async def _checked_form(console: _Console, request: Request) -> dict[str, str] | Response:
    """The POSTed form, or the 403 (or 413) that refuses it: a form counts only with the
    token of the session cookie it came with."""
    from starlette.responses import PlainTextResponse

    refused = _foreign_host(request)
    if refused is not None:
        return refused
    body = await request.body()
    if len(body) > _MOST_BODY:
        return PlainTextResponse("the form is too large", status_code=413)
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        parsed = {}
    form = {k: v[0] for k, v in parsed.items() if v}
    session = request.cookies.get(COOKIE, "")
    given = form.get("csrf", "")
    if not session or not given or not hmac.compare_digest(console.token(session), given):
        return PlainTextResponse(
            "refused: this form's CSRF token is missing or does not match this browser's "
            "console session; reload the page and try again", status_code=403,
        )
    return form


# -- the pages ------------------------------------------------------------------------------


def _page(
    console: _Console, request: Request, title: str, body: str, status: int = 200
) -> Response:
    from starlette.responses import HTMLResponse

    session, new = _session(request)
    filled = body.replace(_TOKEN, html.escape(console.token(session)))
    response = HTMLResponse(_SHELL.format(title=html.escape(title), body=filled),
                            status_code=status)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'"
    )
    response.headers["Referrer-Policy"] = "no-referrer"
    if new:
        response.set_cookie(COOKIE, session, httponly=True, samesite="strict", path="/")
    return response


_SHELL: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} - toolplug console</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1rem 2rem; line-height: 1.4; }}
table {{ border-collapse: collapse; }}
th, td {{ border-bottom: 1px solid #ccc; padding: .25rem .5rem; text-align: left;
  vertical-align: top; }}
code, pre {{ white-space: pre-wrap; }}
form {{ display: inline-block; margin: .25rem 0; }}
:focus {{ outline: 3px solid #1a5fb4; }}
</style>
</head>
<body>
<nav aria-label="console"><a href="/">Approvals</a> | <a href="/history">History</a></nav>
<main>
<h1>{title}</h1>
{body}
</main>
</body>
</html>
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _when(stamp: float | None) -> str:
    return "-" if not stamp else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp)) + " UTC"


_TOKEN: Final = "<!--csrf-->"
"""Where a form's token goes: escaped text never holds a ``<``, so no request's text can."""


def _hidden() -> str:
    return f'<input type="hidden" name="csrf" value="{_TOKEN}">'


def _request_html(request: Any) -> str:
    import json

    arguments = json.dumps(dict(request.arguments), indent=2, sort_keys=True,
                           ensure_ascii=False, default=str)
    carried = "".join(
        f"<li><code>{_e(c.get('argument'))}</code> from "
        f"<code>{_e((c.get('source') or {}).get('tool', '?'))}</code> "
        f"({_e(c.get('label', ''))}, rule {_e(c.get('rule', ''))})</li>"
        for c in request.details.get("arguments") or () if isinstance(c, dict)
    )
    rid = _e(request.id)
    target = quote(request.id, safe="")
    choices = "".join(f'<option value="{r}">{r}</option>' for r in _REMEMBER)
    forms = "".join(
        f'<form method="post" action="/approvals/{target}/{action}">{_hidden()}'
        f'<label for="note-{action}-{rid}">Note</label> '
        f'<input id="note-{action}-{rid}" name="note" type="text"> '
        f'<label for="remember-{action}-{rid}">Remember</label> '
        f'<select id="remember-{action}-{rid}" name="remember">{choices}</select> '
        f'<button type="submit">{word} {_e(request.tool)}</button></form><br>'
        for action, word in (("approve", "Approve"), ("deny", "Deny"))
    )
    return (
        f'<section aria-labelledby="h-{rid}"><h3 id="h-{rid}">{_e(request.tool)} '
        f"<small>(request <code>{rid}</code>)</small></h3>"
        f"<dl><dt>Arguments (redacted)</dt><dd><pre>{_e(arguments)}</pre></dd>"
        f"<dt>Reason</dt><dd>{_e(request.reason)}</dd>"
        + (f"<dt>Where the arguments came from</dt><dd><ul>{carried}</ul></dd>" if carried else "")
        + f"<dt>Owner</dt><dd>{_e(request.owner or '- (the operator)')}</dd>"
        f"<dt>Asked</dt><dd>{_when(request.created)}</dd>"
        f"<dt>Waits until</dt><dd>{_when(request.expires)}</dd></dl>{forms}</section>"
    )


def _remembered_html(kept: Any) -> str:
    rid = _e(kept.id)
    return (
        f"<li><pre>{_e(kept.rule())}</pre>"
        f'<form method="post" action="/remembered/{quote(kept.id, safe="")}/forget">'
        f'{_hidden()}<button type="submit">Revoke {rid}</button></form></li>'
    )


async def _home(console: _Console, request: Request) -> Response:
    refused = _foreign_host(request)
    if refused is not None:
        return refused
    approvals = console.opened()
    pending = await approvals.apending(console.owner, every_owner=console.every_owner)
    kept = await approvals.aremembered(console.owner, every_owner=console.every_owner)
    who = "every owner" if console.every_owner else (
        f"owner {console.owner} and the operator" if console.owner else "the operator"
    )
    body = [f"<p>Deciding as <strong>{_e(console.owner or 'the operator')}</strong>; "
            f"showing the requests of {_e(who)}.</p>"]
    if not console.config.approvals.inbox:
        body.append("<p>The inbox is off: a call nobody can be asked about is refused, not "
                    "kept here. <code>[approvals] inbox = true</code> keeps it.</p>")
    body.append(f"<h2>Waiting for a decision ({len(pending)})</h2>")
    body += [_request_html(p) for p in pending] or ["<p>No approval request is waiting.</p>"]
    body.append(f"<h2>Remembered decisions ({len(kept)})</h2>")
    body.append(f"<ul>{''.join(_remembered_html(k) for k in kept)}</ul>" if kept
                else "<p>No decision is remembered.</p>")
    return _page(console, request, "Approvals", "\n".join(body))


async def _decide(console: _Console, request: Request) -> Response:
    form = await _checked_form(console, request)
    if not isinstance(form, dict):
        return form
    action = request.path_params["action"]
    remember = form.get("remember", "once")
    if action not in ("approve", "deny") or remember not in _REMEMBER:
        return _page(console, request, "Not decided",
                     "<p>Unknown action or remember choice.</p>", 400)
    try:
        decided = await console.opened().adecide(
            request.path_params["id"], action == "approve", by=console.owner,
            note=form.get("note", ""), remember=remember,
        )
    except DecisionRefused as refusal:
        return _page(console, request, "Refused",
                     f'<p role="alert">{_e(refusal)}</p><p><a href="/">Back</a></p>', 409)
    return _page(console, request, f"Request {decided.state}",
                 f"<p>{_e(decided.id)} {_e(decided.state)}: {_e(decided.describe())}</p>"
                 '<p><a href="/">Back to the approvals</a></p>')


async def _forget(console: _Console, request: Request) -> Response:
    form = await _checked_form(console, request)
    if not isinstance(form, dict):
        return form
    try:
        forgotten = await console.opened().aforget(request.path_params["id"], by=console.owner)
    except DecisionRefused as refusal:
        return _page(console, request, "Refused",
                     f'<p role="alert">{_e(refusal)}</p><p><a href="/">Back</a></p>', 409)
    return _page(console, request, "Decision revoked",
                 f"<p>Forgot {_e(forgotten.id)}:</p><pre>{_e(forgotten.rule())}</pre>"
                 '<p><a href="/">Back to the approvals</a></p>')


async def _history(console: _Console, request: Request) -> Response:
    refused = _foreign_host(request)
    if refused is not None:
        return refused
    asked = request.query_params
    tool = asked.get("tool") or None
    kind = asked.get("kind") or None
    since_text = asked.get("since") or ""
    problems = []
    if kind is not None and kind not in _KINDS:
        problems.append(f"kind must be one of {', '.join(_KINDS)}")
    since = None
    if since_text:
        try:
            since = _moment(since_text)
        except argparse.ArgumentTypeError as exc:
            problems.append(f"since: {exc}")
    form = _filters_form(tool, kind, since_text)
    if problems:
        said = "".join(f"<li>{_e(p)}</li>" for p in problems)
        return _page(console, request, "History", f'{form}<ul role="alert">{said}</ul>', 400)
    filters = RecordFilters(tool=tool, kind=kind, since=since, limit=SHOWN)
    events, missing = await asyncio.to_thread(_query, console.config, filters)
    body = [form, f"<p>The {len(events)} newest matching events (at most {SHOWN}).</p>"]
    if missing is not None:
        body.append(f"<p>No record at <code>{_e(missing)}</code>"
                    + ("" if console.config.record.enabled else
                       " (<code>[record] enabled = true</code> keeps one)") + ".</p>")
    body.append(_events_table(events) if events else "<p>No events recorded match.</p>")
    return _page(console, request, "History", "\n".join(body))


def _query(config: Config, filters: RecordFilters) -> tuple[list[RecordEvent], str | None]:
    """The matching events, and where the record would be when there is none."""
    store = open_record(config)
    try:
        if isinstance(store, SqliteStore) and not store.path.exists():
            return [], store.where
        return store.query(filters), None
    finally:
        store.close()


def _filters_form(tool: str | None, kind: str | None, since: str) -> str:
    kinds = '<option value="">any</option>' + "".join(
        f'<option value="{k}"{" selected" if k == kind else ""}>{k}</option>' for k in _KINDS
    )
    return (
        '<form method="get" action="/history" role="search">'
        '<label for="tool">Tool</label> '
        f'<input id="tool" name="tool" type="text" value="{_e(tool)}"> '
        f'<label for="kind">Kind</label> <select id="kind" name="kind">{kinds}</select> '
        '<label for="since">Since (15m, 2h, 7d or an ISO date)</label> '
        f'<input id="since" name="since" type="text" value="{_e(since)}"> '
        '<button type="submit">Filter</button></form>'
    )


def _events_table(events: Iterable[RecordEvent]) -> str:
    rows = "".join(
        f"<tr><td>{_when(e.time)}</td><td>{_e(e.kind)}</td>"
        f'<td><a href="/history?{_e(urlencode({"tool": e.tool}))}">{_e(e.tool)}</a></td>'
        f"<td>{_e(e.status or '-')}</td><td>{_e(e.principal or '-')}</td>"
        f"<td>{_e(describe(e))}</td></tr>"
        for e in events
    )
    return (
        "<table><caption>Recorded events, newest first</caption><thead><tr>"
        '<th scope="col">Time</th><th scope="col">Kind</th><th scope="col">Tool</th>'
        '<th scope="col">Status</th><th scope="col">Principal</th><th scope="col">What</th>'
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )

