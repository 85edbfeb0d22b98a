"""The console under ``serve --http``: who is signed in, and the sign-in page.

With ``[serve.auth] console_scope`` set, the server answers the console's pages at
``/console/`` (``toolplug.serve._http`` routes them here). Every page needs a token of the
server's issuer that grants that scope (and ``required_scopes``), verified by the server's
own ``Verifier``: as ``Authorization: Bearer`` on each request (a program), or pasted once
in the sign-in form (a person). A pasted token is verified and never kept: the browser is
given a cookie (``HttpOnly``, ``SameSite=Strict``, ``Secure`` over HTTPS) holding the
principal, its scopes and an expiry (the token's, at most eight hours), signed with an HMAC
under a secret drawn when the server starts; a cookie whose signature or time fails is no
sign-in.

No token: 401, with the sign-in page and the server's ``WWW-Authenticate`` challenge. A
token without the scope: 403, saying which scope is missing. The signed-in principal is the
``principal:...`` owner its calls have (``serve._auth.principal``), so its pages list its
own requests and remembered decisions, and it decides those only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolplug.cli._console._page import Console, Viewer, checked_form, e, hidden, page
from toolplug.serve._auth import Verifier, metadata_url, principal
from toolplug.serve._http import CONSOLE_PATH

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolplug.config._settings import AuthSettings
    from toolplug.runtime._registry import Registry

__all__ = ["AUTH_COOKIE", "PREFIX", "SignIn", "served_console"]

PREFIX: Final = CONSOLE_PATH
"""Where ``serve --http`` serves the console."""
AUTH_COOKIE: Final = "toolplug_console_auth"
_LONGEST: Final = 8 * 3600.0
"""The longest a sign-in lasts, whatever the token's own expiry."""


class SignIn:
    """The served console's gate: a ``Viewer`` for a request with a token (or a sign-in
    cookie) granting the console's scope, else the 401 or 403 page refusing it."""

    def __init__(self, console: Console, verifier: Verifier, auth: AuthSettings) -> None:
        assert auth.console_scope is not None, "a served console has its scope"
        self.console, self.verifier = console, verifier
        self.scope = auth.console_scope
        self.needed = [self.scope, *(s for s in auth.required_scopes if s != self.scope)]
        self.challenge = f'Bearer resource_metadata="{metadata_url(auth.audience)}"'

    # -- who it is -------------------------------------------------------------------

    async def __call__(self, request: Request) -> Viewer | Response:
        given = request.headers.get("authorization", "")
        if given[:7].lower() == "bearer ":
            token = await self.verifier.verify_token(given[7:].strip())
            if token is None:
                return self.signing_in(request, 401, "The bearer token sent is not valid for "
                                       "this server (expired, for another audience, or "
                                       "unknown).", error="invalid_token")
            return self._admitted(request, principal(token), _name(token), token.scopes)
        kept = self._read(request.cookies.get(AUTH_COOKIE, ""))
        if kept is None:
            return self.signing_in(request, 401, "")
        owner, name, scopes = kept
        return self._admitted(request, owner, name, scopes)

    def _admitted(
        self, request: Request, owner: str, name: str, scopes: list[str]
    ) -> Viewer | Response:
        lacking = [s for s in self.needed if s not in scopes]
        viewer = Viewer(owner, own_only=True, name=name)
        if lacking:
            return page(self.console, request, Viewer(None), "Not allowed", (
                f'<p role="alert">Signed in as {e(name or owner)}, whose token lacks the '
                f"scope <code>{e(' '.join(lacking))}</code> the console needs: ask the "
                "authorization server for a token with it, then sign in again.</p>"
                + self._form()
            ), 403, headers={"WWW-Authenticate": (
                f'Bearer error="insufficient_scope", scope="{" ".join(self.needed)}"'
            )})
        return viewer

    # -- the cookie ------------------------------------------------------------------

    def _sign(self, data: bytes) -> str:
        return hmac.new(self.console.secret, b"signin\n" + data, hashlib.sha256).hexdigest()

    def cookie(self, owner: str, name: str, scopes: list[str], expires: float) -> str:
        data = json.dumps({"o": owner, "n": name, "s": scopes, "x": expires},
                          separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(data).decode().rstrip("=") + "." + self._sign(data)

    def _read(self, value: str) -> tuple[str, str, list[str]] | None:
        encoded, _, mac = value.partition(".")
        if not encoded or len(value) > 8192:
            return None
        try:
            data = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        except ValueError:
            return None
        if not hmac.compare_digest(self._sign(data), mac):
            return None
        try:
            kept = json.loads(data)
            owner, name, scopes, expires = kept["o"], kept["n"], kept["s"], float(kept["x"])
        except (ValueError, KeyError, TypeError):
            return None
        if expires <= time.time():
            return None
        return str(owner), str(name), [str(s) for s in scopes]

    # -- the pages -------------------------------------------------------------------

    def _form(self) -> str:
        return (
            f'<form method="post" action="{self.console.link("/sign-in")}">{hidden()}'
            '<label for="token">Access token</label> '
            '<input id="token" name="token" type="password" autocomplete="off" required> '
            '<button type="submit">Sign in</button></form>'
        )

    def signing_in(
        self, request: Request, status: int, said: str, *, error: str = ""
    ) -> Response:
        """The sign-in page (``status``: 200 asked for, 401 for a page that needs it)."""
        alert = f'<p role="alert">{e(said)}</p>' if said else ""
        body = (
            f"{alert}<p>The console needs an access token of this server's authorization "
            f"server granting the scope <code>{e(self.scope)}</code>. Paste it once: the "
            "token is checked and not kept; this browser keeps a signed cookie saying who "
            "you are until the token expires (at most eight hours).</p>" + self._form()
        )
        challenge = self.challenge + (f', error="{error}"' if error else "")
        headers = {"WWW-Authenticate": challenge} if status == 401 else None
        return page(self.console, request, Viewer(None), "Sign in", body, status,
                    headers=headers)

    async def sign_in(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        form = await checked_form(self.console, request, Viewer(None))
        if not isinstance(form, dict):
            return form
        token = await self.verifier.verify_token(form.get("token", "").strip())
        if token is None:
            return self.signing_in(request, 401, "That token is not valid for this server "
                                   "(expired, for another audience, or unknown).",
                                   error="invalid_token")
        owner, name = principal(token), _name(token)
        admitted = self._admitted(request, owner, name, token.scopes)
        if not isinstance(admitted, Viewer):
            return admitted
        expires = time.time() + _LONGEST
        if token.expires_at is not None:
            expires = min(expires, float(token.expires_at))
        response = RedirectResponse(self.console.link("/"), status_code=303)
        response.set_cookie(
            AUTH_COOKIE, self.cookie(owner, name, list(token.scopes), expires),
            max_age=max(int(expires - time.time()), 1), httponly=True, samesite="strict",
            path=self.console.root, secure=request.url.scheme == "https",
        )
        return response

    async def sign_out(self, request: Request, viewer: Viewer) -> Response:
        from starlette.responses import RedirectResponse

        form = await checked_form(self.console, request, viewer)
        if not isinstance(form, dict):
            return form
        response = RedirectResponse(self.console.link("/sign-in"), status_code=303)
        response.delete_cookie(AUTH_COOKIE, path=self.console.root)
        return response


def _name(token: Any) -> str:
    return str(token.subject or token.client_id or "")


def served_console(registry: Registry, auth: AuthSettings, base: Path | None) -> Any:
    """The console's ASGI app for ``serve --http``, at ``PREFIX``: the served registry's
    approvals, record and tools, each page behind ``SignIn``."""
    from toolplug.cli._console import routes

    console = Console(registry.config, root=PREFIX, approvals=registry.approvals,
                      recorder=registry.record, registry=registry)
    gate = SignIn(console, Verifier(auth, base=base), auth)
    console.gate = gate
    return routes(console, gate)
