"""Capabilities: named preconditions that decide whether a tool is offered, and why not.

A capability has detectors (an environment variable, a configuration key, an importable
package, or a callable). The host may grant or deny capabilities outright; a denial wins.
``CapabilityChecker`` evaluates each capability once and explains every tool it rules out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolplug.contract._capabilities import Capability, DetectContext

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata

__all__ = ["Availability", "CapabilityChecker", "CapabilityState"]

@dataclass(frozen=True)
class CapabilityState:
    """The outcome of evaluating one capability."""

    name: str
    present: bool
    reason: str | None = None
    """Why it is missing (or why it was granted or denied)."""
    setup: str = ""
    source: str = "detected"
    """``detected``, ``granted``, ``denied`` or ``unknown`` (no plugin provides it)."""


@dataclass(frozen=True)
class Availability:
    """Whether a tool is offered, and if not, why not and how to change that."""

    available: bool
    reasons: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()


@dataclass
class CapabilityChecker:
    """Evaluates capabilities once per run and decides tool availability."""

    capabilities: Mapping[str, Capability]
    context: DetectContext
    grants: frozenset[str] = frozenset()
    denials: frozenset[str] = frozenset()
    _states: dict[str, CapabilityState] = field(default_factory=dict, init=False)
    errors: list[tuple[str, BaseException]] = field(default_factory=list, init=False)
    """Detectors that raised: (capability name, exception)."""

    def state(self, name: str) -> CapabilityState:
        """The state of one capability, evaluated on first use."""
        if name not in self._states:
            self._states[name] = self._evaluate(name)
        return self._states[name]

    def states(self) -> list[CapabilityState]:
        """Every known, granted or denied capability, sorted by name."""
        names = set(self.capabilities) | self.grants | self.denials
        return [self.state(n) for n in sorted(names)]

    def _evaluate(self, name: str) -> CapabilityState:
        capability = self.capabilities.get(name)
        setup = capability.setup if capability else ""
        if name in self.denials:
            return CapabilityState(name, False, "denied by the host", setup, "denied")
        if name in self.grants:
            return CapabilityState(name, True, "granted by the host", setup, "granted")
        if capability is None:
            return CapabilityState(
                name, False, "no installed plugin provides this capability", "", "unknown"
            )
        for detector in capability.detectors:
            try:
                problem = detector.problem(self.context)
            except Exception as exc:  # a plugin's detector must not break the run
                self.errors.append((name, exc))
                problem = f"its detector failed: {type(exc).__name__}: {exc}"
            if problem is not None:
                return CapabilityState(name, False, problem, setup)
        return CapabilityState(name, True, None, setup)

    def availability(
        self,
        metadata: ToolMetadata,
        *,
        enabled: bool = True,
        missing: Iterable[tuple[str, str]] = (),
    ) -> Availability:
        """Whether the tool is offered; every reason it is not, with setup steps.

        ``missing`` lists required settings without a value: each key, and how to set it.
        The tool's ``setup_instructions`` come last whenever it is unavailable.
        """
        reasons: list[str] = []
        setup: list[str] = []
        if not enabled:
            reasons.append("disabled by config")
            setup.append(f"set enabled = true under [tools.{metadata.name}] (or remove the line)")
        for name in metadata.requires_capabilities:
            state = self.state(name)
            if not state.present:
                reasons.append(f"capability {name!r} is missing: {state.reason}")
                if state.setup:
                    setup.append(state.setup)
        for key, how in missing:
            reasons.append(f"required setting {key} has no value: {how}")
            setup.append(how[0].upper() + how[1:])
        if reasons and metadata.setup_instructions:
            setup.append(metadata.setup_instructions)
        return Availability(not reasons, tuple(reasons), tuple(_unique(setup)))


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item.strip(), None)
    return [s for s in seen if s]
