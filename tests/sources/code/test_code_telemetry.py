"""Each call a program makes is a span of its own, a child of the run_code call's span."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolplug
from tests.helpers.telemetry import memory_exporter


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    yield from memory_exporter()


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
