"""Every JSON-RPC request gets an answer, even one the MCP SDK would drop.

The SDK validates each incoming message against the JSON-RPC envelope and, on stdio, drops
a message it refuses with only a debug log: a client that sent positional ``params``, an
``id`` of ``null`` or ``1.5``, or arguments nested deeper than the validator goes, waits
forever. Over HTTP it answers most of them, but without the request's id.
``malformed_reply`` looks at a message first: what the SDK accepts passes on untouched; for
anything else it returns the error reply JSON-RPC 2.0 prescribes, with the request's id
when the id can be read.
A message nested too deeply for ``json.loads`` has its id read by a bounded scan of the
top-level object, without parsing the deep part.

Over HTTP, ``EnvelopeCheck`` also refuses a POST body over ``MAX_BODY_BYTES`` with 413 as
soon as the size is known, keeping none of it (the rest is read and dropped, up to a bound,
so that the client gets the answer).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

import anyio
from mcp import types
from pydantic import ValidationError

from toolplug.utilities._limits import MAX_ARGUMENT_DEPTH, argument_problem

__all__ = ["MAX_BODY_BYTES", "EnvelopeCheck", "leading_id", "malformed_reply"]

log = logging.getLogger("toolplug")

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602
MAX_BODY_BYTES: Final = 8 * 1024 * 1024
"""The largest POST body the HTTP server takes: twice the 4 MB the largest argument document
the input limits accept (1,000,000 characters) can take as UTF-8 JSON."""
_DRAINED: Final = 4
"""An over-size body up to this many times the limit is read to its end (and dropped)."""
_DRAIN_SECONDS: Final = 10
_HEAD: Final = 64 * 1024
"""How much of a body over the limit is kept, to find the request's id in."""
_PEEK_SECONDS: Final = 0.5
"""How long a body too large to drain is read, for its first bytes, before the answer."""
_SHOWN: Final = 200
_SCAN_STEPS: Final = 300_000
"""The most brackets and strings the scan of a too-deep message passes before giving up."""
_STRUCTURE: Final = re.compile(r'[\[\]{}"]')
_SPACE: Final = re.compile(r"[ \t\n\r]*")
_PAIRS: Final = {"]": "[", "}": "{"}


def malformed_reply(line: str | bytes) -> dict[str, Any] | None:  # noqa: C901, PLR0911 - one check per malformed message shape
    """None when the SDK will take the message; else the error reply to send instead."""
    try:
        parsed = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        text = line if isinstance(line, str) else line.decode("utf-8", "replace")
        if not isinstance(parsed, types.JSONRPCNotification) or '"id"' not in text:
            return None
        # A request whose id is null or not a whole number validates as a notification,
        # which is never answered: answer it here.
        refused: BaseException = ValueError('"id" must be a string or an integer')
    except ValidationError as exc:
        refused = exc
    except (RecursionError, ValueError) as exc:  # pragma: no cover - the adapter wraps these
        refused = exc
    try:
        message = json.loads(line)
    except RecursionError:
        return _too_deep(line if isinstance(line, str) else line.decode("utf-8", "replace"))
    except ValueError as exc:
        return _reply(None, PARSE_ERROR, f"the message is not JSON: {exc}")
    if isinstance(message, list):
        return _reply(None, INVALID_REQUEST, "batches are not supported: send one message per line")
    if not isinstance(message, dict):
        return _reply(None, INVALID_REQUEST, "a message is a JSON object")
    raw_id = message.get("id")
    readable = isinstance(raw_id, str | int) and not isinstance(raw_id, bool)
    request_id = raw_id if readable else None
    if "id" not in message and "method" in message:
        if not isinstance(refused, ValidationError):
            return None  # a valid notification that merely mentions "id" inside
        log.info("dropped a malformed notification: %s", _short(refused))
        return {}  # a notification gets no reply, even a broken one
    if message.get("jsonrpc") != "2.0":
        return _reply(request_id, INVALID_REQUEST, '"jsonrpc" must be "2.0"')
    if not isinstance(message.get("method"), str):
        if "result" in message or "error" in message:
            log.info("dropped a malformed response: %s", _short(refused))
            return {}
        return _reply(request_id, INVALID_REQUEST, '"method" must be a string')
    if not readable:
        return _reply(None, INVALID_REQUEST, '"id" must be a string or an integer')
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        if isinstance(params, list):
            return _reply(
                request_id, INVALID_PARAMS, "MCP takes params by name: send a JSON object"
            )
        return _reply(request_id, INVALID_REQUEST, '"params" must be a JSON object')
    problem = argument_problem(params)
    if problem is not None:
        return _reply(request_id, INVALID_PARAMS, problem.replace("the arguments", "params"))
    return _reply(request_id, INVALID_REQUEST, f"the message was refused: {_short(refused)}")


def _too_deep(text: str) -> dict[str, Any]:
    """The reply to a message nested deeper than ``json.loads`` goes: with its id when a
    scan of the top-level object finds a string or integer ``"id"``, else a parse error."""
    try:
        members = _members(text)
    except (ValueError, _GiveUp):
        members = None
    raw_id, _ = (members or {}).get("id", (None, 0))
    if members is None or not isinstance(raw_id, str | int) or isinstance(raw_id, bool):
        return _reply(None, PARSE_ERROR, "the message nests too deeply to be read")
    if "method" not in members and ("result" in members or "error" in members):
        log.info("dropped a response that nests too deeply to be read")
        return {}
    if max(members, key=lambda key: members[key][1]) == "params":
        return _reply(
            raw_id,
            INVALID_PARAMS,
            f"params nest deeper than {MAX_ARGUMENT_DEPTH} levels of objects and arrays "
            "(the limit); send a flatter document",
        )
    return _reply(raw_id, INVALID_REQUEST, "the message nests too deeply to be read")


def leading_id(head: str) -> str | int | None:
    """The id of a message of which only ``head``, its beginning, was read: found when a
    top-level ``"id"`` member (a string or an integer) ends before the cut, else None."""
    decoder = json.JSONDecoder()
    pos = _space(head, 0)
    if not head.startswith("{", pos):
        return None
    pos = _space(head, pos + 1)
    try:
        while head.startswith('"', pos):
            key, pos = decoder.raw_decode(head, pos)
            pos = _space(head, pos)
            if not head.startswith(":", pos):
                return None
            pos = _space(head, pos + 1)
            value: Any = ...
            if head.startswith(("[", "{"), pos):
                pos, _, _ = _skip_nested(head, pos, 0)
            else:
                value, pos = decoder.raw_decode(head, pos)
            pos = _space(head, pos)
            if not head.startswith((",", "}"), pos):
                return None  # cut inside the value, or not JSON: a number may be longer
            if key == "id":
                readable = isinstance(value, str | int) and not isinstance(value, bool)
                return value if readable else None
            pos = _space(head, pos + 1)
    except (ValueError, _GiveUp):
        return None
    return None


class _GiveUp(Exception):
    """The scan took more than ``_SCAN_STEPS`` steps."""


def _members(text: str) -> dict[str, tuple[Any, int]] | None:
    """Each member of the JSON object ``text`` as ``key: (value, depth)``, read without
    parsing nested values: a string, number, boolean or null value as itself, an array or
    object as ``...`` with how deep it nests. None when the text is not one object."""
    decoder = json.JSONDecoder()
    members: dict[str, tuple[Any, int]] = {}
    pos = _space(text, 0)
    if not text.startswith("{", pos):
        return None
    pos = _space(text, pos + 1)
    steps = 0
    while not (text.startswith("}", pos) and not members):  # "{}" has no members
        if not text.startswith('"', pos):
            return None
        key, pos = decoder.raw_decode(text, pos)  # a string: nothing nested to recurse into
        pos = _space(text, pos)
        if not text.startswith(":", pos):
            return None
        pos = _space(text, pos + 1)
        if text.startswith(("[", "{"), pos):
            pos, depth, steps = _skip_nested(text, pos, steps)
            members[key] = (..., depth)
        else:
            value, pos = decoder.raw_decode(text, pos)
            members[key] = (value, 0)
        pos = _space(text, pos)
        if text.startswith("}", pos):
            break
        if not text.startswith(",", pos):
            return None
        pos = _space(text, pos + 1)
    return members if _space(text, pos + 1) == len(text) else None


def _skip_nested(text: str, pos: int, steps: int) -> tuple[int, int, int]:
    """Past the array or object at ``pos``: where it ends, how deep it nests, the steps."""
    decoder = json.JSONDecoder()
    opened: list[str] = []
    depth = 0
    while True:
        found = _STRUCTURE.search(text, pos)
        steps += 1
        if found is None or steps > _SCAN_STEPS:
            raise _GiveUp
        mark, pos = found.group(), found.end()
        if mark == '"':
            _, pos = decoder.raw_decode(text, found.start())
        elif mark in "[{":
            opened.append(mark)
            depth = max(depth, len(opened))
        elif not opened or opened.pop() != _PAIRS[mark]:
            raise _GiveUp
        elif not opened:
            return pos, depth, steps


def _space(text: str, pos: int) -> int:
    found = _SPACE.match(text, pos)
    return found.end() if found else pos


def _reply(request_id: str | int | None, code: int, message: str) -> dict[str, Any]:
    log.info("answered a malformed message with %s: %s", code, message)
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _short(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    text = str(errors()[0].get("msg")) if callable(errors) and errors() else str(exc)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


class EnvelopeCheck:
    """ASGI middleware for streamable HTTP: a POSTed message ``malformed_reply`` refuses is
    answered with HTTP 400 and the JSON-RPC error, a body over ``max_body`` bytes with HTTP 413 (no
    more than ``max_body`` bytes of it are kept); every other request goes to the SDK's
    app. ``active`` counts the POSTs whose answers are not yet sent (for shutdown)."""

    def __init__(self, app: Any, path: str, *, max_body: int = MAX_BODY_BYTES) -> None:
        self.app, self.path, self.max_body = app, path, max_body
        self.active = 0

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        self.active += 1
        try:
            await self._post(scope, receive, send)
        finally:
            self.active -= 1

    async def _post(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        declared = _declared_length(scope)
        if declared > self.max_body:
            more = declared <= _DRAINED * self.max_body
            await self._too_large(receive, send, b"", more=more, peek=not more)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await receive()
            if event["type"] != "http.request":
                return  # the client went away before its message was complete
            chunk = event.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                head = b"".join(_first_bytes([*chunks, chunk], _HEAD))
                await self._too_large(receive, send, head, more=bool(event.get("more_body")))
                return
            chunks.append(chunk)
            if not event.get("more_body"):
                break
        body = b"".join(chunks)
        reply = malformed_reply(body) if body.strip() else None
        if reply is None:
            await self.app(scope, _replay(body, receive), send)
            return
        await _respond(send, 202 if not reply else 400, reply)

    async def _too_large(
        self,
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
        head: bytes,
        *,
        more: bool,
        peek: bool = False,
    ) -> None:
        """Answer 413, with the request's id when ``head`` (the body's first bytes, read
        on here when fewer were read) shows it. With ``more``, first read on and drop what
        the client is still sending (up to a few times the limit, for a few seconds): a
        connection closed with data unread is reset, and the client may lose the answer.
        With ``peek``, read only the first bytes, for a moment."""
        parts = [head]
        kept = len(head)
        if more or peek:
            with anyio.move_on_after(_DRAIN_SECONDS if more else _PEEK_SECONDS):
                dropped = 0
                while dropped <= _DRAINED * self.max_body and (more or kept < _HEAD):
                    event = await receive()
                    chunk = event.get("body", b"")
                    dropped += len(chunk)
                    if kept < _HEAD:
                        parts.append(chunk[: _HEAD - kept])
                        kept += len(parts[-1])
                    if event["type"] != "http.request" or not event.get("more_body"):
                        break
        reply = _reply(
            leading_id(b"".join(parts).decode("utf-8", "ignore")),
            INVALID_REQUEST,
            f"the request body is larger than {self.max_body:,} bytes (the limit); send less, "
            "or point the tool at a file or URL instead",
        )
        # Some of the body may be left unread: the connection carries no further request.
        await _respond(send, 413, reply, close=True)


def _first_bytes(chunks: list[bytes], count: int) -> list[bytes]:
    taken: list[bytes] = []
    for chunk in chunks:
        if count <= 0:
            break
        taken.append(chunk[:count])
        count -= len(taken[-1])
    return taken


def _declared_length(scope: MutableMapping[str, Any]) -> int:
    """The request's Content-Length, or -1 when it has none that is a number."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else -1
    return -1


async def _respond(
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    status: int,
    reply: dict[str, Any],
    *,
    close: bool = False,
) -> None:
    content = json.dumps(reply).encode() if reply else b""
    headers = [(b"content-type", b"application/json")] if content else []
    headers.append((b"content-length", str(len(content)).encode()))
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


def _replay(
    body: bytes, receive: Callable[[], Awaitable[MutableMapping[str, Any]]]
) -> Callable[[], Awaitable[MutableMapping[str, Any]]]:
    sent = False

    async def again() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # then the client's disconnect, as the app expects

    return again

