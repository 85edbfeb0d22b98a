"""The guarded client's wire work on httpx and anyio: the connection pools of
``new_client``, each hop of a fetch (the network guard's check, the connection pinned to the
address it approved, the body read within its bound) and the redirects between them.

Imported by ``toolplug.http._client`` on the first fetch, so that importing
``toolplug.http`` imports neither httpx nor anyio.
"""

from __future__ import annotations

import contextlib
import functools
import http.cookiejar
import ssl
import time
import weakref
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urljoin

import anyio
import httpx

from toolplug.http._errors import (
    NetworkError,
    NetworkRefused,
    NetworkTimeout,
    NetworkUnreachable,
    TooManyRedirects,
)
from toolplug.http._netguard import (
    SENSITIVE_HEADERS,
    Resolver,
    Target,
    check_target,
    parse_url,
    redact_url,
)
from toolplug.http._wire import (
    BoundedBody,
    FetchResult,
    basic_auth,
    checked_headers,
    redirect_method,
    without_headers,
)

if TYPE_CHECKING:
    from toolplug.contract._network import NetworkPolicy
    from toolplug.http._client import RedirectHook

__all__ = ["new_client", "send"]

_REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})
# Headers that describe a body: they go when a redirect turns the request into a GET.
_BODY_HEADERS: Final = frozenset(
    {"content-type", "content-length", "content-encoding", "transfer-encoding"}
)
# Headers this module sets itself for every hop; a caller's values would be wrong or unsafe.
_OWN_HEADERS: Final = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_TIMEOUT_PHASES: Final = {
    "ConnectTimeout": "connect",
    "ReadTimeout": "read",
    "WriteTimeout": "write",
    "PoolTimeout": "pool",
}

# Clients made by new_client(): they keep one pool per TLS server name, so they may reuse
# connections safely. Any other client gets "Connection: close" on https (see _hop_headers).
_OWN_CLIENTS: weakref.WeakSet[httpx.AsyncClient] = weakref.WeakSet()


async def send(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes | None,
    *,
    client: httpx.AsyncClient | None,
    policy: NetworkPolicy,
    limit: float,
    cap: int,
    total: float,
    follow: bool,
    on_redirect: RedirectHook | None,
    resolve: Resolver | None,
) -> FetchResult:
    """``fetch`` once its arguments are checked: the hops, within the whole deadline."""
    started = time.perf_counter()
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await stack.enter_async_context(new_client())
        hop = _Hops(
            client=client,
            policy=policy,
            limit=limit,
            cap=cap,
            follow=follow,
            on_redirect=on_redirect,
            resolve=resolve,
            reuse_safe=client in _OWN_CLIENTS,
        )
        try:
            # The client is closed outside the deadline's scope, so a cancelled fetch still
            # closes every socket it opened.
            with anyio.fail_after(total):
                result = await hop.run(method, url, headers, body)
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


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    """The verifying TLS context, built once per process: loading the trust store takes
    milliseconds, and a context is safe to share between connections."""
    return httpx.create_ssl_context()


def new_client(
    *, max_connections: int = 20, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncClient:
    """The client ``toolplug.http.new_client`` makes (its docstring says what it does)."""
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
                headers = checked_headers(decided, "on_redirect")
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
        """The addresses this hop may connect to (the network guard's verdict)."""
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
        """The network guard's error for an httpx transport error."""
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
