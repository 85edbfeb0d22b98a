"""Tools that talk back over MCP: each served call's ``Channel``.

What a tool's ``ToolContext`` offers reaches the MCP client as:

- ``report_progress``: ``notifications/progress`` (with the message), when the client sent a
  progress token with its call;
- ``log``: ``notifications/message`` (``logger`` the tool's name), at or above the level the
  session set with ``logging/setLevel`` (every level until it sets one); on the 2026-07-28
  revision at or above the level the call's ``_meta`` opted in to, and none without;
- ``ask``: ``elicitation/create`` in form mode, when the client declared elicitation; on the
  2026-07-28 revision (no requests from the server) the call answers ``input_required``
  with the question, and the client's retry runs the tool again from its start, its
  ``ask`` of the same question answered from ``inputResponses``;
- ``sample``: ``sampling/createMessage``, when the client declared sampling; on the
  2026-07-28 revision an input request too.

Progress and log lines are queued and sent in order, never waited for by the tool; the
call's answer waits until they are all on their way (on streamable HTTP they ride the
call's own stream, which ends with the answer). Progress goes at the session's pace
(``Pacer``): a report that has to wait is replaced by its call's later one, and dropped
when the answer comes first. A client gone away fails no call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from mcp import types
from mcp.server.connection import allowed_log_levels
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import is_version_at_least

from toolplug.contract._parts import Audio, Image
from toolplug.contract._talk import (
    LOG_LEVELS,
    Answer,
    AskError,
    Channel,
    LogLevel,
    Question,
    Sampled,
    SamplingMessage,
    SamplingRequest,
)
from toolplug.serve._approvals import INPUT_KEY, MODERN

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

__all__ = ["ASK_KEY", "SAMPLE_KEY", "InputLater", "McpChannel", "Talking", "install_talk"]

log = logging.getLogger("toolplug")

ASK_KEY: Final = "toolplug/ask:"
"""The ``inputRequests`` key of a tool's question, its digest after the colon."""
SAMPLE_KEY: Final = "toolplug/sample:"
"""The ``inputRequests`` key of a tool's sampling request, its digest after the colon."""
_MAX_SESSIONS: Final = 1024


class InputLater(BaseException):
    """The tool asked what only the client's retry can answer (the 2026-07-28 revision):
    the call answers ``input_required``. A ``BaseException``, so that neither the tool's
    ``except Exception`` nor the engine's turns it into an error result; the host passes it
    through (``passthrough``) and answers with ``result()``."""

    def __init__(self, key: str, request: Any, state: str) -> None:
        super().__init__(f"waiting for the client's answer to {key}")
        self.key, self.request, self.state = key, request, state

    def result(self) -> types.InputRequiredResult:
        """The ``input_required`` answer: the question, and the state its retry echoes."""
        return types.InputRequiredResult(
            input_requests={self.key: self.request}, request_state=self.state
        )


class Talking:
    """The server's side of talking back: each session's log level (``logging/setLevel``)
    and a ``McpChannel`` for each call."""

    def __init__(self, interval: float) -> None:
        self._levels: dict[str, str] = {}
        self._interval = interval
        self._pacers: weakref.WeakValueDictionary[str, Pacer] = weakref.WeakValueDictionary()

    async def set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """``logging/setLevel``: this session's log lines from ``params.level`` up."""
        key = _session(ctx)
        if key is not None:
            self._levels.pop(key, None)
            if len(self._levels) >= _MAX_SESSIONS:
                self._levels.pop(next(iter(self._levels)))  # the oldest
            self._levels[key] = params.level
        return types.EmptyResult()

    def channel(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> McpChannel:
        """The channel of one call of ``params.name``."""
        key = _session(ctx)
        level = self._levels.get(key, "debug") if key is not None else "debug"
        pacer = None
        if self._interval > 0:  # one per session, kept while a call of it holds it
            pacer = self._pacers.get(key) if key is not None else None
            if pacer is None:
                pacer = Pacer(self._interval)
                if key is not None:
                    self._pacers[key] = pacer
        return McpChannel(ctx, params, level, pacer)


class Pacer:
    """One session's progress notifications, at most one per ``interval`` seconds (``[serve]
    progress_interval_seconds``) whatever the number of its calls in flight: a call whose
    report cannot go at once waits its turn, first come first served, holding only its
    latest report. A client sees each call's progress at the pace it can read, and 200
    calls at once cost it no more notifications than one (bench/talkback.py).

    Written here rather than taken from a rate-limiting library: what it does beyond
    limiting a rate is keep one place in line per call and replace what waits there, which
    a limiter's ``acquire`` (one waiter per report) does not."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._next = 0.0  # loop time the next notification may go
        self._waiting: dict[McpChannel, None] = {}  # calls in line, in the order they came
        self._timer: asyncio.TimerHandle | None = None

    def offer(self, channel: McpChannel) -> bool:
        """Whether ``channel``'s report may go now; if not, the call is in line."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if not self._waiting and now >= self._next:
            self._next = now + self._interval
            return True
        self._waiting.setdefault(channel, None)  # a call in line keeps its place
        if self._timer is None:
            self._timer = loop.call_at(max(self._next, now), self._turn)
        return False

    def leave(self, channel: McpChannel) -> None:
        """``channel`` no longer waits (its call is answering)."""
        self._waiting.pop(channel, None)

    def _turn(self) -> None:
        self._timer = None
        if not self._waiting:
            return
        channel = next(iter(self._waiting))
        del self._waiting[channel]
        loop = asyncio.get_running_loop()
        self._next = loop.time() + self._interval
        channel.release()
        if self._waiting:
            self._timer = loop.call_at(self._next, self._turn)


def install_talk(server: Server[Any], interval: float = 0.0) -> Talking:
    """Answer ``logging/setLevel`` (which declares the ``logging`` capability) and return
    what builds each call's channel; ``interval``: ``[serve] progress_interval_seconds``."""
    talking = Talking(interval)
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, talking.set_level)
    return talking


def _session(ctx: ServerRequestContext[Any]) -> str | None:
    """The session a request comes from: the HTTP session, the one client of stdio, or None
    (a stateless HTTP request, which keeps no level)."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    if headers is None:
        return "stdio"
    session_id = headers.get("mcp-session-id")
    return str(session_id) if session_id else None


class McpChannel(Channel):
    """One served call's end of its tool's talking back (the module's docstring says how)."""

    def __init__(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, level: str,
        pacer: Pacer | None = None,
    ) -> None:
        self._ctx, self._tool = ctx, params.name
        self._loop = asyncio.get_running_loop()
        self._last: asyncio.Task[None] | None = None
        self._pacer = pacer
        self._held: tuple[float, float | None, str | None] | None = None  # waiting its turn
        request = ctx.request_id
        self._related = None if request is None else str(request)
        meta: Mapping[str, Any] = ctx.meta or {}
        token = meta.get("progress_token", meta.get("progressToken"))
        self._token = token if isinstance(token, str | int) else None
        self._modern = is_version_at_least(ctx.protocol_version, MODERN)
        self._levels: frozenset[str] = (
            frozenset(allowed_log_levels(ctx.protocol_version, meta))  # the call's _meta opt-in
            if self._modern
            else frozenset(LOG_LEVELS[LOG_LEVELS.index(level):])
        )
        self._state, self._asked, self.responses = _carried(params)
        self.params = params.model_copy(update={"input_responses": self.responses or None})
        """The call's parameters with the answers carried from earlier retries (the
        approval's among them), for the approver."""
        self._decide(ctx)

    def _decide(self, ctx: ServerRequestContext[Any]) -> None:
        capabilities = ctx.session.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        sampling = capabilities.sampling if capabilities is not None else None
        form = elicitation is not None and (elicitation.form is not None or elicitation.url is None)
        reached = self._modern or ctx.session.can_send_request
        self.can_ask = form and reached
        self.can_sample = sampling is not None and reached
        missing = [
            what for what, has in (("form elicitation", form), ("sampling", sampling is not None))
            if not has
        ]
        if not reached:
            self.why_not = (
                "the MCP client's connection carries no requests from the server (a stateless "
                "HTTP request on a handshake revision)"
            )
        elif missing:
            self.why_not = f"the MCP client declared no {' and no '.join(missing)} capability"

    # -- progress and log lines: queued, in order, never waited for by the tool ----------

    @property
    def reporter(self) -> Callable[..., None] | None:
        """The host's ``progress`` entry (tasks and mounted servers read it), or None when
        the client sent no progress token."""
        return self._report if self._token is not None else None

    def _report(self, done: float, total: float | None = None, message: str | None = None) -> None:
        self.progress(done, total, message)

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        if self._token is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._hold((done, total, message))
        else:  # from a worker thread: onto the loop, in the order reported
            self._loop.call_soon_threadsafe(self._hold, (done, total, message))

    def log(self, level: LogLevel, message: str, data: Mapping[str, Any] | None) -> None:
        if level not in self._levels:
            return
        said: dict[str, Any] = {"message": message}
        if data:
            said["data"] = dict(data)
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level=level, logger=self._tool, data=said)
        )
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._chain(notification)
        else:
            self._loop.call_soon_threadsafe(self._chain, notification)

    def _hold(self, report: tuple[float, float | None, str | None]) -> None:
        """The latest report, sent at once when the session's pace allows, else when this
        call's turn comes (replaced meanwhile by any later report of the call)."""
        waiting, self._held = self._held is not None, report
        if waiting:  # in line already: the latest replaces what waited
            return
        if self._pacer is None or self._pacer.offer(self):
            self.release()

    def release(self) -> None:
        """Send the held report, if any (the pacer calls this when the call's turn comes)."""
        held, self._held, token = self._held, None, self._token
        if held is not None and token is not None:
            done, total, message = held
            self._chain(types.ProgressNotification(params=types.ProgressNotificationParams(
                progress_token=token, progress=done, total=total, message=message,
            )))

    def _chain(self, notification: Any) -> None:
        self._last = self._loop.create_task(self._send(self._last, notification))

    async def _send(self, before: asyncio.Task[None] | None, notification: Any) -> None:
        if before is not None:
            await before
        try:
            await self._ctx.session.send_notification(notification, self._related)
        except Exception as exc:  # a client gone away: the call's answer still matters
            log.debug("%s not sent: %s", notification.method, exc)

    async def sent(self) -> None:
        """Wait until every notification queued so far is on its way, the held report
        among them (before a question, so that it arrives first)."""
        await asyncio.sleep(0)  # let reports made from worker threads land first
        if self._pacer is not None:
            self._pacer.leave(self)
        self.release()
        if self._last is not None:
            await self._last

    async def finished(self) -> None:
        """The call's answer is next: a report still waiting its turn is dropped (the
        answer supersedes it), and what was sent before is on its way first."""
        await asyncio.sleep(0)
        if self._pacer is not None:
            self._pacer.leave(self)
        self._held = None
        if self._last is not None:
            await self._last

    # -- questions and sampling -----------------------------------------------------

    async def ask(self, question: Question) -> Answer:
        message, schema = question.message, dict(question.schema)
        if self._modern:
            self._rerun_allowed(question.tool)
            digest = _digest([question.tool, message, schema])
            answer = self._answered(ASK_KEY + digest, digest, types.ElicitResult)
            if answer is None:
                ask = types.ElicitRequest(
                    params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
                )
                raise InputLater(ASK_KEY + digest, ask, self._later(digest))
        else:
            await self.sent()  # what the tool reported before it asked arrives first
            answer = await self._ctx.session.elicit_form(
                message, schema, related_request_id=self._ctx.request_id
            )
        return Answer(answer.action, dict(answer.content or {}))

    async def sample(self, request: SamplingRequest) -> Sampled:
        params = types.CreateMessageRequestParams(
            messages=[_message(m) for m in request.messages],
            system_prompt=request.system,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            stop_sequences=list(request.stop) or None,
            model_preferences=types.ModelPreferences(
                hints=[types.ModelHint(name=name) for name in request.model_hints]
            ) if request.model_hints else None,
        )
        asking = types.CreateMessageRequest(params=params)
        if self._modern:
            self._rerun_allowed(request.tool)
            digest = _digest([request.tool, params.model_dump(mode="json", exclude_none=True)])
            found = self._answered(SAMPLE_KEY + digest, digest, types.CreateMessageResult)
            if found is None:
                raise InputLater(SAMPLE_KEY + digest, asking, self._later(digest))
        else:
            await self.sent()
            found = await self._ctx.session.send_request(
                asking, types.CreateMessageResult,
                metadata=ServerMessageMetadata(related_request_id=self._ctx.request_id),
            )
        content = found.content
        if isinstance(content, list):  # a client's answer with several blocks
            texts = [c.text for c in content if isinstance(c, types.TextContent)]
        else:
            texts = [content.text] if isinstance(content, types.TextContent) else []
        if not texts:
            raise AskError("failed", "the client's model answered with no text")
        return Sampled("\n".join(texts), found.model, found.stop_reason)

    def _rerun_allowed(self, tool: str) -> None:
        """An input request runs the served call again from its start: not when the asking
        tool was called by a program of another (``run_code``), which would run again whole."""
        if tool != self._tool:
            raise AskError(
                "unavailable",
                f"{tool} was called by a program of {self._tool}, and on this MCP client "
                "(2026-07-28, input requests) asking would run the program again from its start",
            )

    def _answered(self, key: str, digest: str, kind: type[Any]) -> Any:
        """The answer this retry carries to the question ``digest``, if it was asked."""
        if digest not in self._asked:
            return None
        found = self.responses.get(key)
        return found if isinstance(found, kind) else None

    def _later(self, digest: str) -> str:
        """The ``requestState`` of a new question: what was asked so far, the answers
        given so far (sealed by the server, so the retry cannot change them), and the
        approval's question when one was asked."""
        carried = {
            key: answer.model_dump(mode="json", by_alias=True, exclude_none=True)
            for key, answer in self.responses.items()
        }
        return json.dumps(
            {**self._state, "asked": sorted({*self._asked, digest}), "carried": carried}
        )


def _carried(
    params: types.CallToolRequestParams,
) -> tuple[dict[str, Any], set[str], dict[str, Any]]:
    """From a retry: the rest of its state, the questions asked, every answer so far."""
    state: dict[str, Any] = {}
    if params.request_state is not None:  # verified and unsealed by RequestStateBoundary
        try:
            opened = json.loads(params.request_state)
        except ValueError:
            opened = None
        state = opened if isinstance(opened, dict) else {}
    asked = {d for d in state.pop("asked", None) or () if isinstance(d, str)}
    responses: dict[str, Any] = {}
    for key, value in (state.pop("carried", None) or {}).items():
        kind = types.CreateMessageResult if key.startswith(SAMPLE_KEY) else types.ElicitResult
        try:
            responses[key] = kind.model_validate(value)
        except ValueError:
            continue
    responses.update(params.input_responses or {})
    if INPUT_KEY not in responses:
        state.pop("approval", None)
    return state, asked, responses


def _digest(value: Any) -> str:
    """What was asked, as a digest: an answer counts only for this exact question."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _message(message: SamplingMessage) -> types.SamplingMessage:
    content = message.content
    block: Any
    if isinstance(content, Image):
        block = types.ImageContent(type="image", data=content.base64(), mime_type=content.mime_type)
    elif isinstance(content, Audio):
        block = types.AudioContent(type="audio", data=content.base64(), mime_type=content.mime_type)
    else:
        block = types.TextContent(type="text", text=str(content))
    return types.SamplingMessage(role=message.role, content=block)

