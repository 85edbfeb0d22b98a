"""The sandbox: which paths read_file and write_file may touch, and opening them safely.

A path is first read as written: the alias expanded, a relative path put under the cache
root, ``~`` expanded to the user's home, ``..`` collapsed. It must lie inside a root. Then it
is walked from a descriptor of that root one name at a time (``toolplug_files._walk``), so a
symlink is followed only when it stays inside the roots, and another process that swaps a
directory for a symlink mid-walk cannot send a read or a write out of the root. The resolved
path must match no ``deny_paths`` entry. Refusals are PermissionErrors naming the path and
the rule:

* ``outside the sandbox roots``: the path, as written, leads out of every root;
* ``a symlink inside the root points outside it``: the path is inside a root as written, but
  a symlink on the way leads out;
* ``matches deny_paths entry ...``: the resolved (or the written) path matches an entry;
* ``kept being replaced``: a directory on the way was swapped while it was walked.
"""

from __future__ import annotations

import errno
import fnmatch
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from toolplug import ErrorType, ToolContext, ToolFailure
from toolplug_files._roots import Root
from toolplug_files._walk import STEP, Changed, Escape, Loop, NotADirectory, Place, walk

__all__ = ["CACHE_ALIAS", "STATE_ALIAS", "Root", "Sandbox", "Target", "log", "os_failure"]

log: Final = logging.getLogger("toolplug.files")
"""The operator's log: where the host's absolute paths go; the model reads aliases."""
CACHE_ALIAS: Final = "file_cache_dir"
STATE_ALIAS: Final = "file_state_dir"
_GLOB_CHARS: Final = frozenset("*?[")
_WINDOWS: Final = re.compile(r"^[A-Za-z]:|\\")
"""A drive letter, or a backslash anywhere: a Windows path, which this sandbox does not take."""
_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class Target:
    """A path that passed every check, held open: use it in a ``with`` block.

    ``directory`` is a descriptor of the deepest directory that exists on the way; ``rest``
    names what lies below it. Every operation on the file goes through the descriptor.
    """

    def __init__(self, place: Place, shown: str, *, writing: bool) -> None:
        self.place = place
        self.shown = shown
        """How messages and results name it (``file_cache_dir/notes.md``)."""
        self.writing = writing

    @property
    def real(self) -> Path:
        """The resolved path."""
        return self.place.real

    @property
    def root(self) -> Root:
        """The root the resolved path lies in."""
        return self.place.root

    @property
    def name(self) -> str | None:
        """The final name, inside ``directory`` once ``parent()`` has run; None for a root."""
        return self.place.rest[-1] if self.place.rest else None

    @property
    def directory(self) -> int:
        """The descriptor of the deepest existing directory on the way."""
        return self.place.directory

    def parent(self) -> int:
        """A descriptor of the file's directory, creating the missing directories on the way.

        Raises:
            ToolFailure: A part of the path is a file, or was swapped for a symlink.
        """
        place = self.place
        for name in place.rest[:-1]:
            try:
                os.mkdir(name, 0o777, dir_fd=place.directory)
            except FileExistsError:
                pass
            except OSError as exc:
                raise os_failure(exc, f"cannot create the directories for {self.shown}") from None
            try:
                step = os.open(name, STEP, dir_fd=place.directory)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK):
                    raise _changed(self.shown) from None
                if exc.errno == errno.ENOTDIR:
                    raise _through_a_file(self.shown) from None
                raise os_failure(exc, f"cannot create the directories for {self.shown}") from None
            os.close(place.directory)
            place.directory = step
            place.parts = (*place.parts, name)
            place.rest = place.rest[1:]
        return place.directory

    def __enter__(self) -> Target:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.place.close()


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

    def open(self, raw: Any, *, writing: bool) -> Target:
        """Check ``raw``, walk it from its root and hold the result open.

        Raises:
            ToolFailure: ValidationError for a malformed path, PermissionError for a refused
                one, NotFoundError when reading what is not there.
        """
        lexical = self._lexical(raw)
        roots = self.roots(writing=writing)
        home = next((r for r in roots if r.holds(lexical)), None)
        tool = "write_file" if writing else "read_file"
        if home is None:
            log.info(
                "%s refused %s: outside the sandbox roots (%s)",
                tool, _quote(raw), ", ".join(r.describe() for r in roots),
            )
            extra = "; writes go only under file_cache_dir and file_state_dir" if writing else ""
            raise ToolFailure(
                ErrorType.PERMISSION,
                f"{_quote(raw)} is outside the sandbox roots ({_named(roots)}){extra}",
            )
        shown = home.show(lexical)
        entry = self._denied(lexical, home)
        if entry is None:
            place = self._walk(home, lexical, roots, shown, writing=writing)
            entry = self._denied(place.real, place.root)
            if entry is None:
                return Target(place, shown, writing=writing)
            place.close()
        log.info("%s refused %s (%s): it matches deny_paths entry %r", tool, shown, lexical, entry)
        raise ToolFailure(
            ErrorType.PERMISSION, f"{shown} is refused: it matches deny_paths entry {_entry(entry)}"
        )

    @staticmethod
    def _walk(
        home: Root, lexical: Path, roots: tuple[Root, ...], shown: str, *, writing: bool
    ) -> Place:
        """The walk of ``lexical`` from ``home``, its failures as ToolFailures."""
        try:
            return walk(home, home.relative(lexical).parts, roots, create=writing)
        except Escape as escape:
            log.info("%s is refused: the symlink %s points outside the roots", shown, escape)
            raise ToolFailure(
                ErrorType.PERMISSION,
                f"{shown} is refused: a symlink inside the root points outside it "
                f"({escape.link} -> outside the sandbox)",
            ) from None
        except Loop:
            raise ToolFailure(
                ErrorType.PERMISSION,
                f"{shown} is refused: more than 40 symlinks on the way (a loop)",
            ) from None
        except Changed:
            raise _changed(shown) from None
        except NotADirectory:
            if writing:
                raise _through_a_file(shown) from None
            raise _missing(shown) from None
        except FileNotFoundError:  # the root itself is missing: nothing was written there yet
            raise _missing(shown) from None
        except OSError as exc:
            raise os_failure(exc, f"{shown} cannot be {'written' if writing else 'read'}") from None

    def _lexical(self, raw: Any) -> Path:
        """The path as written, made absolute and normalised, symlinks not yet followed."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolFailure(ErrorType.VALIDATION, "path: expected a non-empty file path")
        if "\x00" in raw:
            raise ToolFailure(ErrorType.VALIDATION, "path: contains a NUL byte")
        if _URL.match(raw):
            raise ToolFailure(
                ErrorType.VALIDATION,
                f"path: {_quote(raw)} is a URL; give a file path such as file_cache_dir/notes.md",
            )
        if _WINDOWS.search(raw):
            raise ToolFailure(
                ErrorType.VALIDATION,
                f"path: {_quote(raw)} is a Windows-style path; use '/' between names, such as "
                "file_cache_dir/notes/today.md",
            )
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
            written = Path(_home(raw)) if raw.startswith("~") else Path(raw)
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


def _named(roots: tuple[Root, ...]) -> str:
    """The roots as the model may name them: the aliases, then how many read roots there
    are (their paths are the operator's to give; the log has them)."""
    named = [r.alias for r in roots if r.alias]
    extra = len(roots) - len(named)
    if extra:
        named.append(f"{extra} read root{'s' if extra > 1 else ''}")
    return ", ".join(named)


def _entry(entry: str) -> str:
    """A deny_paths entry as the model reads it: an absolute or ``~`` one, which names a
    place on the host, only as such (the log has it)."""
    return "(an absolute path)" if entry.strip().startswith(("/", "~")) else repr(entry)


def _quote(raw: str) -> str:
    return repr(raw if len(raw) <= 200 else raw[:199] + "…")


def _home(raw: str) -> str:
    """``raw`` with its leading ``~`` or ``~user`` expanded.

    Raises:
        ToolFailure: PermissionError when there is no such home (an unknown user, or no home
            directory known for this one): never a RuntimeError from pathlib.
    """
    expanded = os.path.expanduser(raw)
    if expanded.startswith("~"):
        user = raw[1:].partition("/")[0]
        whose = f"user {user!r}" if user else "this user"
        raise ToolFailure(
            ErrorType.PERMISSION,
            f"{_quote(raw)} is refused: there is no home directory for {whose}; paths go under "
            "file_cache_dir or file_state_dir, such as file_cache_dir/notes.txt",
        )
    return expanded


def _changed(shown: str) -> ToolFailure:
    return ToolFailure(
        ErrorType.PERMISSION,
        f"{shown} is refused: a directory on the way kept being replaced (by a symlink?) while "
        "it was opened",
    )


def _through_a_file(shown: str) -> ToolFailure:
    return ToolFailure(
        ErrorType.VALIDATION, f"{shown}: a part of the path is a file, not a directory"
    )


def _missing(shown: str) -> ToolFailure:
    return ToolFailure(
        ErrorType.NOT_FOUND, f"there is no file at {shown}; check the path or write it first"
    )


def os_failure(exc: OSError, what: str) -> ToolFailure:
    """An operating-system failure as a structured error that says ``what`` failed."""
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return ToolFailure(
            ErrorType.PERMISSION, f"{what}: a symlink inside the root points outside it"
        )
    if isinstance(exc, PermissionError):
        return ToolFailure(ErrorType.PERMISSION, f"{what}: the operating system denied access")
    reason = exc.strerror or type(exc).__name__
    return ToolFailure(ErrorType.EXECUTION, f"{what} ({reason})")
