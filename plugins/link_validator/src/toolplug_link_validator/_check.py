"""Checking many links at once: one shared client, a global and a per-host limit.

Every request goes through ``toolplug.http.fetch`` and so through the network guard. Redirects
are followed here, one guarded request per hop (``follow_redirects=False``), for three reasons:
each hop waits for the limit of *its* host, the chain is recorded with every status even when
a later hop is refused, and a ``HEAD`` that ends on 405/501 is retried as ``GET`` at that hop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

from toolplug.http import (
    FetchResult,
    NetworkError,
    NetworkPolicy,
    NetworkRefused,
    NetworkTimeout,
    NetworkUnreachable,
    fetch,
    new_client,
)

__all__ = ["LinkReport", "Progress", "check_links", "media_type"]

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called once at the start and after each URL is finished."""

_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
# A server that refuses HEAD says so with one of these; GET is the way to ask it.
_HEAD_REFUSED: Final = frozenset({405, 501})
# GET is only the fallback, so its body is of no interest: a small read lets a short body
# finish (the connection can be reused) without ever downloading a large one.
GET_BODY_CAP: Final = 4096
# Guard rules that mean the URL itself cannot be read, rather than that it is forbidden.
_MALFORMED_RULES: Final = frozenset(
    {"scheme not allowed", "missing host", "invalid host", "invalid port", "invalid URL"}
)
_REASONS: Final = (
    # (exception class name or text found in the cause chain, short message), first match wins
    ("CERTIFICATE_VERIFY_FAILED", "TLS certificate not trusted"),
    ("SSLError", "TLS handshake failed"),
    ("ConnectionResetError", "connection reset"),
    ("ConnectionRefusedError", "connection refused"),
    ("BrokenPipeError", "connection reset"),
    ("RemoteProtocolError", "the server closed the connection without a valid response"),
    ("ConnectError", "could not connect"),
    ("ReadError", "connection broken while reading"),
    ("WriteError", "connection broken while sending"),
)


@dataclass
class LinkReport:
    """What was found for one URL."""

    url: str
    """The URL as given."""
    ok: bool = False
    """True for a final 2xx answer (with the expected content type, when one was asked for)."""
    status: int | None = None
    """The final HTTP status, ``None`` when no answer came."""
    final_url: str | None = None
    """Where the redirects ended (the URL itself when there were none)."""
    redirects: list[dict[str, Any]] = field(default_factory=list)
    """The chain followed: ``{"status": 301, "url": "<next location>"}`` per hop."""
    content_type: str | None = None
    """Media type of the final answer, lower case, without parameters."""
    error: str | None = None
    """``None``, or a short reason the link is not good."""
    elapsed_ms: float = 0.0
    """Time spent on the network for this URL (waiting for a free slot not counted)."""
    method: str = "HEAD"
    """``HEAD``, or ``GET`` when the server would not answer ``HEAD``."""

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-compatible data."""
        return {
            "url": self.url,
            "ok": self.ok,
            "status": self.status,
            "final_url": self.final_url,
            "redirects": [dict(hop) for hop in self.redirects],
            "content_type": self.content_type,
            "error": self.error,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "method": self.method,
        }


def media_type(value: str | None) -> str | None:
    """``"text/html"`` from ``"Text/HTML; charset=utf-8"``; ``None`` for nothing."""
    if not value:
        return None
    return value.split(";", 1)[0].strip().lower() or None


def _host_key(url: str) -> str:
    """What the per-host limit counts by: the host name, lower case (empty when unreadable)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _strip_fragment(url: str) -> str:
    return url.split("#", 1)[0]


def _network_reason(exc: NetworkError) -> str:
    """A short reason for a failed request, from the exceptions beneath the guard's.

    The guard's own message is not searched: it holds the URL, which could hold any word.
    """
    seen: set[int] = {id(exc)}
    node: BaseException | None = exc.__cause__ or exc.__context__
    names: list[str] = []
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        names.append(type(node).__name__)
        names.append(str(node))
        node = node.__cause__ or node.__context__
    text = " ".join(names)
    for marker, reason in _REASONS:
        if marker in text:
            return reason
    if "Connection reset" in text or "[Errno 104]" in text:
        return "connection reset"
    if isinstance(exc, NetworkUnreachable) and exc.address is None and exc.host:
        return f"could not resolve host {exc.host}"
    return str(exc)


def _refusal(exc: NetworkRefused) -> str:
    """``refused: <why>`` (or ``malformed URL: <why>``), without repeating the URL."""
    text = str(exc)
    prefix = f"refused {exc.url}: "
    detail = text[len(prefix) :] if text.startswith(prefix) else text
    if exc.rule in _MALFORMED_RULES:
        return f"malformed URL: {detail}"
    return f"refused: {detail}"


def _head_failed_usably(exc: NetworkUnreachable) -> bool:
    """True when a HEAD got a connection but no usable answer, so GET is worth a try."""
    node: BaseException | None = exc.__cause__
    name = type(node).__name__ if node is not None else ""
    return exc.address is not None and name not in ("ConnectError", "ConnectTimeout")


class _Checker:
    """The state shared by every URL of one run."""

    def __init__(
        self,
        *,
        policy: NetworkPolicy,
        client: Any,
        concurrency: int,
        per_host: int,
        timeout: float,
        expected: str | None,
    ) -> None:
        self.policy = policy
        self.client = client
        self.timeout = timeout
        self.expected = expected
        self.per_host = per_host
        self.slots = asyncio.Semaphore(concurrency)
        self.hosts: dict[str, asyncio.Semaphore] = {}

    def host_slots(self, url: str) -> asyncio.Semaphore:
        key = _host_key(url)
        slots = self.hosts.get(key)
        if slots is None:
            slots = self.hosts[key] = asyncio.Semaphore(self.per_host)
        return slots

    async def hop(self, method: str, url: str, report: LinkReport) -> FetchResult:
        """One guarded request, inside the host's limit and then the global one.

        The host's slot is taken first: a task waiting for a busy host must not sit on one of
        the global slots that requests to other hosts could use.
        """
        async with self.host_slots(url), self.slots:
            remaining = self.timeout - report.elapsed_ms / 1000
            if remaining <= 0:
                raise NetworkTimeout("out of time", url=url, timeout=self.timeout, phase="total")
            started = time.perf_counter()
            try:
                return await fetch(
                    method,
                    url,
                    policy=self.policy,
                    client=self.client,
                    timeout=remaining,
                    max_bytes=0 if method == "HEAD" else GET_BODY_CAP,
                    follow_redirects=False,
                )
            finally:
                report.elapsed_ms += (time.perf_counter() - started) * 1000

    async def check(self, url: str) -> LinkReport:
        report = LinkReport(url=url)
        try:
            await self._follow(url, report)
        except NetworkTimeout:
            report.error = f"timed out after {self.timeout:.1f} s"
        except NetworkRefused as exc:
            report.error = _refusal(exc)
        except NetworkError as exc:
            report.error = _network_reason(exc)
        except ValueError as exc:  # the guard's "your arguments are wrong"
            report.error = f"malformed URL: {exc}"
        return report

    async def _follow(self, url: str, report: LinkReport) -> None:
        if not isinstance(url, str) or not url.strip():
            report.error = "malformed URL: empty"
            return
        current = url.strip()
        seen = {_strip_fragment(current)}
        method = "HEAD"
        while True:
            try:
                result = await self.hop(method, current, report)
            except NetworkUnreachable as exc:
                if method == "HEAD" and _head_failed_usably(exc):
                    method = report.method = "GET"
                    continue
                raise
            status = result.status
            if method == "HEAD" and (status in _HEAD_REFUSED or not 100 <= status <= 599):
                method = report.method = "GET"
                continue
            location = result.headers.get("location", "").strip()
            if status in _REDIRECTS and location:
                target = urljoin(current, location)
                report.redirects.append({"status": status, "url": target})
                key = _strip_fragment(target)
                if key in seen:
                    report.status, report.final_url = status, current
                    report.error = "redirect loop: " + " -> ".join(
                        [url, *(hop["url"] for hop in report.redirects)]
                    )
                    return
                if len(report.redirects) > self.policy.max_redirects:
                    report.status, report.final_url = status, current
                    report.error = f"more than {self.policy.max_redirects} redirects"
                    return
                seen.add(key)
                current = target
                continue
            report.status = status
            report.final_url = result.final_url
            report.content_type = result.content_type
            self._judge(report)
            return

    def _judge(self, report: LinkReport) -> None:
        status = report.status or 0
        if not 200 <= status < 300:
            report.error = f"HTTP {status}"
            return
        if self.expected is not None and report.content_type != self.expected:
            found = report.content_type or "no content type"
            report.error = f"content type is {found}, expected {self.expected}"
            return
        report.ok = True


async def check_links(
    urls: Sequence[str],
    *,
    policy: NetworkPolicy,
    concurrency: int = 20,
    per_host: int = 4,
    timeout: float = 10.0,
    expected_content_type: str | None = None,
    progress: Progress | None = None,
) -> list[LinkReport]:
    """Check every URL concurrently; the reports come back in the order of ``urls``.

    Args:
        urls: The URLs; a malformed one gets a report with an error, the others still run.
        policy: The network guard's policy (``ToolContext.network``).
        concurrency: The most requests in flight at once.
        per_host: The most requests in flight to one host at once.
        timeout: Seconds of network time allowed per URL, redirects and fallback included.
        expected_content_type: A media type the final answer must have (parameters ignored).
        progress: Called as ``progress(done, total)`` at the start and after each URL.

    Raises:
        ValueError: ``concurrency``, ``per_host`` or ``timeout`` is not positive.
    """
    if concurrency < 1 or per_host < 1:
        raise ValueError("concurrency and per_host must be at least 1")
    if not timeout > 0:
        raise ValueError("timeout must be a number of seconds greater than 0")
    total = len(urls)
    done = 0
    if progress is not None:
        progress(0, total)
    # The client pools connections per address, and several host names may share one
    # address: its pool must not be smaller than the global limit.
    async with new_client(max_connections=concurrency) as client:
        checker = _Checker(
            policy=policy,
            client=client,
            concurrency=concurrency,
            per_host=per_host,
            timeout=timeout,
            expected=media_type(expected_content_type),
        )

        async def one(url: str) -> LinkReport:
            nonlocal done
            report = await checker.check(url)
            done += 1
            if progress is not None:
                progress(done, total)
            return report

        # A TaskGroup, not gather: should one check crash, the others are cancelled before
        # the client closes under them.
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(url)) for url in urls]
        return [task.result() for task in tasks]
