"""One call as the ``tool_call`` hook sees it."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from toolplug.contract._approval import Approver
from toolplug.contract._metadata import ToolMetadata
from toolplug.contract._settings import ToolSettings
from toolplug.contract._tool import ErrorType, ToolContext, ToolResult

__all__ = ["ToolCall"]


@dataclass(slots=True)
class ToolCall:
    """One call, as the ``tool_call`` hook sees it."""

    tool: str
    """The tool name the model asked for."""
    arguments: dict[str, Any]
    """Validated arguments with defaults filled (as received when the call was rejected)."""
    metadata: ToolMetadata | None
    """None when no installed tool has that name."""
    context: ToolContext | None
    rejection: ToolResult | None = None
    """Set when the call cannot run: unknown tool, unavailable, or invalid arguments."""
    started: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` when the call was received."""
    _run: Callable[[ToolCall], ToolResult] | None = field(default=None, repr=False)
    """What runs the call, blocking: the call engine sets it."""
    _arun: Callable[[ToolCall], Awaitable[ToolResult]] | None = field(default=None, repr=False)
    """What runs the call, awaited: the call engine sets it."""
    registry: Any = field(default=None, repr=False)
    """The ``Registry`` running the call: for interceptors that read another tool's settings."""
    settings: ToolSettings | None = field(default=None, repr=False)
    """The tool's call settings (``[tools.NAME]``: time limit, retries, cache, limits)."""
    approver: Approver | None = field(default=None, repr=False)
    """Asked first when the call needs approval (``registry.call(..., approver=...)``)."""
    approved: bool = False
    """The host already had the call approved by a person (its framework's own gate)."""
    passthrough: tuple[type[BaseException], ...] = field(default=(), repr=False)
    """Exceptions that leave the call unchanged: a framework pausing its run."""

    def execute(self) -> ToolResult:
        """Run the tool now (with its policy), or return the rejection; blocks this thread."""
        if self.rejection is not None:
            return self.rejection
        if self._run is None:  # pragma: no cover - the engine always sets it
            return ToolResult.failure(ErrorType.EXECUTION, "this call cannot be executed")
        return self._run(self)

    async def aexecute(self) -> ToolResult:
        """``execute`` for an ``async def`` interceptor: awaits the tool on this loop."""
        if self.rejection is not None:
            return self.rejection
        if self._arun is None:  # pragma: no cover - the engine always sets it
            return ToolResult.failure(ErrorType.EXECUTION, "this call cannot be executed")
        return await self._arun(self)
