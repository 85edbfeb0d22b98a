"""Built-in behaviour, registered through the same hooks a third-party plugin uses."""

from __future__ import annotations

from collections.abc import Callable

from toolplug.contract._capabilities import Capability, Check, DetectContext
from toolplug.contract._hooks import hookimpl


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
