"""``toolplug history``: the record of calls, approvals and guard decisions, read back.

The store is the one ``[record]`` names (``toolplug.config._record.record_target``: a
SQLite file, by default ``record.sqlite3`` in the state directory, or a PostgreSQL
database), or ``--store``. Reading never writes: a record that was never kept is an empty
one, with a line on stderr saying how to turn it on.

``list`` shows the newest events first (``--limit``, 50 by default), as a table or as JSON
lines; ``export`` writes every matching event oldest first, paged by the store's ``id`` so
a record of millions of events is never held in memory at once.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from toolplug.cli._parser import EXIT_OK, EXIT_USAGE, _Exit
from toolplug.config._record import record_target
from toolplug.state._events import COLUMNS, RecordEvent, RecordFilters
from toolplug.state._record import RecordStore, SqliteStore

if TYPE_CHECKING:
    from toolplug.config._config import Config

__all__ = ["describe", "open_record", "run_history"]

LISTED: Final = 50
"""Events ``toolplug history`` lists when ``--limit`` is not given."""
PAGE: Final = 1000
"""Events an export reads from the store at a time."""
_FIELDS: Final = ("id", *COLUMNS)
"""The CSV columns: the store's number, then every stored column."""


def run_history(args: argparse.Namespace, config: Config) -> int:
    """Run ``toolplug history`` (``list`` or ``export``); the exit code."""
    if args.action == "list" and args.output:
        raise _Exit(EXIT_USAGE, "--output is for export: toolplug history export --output FILE")
    store = open_record(config, args.store)
    if isinstance(store, SqliteStore) and not store.path.exists():
        said = "" if config.record.enabled or args.store else (
            " ([record] enabled = true keeps one: docs/record.md)"
        )
        print(f"toolplug: no record at {store.where}{said}", file=sys.stderr)
    filters = RecordFilters(
        tool=args.tool, status=args.status, principal=args.principal,
        conversation=args.conversation, kind=args.kind, call_id=args.call_id,
        since=args.since, until=args.until,
    )
    if args.action == "export":
        with _opened(args.output) as out:
            _export(store, filters, args.limit, args.format, out)
        return EXIT_OK
    events = store.query(dataclasses.replace(filters, limit=args.limit or LISTED))
    if args.json:
        for event in events:
            sys.stdout.write(_line(event))
    elif events:
        sys.stdout.write(_table(events))
    else:
        print("no events recorded" + (" match" if filters != RecordFilters() else ""))
    return EXIT_OK


def open_record(config: Config, store: str | None = None) -> RecordStore:
    """The record ``store`` names (a SQLite file or a ``postgresql://`` address), else the
    one ``[record]`` names: what ``toolplug history`` and ``toolplug console`` read."""
    return _store(store or record_target(
        config.record, config.state_dir, config.path.parent if config.path else None
    ))


def _store(target: str) -> RecordStore:
    if target.startswith(("postgresql://", "postgres://")):
        from toolplug.state._record_pg import PostgresStore  # the postgres extra

        try:
            return PostgresStore(target)
        except ImportError as missing:
            raise _Exit(EXIT_USAGE, str(missing)) from None
    return SqliteStore(target)


def _pages(store: RecordStore, filters: RecordFilters, most: int | None) -> Iterator[RecordEvent]:
    """The matching events, oldest first, ``PAGE`` at a time: each page starts after the
    last ``id`` of the one before, so events recorded meanwhile come at the end."""
    given, after = 0, None
    while most is None or given < most:
        size = PAGE if most is None else min(PAGE, most - given)
        page = store.query(dataclasses.replace(
            filters, after=after, limit=size, oldest_first=True,
        ))
        yield from page
        given += len(page)
        if len(page) < size:
            return
        after = page[-1].id


def _export(
    store: RecordStore, filters: RecordFilters, most: int | None, form: str, out: TextIO
) -> None:
    if form == "jsonl":
        for event in _pages(store, filters, most):
            out.write(_line(event))
        return
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_FIELDS)
    for event in _pages(store, filters, most):
        data = event.to_dict()
        writer.writerow([_cell(data[name]) for name in _FIELDS])


@contextlib.contextmanager
def _opened(output: str | None) -> Iterator[TextIO]:
    if output is None:
        yield sys.stdout
        return
    path = Path(output)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with partial.open("w", encoding="utf-8", newline="") as out:
            yield out
        partial.replace(path)  # a file that is there is a whole export
    finally:
        partial.unlink(missing_ok=True)
    print(f"wrote {path}", file=sys.stderr)


def _line(event: RecordEvent) -> str:
    return json.dumps(event.to_dict(), ensure_ascii=False, default=str) + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=str) if value else ""
    return str(value)


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp))


def describe(event: RecordEvent) -> str:
    """The last column: a call's size and time, or a decision's rule, the sources of its
    arguments and its reason."""
    if event.kind == "call":
        said = [] if event.size is None else [f"{event.size} chars"]
        if event.duration_ms is not None:
            said.append(f"{event.duration_ms:g} ms")
        error = event.detail.get("error")
        if error:
            said.append(str(error))
        return ", ".join(said)
    said = [event.rule or ""]
    carried = [
        f"{s.get('argument', '?')} from {(s.get('source') or {}).get('tool', '?')}"
        f" ({s.get('label', '')})"
        for s in event.sources if isinstance(s, dict)
    ]
    if carried:  # where each argument's value came from, before the longer reason
        said.append(", ".join(carried))
    if event.reason:
        said.append(event.reason)
    by = event.detail.get("by")
    if by:
        said.append(f"by {by}")
    return ": ".join(s for s in said if s)


def _table(events: list[RecordEvent]) -> str:
    rows = [("TIME (UTC)", "KIND", "TOOL", "STATUS", "PRINCIPAL", "WHAT")]
    rows += [
        (_when(e.time), e.kind, e.tool, e.status or "-", e.principal or "-", _short(describe(e)))
        for e in events
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        .rstrip() + "\n"
        for row in rows
    )


def _short(text: str, most: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= most else text[: most - 3] + "..."
