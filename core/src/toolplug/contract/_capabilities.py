"""Capabilities: named preconditions a tool can require, and the detectors that decide them.

A capability has detectors (an environment variable, a configuration key, an importable
package, or a callable) and setup text. Plugins register them through the
``register_capabilities`` hook; the runtime's ``CapabilityChecker`` evaluates them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Capability", "Check", "ConfigKey", "DetectContext", "EnvVar", "Package"]

class DetectContext:
    """What detectors may look at: the environment, the resolved configuration, packages.

    Detectors read through this object (not ``os.environ`` directly): the environment it
    holds is the one the registry was loaded with, which the CLI's output cache watches.
    """

    def __init__(
        self, env: Mapping[str, str], config: Mapping[str, Any], ways: Mapping[str, str] = {}
    ) -> None:
        self._env = env
        self._config = config
        self.ways = ways
        """How to set each configuration path, where it is a tool's setting (for reasons)."""

    def env(self, name: str) -> str | None:
        """The variable's value, or None when it is unset or empty."""
        value = self._env.get(name)
        return value or None

    def config(self, path: str) -> Any:
        """The resolved configuration value at a dotted path (``tools.github_api.token``)."""
        node: Any = self._config
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node

    def has_package(self, name: str) -> bool:
        """True when the import name can be imported (without importing it)."""
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False


@dataclass(frozen=True)
class EnvVar:
    """Present when any of the named environment variables is set and not empty."""

    names: tuple[str, ...]

    def __init__(self, *names: str) -> None:
        object.__setattr__(self, "names", names)

    def problem(self, ctx: DetectContext) -> str | None:
        """Why the capability is missing, or None."""
        if any(ctx.env(n) for n in self.names):
            return None
        return f"environment variable {' or '.join(self.names)} is not set"


@dataclass(frozen=True)
class ConfigKey:
    """Present when the configuration value at a dotted path is set and not empty."""

    path: str

    def problem(self, ctx: DetectContext) -> str | None:
        """Why the capability is missing, or None."""
        value = ctx.config(self.path)
        if value is None or value in ("", [], {}, ()):
            how = ctx.ways.get(self.path, f"set {self.path} in the configuration")
            return f"configuration key {self.path} is not set: {how}"
        return None


@dataclass(frozen=True)
class Package:
    """Present when a Python package can be imported."""

    import_name: str
    distribution: str | None = None
    """The name to ``pip install``, when it differs from the import name."""

    def problem(self, ctx: DetectContext) -> str | None:
        """Why the capability is missing, or None."""
        if ctx.has_package(self.import_name):
            return None
        name = self.distribution or self.import_name
        return f"Python package {name} is not installed: pip install {name}"


@dataclass(frozen=True)
class Check:
    """Present when a callable finds nothing wrong.

    The callable gets a ``DetectContext`` and returns None when the capability is present,
    or a short reason when it is not. It must be a pure function of that context.
    """

    func: Callable[[DetectContext], str | None]

    def problem(self, ctx: DetectContext) -> str | None:
        """Why the capability is missing, or None."""
        return self.func(ctx)


Detector = EnvVar | ConfigKey | Package | Check


@dataclass(frozen=True)
class Capability:
    """A named precondition that tools can require."""

    name: str
    description: str
    detectors: tuple[Detector, ...] = ()
    """All must find nothing wrong for the capability to be present; none means present."""
    setup: str = ""
    """How a user makes the capability present: shown by ``toolplug doctor`` and ``info``."""
