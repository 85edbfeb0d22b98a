"""The client half of the MCP Tasks extension, for tests and the bench: the official SDK's
``Client`` with a ``ClientExtension`` that declares ``io.modelcontextprotocol/tasks`` and
claims the ``resultType: "task"`` answer of ``tools/call``.

``start`` returns the task at once; ``get`` and ``cancel`` are the extension's methods;
``client.call_tool`` with this extension waits for the result the way a host would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from mcp import Client, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict, Field

TASKS = "io.modelcontextprotocol/tasks"


class TaskFields(types.Result):
    """The flat task of SEP-2663, as the client reads it."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    task_id: str = Field(alias="taskId")
    status: str
    created_at: str = Field(alias="createdAt")
    last_updated_at: str = Field(alias="lastUpdatedAt")
    ttl_ms: int | None = Field(default=None, alias="ttlMs")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")
    status_message: str | None = Field(default=None, alias="statusMessage")


class CreatedTask(TaskFields):
    """What ``tools/call`` answers when the server runs the call as a task."""

    result_type: Literal["task"] = Field(alias="resultType")


class TaskNow(TaskFields):
    """``tasks/get``: the task, and its outcome once it ended."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskParams(types.RequestParams):
    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(serialization_alias="taskId")


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams


class TasksClient(ClientExtension):
    """Declares the extension; ``client.call_tool`` then polls a task to its result."""

    identifier = TASKS

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve),)

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        now = await wait(ctx.session, created.task_id)
        if now.status == "completed" and now.result is not None:
            return types.CallToolResult.model_validate(now.result)
        message = (now.error or {}).get("message") or f"task {now.task_id} {now.status}"
        text = types.TextContent(type="text", text=message)
        return types.CallToolResult(content=[text], is_error=True)


async def start(client: Client, name: str, arguments: dict[str, Any]) -> CreatedTask:
    """Call a tool as a task, asked for on the request (``task`` in its params): the
    handle, at once."""
    created = await call(client, name, arguments, ask=True)
    assert isinstance(created, CreatedTask), created
    return created


async def call(
    client: Client, name: str, arguments: dict[str, Any], *, ask: bool = False
) -> types.CallToolResult | CreatedTask:
    """``tools/call`` from a client that declared the extension: the result, or the task
    the server made of the call. ``ask``: ask for a task on this request."""
    session: Any = client.session
    params = types.CallToolRequestParams(
        name=name, arguments=arguments, task=types.TaskMetadata() if ask else None
    )
    answer = await session.send_request(
        types.CallToolRequest(params=params), session._call_tool_adapter
    )
    assert isinstance(answer, types.CallToolResult | CreatedTask), answer
    return answer


async def get(session: Any, task_id: str) -> TaskNow:
    now: TaskNow = await session.send_request(
        GetTask(params=TaskParams(task_id=task_id)), TaskNow
    )
    return now


async def cancel(session: Any, task_id: str) -> None:
    await session.send_request(CancelTask(params=TaskParams(task_id=task_id)), types.Result)


async def wait(session: Any, task_id: str, *, until: str | None = None) -> TaskNow:
    """Poll ``tasks/get`` until the task ended (or reads ``until``): a task waiting for a
    person's approval (``input_required``, decided out of band) is waited for too."""
    pause = 0.02
    while True:
        now = await get(session, task_id)
        ended = now.status not in ("working", "input_required")
        if now.status == until or (until is None and ended):
            return now
        await asyncio.sleep(pause)
        pause = min(pause * 2, (now.poll_interval_ms or 250) / 1000)
