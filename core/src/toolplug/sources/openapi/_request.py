"""One call of an operation: the request built from the arguments, sent through the network
guard, and the response as a ``ToolResult`` a model can act on.

Every request goes through ``toolplug.http.fetch``: the guard checks the base URL and
every redirect, bounds the time and the body. A 4xx or 5xx answer is a structured error
(``retry_possible`` where a retry may help; a 429's ``Retry-After`` as
``retry_after_seconds``); a body longer than ``[network] max_bytes`` is cut with a warning,
and a long output is spilled by the engine like any other.

An answer whose media type is an image, audio, a PDF or ``application/octet-stream``
(``part_kind``) is not text: its bytes become a part of the result (``part_for``, named
from ``Content-Disposition`` when the server names it), and the output says in a line what
came back. A cut file is no file, so such an answer longer than ``max_bytes`` is an error
saying how to raise the bound.

Within an OpenTelemetry span (the call's ``execute_tool`` span, current while the tool
runs), each request carries the span's W3C trace context (``traceparent``, and
``tracestate`` when it has entries), so the API's own spans continue the trace.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import json
import math
import mimetypes
import re
import sys
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from toolplug.contract._metadata import ErrorSpec
from toolplug.contract._parts import PartKind, part_for, sniff
from toolplug.contract._tool import ErrorType, ToolContext, ToolResult

__all__ = ["ERRORS", "Credentials", "Operation", "part_kind", "send"]

_ERROR_BODY_CHARS: Final = 2000
_STATUS_TYPES: Final[dict[int, tuple[ErrorType, bool]]] = {
    400: (ErrorType.VALIDATION, False),
    401: (ErrorType.PERMISSION, False),
    403: (ErrorType.PERMISSION, False),
    404: (ErrorType.NOT_FOUND, False),
    405: (ErrorType.VALIDATION, False),
    408: (ErrorType.TIMEOUT, True),
    409: (ErrorType.EXECUTION, False),
    410: (ErrorType.NOT_FOUND, False),
    413: (ErrorType.VALIDATION, False),
    415: (ErrorType.VALIDATION, False),
    422: (ErrorType.VALIDATION, False),
    429: (ErrorType.RATE_LIMIT, True),
    500: (ErrorType.EXECUTION, True),
    502: (ErrorType.NETWORK, True),
    503: (ErrorType.UNAVAILABLE, True),
    504: (ErrorType.TIMEOUT, True),
}


ERRORS: Final = (
    ErrorSpec(type="ValidationError", when="the API refused the arguments (400, 422 ...)"),
    ErrorSpec(type="PermissionError", when="the API (401, 403) or the network guard refused"),
    ErrorSpec(type="NotFoundError", when="the API has no such thing (404, 410)"),
    ErrorSpec(type="RateLimitError", when="the API's quota is used up (429); "
              "retry_after_seconds says when to try again", retry_possible=True),
    ErrorSpec(type="TimeoutError", when="the API did not answer in time", retry_possible=True),
    ErrorSpec(type="NetworkError", when="the API could not be reached", retry_possible=True),
    ErrorSpec(type="UnavailableError", when="the API is down for now (503)",
              retry_possible=True),
    ErrorSpec(type="ExecutionError", when="the API failed (500) or answered another error",
              retry_possible=True),
)
"""What an operation's call can return, declared on every OpenAPI tool."""


_FILE_TYPES: Final = frozenset({"application/pdf", "application/octet-stream"})


def part_kind(media_type: str | None) -> PartKind | None:
    """The kind of part an answer of this media type becomes (``image``, ``audio``,
    ``file``), or None when it is read as text."""
    media = (media_type or "").split(";")[0].strip().lower()
    if media.startswith("image/"):
        return "image"
    if media.startswith("audio/"):
        return "audio"
    return "file" if media in _FILE_TYPES else None


def _disposition_name(value: str | None) -> str | None:
    """The file name a ``Content-Disposition`` header gives (``filename*`` first), without
    any directory, or None."""
    if not value:
        return None
    found: dict[str, str] = {}
    for item in value.split(";")[1:]:
        key, eq, val = item.partition("=")
        if eq:
            found[key.strip().lower()] = val.strip().strip('"')
    name = found.get("filename*")
    if name is not None:
        _charset, _, rest = name.partition("''")
        name = unquote(rest or name, encoding=_charset or "utf-8", errors="replace")
    else:
        name = found.get("filename")
    if not name:
        return None
    name = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    return name if name not in ("", ".", "..") else None


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


def _binary(answer: Any, where: str) -> ToolResult:
    """An image, audio or file answer as a result with its part, or why it cannot be."""
    media = answer.content_type or "application/octet-stream"
    if answer.truncated:
        return ToolResult.failure(
            ErrorType.EXECUTION,
            f"{where} answered {media} longer than [network] max_bytes "
            f"({len(answer.content)} bytes); a cut file cannot be read, so nothing was "
            "returned: raise [network] max_bytes to receive it",
            details={"operation": where, "media_type": media,
                     "max_bytes": len(answer.content)},
        )
    name = _disposition_name(answer.headers.get("content-disposition"))
    if media == "application/octet-stream":  # the bytes, or the name, may say more
        media = sniff(answer.content) or (
            mimetypes.guess_type(name)[0] if name else None
        ) or media
    part = part_for(answer.content, media, name=name)
    what = {"image": "an image", "audio": "audio"}.get(part.kind, "a file")
    named = f" {name}" if name else ""
    output = (
        f"{where} answered HTTP {answer.status} with {what}{named} "
        f"({media}, {_size(len(answer.content))})"
    )
    return ToolResult.success(output, parts=[part])


@dataclass(frozen=True)
class Credentials:
    """How every request of one API authenticates (values resolved, never shown)."""

    headers: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation:
    """What a call needs of one converted operation."""

    method: str
    path: str
    args: Mapping[str, list[str]]
    """argument -> [location, original name, style, explode ("1"/"0")]."""
    body: Mapping[str, Any] | None
    timeout: float
    anonymous: bool = False
    """Its description says ``security: []``: it is sent without the API's credentials."""

    @classmethod
    def of(cls, definition: Mapping[str, Any], timeout: float) -> Operation:
        """From a converted operation (``_convert``)."""
        return cls(
            method=str(definition["method"]),
            path=str(definition["path"]),
            args=dict(definition.get("args") or {}),
            body=definition.get("body"),
            timeout=timeout,
            anonymous=bool(definition.get("anonymous")),
        )


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def _query_pairs(name: str, value: Any, style: str, explode: bool) -> list[tuple[str, str]]:
    if isinstance(value, list):
        if explode and style == "form":
            return [(name, _text(v)) for v in value]
        separator = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(style, ",")
        return [(name, separator.join(_text(v) for v in value))]
    if isinstance(value, dict):
        if style == "deepObject":
            return [(f"{name}[{k}]", _text(v)) for k, v in value.items()]
        if explode:
            return [(str(k), _text(v)) for k, v in value.items()]
        return [(name, ",".join(f"{k},{_text(v)}" for k, v in value.items()))]
    return [(name, _text(value))]


def _path_value(value: Any) -> str:
    """A path parameter's value as one segment: every reserved character escaped, and a
    value that is a dot segment (``.``, ``..``) spelt ``%2E`` so that no URL parser on the
    way (httpx's, a proxy's, the server's) removes it and the segment before it."""
    if isinstance(value, list):
        text = ",".join(quote(_text(v), safe="") for v in value)
    else:
        text = quote(_text(value), safe="")
    return text.replace(".", "%2E") if text in (".", "..") else text


def _file_part(name: str, value: Mapping[str, Any]) -> tuple[str, tuple[str, bytes, str]]:
    content = str(value.get("content", ""))
    data = (
        base64.b64decode(content, validate=False)
        if value.get("encoding") == "base64"
        else content.encode("utf-8")
    )
    filename = str(value.get("filename") or name)
    media = str(value.get("content_type") or "application/octet-stream")
    return name, (filename, data, media)


def build(  # noqa: C901 - one branch per parameter location
    operation: Operation, arguments: Mapping[str, Any], base_url: str, credentials: Credentials
) -> tuple[str, dict[str, str], bytes | None]:
    """The URL, headers and body of one request."""
    path = operation.path
    query: list[tuple[str, str]] = []
    headers: dict[str, str] = {"Accept": "application/json, */*;q=0.5"}
    cookies: list[str] = []
    body_fields: dict[str, Any] = {}
    whole: Any = None
    has_whole = False
    for arg, value in arguments.items():
        spec = operation.args.get(arg)
        if spec is None:
            if operation.body is not None and operation.body.get("whole") == arg:
                whole, has_whole = value, True
            continue
        location, original, style, explode = spec
        if location == "path":
            path = path.replace("{" + original + "}", _path_value(value))
        elif location == "query":
            query += _query_pairs(original, value, style or "form", explode == "1")
        elif location == "header":
            headers[original] = _text(value) if not isinstance(value, list) else ",".join(
                _text(v) for v in value
            )
        elif location == "cookie":
            cookies.append(f"{original}={quote(_text(value), safe='')}")
        elif location == "body":
            body_fields[original] = value
    if cookies:
        headers["Cookie"] = "; ".join(cookies)
    headers.update(credentials.headers)
    query += list(credentials.query.items())
    for name, value in trace_context().items():  # a header the call set itself stays
        if not any(key.lower() == name for key in headers):
            headers[name] = value
    url = base_url.rstrip("/") + path
    if query:
        url += ("&" if "?" in url else "?") + urlencode(query, quote_via=quote)
    content: bytes | None = None
    spec_body = operation.body
    if spec_body is not None and (body_fields or has_whole):
        kind, media = str(spec_body["kind"]), str(spec_body["media"])
        payload = whole if has_whole else body_fields
        if kind == "json":
            content = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
            headers["Content-Type"] = media
        elif kind == "form":
            pairs: list[tuple[str, str]] = []
            for key, value in (payload or {}).items():
                pairs += _query_pairs(str(key), value, "form", True)
            content = urlencode(pairs).encode()
            headers["Content-Type"] = media
        elif kind == "multipart":
            content, headers["Content-Type"] = _multipart(payload or {})
        else:
            content = payload.encode("utf-8") if isinstance(payload, str) else _text(
                payload
            ).encode("utf-8")
            headers["Content-Type"] = media
    return url, headers, content


def trace_context() -> dict[str, str]:
    """The current OpenTelemetry span's W3C trace context as request headers: ``traceparent``
    and, when it has entries, ``tracestate``; none without OpenTelemetry loaded (toolplug
    never imports it) or without a valid span current."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return {}
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    headers = {"traceparent": (
        f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    )}
    state = context.trace_state.to_header() if context.trace_state else ""
    if state:
        headers["tracestate"] = state
    return headers


def _multipart(payload: Mapping[str, Any]) -> tuple[bytes, str]:
    import httpx

    data: dict[str, Any] = {}
    files: list[tuple[str, tuple[str, bytes, str]]] = []
    for key, value in payload.items():
        if isinstance(value, dict) and "content" in value:
            files.append(_file_part(key, value))
        elif isinstance(value, list) and value and all(
            isinstance(v, dict) and "content" in v for v in value
        ):
            files += [_file_part(key, v) for v in value]
        else:
            data[key] = [_text(v) for v in value] if isinstance(value, list) else _text(value)
    # httpx encodes the form (boundaries, escaping); the guarded fetch sends the bytes
    request = httpx.Request("POST", "http://encoder.invalid/", data=data, files=files or None)
    return request.read(), request.headers["Content-Type"]


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    if value:
        if value.strip().isdigit():
            return float(value.strip())
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            return max(0.0, when.timestamp() - time.time())
    reset = headers.get("x-ratelimit-reset")
    if reset and reset.strip().isdigit() and headers.get("x-ratelimit-remaining") == "0":
        return max(0.0, float(reset) - time.time())
    return None


def _next_page(headers: Mapping[str, str], operation: Operation) -> str | None:
    """How to ask for the next page, when the answer has a ``Link: <...>; rel="next"``."""
    link = headers.get("link", "")
    match = re.search(r'<([^>]+)>\s*;\s*rel="?next"?', link)
    if match is None:
        return None
    by_original = {spec[1]: arg for arg, spec in operation.args.items() if spec[0] == "query"}
    pairs = dict(parse_qsl(urlsplit(match.group(1)).query))
    arguments = {by_original[k]: v for k, v in pairs.items() if k in by_original}
    if arguments:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(arguments.items()))
        return f"more results: call again with {shown}"
    return f"more results: {match.group(1)}"


_IDLE_SECONDS: Final = 5.0
"""How long a pooled client with no call in flight keeps its connections."""


class ClientPool:
    """One guarded client per event loop, so calls of an API reuse their connections.

    An ``httpx.AsyncClient`` belongs to the loop it was used on. Each loop's client is
    closed by a small task on that loop once no call has used it for ``_IDLE_SECONDS``, or
    when the task is cancelled (``asyncio.run`` cancels what is left when it ends, and so
    does ``close``, which ``Registry.close`` calls).
    """

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()

    def client(self) -> Any:
        """The running loop's client (made, with its closing task, on first use)."""
        from toolplug.http import new_client

        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is None:
            entry = [new_client(), time.monotonic(), None]
            self._clients[loop] = entry
            entry[2] = loop.create_task(self._close_when_idle(loop, entry))
        entry[1] = time.monotonic()
        return entry[0]

    def close(self) -> None:
        """End every loop's client and its closing task. On a loop no thread runs (the
        thread's own loop of sync calls, between them) the task is cancelled and run to
        its end here, when no loop runs in this thread; on a loop running elsewhere it is
        cancelled there and ends on its own (nothing waits); on the running loop it ends
        at the loop's next turn. A closed loop ran its tasks' ends when it stopped."""
        for loop, entry in list(self._clients.items()):
            self._clients.pop(loop, None)
            task = entry[2]
            if task is None or task.done() or loop.is_closed():
                continue
            if loop.is_running() or asyncio._get_running_loop() is not None:
                loop.call_soon_threadsafe(task.cancel)
                continue
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(task)

    async def _close_when_idle(self, loop: Any, entry: list[Any]) -> None:
        try:
            while True:
                idle = time.monotonic() - entry[1]
                if idle >= _IDLE_SECONDS:
                    break
                await asyncio.sleep(_IDLE_SECONDS - idle)
        finally:
            if self._clients.get(loop) is entry:
                del self._clients[loop]
            await entry[0].aclose()


async def send(
    operation: Operation,
    arguments: Mapping[str, Any],
    context: ToolContext,
    *,
    base_url: str,
    credentials: Credentials,
    pool: ClientPool | None = None,
) -> ToolResult:
    """Make the request of one call; every failure comes back as a structured result."""
    from toolplug.http import NetworkError, fetch, guard_failure

    try:
        url, headers, content = build(operation, arguments, base_url, credentials)
    except (ValueError, TypeError) as exc:
        return ToolResult.failure(ErrorType.VALIDATION, f"cannot build the request: {exc}")
    try:
        answer = await fetch(
            operation.method, url, policy=context.network, headers=headers, content=content,
            timeout=min(context.network.timeout_seconds, operation.timeout),
            deadline=operation.timeout, client=None if pool is None else pool.client(),
        )
    except NetworkError as exc:
        failure = guard_failure(exc)
        return ToolResult.failure(
            failure.type, failure.message, retry_possible=failure.retry_possible
        )
    where = f"{operation.method} {operation.path}"
    binary = part_kind(answer.content_type) if operation.method != "HEAD" else None
    if binary is not None and answer.status < 400 and answer.content:
        return _binary(answer, where)
    text = answer.text() if operation.method != "HEAD" and binary is None else ""
    data: Any = None
    if answer.content_type and (
        answer.content_type == "application/json" or answer.content_type.endswith("+json")
    ) and text and not answer.truncated:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
    if answer.status >= 400:
        kind, retry = _STATUS_TYPES.get(
            answer.status, (ErrorType.UNAVAILABLE, True) if answer.status >= 500 else
            (ErrorType.EXECUTION, False)
        )
        details: dict[str, Any] = {"status": answer.status, "operation": where}
        if data is not None:
            details["body"] = data
        challenge = answer.headers.get("www-authenticate")
        if challenge and answer.status in (401, 403):
            details["challenge"] = challenge[:_ERROR_BODY_CHARS]  # a step-up reads it
        wait = _retry_after(answer.headers)
        if wait is not None:
            details["retry_after_seconds"] = math.ceil(wait)
            retry = True
        said = " ".join(text.split())[:_ERROR_BODY_CHARS]
        message = f"{where} answered HTTP {answer.status}" + (f": {said}" if said else "")
        return ToolResult.failure(kind, message, retry_possible=retry, details=details)
    warnings: list[str] = []
    if answer.truncated:
        warnings.append(
            f"the response was cut at {len(answer.content)} bytes ([network] max_bytes)"
        )
    output = text or f"HTTP {answer.status}" + (
        f", {answer.headers['content-length']} bytes" if "content-length" in answer.headers
        else ""
    )
    following = _next_page(answer.headers, operation)
    if following:
        warnings.append(following)
    return ToolResult.success(output, data, warnings=warnings)
