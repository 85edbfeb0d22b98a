"""Real bytes for tests of content parts: a PNG written with zlib as the format says, a
WAV by the standard library's wave module, a GIF's first bytes; and a tool that returns
whatever parts a test gives it."""

from __future__ import annotations

import struct
import wave
import zlib
from io import BytesIO
from typing import Any, ClassVar

from toolplug import Annotations, Tool, ToolContext, ToolMetadata, ToolResult, Trust, hookimpl


def png(width: int = 1, height: int = 1) -> bytes:
    """A real PNG of red pixels."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body) & 0xFFFFFFFF
        )

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def wav(frames: int = 800) -> bytes:
    """A real WAV of silence."""
    out = BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(b"\x00\x00" * frames)
    return out.getvalue()


def gif() -> bytes:
    """A real 1x1 GIF."""
    return (
        b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00"
        b"\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
    )


class Returns(Tool):
    """Returns ``RESULT`` (a test sets it), counting its calls; cacheable."""

    RESULT: ClassVar[ToolResult] = ToolResult.success("")
    CALLS: ClassVar[list[int]] = []
    metadata = ToolMetadata(
        name="returns",
        description="Return the result the test set.",
        category="utility",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        trust=Trust(output="untrusted", private=False),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        Returns.CALLS.append(1)
        return Returns.RESULT


class ReturnsPlugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Returns)
