"""Replacing a file in a held directory, one writer at a time, without leaving debris.

Every write to a directory holds a lock on that directory (``filelock.lock_descriptor`` on
its descriptor: ``flock`` on POSIX), so writers in other threads, tasks and processes take
turns, and an append that copies the old content never copies a version another writer is
about to replace. Locking the directory, not a lock file beside the target, leaves nothing
behind and opens no path a swapped symlink could redirect.

The new content goes to a temporary file beside the target (``.<name>.toolplug-<hex>.tmp``),
created relative to the directory's descriptor with ``O_EXCL`` and ``O_NOFOLLOW``, fsynced,
given its permissions and renamed over the target. A writer killed mid-write (SIGKILL, power
loss) leaves its temporary file behind: the next write in that directory removes those older
than ``ORPHAN_SECONDS``; younger ones may belong to a write in flight in another process.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from typing import Final

__all__ = ["ORPHAN_SECONDS", "LockTimeout", "locked", "remove_orphans", "replace"]

ORPHAN_SECONDS: Final = 300.0
"""Age at which a temporary file of ours is taken for a dead writer's (read at each write)."""
LOCK_SECONDS: Final = 8.0
"""The longest a write waits for the directory (write_file's own time limit is 10 s)."""
_TEMPORARY: Final = re.compile(r"\..*\.toolplug-[0-9a-f]{12}\.tmp", re.DOTALL)
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_CHUNK: Final = 1 << 20


class LockTimeout(Exception):
    """Another writer held the directory for longer than ``LOCK_SECONDS``."""


@contextlib.contextmanager
def locked(directory: int) -> Iterator[None]:
    """Hold the lock of ``directory`` (a descriptor) for the block.

    Polls without blocking, backing off from 1 ms to 20 ms: this runs in a worker thread,
    and a blocking ``flock`` could not be given up at the deadline.

    Raises:
        LockTimeout: The lock was not free within ``LOCK_SECONDS``.
    """
    from filelock import lock_descriptor, unlock_descriptor

    deadline = time.monotonic() + LOCK_SECONDS
    pause = 0.001
    while not lock_descriptor(directory, blocking=False):
        if time.monotonic() >= deadline:
            raise LockTimeout
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    try:
        yield
    finally:
        unlock_descriptor(directory)


def remove_orphans(directory: int, *, now: float | None = None) -> int:
    """Remove our temporary files in ``directory`` older than ``ORPHAN_SECONDS``; how many.

    Call it holding the directory's lock. Failures are ignored: a file that cannot be removed
    now is tried again at the next write.
    """
    limit = (time.time() if now is None else now) - ORPHAN_SECONDS
    removed = 0
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if not _TEMPORARY.fullmatch(entry.name):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and info.st_mtime < limit:
                    os.unlink(entry.name, dir_fd=directory)
                    removed += 1
    return removed


def replace(directory: int, name: str, data: bytes, permissions: int, *, keep: bool) -> int:
    """Write ``data`` (after the old content when ``keep``) to a temporary file in
    ``directory`` and rename it over ``name``; the new size. Call it holding the lock.

    Raises:
        OSError: Any step failed; ``name`` is unchanged and the temporary file is gone.
    """
    temporary = _temporary_name(name)
    fd = os.open(
        temporary,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
        0o600,
        dir_fd=directory,
    )
    try:
        try:
            if keep:
                _copy(directory, name, fd)
            _write_all(fd, data)
            os.fsync(fd)
            size = os.fstat(fd).st_size
            os.fchmod(fd, permissions)
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    with contextlib.suppress(OSError):  # durable rename where the file system allows it
        os.fsync(directory)
    return size


def _copy(directory: int, name: str, out: int) -> None:
    """Copy the file ``name`` (never through a symlink) to the descriptor ``out``."""
    source = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=directory)
    try:
        while chunk := os.read(source, _CHUNK):
            _write_all(out, chunk)
    finally:
        os.close(source)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _temporary_name(name: str) -> str:
    """``.<name>.toolplug-<12 hex>.tmp``, the name cut so the whole fits in 255 bytes."""
    short = os.fsencode(name)[:200].decode("utf-8", "ignore") or "file"
    return f".{short}.toolplug-{secrets.token_hex(6)}.tmp"
