"""Host and Origin checks for ``serve --http``, on every bind address: no DNS rebinding.

A web page at ``http://evil.example`` can have its name re-resolved to an address of this
machine and then send requests to the server from the user's browser. Such a request
always names the page's host: ``Host: evil.example:PORT``, ``Origin:
http://evil.example:PORT``. So the server answers only requests whose ``Host`` is a name or
an address it is known by:

- an IP address the server listens on: any loopback address when bound to one (the whole
  ``127.0.0.0/8`` and ``::1``), any address when bound to all of them (``0.0.0.0``, ``::``:
  an address is never a rebinding page's host, only a name is), else the one it is bound
  to;
- ``localhost`` when it listens on loopback or on every address;
- the name given to ``--http`` (``--http mcp.internal:8000``);
- each entry of ``[serve] allowed_hosts``: a name (``mcp.example.com``), a name and port
  (``mcp.example.com:8443``) or a glob (``*.internal.example``); ``"*"`` turns the check
  off, for a proxy in front that checks it.

A request with an ``Origin`` (a browser's) is answered only when that origin's host passes
the same rule (any port, ``http`` or ``https``), or the origin is one of ``[serve]
allowed_origins`` (``https://app.example.com``, exactly; ``"*"`` allows every origin).
Without an ``Origin`` (every non-browser client) only the ``Host`` counts. A refused
request gets HTTP 421 (its Host) or 403 (its Origin), with a JSON-RPC error saying which
setting would allow it. The check wraps the whole application, every path included.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["HostCheck", "HostRules"]

log = logging.getLogger("toolplug")

_INVALID_REQUEST: Final = -32600
_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def _split_host(value: str) -> tuple[str, str | None] | None:
    """``("example.com", "8000")`` from a Host value; IPv6 addresses without brackets.
    None when the value is not a host with an optional port."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[1:end], value[end + 1 :]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return host, rest[1:] or None
    if value.count(":") > 1:  # an IPv6 address without brackets is not a Host value
        return None
    host, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    host = host.rstrip(".")
    return (host, port or None) if host else None


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


@dataclass(frozen=True)
class HostRules:
    """Which ``Host`` and ``Origin`` values a server bound at ``bound`` answers.

    Args:
        bound: The address the server listens on (``127.0.0.1``, ``0.0.0.0``, ``::``,
            ``192.0.2.7``), as the listening socket reports it.
        name: The host given to ``--http`` when it is a name, not an address.
        allowed_hosts: ``[serve] allowed_hosts``.
        allowed_origins: ``[serve] allowed_origins``.
    """

    bound: str
    name: str | None = None
    allowed_hosts: Sequence[str] = ()
    allowed_origins: Sequence[str] = ()

    def host_ok(self, value: str | None) -> bool:
        """True when a request with this ``Host`` header is answered."""
        if "*" in self.allowed_hosts:
            return True
        parts = _split_host(value or "")
        if parts is None:
            return False
        host, port = parts
        if self._known(host):
            return True
        spelled = f"{host}:{port}" if port else host
        return any(
            fnmatch.fnmatchcase(spelled if ":" in pattern else host, pattern.lower())
            for pattern in self.allowed_hosts
        )

    def origin_ok(self, value: str | None) -> bool:
        """True when a request with this ``Origin`` header (None: none sent) is answered."""
        if value is None:
            return True
        if "*" in self.allowed_origins or value.rstrip("/") in {
            o.rstrip("/") for o in self.allowed_origins
        }:
            return True
        scheme, sep, rest = value.partition("://")
        if not sep or scheme.lower() not in ("http", "https") or "/" in rest:
            return False  # "null", a file: page, a browser extension ...
        return self.host_ok(rest)

    def _known(self, host: str) -> bool:
        bound = _address(self.bound)
        address = _address(host)
        everywhere = bound is not None and bound.is_unspecified
        loopback = bound is not None and bound.is_loopback
        if address is not None:
            if everywhere:
                return True
            if loopback:
                return address.is_loopback
            return address == bound
        if host == "localhost":
            return everywhere or loopback
        return self.name is not None and host == self.name.lower().rstrip(".")


class HostCheck:
    """ASGI middleware: every HTTP request's ``Host`` and ``Origin`` checked by ``rules``
    before the application sees it."""

    def __init__(self, app: Any, rules: HostRules) -> None:
        self.app, self.rules = app, rules

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        host = _text(headers.get(b"host"))
        origin = _text(headers.get(b"origin"))
        if not self.rules.host_ok(host):
            log.warning("refused a request for Host %r (not a name of this server)", host)
            await _refuse(send, 421, (
                f"the Host header {host!r} is not a name or address this server answers to "
                "(a guard against DNS rebinding); if it is one of this server's names, add it "
                "to [serve] allowed_hosts"
            ))
            return
        if not self.rules.origin_ok(origin):
            log.warning("refused a request from Origin %r", origin)
            await _refuse(send, 403, (
                f"requests from the web origin {origin!r} are not allowed (a guard against "
                "DNS rebinding and cross-site requests); to allow that site, add it to "
                "[serve] allowed_origins"
            ))
            return
        await self.app(scope, receive, send)


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("latin-1")


async def _refuse(send: _Send, status: int, message: str) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": _INVALID_REQUEST, "message": message}}
    ).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    })
    await send({"type": "http.response.body", "body": body})
