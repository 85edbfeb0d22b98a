"""The integration tests' tools: a registry of real tools for real agent runs.

The catalog's ``read_file`` and ``write_file`` (in a sandbox under the test's tmp_path: the
destructive call is a real write) and four inline tools registered from code, the way
hosts register theirs: ``note`` (a map argument, data, citations and warnings), ``flaky``
(fails once with a retryable error), ``hang`` (waits until cancelled, and says so) and
``send`` (like url_fetch: a GET only reads, a POST needs approval; decided per call).
And ``chart`` alone (``load_chart``), whose result carries a real PNG, WAV and PDF as parts.
"""

from __future__ import annotations

import asyncio
import io
import struct
import wave
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import toolplug
from toolplug import (
    Annotations,
    Audio,
    Citation,
    ErrorType,
    File,
    Image,
    Registry,
    ResourceLink,
    Text,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    hookimpl,
)

READ_ONLY = Annotations(read_only=True, idempotent=True, open_world=False)


@dataclass
class Seen:
    """What the inline tools saw, for the tests to check."""

    notes: list[dict[str, Any]] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    flaky_calls: int = 0
    hang_started: asyncio.Event | None = None
    hang_cancelled: bool = False


class _Note(Tool):
    metadata = ToolMetadata(
        name="note",
        description="Keep a short note with labels.",
        category="utility",
        optionality="optional",
        usage_hint="Use to remember a fact for later in this conversation.",
        parameters={
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The note"},
                # a map: strict exports turn it into a key/value list the engine undoes
                "labels": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Labels by name",
                },
            },
            "required": ["text"],
            "additionalProperties": False,
        },
        annotations=READ_ONLY,
    )
    seen: Seen

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        self.seen.notes.append(arguments)
        return ToolResult.success(
            f"noted: {arguments['text']}",
            {"text": arguments["text"], "labels": arguments.get("labels", {})},
            citations=[Citation("The notebook", "https://notes.test/1")],
            warnings=["the notebook keeps 10 notes; call note again to replace the oldest"],
        )


class _Flaky(Tool):
    metadata = ToolMetadata(
        name="flaky",
        description="Look up the weather, which is busy at first.",
        category="research",
        annotations=READ_ONLY,
    )
    seen: Seen

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        self.seen.flaky_calls += 1
        if self.seen.flaky_calls == 1:
            return ToolResult.failure(
                ErrorType.RATE_LIMIT, "the weather service is busy", retry_possible=True
            )
        return ToolResult.success("sunny")


class _Hang(Tool):
    metadata = ToolMetadata(
        name="hang",
        description="Wait for a slow service.",
        category="research",
        annotations=READ_ONLY,
        timeout_seconds=120,
    )
    seen: Seen

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        assert self.seen.hang_started is not None
        self.seen.hang_started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.seen.hang_cancelled = True
            raise
        return ToolResult.success("the slow service answered")


class _Send(Tool):
    metadata = ToolMetadata(
        name="send",
        description="Send a request to the team's service.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "method": {"type": "string", "enum": ["GET", "POST"], "default": "GET"},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        annotations=Annotations(read_only=False, destructive=False, open_world=True),
    )
    seen: Seen

    @classmethod
    def annotations_for(cls, arguments: Mapping[str, Any]) -> Annotations:
        if arguments.get("method", "GET") == "GET":
            return Annotations(read_only=True, destructive=False, open_world=True)
        return cls.metadata.annotations

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        self.seen.sent.append(arguments)
        return ToolResult.success(f"{arguments['method']} {arguments['path']}: 200 OK")


def load(seen: Seen, sandbox: Path, **tables: dict[str, Any]) -> Registry:
    """The files tools (in ``sandbox``) and the inline tools; ``tables``: [tools.NAME]."""
    roots = {"cache_dir": str(sandbox), "state_dir": str(sandbox)}
    tools = {"read_file": dict(roots), "write_file": dict(roots)}
    for name, table in tables.items():
        tools.setdefault(name, {}).update(table)

    class Inline:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            for cls in (_Note, _Flaky, _Hang, _Send):
                register(type(cls.__name__, (cls,), {"seen": seen}))

    return toolplug.load(
        {"tools": tools},
        env={"TOOLPLUG_PLUGINS": "toolplug-files"},
        plugins=[("integration-test-tools", Inline())],
    )


# -- a tool that returns a picture, a recording and a document ---------------------------


def _png() -> bytes:
    """A real 2x2 PNG: red pixels, chunks and CRCs written with zlib as the format says."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _wav() -> bytes:
    """A real WAV: a tenth of a second of silence, by the standard library's wave module."""
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(b"\x00\x00" * 800)
    return out.getvalue()


def _pdf() -> bytes:
    """A real one-page PDF, its cross-reference table pointing at each object's offset."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    table = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, table
    )
    return bytes(out)


@dataclass(frozen=True)
class Chart:
    """The ``chart`` tool's registry, and the bytes its result carries."""

    registry: Registry
    png: bytes
    wav: bytes
    pdf: bytes


class _ChartTool(Tool):
    metadata = ToolMetadata(
        name="chart",
        description="Draw the month's sales chart, read it aloud and attach the report.",
        category="utility",
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        parts=("image", "audio", "file", "text", "resource_link"),
    )
    png: bytes
    wav: bytes
    pdf: bytes

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success(
            "The chart of March.",
            {"month": "March"},
            parts=[
                Image(self.png),
                Audio(self.wav),
                File(self.pdf, "application/pdf", name="march.pdf"),
                Text("Sales rose 4%."),
                ResourceLink("file:///reports/march.csv", "march.csv", "text/csv"),
            ],
        )


def load_chart() -> Chart:
    """A registry of ``chart`` alone (no installed plugin), and the bytes it returns."""
    png, wav, pdf = _png(), _wav(), _pdf()

    class Plugin:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(type("Chart", (_ChartTool,), {"png": png, "wav": wav, "pdf": pdf}))

    loaded = toolplug.load(
        {}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("integration-chart", Plugin())]
    )
    return Chart(loaded, png, wav, pdf)
