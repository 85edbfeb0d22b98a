"""The citation lists: one JSON file per project, changed under a file lock, atomically.

Every change reads the file, changes the list and writes it back while holding a
``filelock`` lock beside it, so agents in several processes adding at once lose nothing;
the new text goes to a temporary file that replaces the old one in one step, so a crash
never leaves half a file. Citations are the same when their normalized URLs are.

Each successful change also writes the same list to ``<project>.json.bak``, the last good
copy. When the list's file cannot be read as a citation list (edited by hand, damaged on
disk), the next operation restores it from that copy under the lock, keeps the unreadable
file as ``<project>.json.corrupt-<time>``, and says so in ``Store.warnings``. With no good
copy either, ``Unrecoverable`` is raised: only a person can fix that, so it is not retried.
Temporary files a killed writer left behind are removed by the next change once they are
older than ``ORPHAN_SECONDS``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["ORPHAN_SECONDS", "Entry", "Store", "Unrecoverable", "normalize_url"]

PROJECT_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_TRACKING: Final = ("utm_", "fbclid", "gclid", "mc_cid", "mc_eid")
_LOCK_SECONDS: Final = 10.0
_TEMPORARY: Final = ".citations-"
ORPHAN_SECONDS: Final = 300.0
"""Age at which a temporary file is taken for a dead writer's and removed."""


class Unrecoverable(Exception):
    """The list's file is unreadable and there is no good copy to restore it from."""


@dataclass
class Entry:
    """One source."""

    id: int
    title: str
    url: str
    authors: list[str] = field(default_factory=list)
    published: str = ""
    accessed: str = ""
    source_tool: str = ""

    def merge(self, other: Entry) -> bool:
        """Fill what this entry lacks from ``other``; True when something changed."""
        changed = False
        for name in ("title", "published", "accessed", "source_tool"):
            if not getattr(self, name) and getattr(other, name):
                setattr(self, name, getattr(other, name))
                changed = True
        if not self.authors and other.authors:
            self.authors = list(other.authors)
            changed = True
        return changed


def normalize_url(url: str) -> str:
    """The URL as duplicates are recognised: lower-case scheme and host, no default port,
    no fragment, no tracking parameters, no trailing slash on the path. Text that does not
    parse as a URL (``http://[``, a port out of range) is compared as written."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return url.strip()
    if port and not (
        (parts.scheme == "http" and port == 80) or (parts.scheme == "https" and port == 443)
    ):
        host = f"{host}:{port}"
    query = urlencode(
        sorted(
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if not k.lower().startswith(_TRACKING)
        )
    )
    path = parts.path.rstrip("/") or ""
    return urlunsplit((parts.scheme.lower(), host, path, query, ""))


class Store:
    """The citation list of one project in ``folder``."""

    def __init__(self, folder: Path, project: str) -> None:
        if not PROJECT_NAME.fullmatch(project):
            raise ValueError(
                "project: letters, digits, '_', '-' and '.', starting with a letter or digit, "
                f"at most 64 characters; got {project[:80]!r}"
            )
        self.path = folder / f"{project}.json"
        self.backup = folder / f"{project}.json.bak"
        """The last good copy, written after every successful change."""
        self.project = project
        self.warnings: list[str] = []
        """What this store did besides the operation asked for (a restore), for the result."""

    def entries(self) -> list[Entry]:
        """The list as it is on disk (empty when the project has none yet).

        Raises:
            Unrecoverable: The file is unreadable and so is its last good copy.
            OSError: The file cannot be read, or the lock was not taken in time.
        """
        try:
            return _read(self.path)
        except FileNotFoundError:
            return []
        except ValueError:
            pass
        restored: list[Entry] = self.change(list)  # restored under the lock
        return restored

    def change(self, edit: Callable[[list[Entry]], Any]) -> Any:
        """Run ``edit`` on the list under the lock and save what it leaves; its result."""
        from filelock import FileLock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{self.path}.lock", timeout=_LOCK_SECONDS):
            self._remove_orphans()
            entries = self._locked_entries()
            outcome = edit(entries)
            self._write(self.path, entries)
            self._write(self.backup, entries)
        return outcome

    def _locked_entries(self) -> list[Entry]:
        """The list, restored from the last good copy when its file is unreadable."""
        try:
            return _read(self.path)
        except FileNotFoundError:
            return []
        except ValueError as exc:
            damage = str(exc)
        try:
            entries = _read(self.backup)
        except FileNotFoundError:
            raise Unrecoverable(
                f"{self.path} is not a readable citation list ({damage}) and there is no "
                f"last good copy ({self.backup.name}) to restore it from; fix the file, or "
                "move it away to start an empty list"
            ) from None
        except ValueError as exc:
            raise Unrecoverable(
                f"{self.path} is not a readable citation list ({damage}), nor is its last "
                f"good copy {self.backup.name} ({exc}); fix one of them, or move both away "
                "to start an empty list"
            ) from None
        kept = self.path.with_name(
            f"{self.path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        )
        os.replace(self.path, kept)
        self.warnings.append(
            f"the citation list {self.path} was unreadable ({damage}); it was restored from "
            f"its last good copy {self.backup.name} ({len(entries)} citations, saved "
            f"{_saved(self.backup)}), and the unreadable file was kept as {kept.name}"
        )
        return entries

    def _remove_orphans(self) -> None:
        """Remove temporary files older than ``ORPHAN_SECONDS`` (a killed writer's)."""
        limit = time.time() - ORPHAN_SECONDS
        for candidate in self.path.parent.glob(f"{_TEMPORARY}*"):
            with contextlib.suppress(OSError):
                if candidate.is_file() and candidate.lstat().st_mtime < limit:
                    candidate.unlink()

    def add(self, candidates: Iterable[Entry]) -> list[tuple[Entry, str]]:
        """Add each candidate, or merge it into the entry with the same normalized URL;
        each with ``"added"``, ``"merged"`` or ``"known"``."""

        def edit(entries: list[Entry]) -> list[tuple[Entry, str]]:
            by_url = {normalize_url(e.url): e for e in entries}
            done = []
            for candidate in candidates:
                known = by_url.get(normalize_url(candidate.url))
                if known is not None:
                    done.append((known, "merged" if known.merge(candidate) else "known"))
                    continue
                candidate.id = max((e.id for e in entries), default=0) + 1
                entries.append(candidate)
                by_url[normalize_url(candidate.url)] = candidate
                done.append((candidate, "added"))
            return done

        result: list[tuple[Entry, str]] = self.change(edit)
        return result

    def remove(self, wanted: int | str) -> Entry | None:
        """Remove the entry with this id or (normalized) URL; the removed entry, or None."""

        def edit(entries: list[Entry]) -> Entry | None:
            for index, entry in enumerate(entries):
                if entry.id == wanted or (
                    isinstance(wanted, str) and normalize_url(entry.url) == normalize_url(wanted)
                ):
                    return entries.pop(index)
            return None

        removed: Entry | None = self.change(edit)
        return removed

    @staticmethod
    def _write(path: Path, entries: list[Entry]) -> None:
        text = json.dumps(
            {"version": 1, "citations": [asdict(e) for e in entries]},
            indent=2,
            ensure_ascii=False,
        )
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=_TEMPORARY)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _read(path: Path) -> list[Entry]:
    """The citations in ``path``.

    Raises:
        FileNotFoundError: There is no such file.
        ValueError: The file is not a citation list (not JSON, or not of that shape).
        OSError: It cannot be read.
    """
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    items = document.get("citations", []) if isinstance(document, dict) else None
    if not isinstance(items, list):
        raise ValueError('not a citation list: expected {"citations": [...]}')
    entries = []
    for number, item in enumerate(items, 1):
        try:
            entry = Entry(**item)
        except TypeError as exc:
            raise ValueError(f"citation {number} is malformed: {exc}") from None
        if not (
            isinstance(entry.id, int)
            and isinstance(entry.url, str)
            and isinstance(entry.title, str)
            and isinstance(entry.authors, list)
        ):
            raise ValueError(f"citation {number} is malformed: a field has the wrong type")
        entries.append(entry)
    return entries


def _saved(path: Path) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(path.stat().st_mtime))
    except OSError:
        return "at an unknown time"
