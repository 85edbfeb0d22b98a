"""What conditional GET needs: per feed URL, its validators and the items they stand for.

One small JSON file per URL under ``<cache dir>/feeds/``, named by a hash of the URL.
Files are written to a temporary name in the same directory and moved into place with
``os.replace``, so a reader sees the old entry or the new one, never half of one. A file
that cannot be read or does not match is ignored: the feed is then fetched in full.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from toolplug_rss_feed._parse import Item

FORMAT: Final = 1
"""Bumped when the file layout changes; files of another format are ignored."""


@dataclass
class CacheEntry:
    """The last full answer for one feed URL."""

    url: str
    etag: str | None
    last_modified: str | None
    summary_chars: int
    """The summary length the items were cut to; another setting needs a full fetch."""
    title: str
    items: list[Item] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class FeedCache:
    """Cache entries in one directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory / "feeds"

    def path(self, url: str) -> Path:
        """The file that holds the entry of ``url``."""
        digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]
        return self.directory / f"{digest}.json"

    def load(self, url: str) -> CacheEntry | None:
        """The entry for ``url``, or None when there is none or it cannot be used."""
        try:
            raw: Any = json.loads(self.path(url).read_text(encoding="utf-8"))
            if raw.get("format") != FORMAT or raw.get("url") != url:
                return None
            return CacheEntry(
                url=url,
                etag=_optional_text(raw["etag"]),
                last_modified=_optional_text(raw["last_modified"]),
                summary_chars=int(raw["summary_chars"]),
                title=str(raw["title"]),
                items=list(raw["items"]),
                warnings=[str(w) for w in raw["warnings"]],
            )
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None

    def save(self, entry: CacheEntry) -> str | None:
        """Store ``entry`` atomically; a warning for the result when that was not possible."""
        target = self.path(entry.url)
        data = json.dumps({"format": FORMAT, **asdict(entry)}, ensure_ascii=False)
        temporary: str | None = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(
                dir=target.parent, prefix=f".{target.stem}.", suffix=".tmp"
            )
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(data)
            os.replace(temporary, target)
        except OSError as exc:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            return (
                f"could not write the feed cache in {self.directory} ({exc.strerror or exc}); "
                "the next fetch will download the whole feed again"
            )
        return None

    def forget(self, url: str) -> None:
        """Remove the entry for ``url``, if any (best effort)."""
        with contextlib.suppress(OSError):
            self.path(url).unlink()


def _optional_text(value: Any) -> str | None:
    return str(value) if value else None
