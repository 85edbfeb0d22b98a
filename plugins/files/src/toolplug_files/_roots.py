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
    label: str | None = None
    """How an extra read root is named to the model: as the operator wrote it in
    ``read_roots`` (``~/notes``), which is how the model addresses it; never resolved."""

    @classmethod
    def at(cls, path: Path, alias: str | None = None) -> Root:
        """A root at ``path`` (made absolute; ``~`` expanded), named by ``alias``, or, for
        an extra read root, by ``path`` as written."""
        absolute = Path(os.path.abspath(path.expanduser()))
        label = None if alias else os.path.normpath(str(path))
        return cls(absolute, Path(os.path.realpath(absolute)), alias, label)

    def holds(self, path: Path) -> bool:
        """Whether ``path`` is this root or lies under it (as configured or as resolved)."""
        return path.is_relative_to(self.path) or path.is_relative_to(self.real)

    def relative(self, path: Path) -> Path:
        """``path`` relative to this root."""
        base = self.path if path.is_relative_to(self.path) else self.real
        return path.relative_to(base)

    def show(self, path: Path) -> str:
        """How to name ``path`` to the model: below the root's alias (or, for a read root,
        below the root as the operator wrote it), never by the host's resolved path."""
        inner = self.relative(path).as_posix()
        name = self.alias or self.label or "a read root"
        return name if inner == "." else f"{name}/{inner}"

    def describe(self) -> str:
        """The root for the operator's log: its name and where it is on this machine."""
        name = self.alias or self.label
        return f"{name} ({self.path})" if name and name != str(self.path) else str(self.path)
