"""Spans kept in memory for a test: an exporter added to the process's tracer provider.

A provider can be set once per process, so the one already set (by an earlier test) is
used when there is one; the exporter is shut down afterwards, which drops later spans.
"""

from __future__ import annotations

from collections.abc import Iterator

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def memory_exporter() -> Iterator[InMemorySpanExporter]:
    """Yield an in-memory exporter every span ends in until the caller resumes this."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield memory
    memory.shutdown()
