"""What a mounted server sends back during a call, relayed to the call's own host.

A server may ask its user (``elicitation/create``), ask the client's model
(``sampling/createMessage``), report progress and log. Each reaches the mounted tool's
``ToolContext`` as the tool's own would: ``ask``, ``sample`` (only when the server's
``sampling = true``), ``report_progress`` and ``log``. The client declares form
elicitation, and sampling only where allowed: nothing it would refuse.

Which call a request belongs to: the SDK's client callbacks are per session, not per
call, so the mount marks each call's task (a context variable) and a request handled in
that task's context is the call's own. That is exact on a 2026-07-28 session, where the
server's questions come back embedded in the call's result (``InputRequiredResult``) and
the SDK answers them in the call's task, and on streamable HTTP, where a server's
requests and log lines during a call come on that call's own response stream (the SDK
reads it in the call's context). Over stdio, an older server's requests and every
server's log lines arrive on the one shared pipe naming no call; then they go to the call
in flight on that connection, or with several, to the newest when they all came from one
host (one ``Channel``). Calls of different hosts in flight at once over stdio cannot be
told apart: a question is then cancelled (nobody is asked on another's behalf) and a log
line goes to the ``toolplug.mount`` logger, as do log lines outside any call.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import json
import logging
from typing import TYPE_CHECKING, Any, Final

from mcp import types
from mcp.client.session import ClientRequestContext

from toolplug.contract._parts import Audio, Image
from toolplug.contract._talk import LOG_LEVELS, AskError, SamplingMessage, form_problem

if TYPE_CHECKING:
    from toolplug.sources.mcp._host import Connection, InFlight

__all__ = ["CALL", "Relay", "capabilities"]

log = logging.getLogger("toolplug.mount")

CALL: Final[contextvars.ContextVar[InFlight | None]] = contextvars.ContextVar(
    "toolplug_mount_call", default=None
)
"""The call whose ``tools/call`` runs in this task (the SDK answers embedded requests here)."""

REASON: Final = "dev.toolplug/reason"
"""The ``_meta`` key of a declined or cancelled answer's reason, for the server's logs."""

_PYTHON_LEVELS: Final = {
    "debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
    "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
    "alert": logging.CRITICAL, "emergency": logging.CRITICAL,
}
USER_REJECTED: Final = -1
"""The error code MCP gives a sampling request the user or host would not run."""


def capabilities(sampling: bool) -> types.ClientCapabilities:
    """What the mount's client honours: form elicitation, and sampling when allowed."""
    return types.ClientCapabilities(
        elicitation=types.ElicitationCapability(form=types.FormElicitationCapability()),
        sampling=types.SamplingCapability() if sampling else None,
    )


class Relay:
    """The callbacks of one connection's client: each request to the call it belongs to."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.name = connection.name
        self.sampling = bool(connection.server.settings.sampling)

    def call(self) -> tuple[InFlight | None, str]:
        """The call a request of the server belongs to, or None and why there is none."""
        own = CALL.get()
        if own is not None:
            return own, ""
        calls = list(self.connection.calls)
        if not calls:
            return None, "no call of its tools is in flight"
        channels = {id(c.context.talk.channel if c.context.talk else None) for c in calls}
        if len(channels) > 1:
            return None, (
                f"{len(calls)} calls from different hosts are in flight and its request "
                "names none of them"
            )
        return calls[-1], ""

    # -- elicitation/create ------------------------------------------------------------

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """A question of the server for its user: asked through the call's host."""
        if isinstance(params, types.ElicitRequestURLParams):
            why = (
                "toolplug's mount declares form elicitation only; a URL-mode request "
                "(an out-of-band page for the user) is declined"
            )
            return self._refused("decline", why)
        schema = params.requested_schema
        problem = form_problem(schema)
        if problem is not None:
            return self._refused("decline", f"its form is not one MCP allows: {problem}")
        call, why = self.call()
        if call is None:
            return self._refused("cancel", f"nobody to ask: {why}")
        tool = call.context

        async def ask() -> Any:
            return await tool.ask(params.message, schema)

        try:
            answer = await call.on_caller(ask)
        except AskError as exc:  # unavailable, timeout, an answer that does not fit: no choice
            return self._refused("cancel", f"{tool.tool}: {exc.message}")
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the host answers later (a retry): the call raises it
            call.paused = exc
            return self._refused("cancel", f"{tool.tool}: the host answers on a retry")
        if answer.accepted:
            return types.ElicitResult(action="accept", content=dict(answer.content))
        return types.ElicitResult(action=answer.action)

    def _refused(self, action: str, why: str) -> types.ElicitResult:
        log.info("MCP server %s: a question for the user answered %s: %s", self.name, action, why)
        return types.ElicitResult(action=action, _meta={REASON: why})  # type: ignore[arg-type]

    # -- sampling/createMessage --------------------------------------------------------

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """A request of the server for the host's model: through the call's host, when its
        settings allow it."""
        if not self.sampling:
            return self._no_sample(
                types.INVALID_REQUEST,
                f"toolplug does not let MCP server {self.name!r} use the host's model; set "
                f"sampling = true in [mcp_servers.{self.name}] to allow it",
            )
        if params.tools or params.tool_choice:
            return self._no_sample(
                types.INVALID_PARAMS, "toolplug's mount does not offer tools to sampling"
            )
        try:
            messages = [_message(m) for m in params.messages]
        except ValueError as exc:
            return self._no_sample(types.INVALID_PARAMS, str(exc))
        call, why = self.call()
        if call is None:
            return self._no_sample(USER_REJECTED, f"no model to ask: {why}")
        tool = call.context
        hints = params.model_preferences.hints if params.model_preferences else None

        async def sample() -> Any:
            return await tool.sample(
                messages, system=params.system_prompt, max_tokens=params.max_tokens,
                temperature=params.temperature, stop=params.stop_sequences or (),
                model_hints=[h.name for h in hints or () if h.name],
            )

        try:
            sampled = await call.on_caller(sample)
        except AskError as exc:
            return self._no_sample(USER_REJECTED, f"{tool.tool}: {exc.message}")
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # as in elicit: raised from the call
            call.paused = exc
            return self._no_sample(USER_REJECTED, f"{tool.tool}: the host answers on a retry")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=sampled.text),
            model=sampled.model or "unknown", stop_reason=sampled.stop_reason,
        )

    def _no_sample(self, code: int, why: str) -> types.ErrorData:
        log.info("MCP server %s: a sampling request refused: %s", self.name, why)
        return types.ErrorData(code=code, message=why)

    # -- notifications/message ---------------------------------------------------------

    async def logged(self, params: types.LoggingMessageNotificationParams) -> None:
        """A log line of the server: to the call's host, or the ``toolplug.mount`` logger."""
        level = params.level if params.level in LOG_LEVELS else "warning"
        data = params.data
        text = data if isinstance(data, str) else json.dumps(data, default=str)
        where = f"{params.logger}: " if params.logger else ""
        call, _why = self.call()
        if call is None:
            log.log(_PYTHON_LEVELS[level], "MCP server %s: %s%s", self.name, where, text)
            return
        call.context.log(
            level, f"{where}{text}",
            {"server": self.name, "logger": params.logger, "data": data},
        )


def _message(message: types.SamplingMessage) -> SamplingMessage:
    content = message.content
    if isinstance(content, list):
        if len(content) != 1:
            raise ValueError("toolplug's mount takes one content block per sampling message")
        content = content[0]
    if isinstance(content, types.TextContent):
        return SamplingMessage(message.role, content.text)
    if isinstance(content, types.ImageContent):
        image = Image(base64.b64decode(content.data), content.mime_type)
        return SamplingMessage(message.role, image)
    if isinstance(content, types.AudioContent):
        audio = Audio(base64.b64decode(content.data), content.mime_type)
        return SamplingMessage(message.role, audio)
    raise ValueError(
        f"a sampling message of {type(content).__name__} is not one toolplug relays "
        "(text, an image or audio)"
    )
