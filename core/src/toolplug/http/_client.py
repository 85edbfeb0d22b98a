"""The guarded HTTP client that network plugins use (see ``toolplug.http``)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.cookiejar
import json as jsonlib
import math
import re
import time
import weakref
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urljoin

from toolplug.contract._network import (
    NetworkPolicy,
)
from toolplug.http._errors import (
    NetworkError,
    NetworkRefused,
    NetworkTimeout,
    NetworkUnreachable,
    TooManyRedirects,
)
from toolplug.http._guard import (
    SENSITIVE_HEADERS,
    Resolver,
    Target,
    check_target,
    check_url,
    parse_url,
    redact_url,
)
from toolplug.http._wire import (
    BoundedBody,
    basic_auth,
    known_charset,
    parse_content_type,
    redirect_method,
    without_headers,
)

if TYPE_CHECKING:
    import ssl

    import httpx

    from toolplug.contract._tool import ToolFailure

__all__ = [
    "FetchResult",
    "NetworkError",
    "NetworkPolicy",
    "NetworkRefused",
    "NetworkTimeout",
    "NetworkUnreachable",
    "RedirectHook",
    "Resolver",
    "TooManyRedirects",
    "check_url",
    "fetch",
    "fetch_sync",
    "guard_failure",
    "new_client",
]

RedirectHook = Callable[[str, str], Mapping[str, str] | None]
"""``on_redirect(old_url, new_url)``: the headers for the next hop, or ``None`` for the default."""

_REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})
# Headers that describe a body: they go when a redirect turns the request into a GET.
_BODY_HEADERS: Final = frozenset(
    {"content-type", "content-length", "content-encoding", "transfer-encoding"}
)
# Headers this module sets itself for every hop; a caller's values would be wrong or unsafe.
_OWN_HEADERS: Final = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_NO_JSON: Final[Any] = object()
_TIMEOUT_PHASES: Final = {
    "ConnectTimeout": "connect",
    "ReadTimeout": "read",
    "WriteTimeout": "write",
    "PoolTimeout": "pool",
}

# Clients made by new_client(): they keep one pool per TLS server name, so they may reuse
# connections safely. Any other client gets "Connection: close" on https (see _hop_headers).
_OWN_CLIENTS: weakref.WeakSet[httpx.AsyncClient] = weakref.WeakSet()


@dataclass
class FetchResult:
    """What a guarded fetch returned: the final response after any redirects."""

    url: str
    """The URL requested (without user name and password)."""
    final_url: str
    """The URL of the response returned, after redirects (without user name and password)."""
    status: int
    """The HTTP status code of the final response."""
    headers: dict[str, str]
    """Response headers, names in lower case; repeated headers joined with ``", "``."""
    content: bytes = field(repr=False)
    """The body, gzip/deflate-decoded, at most ``max_bytes`` long."""
    truncated: bool
    """True when the body was longer than ``max_bytes`` and was cut there."""
    redirects: list[tuple[int, str]]
    """``(status, absolute location)`` of every redirect followed, in order."""
    elapsed_ms: float
    """Wall time of the whole fetch in milliseconds, redirects included."""

    @property
    def content_type(self) -> str | None:
        """The media type, lower case and without parameters (``"text/html"``), if declared."""
        return parse_content_type(self.headers.get("content-type"))[0]

    @property
    def charset(self) -> str | None:
        """The ``charset`` parameter of ``Content-Type``, when Python knows that codec."""
        return known_charset(parse_content_type(self.headers.get("content-type"))[1].get("charset"))

    def text(self) -> str:
        """The body as text: the declared charset, else UTF-8, else Windows-1252.

        Undecodable bytes become U+FFFD. A character cut in half by ``max_bytes`` is dropped.
        """
        data = self.content
        declared = self.charset
        if declared is not None:
            return data.decode(declared, errors="replace")
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self.truncated and exc.reason == "unexpected end of data":
                return data[: exc.start].decode("utf-8", errors="replace")
        lenient = data.decode("utf-8", errors="replace")
        # Real multi-byte characters elsewhere: UTF-8 text with a stray byte, not Windows-1252.
        if any(ord(char) > 127 and char != "\ufffd" for char in lenient):
            return lenient
        return data.decode("cp1252", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON.

        Raises:
            ValueError: The body is not valid JSON (a truncated body rarely is).
        """
        return jsonlib.loads(self.text())


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
        resolve: The resolver for the guard; ``socket.getaddrinfo`` by default.

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
    import anyio

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
    started = time.perf_counter()
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await stack.enter_async_context(new_client())
        hop = _Hops(
            client=client,
            policy=policy,
            limit=limit,
            cap=cap,
            follow=follow_redirects,
            on_redirect=on_redirect,
            resolve=resolve,
            reuse_safe=client in _OWN_CLIENTS,
        )
        try:
            # The client is closed outside the deadline's scope, so a cancelled fetch still
            # closes every socket it opened.
            with anyio.fail_after(total):
                result = await hop.run(verb, url, request_headers, body)
        except NetworkError:
            raise
        except TimeoutError:
            where = redact_url(hop.current or url)
            raise NetworkTimeout(
                f"fetching {where} took longer than {total:g} s in total; raise [network] "
                "timeout_seconds (or pass deadline=) if the server is just slow",
                url=where,
                timeout=total,
                phase="total",
            ) from None
    result.elapsed_ms = (time.perf_counter() - started) * 1000
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


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    """The verifying TLS context, built once per process: loading the trust store takes
    milliseconds, and a context is safe to share between connections."""
    import httpx

    return httpx.create_ssl_context()


def guard_failure(exc: NetworkError, message: str | None = None) -> ToolFailure:
    """The structured error a tool returns for a failed guarded request.

    The error type and whether a retry may help come from the exception's class: a refusal is
    a ``PermissionError`` (not retryable), a timeout a ``TimeoutError``, anything else a
    ``NetworkError`` (both retryable). Every network plugin maps guard errors through here.

    Args:
        exc: What ``fetch`` raised.
        message: The text for the model; by default the exception's own, which names the
            URL (credentials removed). Pass ``f"{what}: {exc.reason}"`` when the URL itself
            must not be shown, and run it through your redaction if it may hold a secret.
    """
    from toolplug.contract._tool import ToolFailure

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
    import httpx

    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=10)

    class PerServerTransport(httpx.AsyncBaseTransport):
        """Routes each request to the pool of its (scheme, address, port, server name)."""

        def __init__(self) -> None:
            self._pools: dict[tuple[str, str, int | None, str | None], httpx.AsyncHTTPTransport]
            self._pools = {}
            self._ssl: ssl.SSLContext | bool | None = None if verify is True else verify

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            name = request.extensions.get("sni_hostname")
            key = (
                request.url.scheme,
                request.url.host,
                request.url.port,
                name if isinstance(name, str) else None,
            )
            pool = self._pools.get(key)
            if pool is None:
                if self._ssl is None:
                    self._ssl = _default_ssl_context()
                pool = httpx.AsyncHTTPTransport(verify=self._ssl, limits=limits, trust_env=False)
                self._pools[key] = pool
            return await pool.handle_async_request(request)

        async def aclose(self) -> None:
            pools, self._pools = list(self._pools.values()), {}
            for pool in pools:
                await pool.aclose()

    # A jar whose policy refuses every cookie: nothing a response sets is kept or sent.
    jar = http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
    client = httpx.AsyncClient(
        transport=PerServerTransport(), trust_env=False, follow_redirects=False, cookies=jar
    )
    _OWN_CLIENTS.add(client)
    return client


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
    if not isinstance(method, str) or not _TOKEN.fullmatch(method):
        raise ValueError(f"method: expected an HTTP method such as 'GET', got {method!r}")
    request_headers = _checked_headers(headers or {}, "headers")
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


def _checked_headers(headers: Mapping[str, str], source: str) -> dict[str, str]:
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise ValueError(f"{source}: {name!r} is not a valid header name")
        if not isinstance(value, str) or any(c in value for c in "\r\n\x00"):
            raise ValueError(f"{source}: the value of {name!r} must be a string on one line")
        checked[name] = value
    return checked


def _has(headers: Mapping[str, str], name: str) -> bool:
    return any(key.lower() == name for key in headers)


def _without_fragment(url: str) -> str:
    return url.split("#", 1)[0]


@dataclass
class _Hops:
    """One fetch: the redirect loop, and the state it keeps between hops."""

    client: httpx.AsyncClient
    policy: NetworkPolicy
    limit: float
    cap: int
    follow: bool
    on_redirect: RedirectHook | None
    resolve: Resolver | None
    reuse_safe: bool
    current: str | None = None
    """The URL of the hop in progress, for messages."""

    async def run(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> FetchResult:
        redirects: list[tuple[int, str]] = []
        seen = {(method, _without_fragment(url))}
        target = parse_url(url)
        while True:
            self.current = target.url
            addresses = await self._check(target, redirects)
            response = await self._open(target, addresses, method, headers, body)
            try:
                location = response.headers.get("location", "").strip()
                if not (self.follow and response.status_code in _REDIRECT_STATUSES and location):
                    content, truncated = await self._read(response, target)
                    return FetchResult(
                        url=redact_url(url, limit=None),
                        final_url=redact_url(target.url, limit=None),
                        status=response.status_code,
                        headers=_plain_headers(response),
                        content=content,
                        truncated=truncated,
                        redirects=redirects,
                        elapsed_ms=0.0,
                    )
            finally:
                # A redirect's body is never read; closing drops the connection if needed.
                await response.aclose()
            next_url = urljoin(target.url, location)
            redirects.append((response.status_code, redact_url(next_url, limit=None)))
            next_method = redirect_method(response.status_code, method)
            self._count(url, seen, redirects, (next_method, _without_fragment(next_url)))
            next_target = parse_url(next_url)
            if next_method != method or response.status_code == 303:
                body = None  # 303 and a method change both mean: fetch the result, send nothing
            decided = self.on_redirect(target.url, next_url) if self.on_redirect else None
            if decided is not None:
                headers = _checked_headers(decided, "on_redirect")
            elif next_target.origin != target.origin:
                headers = without_headers(headers, SENSITIVE_HEADERS)
            if body is None:
                headers = without_headers(headers, _BODY_HEADERS)
            target, method = next_target, next_method

    def _count(
        self,
        url: str,
        seen: set[tuple[str, str]],
        redirects: list[tuple[int, str]],
        key: tuple[str, str],
    ) -> None:
        """Refuse a redirect that comes back to an earlier URL or goes past the limit."""
        where = redact_url(url)
        if key in seen:
            chain = " -> ".join([where, *(redact_url(loc, limit=80) for _, loc in redirects)])
            raise TooManyRedirects(
                f"refused {where}: redirect loop: {chain}",
                url=where,
                rule="redirect loop",
                redirects=redirects,
            )
        if len(redirects) > self.policy.max_redirects:
            raise TooManyRedirects(
                f"refused {where}: more than {self.policy.max_redirects} redirects; raise "
                "[network] max_redirects if the site really needs more",
                url=where,
                rule="too many redirects",
                redirects=redirects,
            )
        seen.add(key)

    async def _check(self, target: Target, redirects: list[tuple[int, str]]) -> list[str]:
        """The addresses this hop may connect to (the guard's verdict)."""
        import anyio

        try:
            if target.address is not None:
                return check_target(target, self.policy)
            # Resolving blocks; run it in a worker thread the deadline can walk away from.
            return await anyio.to_thread.run_sync(
                functools.partial(check_target, target, self.policy, resolve=self.resolve),
                abandon_on_cancel=True,
            )
        except NetworkRefused as exc:
            if not redirects:
                raise
            raise NetworkRefused(
                f"{exc} (reached by redirect {len(redirects)})",
                url=exc.url,
                rule=exc.rule,
                host=exc.host,
                address=exc.address,
            ) from None

    def _hop_headers(self, target: Target, headers: Mapping[str, str]) -> dict[str, str]:
        hop = without_headers(headers, _OWN_HEADERS)
        hop["Host"] = target.host_header
        if not _has(hop, "user-agent"):
            hop["User-Agent"] = self.policy.user_agent
        if not _has(hop, "accept"):
            hop["Accept"] = "*/*"
        if not _has(hop, "accept-encoding"):
            # Only what BoundedBody decodes in bounded steps.
            hop["Accept-Encoding"] = "gzip, deflate"
        if target.username is not None and not _has(hop, "authorization"):
            hop["Authorization"] = basic_auth(target.username, target.password)
        if target.scheme == "https" and not self.reuse_safe:
            # A foreign client pools connections by address alone: a TLS connection made for
            # one server name could be reused for another name on the same address.
            hop["Connection"] = "close"
        return hop

    async def _open(
        self,
        target: Target,
        addresses: list[str],
        method: str,
        headers: Mapping[str, str],
        body: bytes | None,
    ) -> httpx.Response:
        """Send the request to the first approved address that accepts a connection."""
        import httpx

        extensions: dict[str, Any] = {"timeout": httpx.Timeout(self.limit).as_dict()}
        if target.scheme == "https" and target.address is None:
            extensions["sni_hostname"] = target.host
        hop_headers = self._hop_headers(target, headers)
        failure: httpx.TransportError | None = None
        tried = addresses[0]
        for address in addresses:
            tried = address
            try:
                request = httpx.Request(
                    method,
                    target.with_address(address),
                    headers=hop_headers,
                    content=body,
                    extensions=extensions,
                )
            except httpx.InvalidURL as exc:
                raise NetworkRefused(
                    f"refused {target.redacted}: the URL cannot be sent ({exc})",
                    url=target.redacted,
                    rule="invalid URL",
                    host=target.host,
                ) from None
            try:
                return await self.client.send(
                    request, stream=True, auth=None, follow_redirects=False
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                # Nothing was sent yet, so trying the next address is safe for any method.
                failure = exc
            except httpx.TransportError as exc:
                raise self._translate(exc, target, address) from exc
        assert failure is not None  # addresses is never empty: check_target ensures it
        raise self._translate(failure, target, tried) from failure

    async def _read(self, response: httpx.Response, target: Target) -> tuple[bytes, bool]:
        """The body up to the cap, read chunk by chunk and never past it."""
        import httpx

        if response.is_stream_consumed:
            # A transport that built the response in memory (httpx.MockTransport): httpx has
            # decoded it already, and there is nothing left to stream.
            whole = BoundedBody(self.cap)
            whole.feed(response.content)
            return whole.content, whole.truncated
        coding = response.headers.get("content-encoding")
        body = BoundedBody(self.cap, coding)
        address = response.request.url.host
        try:
            async for chunk in response.aiter_raw():
                if not body.feed(chunk):
                    break
            body.finish()
        except httpx.TransportError as exc:
            raise self._translate(exc, target, address, reading=True) from exc
        except zlib.error as exc:
            raise NetworkUnreachable(
                f"the response from {target.redacted} is not valid {coding} data ({exc})",
                url=target.redacted,
                host=target.host,
                address=address,
            ) from None
        return body.content, body.truncated

    def _translate(
        self, exc: httpx.TransportError, target: Target, address: str, *, reading: bool = False
    ) -> NetworkError:
        """The guard's error for an httpx transport error."""
        import httpx

        where = target.redacted
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            phase = _TIMEOUT_PHASES.get(type(exc).__name__, "read")
            return NetworkTimeout(
                f"{phase} timed out after {self.limit:g} s fetching {where} ({address}); "
                "raise [network] timeout_seconds (or pass timeout=) if the server is just slow",
                url=where,
                timeout=self.limit,
                phase=phase,
            )
        if isinstance(exc, httpx.ConnectError):
            text = f"could not connect to {target.host} ({address}) for {where}: {reason}"
        elif reading:
            text = f"the connection to {target.host} ({address}) broke while reading {where}: "
            text += reason
        else:
            text = f"the request to {target.host} ({address}) for {where} failed: {reason}"
        return NetworkUnreachable(text, url=where, host=target.host, address=address)


def _plain_headers(response: httpx.Response) -> dict[str, str]:
    merged: dict[str, str] = {}
    for name, value in response.headers.multi_items():
        key = name.lower()
        merged[key] = f"{merged[key]}, {value}" if key in merged else value
    return merged
