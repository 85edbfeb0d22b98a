"""What every page of the console shares: the console's state, who is looking (a
``Viewer``), the page's shell, escaping, the CSRF token of each form and the checks in
front of every request.

A page's HTML is built from escaped text only (``e``): no value a request, a tool or the
record holds can open a tag. Where a form's CSRF token goes is the marker ``TOKEN``, which
escaped text never holds (it has a ``<``), filled in once the body is built.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import html
import ipaddress
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolplug.config._config import Config
    from toolplug.engine._inbox import Approvals
    from toolplug.runtime._registry import Registry
    from toolplug.state._record import Recorder

__all__ = [
    "COOKIE", "TOKEN", "Console", "Viewer", "checked_form", "e", "foreign_host", "hidden",
    "loopback", "page", "when",
]

COOKIE: Final = "toolplug_console"
"""The browser's console session (random; the CSRF token is its HMAC)."""
TOKEN: Final = "<!--csrf-->"
"""Where a form's token goes: escaped text never holds a ``<``, so no request's text can."""
_MOST_BODY: Final = 64 * 1024
_LOOPBACK_NAMES: Final = ("localhost",)


def loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 in brackets or not) is a loopback one."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclasses.dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking at a page, and so whose requests it lists and who decides there."""

    owner: str | None
    """Who decides: ``--as OWNER`` (None: the operator), or the signed-in principal."""
    every_owner: bool = False
    """Listing everyone's requests and decisions (``--all``)."""
    own_only: bool = False
    """A signed-in principal: only its own requests, never the operator's (those with no
    owner), are listed and decided."""
    name: str = ""
    """What the page calls it (a static token's name, a subject), when not ``owner``."""

    def shown(self) -> str:
        """Who is deciding, for a person."""
        if self.name and self.owner:
            return f"{self.name} ({self.owner})"
        return self.owner or "the operator"


Gate = Callable[["Request"], Awaitable["Viewer | Response"]]
"""Who a request comes from, or the response refusing it (a served console's sign-in)."""


@dataclasses.dataclass
class Console:
    """One console: what it reads, who it decides as, where it is served."""

    config: Config
    owner: str | None = None
    every_owner: bool = False
    root: str = ""
    """The path the pages are under: ``""`` for ``toolplug console``, ``/console`` under
    ``serve --http``."""
    gate: Gate | None = None
    """Under ``serve --http``: who signed in (``_signin``); None: ``--as``, loopback only."""
    secret: bytes = dataclasses.field(default_factory=lambda: secrets.token_bytes(32))
    approvals: Approvals | None = None
    recorder: Recorder | None = None
    """Where refused decisions are recorded (None: the record is off)."""
    registry: Registry | None = None
    """The catalog's tools: the served registry, or one loaded at the first visit."""
    loads: Callable[[bool], Registry] | None = None
    """How ``toolplug console`` loads that registry (asking mounted servers when True)."""
    closing: list[Callable[[], None]] = dataclasses.field(default_factory=list)

    def token(self, session: str, viewer: Viewer) -> str:
        """The CSRF token of ``session``'s forms as ``viewer`` (another principal's session
        cookie, or another principal's token in the same browser, never matches)."""
        bound = f"{session}\n{viewer.owner or ''}".encode()
        return hmac.new(self.secret, bound, hashlib.sha256).hexdigest()

    def opened(self) -> Approvals:
        assert self.approvals is not None, "the console's lifespan opens the approvals"
        return self.approvals

    def viewer(self) -> Viewer:
        """``toolplug console``'s viewer: ``--as`` and ``--all``."""
        return Viewer(self.owner, self.every_owner)

    def link(self, path: str) -> str:
        """``path`` (starting ``/``) under the console's root, escaped for an attribute."""
        return html.escape(self.root + path)


def foreign_host(console: Console, request: Request) -> Response | None:
    """``toolplug console``'s refusal when the ``Host`` header names no loopback address
    (DNS rebinding); under ``serve --http`` the server's own Host check is in front."""
    from starlette.responses import PlainTextResponse

    if console.gate is not None:
        return None
    host = request.headers.get("host", "")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    if loopback(name):
        return None
    return PlainTextResponse("the console answers only on a loopback address", status_code=421)


def _session(request: Request) -> tuple[str, bool]:
    """The browser's session cookie, and whether it is new (to be set)."""
    found = request.cookies.get(COOKIE, "")
    if len(found) >= 32 and found.isalnum():
        return found, False
    return secrets.token_hex(32), True


async def checked_form(
    console: Console, request: Request, viewer: Viewer
) -> dict[str, str] | Response:
    """The POSTed form, or the 403 (or 413) that refuses it: a form counts only with the
    token of the session cookie it came with, for the viewer it was made for."""
    from starlette.responses import PlainTextResponse

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
    if not session or not given or not hmac.compare_digest(
        console.token(session, viewer), given
    ):
        return PlainTextResponse(
            "refused: this form's CSRF token is missing or does not match this browser's "
            "console session; reload the page and try again", status_code=403,
        )
    return form


def page(  # noqa: PLR0917 - the parts of every page
    console: Console, request: Request, viewer: Viewer, title: str, body: str,
    status: int = 200, *, headers: dict[str, str] | None = None,
) -> Response:
    """The page ``title`` with ``body`` (escaped HTML), its forms' tokens filled in."""
    from starlette.responses import HTMLResponse

    session, new = _session(request)
    nav = "".join(
        f'<a href="{console.link(path)}">{word}</a> | '
        for path, word in (("/", "Approvals"), ("/history", "History"), ("/catalog", "Catalog"))
    ).removesuffix(" | ")
    if console.gate is not None and viewer.owner:
        nav += (
            f' | signed in as {e(viewer.name or viewer.owner)} '
            f'<form method="post" action="{console.link("/sign-out")}">'
            f'{hidden()}<button type="submit">Sign out</button></form>'
        )
    shown = _SHELL.format(title=html.escape(title), body=body, nav=nav)
    response = HTMLResponse(
        shown.replace(TOKEN, html.escape(console.token(session, viewer))), status_code=status,
        headers=headers,
    )
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'"
    )
    # Not "no-referrer": under it a browser posts a form with "Origin: null", which the
    # server's Origin check (serve --http) refuses; same-origin names no page elsewhere.
    response.headers["Referrer-Policy"] = "same-origin"
    if new:
        response.set_cookie(COOKIE, session, httponly=True, samesite="strict",
                            path=console.root or "/", secure=request.url.scheme == "https")
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
ol.timeline > li {{ margin-bottom: .75rem; }}
.no {{ color: #a51d2d; font-weight: bold; }}
</style>
</head>
<body>
<nav aria-label="console">{nav}</nav>
<main>
<h1>{title}</h1>
{body}
</main>
</body>
</html>
"""


def e(value: Any) -> str:
    """``value`` as HTML text (None: empty)."""
    return html.escape("" if value is None else str(value))


def when(stamp: float | None) -> str:
    """A time for a person: UTC, to the second."""
    return "-" if not stamp else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp)) + " UTC"


def hidden() -> str:
    """A form's CSRF field."""
    return f'<input type="hidden" name="csrf" value="{TOKEN}">'
