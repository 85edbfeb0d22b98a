"""Resolving a path beneath the sandbox roots one component at a time, by directory descriptor.

A walk opens the root, then each directory on the way relative to the one before it
(``dir_fd``) with ``O_NOFOLLOW`` and ``O_DIRECTORY``. What is opened is what was checked: when
another process swaps a directory for a symlink between two steps, the next step meets the
symlink instead of following it. A symlink is followed only by reading it and walking again
from the root its target lies in; one that leads out of every root stops the walk. ``..``
inside a symlink's target is taken lexically, from the directories walked so far.

The walk ends with the descriptor of the deepest directory that exists on the way; what
lies below it (directories still to create, then the file's name) is returned by name, and
every later step (open, create, rename) happens relative to that descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolplug_files._roots import Root

__all__ = ["Changed", "Escape", "Loop", "NotADirectory", "Place", "walk"]

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
STEP: Final = _DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
"""How each directory on the way is opened: never through a symlink."""
_MAX_LINKS: Final = 40
"""Symlinks followed in one walk before it is called a loop (Linux's own limit)."""
_MAX_RACES: Final = 20
"""Times one step may find its directory swapped away and back before the walk gives up."""


class Escape(Exception):
    """A symlink on the way leads out of every root."""

    def __init__(self, link: str, target: Path) -> None:
        super().__init__(f"{link} -> {target}")
        self.link = link
        """The symlink, as the model would name it (``file_cache_dir/shared``)."""
        self.target = target
        """Where it leads, resolved."""


class Loop(Exception):
    """More than ``_MAX_LINKS`` symlinks on the way."""


class Changed(Exception):
    """A directory on the way kept changing (swapped for a symlink and back) while walked."""


class NotADirectory(Exception):
    """A component that should be a directory is something else (a file, a FIFO)."""


@dataclass
class Place:
    """Where a walk ended; owns ``directory`` until ``close``."""

    root: Root
    """The root the path lies in after every symlink (its landing root)."""
    directory: int
    """A descriptor of the deepest existing directory on the way."""
    parts: tuple[str, ...]
    """The names from the root to ``directory``."""
    rest: tuple[str, ...]
    """The names below ``directory``: directories that do not exist yet, then the final name
    (which may exist). Empty when the path names the root itself."""

    @property
    def real(self) -> Path:
        """The resolved path, for messages, results and deny rules."""
        return self.root.real.joinpath(*self.parts, *self.rest)

    def close(self) -> None:
        """Close the descriptor (once)."""
        if self.directory >= 0:
            os.close(self.directory)
            self.directory = -1


def walk(start: Root, parts: Sequence[str], roots: Sequence[Root], *, create: bool) -> Place:
    """Walk ``parts`` from ``start``, following only symlinks that stay inside ``roots``.

    Args:
        start: The root the path lies in as written.
        parts: The path's names below ``start`` (normalised: no ``.``, ``..`` or empty names).
        roots: Every root a symlink may lead into.
        create: Create a root that does not exist yet (for writing).

    Raises:
        Escape: A symlink on the way leads out of every root.
        Loop: Too many symlinks.
        Changed: A directory kept being swapped while it was walked.
        NotADirectory: A component on the way is not a directory.
        OSError: The root cannot be opened (FileNotFoundError when it does not exist), or
            another operating-system failure.
    """
    root, todo = start, tuple(parts)
    for _ in range(_MAX_LINKS + 1):
        outcome = _descend(root, todo, _open_root(root, create=create), roots)
        if isinstance(outcome, Place):
            return outcome
        root, todo = outcome  # a symlink led here: walk again from that root
    raise Loop


def _descend(  # noqa: C901 - each step of the sandboxed walk its own refusal
    root: Root, todo: tuple[str, ...], current: int, roots: Sequence[Root]
) -> Place | tuple[Root, tuple[str, ...]]:
    """Go down ``todo`` from the descriptor ``current``, which this function owns.

    Returns:
        The Place the names lead to (owning the last descriptor), or, when a symlink on the
        way must be followed, the root its target lies in and the names below that root.
    """
    walked: list[str] = []
    index, races = 0, 0
    try:
        while index < len(todo):
            name = todo[index]
            if index == len(todo) - 1:  # the final name: a file, or missing; follow a symlink
                info = _lstat(current, name)
                if info is None or not stat.S_ISLNK(info.st_mode):
                    return Place(root, current, tuple(walked), (name,))
            else:
                try:
                    step = os.open(name, STEP, dir_fd=current)
                except FileNotFoundError:
                    return Place(root, current, tuple(walked), todo[index:])
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                        raise
                    info = _lstat(current, name)
                    if info is None:
                        return Place(root, current, tuple(walked), todo[index:])
                    if not stat.S_ISLNK(info.st_mode):
                        if not stat.S_ISDIR(info.st_mode):
                            raise NotADirectory from None
                        races += 1  # swapped back since the open: take this step again
                        if races > _MAX_RACES:
                            raise Changed from None
                        continue
                else:
                    previous, current = current, step
                    os.close(previous)
                    walked.append(name)
                    index += 1
                    continue
            try:
                target = os.readlink(name, dir_fd=current)
            except OSError as exc:  # no longer a symlink: look at it again
                if exc.errno not in (errno.EINVAL, errno.ENOENT):
                    raise
                races += 1
                if races > _MAX_RACES:
                    raise Changed from None
                continue
            base = root.real.joinpath(*walked)
            leads = Path(os.path.normpath(base / target))
            landing = next((r for r in roots if r.holds(leads)), None)
            if landing is None:
                raise Escape(root.show(base / name), Path(os.path.realpath(leads)))
            os.close(current)
            return landing, (*landing.relative(leads).parts, *todo[index + 1 :])
        return Place(root, current, tuple(walked), ())  # no names: the root itself
    except BaseException:
        _close_quietly(current)
        raise


def _open_root(root: Root, *, create: bool) -> int:
    """A descriptor of ``root``; the root is configuration, so its own path is trusted."""
    try:
        return os.open(root.real, _DIRECTORY)
    except FileNotFoundError:
        if not create:
            raise
    os.makedirs(root.real, exist_ok=True)
    return os.open(root.real, _DIRECTORY)


def _lstat(directory: int, name: str) -> os.stat_result | None:
    """``name`` in ``directory``, symlinks not followed; None when it does not exist."""
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _close_quietly(descriptor: int) -> None:
    with contextlib.suppress(OSError):
        os.close(descriptor)
