"""The sandbox: which paths read_file and write_file may touch, decided on resolved paths.

Every path is resolved before use: aliases expanded, relative paths put under the cache
root, ``..`` collapsed and symlinks followed (``os.path.realpath``). The result must lie inside
an allowed root (``Path.is_relative_to`` on the resolved root) and match no ``deny_paths``
entry. Refusals name the rule that refused:

* ``outside the sandbox roots``: the path, as written, leads out of every root;
* ``a symlink inside the root points outside it``: the path is inside a root as written, but
  a symlink on the way leads out;
* ``matches deny_paths entry ...``: the resolved (or the written) path matches an entry.

The checks guard against a model's choice of path, not against another local process that
swaps directories for symlinks between the check and the use; opening with ``O_NOFOLLOW``
narrows that window for the last component.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolplug import ErrorType, ToolContext, ToolFailure

__all__ = ["CACHE_ALIAS", "STATE_ALIAS", "Root", "Sandbox", "Target"]

CACHE_ALIAS: Final = "file_cache_dir"
STATE_ALIAS: Final = "file_state_dir"
_GLOB_CHARS: Final = frozenset("*?[")


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


@dataclass(frozen=True)
class Target:
    """A path that passed every check."""

    real: Path
    """The resolved path to open."""
    shown: str
    """How messages and results name it (``file_cache_dir/notes.md``)."""
    root: Root
    """The root the resolved path lies in."""


@dataclass(frozen=True)
class Sandbox:
    """The roots and deny rules of one call."""

    cache: Root
    state: Root
    read_roots: tuple[Root, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def from_context(cls, context: ToolContext) -> Sandbox:
        """The sandbox the tool's configuration describes.

        By default both tools share ``files`` directories beside their own cache and state
        directories (``<cache_dir>/tools/files`` with toolplug's layout), so what write_file
        writes, read_file reads.
        """
        config = context.config
        cache = _directory(config.get("cache_dir"), _shared(context.cache_dir))
        state = _directory(config.get("state_dir"), _shared(context.state_dir))
        extra = tuple(Root.at(Path(str(p))) for p in _strings(config, "read_roots"))
        return cls(
            cache=Root.at(cache, CACHE_ALIAS),
            state=Root.at(state, STATE_ALIAS),
            read_roots=extra,
            deny=tuple(_strings(config, "deny_paths")),
        )

    def roots(self, *, writing: bool) -> tuple[Root, ...]:
        """The roots a read (or a write) may use."""
        return (self.cache, self.state) if writing else (self.cache, self.state, *self.read_roots)

    def resolve(self, raw: Any, *, writing: bool) -> Target:
        """Check ``raw`` and return where it really leads.

        Raises:
            ToolFailure: ValidationError for a malformed path, PermissionError for a refused one.
        """
        lexical = self._lexical(raw)
        roots = self.roots(writing=writing)
        home = next((r for r in roots if r.holds(lexical)), None)
        if home is None:
            allowed = ", ".join(r.describe() for r in roots)
            extra = "; writes go only under file_cache_dir and file_state_dir" if writing else ""
            raise ToolFailure(
                ErrorType.PERMISSION,
                f"{_quote(raw)} is outside the sandbox roots ({allowed}){extra}",
            )
        shown = home.show(lexical)
        real = Path(os.path.realpath(lexical))
        landing = next((r for r in roots if real.is_relative_to(r.real)), None)
        if landing is None:
            link = _first_escaping_link(home, lexical, roots)
            where = f" ({link})" if link else ""
            raise ToolFailure(
                ErrorType.PERMISSION,
                f"{shown} is refused: a symlink inside the root points outside it{where}",
            )
        for candidate, root in ((real, landing), (lexical, home)):
            entry = self._denied(candidate, root)
            if entry is not None:
                raise ToolFailure(
                    ErrorType.PERMISSION,
                    f"{shown} is refused: it matches deny_paths entry {entry!r}",
                )
        return Target(real, shown, landing)

    def _lexical(self, raw: Any) -> Path:
        """The path as written, made absolute and normalised, symlinks not yet followed."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolFailure(ErrorType.VALIDATION, "path: expected a non-empty file path")
        if "\x00" in raw:
            raise ToolFailure(ErrorType.VALIDATION, "path: contains a NUL byte")
        head, _, rest = raw.partition("/")
        aliased = {CACHE_ALIAS: self.cache, STATE_ALIAS: self.state}.get(head)
        if aliased is not None:
            inner = rest.strip("/")
            if not inner:
                raise ToolFailure(
                    ErrorType.VALIDATION,
                    f"path: {head} alone names the directory itself; add a file path after "
                    f"it, such as {head}/notes.md",
                )
            joined = aliased.path / rest.lstrip("/")
        else:
            written = Path(raw).expanduser() if raw.startswith("~") else Path(raw)
            joined = written if written.is_absolute() else self.cache.path / written
        return _within_platform_limits(Path(os.path.normpath(joined)))

    def _denied(self, path: Path, root: Root) -> str | None:
        """The first deny_paths entry that matches ``path``, or None."""
        for entry in self.deny:
            if _matches(entry, path, root, self):
                return entry
        return None


def _matches(entry: str, path: Path, root: Root, sandbox: Sandbox) -> bool:
    """Whether a deny_paths entry matches ``path`` (which lies in ``root``).

    * ``NAME`` or a pattern without ``/`` (``.env``, ``*.pem``): any component under the root;
    * an absolute path, ``~/...`` or an alias path: that file or directory and everything in it
      (a glob is matched against the path and each of its ancestors);
    * a relative path with ``/`` (``secrets/*.key``): the same, relative to the root.
    """
    pattern = entry.strip()
    if not pattern:
        return False
    is_glob = any(c in _GLOB_CHARS for c in pattern)
    inner = root.relative(path)
    if "/" not in pattern.rstrip("/"):
        name = pattern.rstrip("/")
        return any(fnmatch.fnmatchcase(part, name) for part in inner.parts)
    head = pattern.partition("/")[0]
    absolute: Path | None = None
    if head in (CACHE_ALIAS, STATE_ALIAS):
        base = sandbox.cache if head == CACHE_ALIAS else sandbox.state
        absolute = base.path / pattern.partition("/")[2]
    elif pattern.startswith("~"):
        absolute = Path(pattern).expanduser()
    elif pattern.startswith("/"):
        absolute = Path(pattern)
    if absolute is None:
        return _covers(Path(os.path.normpath(pattern)), inner, is_glob)
    absolute = Path(os.path.normpath(absolute))
    if is_glob:
        return _covers(absolute, path, glob=True)
    return any(
        path == p or path.is_relative_to(p) for p in {absolute, Path(os.path.realpath(absolute))}
    )


def _covers(pattern: Path, path: Path, glob: bool) -> bool:
    """Whether ``pattern`` names ``path`` or one of its ancestors."""
    candidates = [path, *path.parents]
    if glob:
        return any(fnmatch.fnmatchcase(c.as_posix(), pattern.as_posix()) for c in candidates)
    return any(c == pattern for c in candidates)


def _first_escaping_link(home: Root, lexical: Path, roots: Sequence[Root]) -> str | None:
    """``link -> target`` for the first symlink on the way that leads out of every root."""
    current = home.path
    for part in home.relative(lexical).parts:
        current = current / part
        if current.is_symlink():
            target = Path(os.path.realpath(current))
            if not any(target.is_relative_to(r.real) for r in roots):
                return f"{home.show(current)} -> {target}"
    return None


def _shared(own: Path) -> Path:
    """The default root for a tool whose own directory is ``own``.

    toolplug gives each tool ``<dir>/tools/<name>``; read_file and write_file share
    ``<dir>/tools/files``. A host that hands out one directory to both gets ``<own>/files``.
    """
    return own.parent / "files" if own.parent.name == "tools" else own / "files"


def _directory(value: Any, default: Path) -> Path:
    if value is None or value == "":
        return default
    return Path(str(value))


def _strings(config: Mapping[str, Any], key: str) -> Iterable[str]:
    value = config.get(key) or []
    return [str(v) for v in value if str(v).strip()]


def _within_platform_limits(path: Path) -> Path:
    """The path, or a ValidationError when the operating system could not open it: longer
    than its path limit, or with a name longer than its name limit."""
    try:
        path_max, name_max = os.pathconf("/", "PC_PATH_MAX"), os.pathconf("/", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # not a POSIX system: the common limits
        path_max, name_max = 4096, 255
    size = len(os.fsencode(path))
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    if size >= path_max or longest > name_max:
        raise ToolFailure(
            ErrorType.VALIDATION,
            f"path: {size:,} bytes with a name of {longest:,}; this system allows paths "
            f"under {path_max:,} bytes and names of at most {name_max:,}: use a shorter path",
        )
    return path


def _quote(raw: str) -> str:
    return repr(raw if len(raw) <= 200 else raw[:199] + "…")
