"""A sandbox root: a directory the tools may use, as configured and as resolved."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Root"]


@dataclass(frozen=True)
class Root:
    """A directory the tools may use."""

    path: Path
    """Absolute, as configured (symlinks not followed)."""
    real: Path
    """The same directory with every symlink resolved."""
    alias: str | None = None
    """``file_cache_dir`` or ``file_state_dir``; None for an extra read root."""

    @classmethod
    def at(cls, path: Path, alias: str | None = None) -> Root:
        """A root at ``path`` (made absolute; ``~`` expanded)."""
        absolute = Path(os.path.abspath(path.expanduser()))
        return cls(absolute, Path(os.path.realpath(absolute)), alias)

    def holds(self, path: Path) -> bool:
        """Whether ``path`` is this root or lies under it (as configured or as resolved)."""
        return path.is_relative_to(self.path) or path.is_relative_to(self.real)

    def relative(self, path: Path) -> Path:
        """``path`` relative to this root."""
        base = self.path if path.is_relative_to(self.path) else self.real
        return path.relative_to(base)

    def show(self, path: Path) -> str:
        """How to name ``path`` to the model: in alias form when the root has an alias."""
        if self.alias is None:
            return str(path)
        inner = self.relative(path).as_posix()
        return self.alias if inner == "." else f"{self.alias}/{inner}"

    def describe(self) -> str:
        """The root for messages."""
        return f"{self.alias} ({self.path})" if self.alias else str(self.path)
