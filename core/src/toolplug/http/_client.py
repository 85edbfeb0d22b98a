"""The guarded HTTP client that network plugins use (see ``toolplug.http``)."""

from __future__ import annotations

import asyncio
import json as jsonlib
import math
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._network import NetworkPolicy
from toolplug.contract._tool import ToolFailure
from toolplug.http._errors import NetworkError
from toolplug.http._wire import TOKEN, FetchResult, checked_headers

if TYPE_CHECKING:
    import ssl

    import httpx

    from toolplug.http._netguard import Resolver

__all__ = ["RedirectHook", "fetch", "fetch_sync", "guard_failure", "new_client"]

RedirectHook = Callable[[str, str], Mapping[str, str] | None]
"""``on_redirect(old_url, new_url)``: the headers for the next hop, or ``None`` for the default."""

_NO_JSON: Final[Any] = object()
INSTALL_LINE: Final = 'pip install "toolplug[http]"'
"""What to run when httpx or anyio is missing."""


async def fetch(
    method: str,
    url: str,
    *,
    policy: NetworkPolicy,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
    json: Any = _NO_JSON,
    timeout: float | None = None,
    deadline: float | None = None,
    max_bytes: int | None = None,
    follow_redirects: bool = True,
    client: httpx.AsyncClient | None = None,
    on_redirect: RedirectHook | None = None,
    resolve: Resolver | None = None,
) -> FetchResult:
    """Make one guarded HTTP request and return the final response.

    Args:
        method: The HTTP method, e.g. ``"GET"``.
        url: An absolute http(s) URL. A user name and password in it become Basic
            authentication (for that origin only) and never appear in messages or results.
        policy: The ``[network]`` policy (``ToolContext.network`` in a tool).
        headers: Request headers. ``Host``, ``Connection`` and ``Content-Length`` are set here.
            ``User-Agent`` defaults to ``policy.user_agent``; ``Accept-Encoding`` to
            ``gzip, deflate``, which are decoded here (other codings come back as received).
        content: The request body.
        json: A value to send as a JSON body instead of ``content``.
        timeout: Seconds for each connect, read, write and pool wait;
            ``policy.timeout_seconds`` by default.
        deadline: Seconds for the whole fetch, redirects and body included; twice
            ``timeout`` by default.
        max_bytes: The most body bytes kept; ``policy.max_bytes`` by default.
        follow_redirects: False returns a 3xx response as it is.
        client: An ``httpx.AsyncClient`` to send through, for connection reuse; one from
            ``new_client()`` is best. The client's default headers, cookies and auth are not
            used. By default a client is made for this call and closed after it.
        on_redirect: Called as ``on_redirect(old_url, new_url)`` before each redirect is
            followed; a mapping it returns becomes the next hop's headers as they are (no
            credential stripping: the callback decided), ``None`` keeps the default (the
            current headers, minus credentials when the origin changes).
        resolve: The resolver for the network guard; ``socket.getaddrinfo`` by default.

    Returns:
        The final response, its body read up to ``max_bytes``.

    Raises:
        NetworkRefused: The URL or a redirect target is not allowed (``TooManyRedirects``
            for too many redirects or a loop).
        NetworkUnreachable: A host did not resolve, no connection could be made, or the
            connection broke before the response was complete.
        NetworkTimeout: A wait took longer than ``timeout`` (``phase`` says which), or the
            whole fetch longer than ``deadline`` (``phase == "total"``).
        ValueError: The arguments themselves are wrong.
    """
    verb, body, request_headers, limit, total, cap = _arguments(
        method,
        headers=headers,
        content=content,
        json=json,
        timeout=timeout,
        deadline=deadline,
        max_bytes=max_bytes,
        policy=policy,
    )
    result: FetchResult = await _transport().send(
        verb,
        url,
        request_headers,
        body,
        client=client,
        policy=policy,
        limit=limit,
        cap=cap,
        total=total,
        follow=follow_redirects,
        on_redirect=on_redirect,
        resolve=resolve,
    )
    return result


def fetch_sync(
    method: str,
    url: str,
    *,
    policy: NetworkPolicy,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
    json: Any = _NO_JSON,
    timeout: float | None = None,
    deadline: float | None = None,
    max_bytes: int | None = None,
    follow_redirects: bool = True,
    on_redirect: RedirectHook | None = None,
    resolve: Resolver | None = None,
) -> FetchResult:
    """``fetch`` for synchronous code: runs it on an event loop of its own.

    Takes the same arguments as ``fetch`` except ``client``: an ``httpx.AsyncClient`` belongs
    to one event loop, and each call here runs on a new one.

    Raises:
        RuntimeError: Called from a thread with a running event loop; ``await fetch(...)``
            there instead (blocking would stall every other task).
        NetworkRefused, NetworkUnreachable, NetworkTimeout, ValueError: As ``fetch``.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "fetch_sync() was called from a running event loop; use `await fetch(...)` there"
        )
    return asyncio.run(
        fetch(
            method,
            url,
            policy=policy,
            headers=headers,
            content=content,
            json=json,
            timeout=timeout,
            deadline=deadline,
            max_bytes=max_bytes,
            follow_redirects=follow_redirects,
            on_redirect=on_redirect,
            resolve=resolve,
        )
    )


def guard_failure(exc: NetworkError, message: str | None = None) -> ToolFailure:
    """The structured error a tool returns for a failed guarded request.

    The error type and whether a retry may help come from the exception's class: a refusal is
    a ``PermissionError`` (not retryable), a timeout a ``TimeoutError``, anything else a
    ``NetworkError`` (both retryable). Every network plugin maps the network guard's errors
    through here.

    Args:
        exc: What ``fetch`` raised.
        message: The text for the model; by default the exception's own, which names the
            URL (credentials removed). Pass ``f"{what}: {exc.reason}"`` when the URL itself
            must not be shown, and run it through your redaction if it may hold a secret.
    """
    return ToolFailure(
        exc.error_type, str(exc) if message is None else message, retry_possible=exc.retry_possible
    )


def new_client(
    *, max_connections: int = 20, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` to pass as ``fetch(client=...)`` for connection reuse.

    Requests made with its own methods (``client.get``) are **not** guarded: send them
    through ``fetch``. It keeps one connection pool per (scheme, address, port, TLS server
    name), so a connection opened for one host is never reused for another host that shares
    its address, keeps no cookies, and ignores proxy and ``.netrc`` settings from the
    environment. Close it with ``await client.aclose()`` or ``async with``.

    Args:
        max_connections: The most connections per pool.
        verify: TLS verification: True (system/certifi trust store), False, or an SSL context.
    """
    made: httpx.AsyncClient = _transport().new_client(
        max_connections=max_connections, verify=verify
    )
    return made


def _transport() -> ModuleType:
    """``toolplug.http._transport``, imported here once: the one place httpx is asked for.

    Raises:
        ImportError: httpx or anyio is not installed; the message has the line to install them.
    """
    try:
        from toolplug.http import _transport
    except ImportError as exc:
        raise ImportError(
            f"toolplug.http needs httpx and anyio, which could not be imported ({exc}); "
            f"install them with: {INSTALL_LINE}"
        ) from exc
    return _transport


# --- internals ----------------------------------------------------------------------------


def _arguments(
    method: str,
    *,
    headers: Mapping[str, str] | None,
    content: bytes | None,
    json: Any,
    timeout: float | None,
    deadline: float | None,
    max_bytes: int | None,
    policy: NetworkPolicy,
) -> tuple[str, bytes | None, dict[str, str], float, float, int]:
    """Check ``fetch``'s arguments; raise ``ValueError`` naming the one that is wrong."""
    if not isinstance(method, str) or not TOKEN.fullmatch(method):
        raise ValueError(f"method: expected an HTTP method such as 'GET', got {method!r}")
    request_headers = checked_headers(headers or {}, "headers")
    if content is not None and json is not _NO_JSON:
        raise ValueError("pass either content= or json=, not both")
    if content is not None and not isinstance(content, bytes | bytearray):
        raise ValueError(f"content: expected bytes, got {type(content).__name__}")
    body = bytes(content) if content is not None else None
    if json is not _NO_JSON:
        body = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":")).encode()
        if not any(name.lower() == "content-type" for name in request_headers):
            request_headers["Content-Type"] = "application/json"
    limit = policy.timeout_seconds if timeout is None else timeout
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit < math.inf:
        raise ValueError(f"timeout: expected a finite number of seconds > 0, got {timeout!r}")
    total = 2 * limit if deadline is None else deadline
    if isinstance(total, bool) or not isinstance(total, int | float) or not 0 < total < math.inf:
        raise ValueError(f"deadline: expected a finite number of seconds > 0, got {deadline!r}")
    cap = policy.max_bytes if max_bytes is None else max_bytes
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise ValueError(f"max_bytes: expected a whole number >= 0, got {max_bytes!r}")
    return method.upper(), body, request_headers, float(limit), float(total), cap
