"""Built-in behaviour, registered through the same hooks a third-party plugin uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from toolplug.contract._hooks import hookimpl
from toolplug.runtime._capabilities import Capability, Check, DetectContext

if TYPE_CHECKING:
    from toolplug.contract._call import ToolCall
    from toolplug.contract._tool import ToolResult


def _network_problem(ctx: DetectContext) -> str | None:
    if ctx.config("offline") is True:
        return "offline = true in the configuration"
    return None


NETWORK: Capability = Capability(
    name="network",
    description="The tool may make outbound HTTP requests (through the network guard).",
    detectors=(Check(_network_problem),),
    setup="Remove offline = true from the configuration (and do not deny 'network').",
)


@hookimpl
def register_capabilities(register: Callable[[Capability], None]) -> None:
    """Register the built-in ``network`` capability."""
    register(NETWORK)


@hookimpl(trylast=True)
def tool_call(call: ToolCall) -> ToolResult:
    """Run the tool: the innermost step of every call, after all interceptors."""
    return call.execute()
