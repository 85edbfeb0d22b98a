"""The HTTP endpoint of a signed decision (``toolplug.engine._reply``), as a Starlette
route: ``toolplug console`` answers it among its pages, ``serve --http`` beside its MCP
endpoint, outside the bearer token's check and the console's sign-in (the signature is the
reply's authentication)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse
from starlette.routing import Route

from toolplug.engine._reply import MAX_BODY, REPLY_PATH, signed_reply

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolplug.engine._inbox import Approvals
    from toolplug.state._record import Recorder

__all__ = ["REPLY_PATH", "reply_route"]


def reply_route(
    approvals: Callable[[], Approvals], recorder: Callable[[], Recorder | None],
    path: str = REPLY_PATH,
) -> Any:
    """``POST path``: the signed decision of ``approvals()``'s request, refusals recorded
    in ``recorder()``."""
    async def reply(request: Request) -> Response:
        body = b""
        async for chunk in request.stream():  # bounded: never more than a reply holds
            body += chunk
            if len(body) > MAX_BODY:
                break
        status, answer = await signed_reply(approvals(), recorder(), request.headers, body)
        return JSONResponse(answer, status_code=status, headers={"Cache-Control": "no-store"})

    return Route(path, reply, methods=["POST"])
