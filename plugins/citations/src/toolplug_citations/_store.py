"""The citation lists: one JSON file per project, changed under a file lock, atomically.

Every change reads the file, changes the list and writes it back while holding a
``filelock`` lock beside it, so agents in several processes adding at once lose nothing;
the new text goes to a temporary file that replaces the old one in one step, so a crash
never leaves half a file. Citations are the same when their normalized URLs are.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["Entry", "Store", "normalize_url"]

PROJECT_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_TRACKING: Final = ("utm_", "fbclid", "gclid", "mc_cid", "mc_eid")
_LOCK_SECONDS: Final = 10.0


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
        self.project = project

    def entries(self) -> list[Entry]:
        """The list as it is on disk (empty when the project has none yet)."""
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise OSError(f"cannot read {self.path}: {exc}") from None
        return [Entry(**item) for item in document.get("citations", [])]

    def change(self, edit: Callable[[list[Entry]], Any]) -> Any:
        """Run ``edit`` on the list under the lock and save what it leaves; its result."""
        from filelock import FileLock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{self.path}.lock", timeout=_LOCK_SECONDS):
            entries = self.entries()
            outcome = edit(entries)
            self._write(entries)
        return outcome

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

    def _write(self, entries: list[Entry]) -> None:
        text = json.dumps(
            {"version": 1, "citations": [asdict(e) for e in entries]},
            indent=2,
            ensure_ascii=False,
        )
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".citations-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
