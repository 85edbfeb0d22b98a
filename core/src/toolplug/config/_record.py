"""The ``[record]`` table: where the record of calls, approvals and guard decisions is kept.

Parsed here with the rest of ``toolplug.toml`` (``toolplug.config._config``); read by the
recorder (``toolplug.state._record``) and by ``toolplug history``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import Field

from toolplug.config._settings import _parsed
from toolplug.contract._settings import StrictTable

__all__ = ["RECORD_KEYS", "RecordSettings", "parse_record", "record_target"]


class RecordSettings(StrictTable):
    """The ``[record]`` table (docs/record.md)."""

    enabled: bool = Field(
        default=False, description="a boolean: true keeps a record of every call"
    )
    """Record every call, approval request and decision, and guard decision."""
    store: str = Field(
        default="",
        description='a SQLite file path (default: record.sqlite3 in state_dir) or a '
        '"postgresql://..." address',
    )
    """Where the record is kept: one SQLite file (WAL, safe for several processes on one
    machine), or a PostgreSQL database that replicas share (``toolplug[postgres]``)."""
    keep_days: float = Field(
        default=30.0, ge=0, description="a number of days, 0 to keep everything"
    )
    """Events older than this are deleted (at start, then hourly by each writer)."""
    flush_seconds: float = Field(
        default=0.2, gt=0, le=60, description="a positive number of seconds, at most 60"
    )
    """The longest a new event waits in memory before its batch is written."""
    max_argument_chars: int = Field(
        default=4000, ge=0, description="a whole number of characters, 0 for none"
    )
    """Recorded arguments (redacted) are cut to this many characters of JSON."""
    replica: str = Field(
        default="", description="a name for this process in the record (default: host name)"
    )
    """Which replica an event happened on (the ``TOOLPLUG_REPLICA`` variable, else the host
    name and process id, when empty)."""
    max_pending: int = Field(
        default=100_000, ge=100, description="a whole number of events, 100 or more"
    )
    """Events held in memory while the store cannot keep up; past this, new events are
    dropped and counted (a warning says how many)."""


RECORD_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in RecordSettings.model_fields.items()
}


def parse_record(table: Mapping[str, Any], *, file: str, prefix: str = "") -> RecordSettings:
    """The ``[record]`` table, checked.

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """
    return _parsed(RecordSettings, table, "record", file=file, prefix=prefix)


def record_target(settings: RecordSettings, state_dir: Path, base: Path | None = None) -> str:
    """The store's address: ``postgresql://...`` as given, else a SQLite file's path (a
    relative one from ``base``, the configuration file's folder)."""
    store = settings.store
    if store.startswith(("postgresql://", "postgres://")):
        return store
    if store.startswith("sqlite:///"):
        store = store.removeprefix("sqlite://")
    if not store:
        return str(state_dir / "record.sqlite3")
    return str((base or Path.cwd()) / Path(store).expanduser())
