"""Sign-in tokens kept for the user: one JSON file only its owner can read.

What an OAuth client is given (access and refresh tokens, its registration with the
authorization server, the metadata it discovered) is kept per user under the state
directory, keyed by the protected resource's URL, so a second process (or the next run)
signs in once. The file is written whole to a temporary file beside it and renamed over
it (``os.replace``), so a process killed mid-write leaves the last complete file; every
read-modify-write holds a file lock, so two processes never lose each other's entries.
``lock(key)`` is a second, per-resource lock: the one refresh of a token several
processes race for.

The store is plain data: which fields an entry holds is its client's business
(``toolplug.sources.mcp._oauth``); an OpenAPI source can keep its own entries here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from filelock import FileLock

__all__ = ["FILE_NAME", "TokenStore"]

FILE_NAME: Final = "tokens.json"
_OWNER_ONLY: Final = stat.S_IRUSR | stat.S_IWUSR  # 0600
_LOCK_SECONDS: Final = 30.0


class TokenStore:
    """The tokens file in ``directory`` (``STATE_DIR/oauth``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME

    def entry(self, key: str) -> dict[str, Any]:
        """What is kept for ``key`` (empty: nothing)."""
        found = self._read().get(key)
        return dict(found) if isinstance(found, dict) else {}

    def keys(self) -> list[str]:
        """Every key something is kept for."""
        return sorted(self._read())

    def update(self, key: str, **fields: Any) -> None:
        """Merge ``fields`` into ``key``'s entry (a field set to None is dropped)."""
        with self._writing() as entries:
            entry = dict(entries.get(key) or {})
            entry.update(fields)
            entries[key] = {k: v for k, v in entry.items() if v is not None}

    def forget(self, key: str) -> dict[str, Any]:
        """Drop ``key``'s entry; what it held (empty: nothing was kept)."""
        with self._writing() as entries:
            gone = entries.pop(key, None)
        return dict(gone) if isinstance(gone, dict) else {}

    def lock(self, key: str) -> FileLock:
        """The lock held while ``key``'s token is refreshed (one refresh across
        processes): a file beside the tokens, named by a digest of the key."""
        self._directory()
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return _file_lock(self.directory / f"refresh-{digest}.lock")

    # -- the file -------------------------------------------------------------------------

    def _directory(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            found = json.loads(text)
        except ValueError:
            return {}  # never written by this store (each write is whole): as if empty
        return found if isinstance(found, dict) else {}

    @contextlib.contextmanager
    def _writing(self) -> Iterator[dict[str, Any]]:
        self._directory()
        with _file_lock(self.directory / f"{FILE_NAME}.lock"):
            entries = self._read()
            yield entries
            self._write(entries)

    def _write(self, entries: dict[str, Any]) -> None:
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{FILE_NAME}.", suffix=".tmp", dir=self.directory
        )
        try:
            os.fchmod(descriptor, _OWNER_ONLY)  # mkstemp's own mode; said again, on purpose
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                json.dump(entries, out, indent=1, sort_keys=True)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def _file_lock(path: Path) -> FileLock:
    """A lock on ``path`` (filelock, of the mcp extra: only signing in needs it)."""
    from filelock import FileLock

    return FileLock(path, timeout=_LOCK_SECONDS)
