"""Spans kept in memory for a test: an exporter added to the process's tracer provider.

A provider can be set once per process, so the one already set (by an earlier test) is
used when there is one; the exporter is shut down afterwards, which drops later spans.
A child process's spans reach the test through a file (``SITECUSTOMIZE``, ``spans_in``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


# A child process's spans, one JSON object a line: a ``sitecustomize`` module that, with
# TOOLPLUG_TEST_SPANS set to a path, sets a tracer provider whose processor appends each
# span to that file as it ends. Put on the child's PYTHONPATH (``write_span_file_site``).
SITECUSTOMIZE = r'''
import json
import os

_PATH = os.environ.get("TOOLPLUG_TEST_SPANS")
if _PATH:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class _Lines(SpanExporter):
        def export(self, spans):
            with open(_PATH, "a", encoding="utf-8") as out:
                for span in spans:
                    context = span.get_span_context()
                    out.write(json.dumps({
                        "name": span.name,
                        "kind": span.kind.name,
                        "trace_id": f"{context.trace_id:032x}",
                        "span_id": f"{context.span_id:016x}",
                        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                        "trace_state": context.trace_state.to_header(),
                        "attributes": dict(span.attributes or {}),
                        "status": span.status.status_code.name,
                    }, default=str) + "\n")
            return SpanExportResult.SUCCESS

    _provider = TracerProvider()
    _provider.add_span_processor(SimpleSpanProcessor(_Lines()))
    trace.set_tracer_provider(_provider)
'''


def write_span_file_site(site: Path) -> None:
    """Write the ``sitecustomize`` module into ``site``, a directory on a child's path."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")


def spans_in(path: Path, *names: str, seconds: float = 30) -> list[dict[str, Any]]:
    """The spans a child wrote to ``path``, once one of each of ``names`` is there (a span
    is written as it ends, which may be just after the answer that the test awaited)."""
    deadline = time.monotonic() + seconds
    while True:
        spans = [
            json.loads(line)
            for line in (path.read_text(encoding="utf-8").splitlines() if path.exists() else [])
        ]
        if all(any(s["name"] == name for s in spans) for name in names):
            return spans
        assert time.monotonic() < deadline, f"no span {names} in {[s['name'] for s in spans]}"
        time.sleep(0.02)
