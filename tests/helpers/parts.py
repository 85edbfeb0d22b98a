"""Real bytes for tests of content parts: a PNG written with zlib as the format says, a
WAV by the standard library's wave module, a GIF's first bytes; and a tool that returns
whatever parts a test gives it."""

from __future__ import annotations

from typing import Any, ClassVar

from tests.helpers import media
from toolplug import Annotations, Tool, ToolContext, ToolMetadata, ToolResult, Trust, hookimpl


def png(width: int = 1, height: int = 1) -> bytes:
    """A real PNG of red pixels (``tests.helpers.media.png``, 1x1 by default here)."""
    return media.png(width, height)


wav, gif = media.wav, media.gif


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
