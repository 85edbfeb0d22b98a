"""Where ``toolplug serve --http`` listens: the address parsed, whether it is loopback,
and the listening socket. The standard library alone, so ``serve`` checks its address
before the MCP SDK is imported."""

from __future__ import annotations

import ipaddress
import socket

from toolplug.contract._errors import UsageError

__all__ = ["is_address", "is_loopback", "listen", "parse_address"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address (a name other than
    ``localhost`` may resolve anywhere, so it is not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_address(host: str) -> bool:
    """Whether ``host`` is an IP address rather than a name."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``PORT`` (on 127.0.0.1) as ``(host, port)``.

    Raises:
        UsageError: the text is not an address with a port from 0 to 65535.
    """
    raw = text.strip()
    if raw.isdigit():
        host, port = "", raw
    elif raw.startswith("["):
        host, found, port = raw[1:].partition("]:")
        port = port if found else ""
    else:
        host, _, port = raw.rpartition(":")
        if ":" in host:  # a bare IPv6 address: ambiguous without brackets
            port = ""
    if not port.isdigit() or int(port) > 65535:
        raise UsageError(
            "--http expects HOST:PORT (such as 127.0.0.1:8000), [IPv6]:PORT or a port alone; "
            f"received {text!r}"
        )
    return host or "127.0.0.1", int(port)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket bound here, so a busy port is our error to report, not uvicorn's.

    With TCP_NODELAY, which each accepted connection inherits: asyncio sets it only on
    sockets whose ``proto`` says TCP, and ``create_server`` leaves ``proto`` 0, so without
    it every answer waited on Nagle's algorithm and the client's delayed ACK (~40 ms a
    request instead of ~4).
    """
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        listener = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise UsageError(f"cannot serve MCP on {host}:{port}: {exc.strerror or exc}") from None
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return listener
