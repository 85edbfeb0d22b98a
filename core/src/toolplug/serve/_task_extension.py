"""Calls as tasks over MCP: the Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663).

A client on the 2026-07-28 revision that declares the extension in a ``tools/call``
request's client capabilities may get a task back (``resultType: "task"``, with ``taskId``,
``status``, ``createdAt``, ``lastUpdatedAt``, ``ttlMs`` and ``pollIntervalMs``), then asks
``tasks/get`` (the status, and once it ended the ``CallToolResult`` inline) and
``tasks/cancel``. The extension leaves the choice to the server, per request: a call is a
task at once when its tool is ``long_running`` or the request has ``task`` in its params,
and otherwise when it is still running after ``[calls] task_after_seconds``; a call that
ends sooner is answered with its result, as a plain call is. A client that does not
declare the extension gets the plain call, as before. The calls run through
``Registry.astart`` (``toolplug.state._tasks``), so with ``[calls] store`` on Redis every
replica answers for every task.

Status on the wire: a tool's error result is the task's ``completed`` result (``isError``,
the same answer a plain call gives); ``failed`` with a JSON-RPC ``error`` is kept for a task
whose process ended before the tool did. A task belongs to the client that started it
(``owner_of``): the id it is given binds the task to that owner, and to any other owner the
id names no task (-32602, as an unknown one). A call that needs approval is not made a task
by the threshold: it is answered as a plain call, which asks the client (an input request),
unless ``[serve] approvals = "client"`` says the host approved it already. A call the client
asked to be a task (``task`` in its params, or a ``long_running`` tool) is one all the same
when ``[approvals] inbox`` is on: nobody is asked at once, its request waits in the inbox,
and meanwhile ``tasks/get`` reads ``input_required`` with a ``statusMessage`` naming the
request and how to decide it (``toolplug approvals approve ID``, or the console); after the
decision it reads ``working`` again, then ``completed``. The person decides out of band:
``tasks/update`` is acknowledged and changes nothing.

Built on the SDK's extension interface (``mcp.server.extension.Extension``): its methods and
its ``tools/call`` interceptor are applied to the low-level server the way ``MCPServer``
applies them (``install_tasks``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from mcp import types
from mcp.server.extension import Extension, MethodBinding, compose_tool_call_handler
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field

from toolplug.serve._allow import call_bound, within
from toolplug.serve._approvals import approved_by_host
from toolplug.serve._auth import bind, owner_of, unbind
from toolplug.serve._spans import served_context
from toolplug.state._tasks import TaskStatus

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.lowlevel import Server

    from toolplug.contract._metadata import ToolMetadata
    from toolplug.contract._tool import ToolResult
    from toolplug.runtime._registry import Registry
    from toolplug.state._conversations import Conversations
    from toolplug.state._tasks import Task

Answer = Callable[["ToolMetadata | None", "ToolResult", str], "types.CallToolResult"]
"""The serve module's answer to a call: ``(metadata, result, tool name) -> CallToolResult``."""

__all__ = ["TASKS_EXTENSION", "TasksExtension", "install_tasks"]

log = logging.getLogger("toolplug")

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The extension's identifier, in server and client capabilities."""
POLL_INTERVAL_MS: Final = 250
"""How often a client is told to poll ``tasks/get``."""
_VERSIONS: Final = frozenset(MODERN_PROTOCOL_VERSIONS)


class TaskParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel``: which task."""

    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    """``tasks/update``: a task and the answers to its input requests."""

    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


class TasksExtension(Extension):
    """The Tasks extension for the registry's served tools."""

    identifier = TASKS_EXTENSION

    def __init__(
        self, registry: Registry, served: Mapping[str, ToolMetadata], answer: Answer,
        *, conversations: Conversations, session: Callable[[Any], str],
    ) -> None:
        self._registry, self._served = registry, served
        self._answer = answer
        self._conversations, self._session = conversations, session
        self._ttl_ms = int(registry.config.calls.task_ttl_seconds * 1000)
        self._after = registry.config.calls.task_after_seconds
        self._cancels: set[asyncio.Task[Any]] = set()  # kept until they ran

    def methods(self) -> Sequence[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, self._get, _VERSIONS),
            MethodBinding("tasks/cancel", TaskParams, self._cancel, _VERSIONS),
            MethodBinding("tasks/update", UpdateParams, self._update, _VERSIONS),
        ]

    async def intercept_tool_call(
        self,
        params: types.CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        """The plain call for a client that did not declare the extension. For one that
        did: a task at once when the tool is long-running or the request asks for one
        (``task`` in its params), else the call's own result when it ends within
        ``[calls] task_after_seconds``, and a task when it is still running then."""
        asked_for, malformed = call_bound(ctx.meta)  # the client's _meta["toolplug/allow"]
        if params.name not in self._served or not _asked(ctx) or malformed is not None:
            return await call_next(ctx)  # a plain call (which answers a malformed _meta)
        registry, name = self._registry, params.name
        arguments = params.arguments or {}
        owner = owner_of(ctx)
        metadata = self._served[params.name]
        wants = metadata.long_running or params.task is not None  # the client's own choice
        inbox = wants and registry.approvals.waits  # a person decides, while the task waits
        task = None
        # The session's conversation, as for a plain call: the task records what it reads
        # there, and a call the flow guard would ask about is not started as a task.
        async with (
            self._conversations.of(owner, self._session(ctx)) as conversation,
            within(conversation, asked_for),  # the task runs inside it too
        ):
            if inbox or await registry.aguard_reason(name, arguments) is None:
                approved = approved_by_host(registry, name)
                if approved or inbox or registry.needs_approval(name, arguments) is None:
                    task = await registry.astart(
                        name, arguments,
                        # owns a spill; the request, for the span and the record
                        context={"transport": "mcp", "client": owner, **served_context(ctx)},
                        approved=approved,
                    )
        if task is None:
            return await call_next(ctx)  # a plain call, which can ask (serve/_approvals.py)
        if not (wants or self._after <= 0):
            answer = await self._soon(task, metadata, params.name)
            if answer is not None:
                return answer
        status = await task.astatus()
        return {"resultType": "task", **self._fields(status, bind(status.id, owner))}

    async def _soon(
        self, task: Task, metadata: ToolMetadata, name: str
    ) -> types.CallToolResult | None:
        """The call's answer when it ends within the threshold; None when it runs on."""
        try:
            result = await task.aresult(wait=self._after)
        except BaseException:  # the client gave up on the request: so does the call
            cancelling = asyncio.get_running_loop().create_task(task.acancel())
            self._cancels.add(cancelling)
            cancelling.add_done_callback(self._cancels.discard)
            raise
        if result is None:
            return None
        status = await task.astatus()
        if status.lost or status.state not in ("completed", "failed"):
            return None  # cancelled meanwhile, or its process ended: the task says how
        return self._answer(metadata, result, name)

    # -- tasks/* -------------------------------------------------------------------

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Any:
        _require(ctx)
        task = self._registry.task(_own(ctx, params.task_id))
        status = await task.astatus()
        _known(status, params.task_id)
        body = self._fields(status, params.task_id)
        if not status.ended:
            return body
        result = await task.aresult(wait=0)
        if status.lost or result is None:
            message = status.message or "the task failed"
            return {**body, "error": {"code": types.INTERNAL_ERROR, "message": message}}
        if status.state == "cancelled":
            return body
        answer = self._answer(self._served.get(status.tool), result, status.tool)
        return {**body, "result": answer.model_dump(by_alias=True, mode="json", exclude_none=True)}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Any:
        _require(ctx)
        _known(await self._registry.task(_own(ctx, params.task_id)).acancel(), params.task_id)
        return {}

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> Any:
        _require(ctx)
        _known(await self._registry.task(_own(ctx, params.task_id)).astatus(), params.task_id)
        return {}  # these tasks never wait for input: answers change nothing

    def _fields(self, status: TaskStatus, shown: str) -> dict[str, Any]:
        """The task as the extension shows it (SEP-2663's flat ``Task``), under the id its
        owner was given."""
        lost = status.state == "failed" and status.lost
        wire: str = status.state if status.state != "failed" or lost else "completed"
        if wire == "working" and status.waiting is not None:
            wire = "input_required"
        fields: dict[str, Any] = {
            "taskId": shown,
            "status": wire,
            "createdAt": _iso(status.created_at),
            "lastUpdatedAt": _iso(status.updated_at),
            "ttlMs": self._ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        message = _message(status)
        if message is not None:
            fields["statusMessage"] = message
        return fields


def install_tasks(
    server: Server[Any], registry: Registry, served: Mapping[str, ToolMetadata], answer: Answer,
    *, conversations: Conversations, session: Callable[[Any], str],
) -> None:
    """Serve the Tasks extension on ``server``: its methods, its ``tools/call``
    interceptor, and its identifier in the server's capabilities. ``answer`` turns a
    finished task's result into the ``CallToolResult`` a plain call would get; a task runs
    in the conversation ``conversations`` keeps for its owner and ``session`` (the
    request's session key), as a plain call does."""
    extension = TasksExtension(
        registry, served, answer, conversations=conversations, session=session
    )
    for method in extension.methods():
        server.add_request_handler(method.method, method.params_type, _gated(method))
    entry = server.get_request_handler("tools/call")
    assert entry is not None  # build_server registers it
    server.add_request_handler(
        "tools/call",
        types.CallToolRequestParams,
        compose_tool_call_handler([extension], entry.handler),
    )
    server.extensions[extension.identifier] = extension.settings()


def _gated(method: MethodBinding) -> Any:
    """The handler, answering "method not found" off the versions it is served at (as
    ``MCPServer`` does for extension methods)."""
    versions = method.protocol_versions

    async def gated(ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        if versions is not None and ctx.protocol_version not in versions:
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", method.method)
        return await method.handler(ctx, params)

    return gated


def _asked(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client declared the extension (modern revisions only)."""
    if ctx.protocol_version not in _VERSIONS:
        return False
    wanted = types.ClientCapabilities(extensions={TASKS_EXTENSION: {}})
    return bool(ctx.session.check_client_capability(wanted))


def _require(ctx: ServerRequestContext[Any, Any]) -> None:
    """A ``tasks/*`` request from a client that did not declare the extension: -32021."""
    if _asked(ctx):
        return
    raise MCPError(
        types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"this request needs the tasks extension ({TASKS_EXTENSION}) in the client's "
        "capabilities",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def _own(ctx: ServerRequestContext[Any, Any], shown: str) -> str:
    """The engine's id of a task this client owns; for another owner's task (or a made-up
    id) an id no task has, so the answer is the unknown task's."""
    return unbind(shown, owner_of(ctx)) or "-"


def _known(status: TaskStatus, shown: str) -> None:
    """An unknown task is the caller's error: -32602 (-32603 when the store is down)."""
    if status.state != "unknown":
        return
    code = types.INTERNAL_ERROR if "store" in (status.message or "") else types.INVALID_PARAMS
    message = (status.message or "unknown").replace(status.id, shown)
    raise MCPError(code, f"task {shown}: {message}")


def _message(status: TaskStatus) -> str | None:
    if status.waiting is not None and status.state == "working":
        return (
            f"waiting for a person's approval: request {status.waiting}; decide it with "
            f"`toolplug approvals approve {status.waiting}` (or deny), or on the console's "
            "page of pending approvals"
        )
    if status.message:
        return status.message
    if status.done is None:
        return None
    if status.total is None:
        return f"{status.done:g} done"
    return f"{status.done:g} of {status.total:g} done"


def _iso(stamp: float) -> str:
    moment = datetime.fromtimestamp(stamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
