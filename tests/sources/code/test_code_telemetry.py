"""Each call a program makes is a span of its own, a child of the run_code call's span."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolplug


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    # A provider can be set once per process: add an exporter to the one already set.
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield memory
    memory.shutdown()


def test_calls_inside_a_program_are_child_spans(
    load_code: Callable[..., toolplug.Registry], exporter: InMemorySpanExporter, journal: Any
) -> None:
    registry = load_code()
    code = "import asyncio\nawait asyncio.gather(echo(text='a'), echo(text='b'))\n"
    result = registry.call("run_code", {"code": code}, context={"call_id": "c1"})
    assert result.error is None, result.for_model()
    spans = {s.name: s for s in exporter.get_finished_spans() if s.name != "execute_tool echo"}
    outer = spans["execute_tool run_code"]
    inner = [s for s in exporter.get_finished_spans() if s.name == "execute_tool echo"]
    assert len(inner) == 2
    for span in inner:
        assert span.parent is not None
        assert span.parent.span_id == outer.context.span_id
    ids = sorted(str((s.attributes or {})["gen_ai.tool.call.id"]) for s in inner)
    assert ids == ["c1.1", "c1.2"]
