"""A client's W3C trace context in a request's ``_meta`` reaches ``toolplug serve``'s spans.

The server is the real command (``python -m toolplug serve``) over stdio and streamable
HTTP, with a tracer provider set by a ``sitecustomize`` module that writes each span to a
file (tests/helpers/telemetry.py). The client is the MCP SDK's ``ClientSession``, sending
``traceparent`` and ``tracestate`` in ``_meta``; what it really sent is read off its write
stream (the SDK's client writes its own span's context there when this process traces),
and the server's spans must continue exactly that: the SDK's ``tools/call`` span a child of
the span the ``traceparent`` names, toolplug's ``execute_tool`` span a child of that one,
one trace id, the ``tracestate`` carried on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from tests.helpers import tasks
from tests.helpers.serve import TIMEOUT, child_env, free_port, http_server
from tests.helpers.telemetry import spans_in, write_span_file_site

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PARENTS = (0x00F067AA0BA902B7, 0x53995C3F42CD8AD8)  # the caller's span of each call
TRACESTATE = "toolplug-test=t1,other=2"


class _Tap:
    """The client's write stream, keeping each message it sends."""

    def __init__(self, stream: Any, sent: list[dict[str, Any]]) -> None:
        self._stream = stream
        self._sent = sent

    async def send(self, item: SessionMessage) -> None:
        self._sent.append(item.message.model_dump(by_alias=True, exclude_none=True))
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Tap:
        await self._stream.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        result: bool | None = await self._stream.__aexit__(kind, exc, tb)
        return result


def _given(parent: int) -> NonRecordingSpan:
    """The caller's span, as a remote parent: the trace the client's requests belong to."""
    return NonRecordingSpan(SpanContext(
        trace_id=TRACE_ID, span_id=parent, is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState.from_header([TRACESTATE]),
    ))


Transport = Callable[[], AbstractAsyncContextManager[Any]]


async def _calls(transport: Transport) -> list[dict[str, Any]]:
    """Call ``echo`` once and with a text its schema refuses; the tools/call requests sent."""
    sent: list[dict[str, Any]] = []
    with anyio.fail_after(TIMEOUT):
        async with transport() as (read, write), ClientSession(
            read, _Tap(write, sent)
        ) as session:
            await session.initialize()
            answers = []
            for parent, text in zip(PARENTS, ["hi", ""], strict=True):
                meta: Any = {
                    "traceparent": f"00-{TRACE_ID:032x}-{parent:016x}-01",
                    "tracestate": TRACESTATE,
                }
                with trace.use_span(_given(parent)):
                    answers.append(await session.call_tool("echo", {"text": text}, meta=meta))
    ok, refused = answers
    assert not ok.is_error
    assert refused.is_error  # "" is shorter than the schema allows
    return [m for m in sent if m.get("method") == "tools/call"]


def _parts(traceparent: str) -> tuple[str, str, str]:
    version, trace_id, span_id, flags = traceparent.split("-")
    assert version == "00"
    return trace_id, span_id, flags


def _check(requests: list[dict[str, Any]], spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each request's spans continue its ``_meta``'s trace context; the toolplug spans."""
    served = [s for s in spans if s["name"] == "tools/call echo"]
    ours = [s for s in spans if s["name"] == "execute_tool echo"]
    assert len(requests) == len(served) == len(ours) == 2
    for request in requests:
        meta = request["params"]["_meta"]  # its other keys (a progress token) may be any
        trace_id, span_id, flags = _parts(meta["traceparent"])
        assert trace_id == f"{TRACE_ID:032x}"  # the caller's trace, whoever wrote the header
        assert int(flags, 16) & 1  # sampled
        assert meta["tracestate"] == TRACESTATE
        [server] = [
            s for s in served if s["attributes"]["jsonrpc.request.id"] == str(request["id"])
        ]
        assert server["kind"] == "SERVER"
        assert (server["trace_id"], server["parent_id"]) == (trace_id, span_id)
        assert server["attributes"]["mcp.method.name"] == "tools/call"
        assert server["attributes"]["gen_ai.tool.name"] == "echo"
        [call] = [s for s in ours if s["parent_id"] == server["span_id"]]
        assert call["trace_id"] == trace_id
        assert call["trace_state"] == TRACESTATE  # carried on to what the tool calls
        assert call["attributes"]["mcp.method.name"] == "tools/call"
        assert call["attributes"]["gen_ai.operation.name"] == "execute_tool"
        assert call["attributes"]["gen_ai.tool.name"] == "echo"
    failed = [s for s in ours if s["status"] == "ERROR"]
    assert [s["attributes"]["error.type"] for s in failed] == ["ValidationError"]
    assert [s["attributes"]["error.type"] for s in served if s["status"] == "ERROR"] == [
        "tool_error"
    ]
    assert all("error.type" not in s["attributes"] for s in ours if s["status"] != "ERROR")
    return served + ours


def test_over_stdio_the_calls_continue_the_trace_in_meta(tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    env = child_env(tmp_path)
    write_span_file_site(tmp_path / "site")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolplug", "serve"],
        env={**env, "TOOLPLUG_TEST_SPANS": str(spans_file)}, cwd=str(tmp_path),
    )
    requests = anyio.run(_calls, lambda: stdio_client(params))
    spans = _check(requests, spans_in(spans_file, "tools/call echo", "execute_tool echo"))
    for span in spans:  # a pipe, and no session to name
        assert span["attributes"]["network.transport"] == "pipe"
        assert "mcp.session.id" not in span["attributes"]


def test_over_http_the_calls_continue_the_trace_in_meta(tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    env = {**os.environ, **child_env(tmp_path), "TOOLPLUG_TEST_SPANS": str(spans_file)}
    write_span_file_site(tmp_path / "site")
    port = free_port()
    sessions: list[str] = []

    @asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as streams:
            yield streams

    with http_server(tmp_path, port, env=env):
        requests = anyio.run(_calls, transport)
        spans = _check(requests, spans_in(spans_file, "tools/call echo", "execute_tool echo"))
    for span in spans:  # the SDK's span and toolplug's name the same session
        attributes = span["attributes"]
        assert attributes["network.transport"] == "tcp"
        assert attributes["network.protocol.name"] == "http"
        sessions.append(attributes["mcp.session.id"])
    assert len(set(sessions)) == 1
    assert len(sessions[0]) >= 16



def test_a_call_made_a_task_continues_the_trace_with_its_mcp_attributes(tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    config = "[calls]\ntask_after_seconds = 0\n"  # every call of a client that asks: a task
    env = child_env(tmp_path, config=config)
    write_span_file_site(tmp_path / "site")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolplug", "serve"],
        env={**env, "TOOLPLUG_TEST_SPANS": str(spans_file)}, cwd=str(tmp_path),
    )

    async def session() -> None:
        async with Client(params, extensions=[tasks.TasksClient()]) as client:
            with trace.use_span(_given(PARENTS[0])):
                created = await tasks.call(client, "add", {"a": 20, "b": 22})
            assert isinstance(created, tasks.CreatedTask)
            done = await tasks.wait(client.session, created.task_id)
            assert done.status == "completed"

    async def bounded() -> None:
        with anyio.fail_after(TIMEOUT):
            await session()

    anyio.run(bounded)
    spans = spans_in(spans_file, "tools/call add", "execute_tool add")
    [served] = [s for s in spans if s["name"] == "tools/call add"]
    [call] = [s for s in spans if s["name"] == "execute_tool add"]
    assert call["trace_id"] == served["trace_id"] == f"{TRACE_ID:032x}"
    attributes = call["attributes"]
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["jsonrpc.request.id"] == served["attributes"]["jsonrpc.request.id"]
    assert attributes["network.transport"] == "pipe"
