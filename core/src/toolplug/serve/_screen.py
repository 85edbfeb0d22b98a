"""Every JSON-RPC request gets an answer, even one the MCP SDK would drop.

The SDK validates each incoming message against the JSON-RPC envelope and, on stdio, drops
a message it refuses with only a debug log: a client that sent positional ``params``, an
``id`` of ``null`` or ``1.5``, or arguments nested deeper than the validator goes, waits
forever. Over HTTP it answers most of them, but without the request's id. ``screen`` looks
at a message first: what the SDK accepts passes on untouched; for anything else it returns
the error reply JSON-RPC 2.0 prescribes, with the request's id when the id can be read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from toolplug.calls._limits import argument_problem

__all__ = ["ScreeningApp", "screen"]

log = logging.getLogger("toolplug")

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602
_SHOWN: Final = 200


def screen(line: str | bytes) -> dict[str, Any] | None:
    """None when the SDK will take the message; else the error reply to send instead."""
    from mcp import types
    from pydantic import ValidationError

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
        return _reply(None, PARSE_ERROR, "the message nests too deeply to be read")
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


def _reply(request_id: str | int | None, code: int, message: str) -> dict[str, Any]:
    log.info("answered a malformed message with %s: %s", code, message)
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _short(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    text = str(errors()[0].get("msg")) if callable(errors) and errors() else str(exc)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


class ScreeningApp:
    """ASGI middleware for streamable HTTP: a POSTed message ``screen`` refuses is answered
    with HTTP 400 and the JSON-RPC error; every other request goes to the SDK's app."""

    def __init__(self, app: Any, path: str) -> None:
        self.app, self.path = app, path

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        reply = screen(body) if body.strip() else None
        if reply is None:
            await self.app(scope, _replay(body, receive), send)
            return
        status = 202 if not reply else 400
        content = json.dumps(reply).encode() if reply else b""
        headers = [(b"content-type", b"application/json")] if content else []
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

