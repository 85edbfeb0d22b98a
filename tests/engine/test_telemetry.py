"""OpenTelemetry spans of calls: GenAI names and attributes, errors, opt-in content, no cost.

Spans go to the SDK's in-memory exporter through a real ``TracerProvider``. A provider
can be set only once per process, so this module adds its exporter to the one provider
and reads only the spans its own calls made.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import toolplug
from tests.helpers.telemetry import memory_exporter
from toolplug import ConfigField, Tool, ToolContext, ToolFailure, ToolMetadata, ToolResult

TOKEN = "tok-5f3a9c81d2"


class Pause(Exception):
    """What a host names in ``passthrough``: it leaves the call (and its span) unchanged."""


class Lookup(Tool):
    metadata = ToolMetadata(
        name="lookup",
        description="Look a word up with a token.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
        config_fields=(
            ConfigField(
                name="token", type="string", description="API token", secret=True,
                env_var="LOOKUP_TOKEN",
            ),
        ),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        word = arguments["word"]
        if word == "missing":
            raise ToolFailure("NotFoundError", "no entry for missing")
        if word == "pause":
            raise Pause(f"paused, holding {context.config['token']}")
        if word == "forever":
            context.host["started"].set()
            await asyncio.sleep(3600)
        current = trace.get_current_span()
        name = getattr(current, "name", "")
        return ToolResult.success(f"{word}: found with {context.config['token']} in {name}")


class Plugin:
    @toolplug.hookimpl
    def register_tools(self, register: Any) -> None:
        register(Lookup)


def registry(**calls: Any) -> toolplug.Registry:
    config = {"calls": calls} if calls else {}
    return toolplug.load(
        config,
        env={"TOOLPLUG_PLUGINS": "", "LOOKUP_TOKEN": TOKEN},
        plugins=[("lookup", Plugin())],
    )


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    yield from memory_exporter()


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Any:
    exporter.clear()

    def finished() -> list[ReadableSpan]:
        return [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]

    return finished


def test_a_call_is_one_span_named_by_the_genai_conventions(spans: Any) -> None:
    result = registry().call("lookup", {"word": "sun"}, context={"call_id": "call_abc123"})
    assert result.ok
    # The span is current while the tool runs, so spans the tool makes nest under it.
    assert result.output.endswith("in execute_tool lookup")
    [span] = spans()
    assert span.name == "execute_tool lookup"
    assert span.kind is trace.SpanKind.INTERNAL
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "call_abc123",
        "gen_ai.tool.description": "Look a word up with a token.",
    }
    assert span.status.status_code is StatusCode.UNSET


def test_without_a_call_id_one_is_made(spans: Any) -> None:
    registry().call("lookup", {"word": "a"})
    registry().call("lookup", {"word": "b"})
    ids = [s.attributes["gen_ai.tool.call.id"] for s in spans()]
    assert len(set(ids)) == 2
    assert all(str(i).startswith("call_") for i in ids)


@pytest.mark.parametrize(
    ("arguments", "error_type"),
    [({"word": "missing"}, "NotFoundError"), ({"word": 3}, "ValidationError")],
)
def test_a_failed_call_records_its_error_type(
    spans: Any, arguments: dict[str, Any], error_type: str
) -> None:
    result = asyncio.run(registry().acall("lookup", arguments))
    assert result.error is not None
    [span] = spans()
    assert span.attributes["error.type"] == error_type
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == result.error.message


@pytest.mark.parametrize(
    ("tool", "arguments", "error_type"),
    [("lookup", {"word": 3}, "ValidationError"), ("look_up", {}, "NotFoundError")],
)
def test_a_call_refused_before_running_keeps_the_callers_call_id_and_mcp_attributes(
    spans: Any, tool: str, arguments: dict[str, Any], error_type: str
) -> None:
    served = {"method": "tools/call", "request_id": "7", "transport": "stdio"}
    result = registry().call(tool, arguments, context={"call_id": "call_x1", "mcp": served})
    assert result.error is not None
    [span] = spans()
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.tool.call.id"] == "call_x1"  # the model's, not a made one
    assert attributes["error.type"] == error_type
    assert (attributes["mcp.method.name"], attributes["jsonrpc.request.id"]) == ("tools/call", "7")
    assert attributes["network.transport"] == "pipe"


def test_a_cancelled_call_ends_its_span_with_the_reason(spans: Any) -> None:
    tools = registry()

    async def cancel_one() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(
            tools.acall("lookup", {"word": "forever"}, context={"started": started})
        )
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_one())
    [span] = spans()
    assert span.attributes["error.type"] == "CancelledError"
    assert span.status.status_code is StatusCode.ERROR


def test_an_exception_leaving_the_span_is_recorded_with_secrets_redacted(spans: Any) -> None:
    with pytest.raises(Pause, match=TOKEN):  # the host gets its own exception untouched
        asyncio.run(registry().acall("lookup", {"word": "pause"}, passthrough=(Pause,)))
    [span] = spans()
    assert span.attributes["error.type"] == "Pause"
    assert span.status.status_code is StatusCode.ERROR
    [event] = [e for e in span.events if e.name == "exception"]
    assert event.attributes["exception.message"] == "paused, holding ***"
    assert "Pause: paused, holding ***" in event.attributes["exception.stacktrace"]
    recorded = json.dumps(
        [dict(span.attributes or {}), span.status.description,
         [dict(e.attributes or {}) for e in span.events]]
    )
    assert TOKEN not in recorded


def test_arguments_and_results_only_when_asked_with_secrets_redacted(spans: Any) -> None:
    registry().call("lookup", {"word": "plain"})
    registry(telemetry_content=True).call("lookup", {"word": f"key {TOKEN}"})
    quiet, told = spans()
    assert "gen_ai.tool.call.arguments" not in quiet.attributes
    assert "gen_ai.tool.call.result" not in quiet.attributes
    arguments = told.attributes["gen_ai.tool.call.arguments"]
    assert json.loads(arguments) == {"word": "key ***"}
    assert told.attributes["gen_ai.tool.call.result"] == (
        "key ***: found with *** in execute_tool lookup"
    )
    assert TOKEN not in arguments


def test_no_provider_no_spans_and_no_import() -> None:
    # In a fresh process nobody set a provider: calls never import OpenTelemetry.
    script = """
import sys
import toolplug
from toolplug import Tool, ToolMetadata, ToolResult

class Ping(Tool):
    metadata = ToolMetadata(name="ping", description="Answer.", category="utility")
    async def run(self, arguments, context):
        return ToolResult.success("pong")

class Plugin:
    @toolplug.hookimpl
    def register_tools(self, register):
        register(Ping)

tools = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("ping", Plugin())])
assert tools.call("ping", {}).output == "pong"
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_provider_set_after_the_first_calls_gets_the_later_spans() -> None:
    # A fresh process: OpenTelemetry imported, no provider while the first call runs.
    script = """
import toolplug
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from toolplug import Tool, ToolMetadata, ToolResult

class Ping(Tool):
    metadata = ToolMetadata(name="ping", description="Answer.", category="utility")
    def run(self, arguments, context):
        return ToolResult.success("pong")

class Plugin:
    @toolplug.hookimpl
    def register_tools(self, register):
        register(Ping)

tools = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("ping", Plugin())])
tools.call("ping", {})
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
tools.call("ping", {})
print([span.name for span in exporter.get_finished_spans()])
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "['execute_tool ping']"
