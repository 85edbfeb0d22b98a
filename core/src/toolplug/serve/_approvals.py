"""Approvals over MCP: who is asked about a served call that needs approval, and how.

Per call, in this order:

- ``[serve] approvals = "client"`` (or ``approvals_by_tool`` for this tool): the MCP host
  approves calls itself (the OpenAI Agents SDK's ``require_approval``, built from the
  tools' ``destructiveHint``), so the call runs as approved and toolplug does not ask again.
- A client on a handshake revision (2025-11-25 and before) that declared elicitation is
  asked mid-call with ``elicitation/create``: a yes/no form with what would run.
- A client on the 2026-07-28 revision that declared elicitation has no back-channel for
  server-to-client requests: the call answers ``resultType: "input_required"`` with the same
  form as an input request, and the tool does not run. The client shows it to its user and
  retries the call with the answer and the echoed ``requestState``; the retry runs or is
  denied. The state is sealed by the SDK's ``RequestStateBoundary`` (authenticated
  encryption, bound to this tool, these arguments and the caller, ten minutes), and it
  names the question asked, so an answer counts only for the call it was asked about.
- Anyone else (a client that declared no elicitation, or could not be reached) decides
  nothing: the ``approver`` passed to ``toolplug.load()`` and the ``approve_call`` hook
  are asked next, and without a decision the call ends with ``ApprovalRequiredError``: a
  short message for the model, and in the server's log why nobody was asked and how the
  operator can approve.

The calls a ``run_code`` program makes are asked by elicitation when the client can be
asked mid-call; an input request would run the program again from its start, so they are
not put as input requests.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from typing import TYPE_CHECKING, Any, Final

from mcp import types
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp_types.methods import INPUT_REQUIRED_METHODS
from mcp_types.version import is_version_at_least

from toolplug.contract._approval import Approval, ApprovalRequest
from toolplug.contract._tool import ErrorType, ToolResult
from toolplug.state._backend import Unreachable
from toolplug.state._redis import RedisBackend

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from toolplug.runtime._registry import Registry

__all__ = ["AskClient", "InputRequired", "approved_by_host", "install_request_state"]

log = logging.getLogger("toolplug")

INPUT_KEY: Final = "toolplug/approval"
"""The key of the approval question in ``inputRequests`` and of its answer in
``inputResponses``."""
MODERN: Final = "2026-07-28"
"""The first revision without server-to-client requests: input requests instead."""
STATE_TTL_SECONDS: Final = 600.0
"""How long a client may take to answer an approval question."""

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Run this call?", "default": False},
        "remember": {
            "type": "string",
            "title": "Remember this answer",
            "oneOf": [
                {"const": "once", "title": "Only for this call"},
                {"const": "conversation", "title": "For this conversation"},
                {"const": "always", "title": "Always, for this tool with these arguments"},
            ],
            "default": "once",
        },
    },
    "required": ["approve"],
}
"""The approval form: yes or no, and how long the answer holds (kept per owner by
``toolplug.engine._inbox``: ``toolplug approvals remembered`` lists them)."""


class InputRequired(Exception):
    """The call waits for the client's user: answer ``input_required`` with this question."""

    def __init__(self, request: ApprovalRequest, question: str) -> None:
        super().__init__(f"{request.tool} waits for approval")
        self.request = request
        self.question = question

    def result(self) -> types.InputRequiredResult:
        """The ``input_required`` answer: the question, and the state its answer must echo."""
        ask = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=self.request.describe(), requested_schema=_SCHEMA
            )
        )
        return types.InputRequiredResult(
            input_requests={INPUT_KEY: ask},
            request_state=json.dumps({"approval": self.question}),
        )


def approved_by_host(registry: Registry, tool: str) -> bool:
    """Whether ``[serve]`` says the MCP host approves the calls of ``tool`` itself."""
    return registry.config.serve.approvals_for(tool) == "client"


def install_request_state(server: Server[Any], store: str) -> None:
    """Seal the ``requestState`` of input requests, and check it on the retry.

    The key lives in this process, or with ``[calls] store`` on Redis it is one for every
    replica, so a retry may reach any of them. A state sealed by another key (another
    server, a restart with the in-process store) is refused with -32602, and the client
    asks again with a new call.
    """
    server.middleware.append(_Sealing(store))


class _Sealing:
    """The SDK's ``RequestStateBoundary``, with this process's key or the replicas' shared one."""

    def __init__(self, store: str) -> None:
        self._store = store
        self._own = os.urandom(32)
        self._shared: Any = None  # the boundary under the replicas' key, once read

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        if ctx.method not in INPUT_REQUIRED_METHODS:
            return await call_next(ctx)
        if self._store == "memory":
            boundary = self._shared = self._shared or _boundary([self._own])
        elif self._shared is not None:
            boundary = self._shared
        else:
            try:
                key = await shared_secret(self._store, "request-state")
            except Exception as exc:  # answer from here: a retry must come back to this replica
                log.warning("the replicas' request-state key cannot be read (%s)", exc)
                boundary = _boundary([self._own])
            else:  # what this replica sealed alone still opens
                boundary = self._shared = _boundary([key, self._own])
        return await boundary(ctx, call_next)


async def shared_secret(url: str, name: str) -> bytes:
    """A random secret every replica sharing the Redis at ``url`` reads alike: the first to
    ask makes it (set-if-absent in the state backend). Raises ``Unreachable`` when Redis
    cannot be reached."""
    backend = RedisBackend(url)  # on this loop, for this one question
    try:
        key = "secret:" + name
        await backend.set(key, secrets.token_hex(32), None, only_if_absent=True)
        found = await backend.get(key)
    finally:
        await backend.aclose()
    if not found:
        raise Unreachable(f"Redis kept no value at {backend.prefix}{key}")
    return found.encode()


def _boundary(keys: list[bytes]) -> Any:
    security = RequestStateSecurity(keys=keys, ttl=STATE_TTL_SECONDS)
    return RequestStateBoundary(security, default_audience="toolplug")


class AskClient:
    """The approver of one served call: the client's user, by elicitation or input request.

    Returns None (nobody decided) when the client cannot be asked, and says why in
    ``unasked``; raises ``InputRequired`` when the question goes back as ``input_required``.
    """

    def __init__(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> None:
        self._ctx = ctx
        self._params = params
        self.unasked: str | None = None
        """Why the client's user could not be asked, once that happened."""
        self._unasked_request: ApprovalRequest | None = None

    async def __call__(self, request: ApprovalRequest) -> Approval | None:
        decision = await self._ask(request)
        if decision is None:
            self._unasked_request = request
        return decision

    async def _ask(self, request: ApprovalRequest) -> Approval | None:
        ctx = self._ctx
        capabilities = ctx.session.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        if elicitation is None or (elicitation.form is None and elicitation.url is not None):
            self.unasked = "the MCP client declared no (form) elicitation capability"
            return None
        modern = is_version_at_least(ctx.protocol_version, MODERN)
        if not modern and ctx.session.can_send_request:
            return await self._elicit(request)
        if not modern:
            self.unasked = "the MCP client's connection carries no requests from the server"
            return None
        if request.tool != self._params.name:
            self.unasked = (
                f"{request.tool} was called by a program of {self._params.name}, and an input "
                "request would run the program again from its start"
            )
            return None
        question = _question(request)
        answer = self._answer(question)
        if answer is None:
            raise InputRequired(request, question)
        return _decision(answer)

    async def _elicit(self, request: ApprovalRequest) -> Approval | None:
        try:
            answer = await self._ctx.session.elicit_form(
                request.describe(), _SCHEMA, related_request_id=self._ctx.request_id
            )
        except Exception as exc:  # the client could not ask: nobody decided
            log.warning("could not ask the MCP client to approve %s: %s", request.tool, exc)
            self.unasked = f"asking the MCP client failed ({type(exc).__name__}: {exc})"
            return None
        return _decision(answer)

    def _answer(self, question: str) -> types.ElicitResult | None:
        """The client's answer to ``question``, when this retry carries one."""
        state = self._params.request_state  # verified and unsealed by RequestStateBoundary
        if state is None:
            return None
        try:
            asked = json.loads(state).get("approval")
        except (ValueError, AttributeError):
            return None
        if asked != question:  # asked about another call: ask about this one
            return None
        answer = (self._params.input_responses or {}).get(INPUT_KEY)
        return answer if isinstance(answer, types.ElicitResult) else None

    def unasked_result(self, result: ToolResult) -> ToolResult:
        """When nobody was asked: the short ``ApprovalRequiredError`` the model reads, and,
        in the server's log (stderr over stdio), why and how the operator can approve."""
        error, request = result.error, self._unasked_request
        if self.unasked is None or request is None or error is None:
            return result
        if error.type != ErrorType.APPROVAL_REQUIRED or error.details.get("tool") != request.tool:
            return result
        if error.details.get("by_setting") is False:  # the flow guard or a policy asked
            advice = str(error.details.get("advice"))
        else:
            advice = (
                "use an MCP client that supports elicitation or input requests (the "
                "2026-07-28 input_required result); or, in toolplug's configuration on the "
                f'server, set [tools.{request.tool}] approval = "never" to run it unasked, or '
                '[serve] approvals = "client" when the MCP host asks its user before each '
                "call itself"
            )
        log.warning(
            "%s. Nobody could be asked: %s. To approve calls like this one, %s",
            request.describe(), self.unasked, advice,
        )
        return ToolResult.failure(
            ErrorType.APPROVAL_REQUIRED,
            error.message,
            details={**error.details, "asked": False, "why": self.unasked, "advice": advice},
        )


def _question(request: ApprovalRequest) -> str:
    """What was asked, as a digest: an answer counts only for this exact question."""
    text = json.dumps([request.tool, request.describe()], ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _decision(answer: types.ElicitResult) -> Approval:
    if answer.action != "accept":
        return Approval.deny(f"the client's user answered {answer.action}")
    content = answer.content or {}
    kept = content.get("remember")
    remember: Any = kept if kept in ("conversation", "always") else "once"
    if content.get("approve") is True:
        return Approval.approve("approved by the client's user", remember=remember)
    return Approval.deny("the client's user said no", remember=remember)
