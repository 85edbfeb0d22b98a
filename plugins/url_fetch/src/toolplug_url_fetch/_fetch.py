"""The network half of url_fetch: one guarded request, then the body as text, description or file.

Imported only when the tool runs: it pulls in the HTTP client through ``toolplug.http``.
"""

from __future__ import annotations

import contextlib
import hashlib
import http
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from toolplug import ToolFailure
from toolplug.http import (
    FetchResult,
    NetworkError,
    NetworkPolicy,
    fetch,
    guard_failure,
)
from toolplug_url_fetch._rules import AuthHeader, Redactor, url_host

__all__ = ["Request", "describe", "is_text", "perform", "save"]

_TEXT_TYPES: Final = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-www-form-urlencoded",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/graphql",
        "application/sql",
        "application/x-sh",
        "application/x-ndjson",
        "image/svg+xml",
    }
)
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Request:
    """A checked url_fetch request."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None
    timeout: float
    max_bytes: int
    auth: AuthHeader | None


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return scheme, url_host(url), port


def _may_carry_secret(first: str, nxt: str) -> bool:
    """Whether a hop to ``nxt`` may keep the profile's header set for ``first``.

    Only the same host and port, or the same host moving from http to https (default ports):
    never another host, never a downgrade to plain http.
    """
    scheme, host, port = _origin(first)
    new_scheme, new_host, new_port = _origin(nxt)
    if host is None or new_host != host:
        return False
    if (new_scheme, new_port) == (scheme, port):
        return True
    return (scheme, port, new_scheme, new_port) == ("http", 80, "https", 443)


async def perform(request: Request, policy: NetworkPolicy) -> FetchResult:
    """Send the request through the guard, with the auth header only where it may go.

    Raises:
        ToolFailure: the guard refused (PermissionError), the request timed out
            (TimeoutError) or could not be completed (NetworkError); messages redacted.
    """
    base = dict(request.headers)
    auth = request.auth
    first = dict(base)
    if auth is not None:
        first[auth.name] = auth.value
    carrying = auth is not None

    def on_redirect(old_url: str, new_url: str) -> Mapping[str, str]:
        # Every hop's headers are decided here, so the guard's default (which only knows
        # Authorization, Cookie and Proxy-Authorization) never forwards a custom auth header.
        nonlocal carrying
        carrying = carrying and _may_carry_secret(request.url, new_url)
        hop = dict(base)
        if carrying and auth is not None:
            hop[auth.name] = auth.value
        return hop

    redactor = Redactor(*(() if auth is None else (auth.secret,)))
    try:
        return await fetch(
            request.method,
            request.url,
            policy=policy,
            headers=first,
            content=request.body,
            timeout=request.timeout,
            max_bytes=request.max_bytes,
            on_redirect=on_redirect,
        )
    except NetworkError as exc:
        raise guard_failure(exc, redactor.text(str(exc))) from None
    except ValueError as exc:
        raise ToolFailure("ValidationError", redactor.text(str(exc))) from None


def is_text(media_type: str | None, content: bytes) -> bool:
    """Whether a body is text to show, from its media type (or, without one, its bytes)."""
    if media_type:
        return (
            media_type.startswith("text/")
            or media_type in _TEXT_TYPES
            or media_type.endswith(("+json", "+xml"))
        )
    head = content[:4096]
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A character cut at the end of the sample is still text.
        return exc.start >= len(head) - 3
    return True


def reason(status: int) -> str:
    """The reason phrase for a status, e.g. ``Not Found``."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def describe(result: FetchResult) -> dict[str, Any]:
    """The metadata of a response every answer carries."""
    return {
        "url": result.url,
        "final_url": result.final_url,
        "status": result.status,
        "reason": reason(result.status),
        "ok": 200 <= result.status < 300,
        "headers": {
            k: ("(not shown)" if k == "set-cookie" else v) for k, v in result.headers.items()
        },
        "content_type": result.content_type,
        "charset": result.charset,
        "redirects": [{"status": s, "url": u} for s, u in result.redirects],
        "bytes": len(result.content),
        "truncated": result.truncated,
        "sha256": hashlib.sha256(result.content).hexdigest(),
        "elapsed_ms": round(result.elapsed_ms, 1),
    }


def save(content: bytes, target: Path) -> None:
    """Write ``content`` to ``target`` atomically: a temporary file beside it, then a rename.

    The rename replaces a symbolic link at ``target`` rather than writing through it.

    Raises:
        ToolFailure: ExecutionError when the file cannot be written.
    """
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".part-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.replace(temporary, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise ToolFailure(
            "ExecutionError", f"could not write {target.name}: {exc.strerror or exc}"
        ) from None
