"""The record: events kept durably, written in batches by one thread (docs/record.md).

A call adds its event to an in-memory queue (a ``deque`` append of the call's pieces: the
event loop never waits for a disk or a database, nor encodes anything). One writer thread
per recorder takes what is queued every ``[record] flush_seconds`` (sooner once ``BATCH``
events wait), makes each event's row (``RecordStore.null`` for what is missing) and writes
them in one transaction (SQLite: ``ROWS`` rows a statement, the interpreter's lock let go
while SQLite inserts them). ``flush`` and ``aflush`` return once everything added before them is
committed: an acknowledged event is on disk (SQLite in WAL mode with ``synchronous=FULL``)
or in the database (PostgreSQL, ``toolplug.state._record_pg``).

Two stores, one protocol (``RecordStore``):

- ``SqliteStore``: one file, safe for several processes on one machine (WAL; each writer
  takes the write lock for its batch only, and waits up to ``BUSY_MS`` for another's);
- ``PostgresStore`` (``toolplug.state._record_pg``): one database the replicas share.

Retention: each writer deletes events older than ``[record] keep_days`` when it starts and
then hourly. A store that cannot be written (a locked file past the wait, a database
down) keeps the batch queued and tries again; past ``[record] max_pending`` queued events,
new ones are dropped and counted (``dropped``), with one warning.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import logging
import os
import socket
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any, Final, Protocol

from toolplug.config._record import RecordSettings
from toolplug.state._events import COLUMNS, RecordEvent, RecordFilters

__all__ = [
    "BATCH", "BUSY_MS", "ROWS", "RecordStore", "Recorder", "SqliteStore", "open_record",
    "replica_name",
]

log = logging.getLogger("toolplug.record")

BATCH: Final = 512
"""Queued events that wake the writer before its interval ends."""
BUSY_MS: Final = 10_000
"""How long a SQLite writer waits for another process's write lock."""
ROWS: Final = 64
"""Rows one SQLite ``INSERT`` statement writes (fewer where SQLite allows fewer
parameters): the writer thread takes the interpreter's lock back once a statement, not
once a row, while the loop runs."""
_PRUNE_SECONDS: Final = 3600.0
_DAY: Final = 86_400.0


class RecordStore(Protocol):
    """Where a recorder's events are kept."""

    where: str
    """The store for messages: a file path, or a database address without its password."""
    @property
    def null(self) -> Any:
        """What a row given to ``write_rows`` holds for a missing value (None, or a marker
        the store binds faster: SQLite's ``bytearray()``, stored as NULL)."""

    def open(self) -> None:
        """Connect and create the table if needed (in the writer thread)."""

    def write(self, events: Sequence[RecordEvent]) -> None:
        """Keep ``events`` in one transaction, durably, before returning."""

    def write_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """``write`` for events as rows (``RecordEvent.row(null)``: ``COLUMNS``' values)."""

    def prune(self, before: float) -> int:
        """Delete the events older than ``before``; how many went."""

    def query(self, filters: RecordFilters) -> list[RecordEvent]:
        """The events matching ``filters`` (on a connection of its own: any thread)."""

    def close(self) -> None:
        """Close the writer's connection."""


_CREATE: Final = (
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "time REAL NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL, call_id TEXT, principal TEXT, "
    "session TEXT, conversation TEXT, replica TEXT NOT NULL, status TEXT, size INTEGER, "
    "duration_ms REAL, rule TEXT, reason TEXT, labels TEXT, sources TEXT, arguments TEXT, "
    "trace_id TEXT, span_id TEXT, detail TEXT)",
    "CREATE INDEX IF NOT EXISTS events_time ON events (time)",
    "CREATE INDEX IF NOT EXISTS events_tool ON events (tool, time)",
    "CREATE INDEX IF NOT EXISTS events_principal ON events (principal, time)",
    "CREATE INDEX IF NOT EXISTS events_conversation ON events (conversation, time)",
)
_NOT_NULL: Final = frozenset({"time", "kind", "tool", "replica"})
_VALUES: Final = "({})".format(", ".join(
    "?" if column in _NOT_NULL else "NULLIF(?, x'')" for column in COLUMNS
))
"""One row's values: a parameter bound to ``SqliteStore.null`` (an empty blob, which no
column holds) stored as NULL. The sqlite3 module binds a None only after looking for an
adapter (two failed attribute lookups, half of a row's insert): a bytearray it binds at once."""
_INSERT: Final = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES {_VALUES}"
_SELECT: Final = f"SELECT id, {', '.join(COLUMNS)} FROM events"


class SqliteStore:
    """The record in one SQLite file (WAL): several processes on one machine may share it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.where = str(self.path)
        self._db: sqlite3.Connection | None = None
        self._inserts: dict[int, str] = {1: _INSERT}
        self._rows = 1

    null: Final = bytearray()  # never written to: bound as an empty blob, stored as NULL

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, isolation_level=None,
                             check_same_thread=False)
        db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        return db

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = self._connect()
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")  # a committed batch survives power loss too
        for statement in _CREATE:
            db.execute(statement)
        most = max(min(ROWS, db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(COLUMNS)), 1)
        self._rows = 1 << (most.bit_length() - 1)  # 64, 32, ... 1: at most 7 statements
        self._inserts = {
            1 << n: _INSERT + f", {_VALUES}" * ((1 << n) - 1)
            for n in range(self._rows.bit_length())
        }
        self._db = db

    def write(self, events: Sequence[RecordEvent]) -> None:
        null = self.null
        self.write_rows([e.row(null) for e in events])

    def write_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        db = self._db
        assert db is not None, "open() first"
        inserts, step, start, end = self._inserts, self._rows, 0, len(rows)
        db.execute("BEGIN IMMEDIATE")
        try:
            while start < end:  # ROWS a statement, then halves: the lock let go once each
                while start + step > end:
                    step >>= 1
                db.execute(inserts[step], list(chain.from_iterable(rows[start:start + step])))
                start += step
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def prune(self, before: float) -> int:
        db = self._db
        assert db is not None, "open() first"
        gone = 0
        while True:  # a slice at a time: another process's batch waits for one slice only
            cursor = db.execute(
                "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time < ? LIMIT 5000)",
                (before,),
            )
            gone += cursor.rowcount
            if cursor.rowcount < 5000:
                return gone

    def query(self, filters: RecordFilters) -> list[RecordEvent]:
        if not self.path.exists():
            return []
        where, values = filters.where(lambda _n: "?")
        order = "ASC" if filters.oldest_first else "DESC"
        sql = f"{_SELECT}{where} ORDER BY id {order}"
        if filters.limit is not None:
            sql += f" LIMIT {int(filters.limit)}"
        db = self._connect()
        try:
            return [RecordEvent.from_row(row) for row in db.execute(sql, values)]
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise
        finally:
            db.close()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def replica_name(settings: RecordSettings) -> str:
    """This process's name in the record: ``TOOLPLUG_REPLICA``, ``[record] replica``, else
    the host name and process id."""
    return (
        os.environ.get("TOOLPLUG_REPLICA") or settings.replica
        or f"{socket.gethostname()}:{os.getpid()}"
    )


class _Flushed:
    """A marker in the queue: everything before it is committed once it is reached."""

    __slots__ = ("done", "future", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.done = threading.Event()
        self.loop = loop
        self.future: asyncio.Future[bool] | None = loop.create_future() if loop else None

    def settle(self) -> None:
        self.done.set()
        if self.loop is not None and self.future is not None:
            future = self.future
            with contextlib.suppress(RuntimeError):  # that loop closed: nobody waits now
                self.loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(True)


_Row = tuple[Any, ...]
_Item = RecordEvent | tuple[Callable[..., _Row | None], tuple[Any, ...]] | _Flushed


class Recorder:
    """Takes events from any thread or loop and writes them to its store in batches."""

    def __init__(self, store: RecordStore, settings: RecordSettings) -> None:
        self.store = store
        self.settings = settings
        self.replica = replica_name(settings)
        """This process's name on every event it records."""
        self._queue: collections.deque[_Item] = collections.deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False
        self._max = settings.max_pending
        self._keep = settings.keep_days * _DAY
        self.dropped = 0
        """Events dropped because the queue was full (the store could not keep up)."""
        self.failed: str | None = None
        """The last error writing a batch (the batch stays queued), or None."""
        self._retry: list[_Row] = []

    # -- adding (any thread; never waits) -------------------------------------------------

    def add(self, event: RecordEvent) -> None:
        """Queue ``event`` (its ``replica`` set here)."""
        event.replica = self.replica
        self._put(event)

    def later(self, build: Callable[..., _Row | None], *arguments: Any) -> None:
        """Queue ``build(replica, null, *arguments)``, called in the writer thread
        (redacting, measuring and encoding a call's arguments and result there, off the
        caller's loop): the event's row (``RecordEvent.row(null)``, ``replica`` in it), or
        None to record nothing."""
        self._put((build, arguments))

    def _put(self, item: _Item) -> None:
        queue = self._queue
        if len(queue) >= self._max:
            self.dropped += 1
            if self.dropped == 1:
                log.warning(
                    "the record's queue is full (%d events: %s cannot keep up); new events are "
                    "dropped and counted", self._max, self.store.where,
                )
            return
        queue.append(item)
        if self._thread is None:
            self._start()
        elif len(queue) >= BATCH and not self._wake.is_set():  # woken once, not per event
            self._wake.set()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is not None or self._closed:
                return
            thread = threading.Thread(
                target=_write_loop, args=(weakref.ref(self),), name="toolplug-record",
                daemon=True,
            )
            self._thread = thread
            thread.start()
            _LIVE.add(self)

    # -- acknowledging ------------------------------------------------------------------

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every event added before now is stored; False if ``timeout`` passed
        first (the store could not be written meanwhile: ``failed`` says why). Once the
        writer has stopped (``close``), at once: whether nothing is left unwritten."""
        if self._thread is None:
            return True
        if not self._thread.is_alive():
            return not self._queue
        marker = _Flushed()
        self._queue.append(marker)
        self._wake.set()
        return marker.done.wait(timeout)

    async def aflush(self, timeout: float = 30.0) -> bool:
        """``flush`` for a caller on an event loop: awaits, holding no thread."""
        if self._thread is None:
            return True
        if not self._thread.is_alive():
            return not self._queue
        marker = _Flushed(asyncio.get_running_loop())
        self._queue.append(marker)
        self._wake.set()
        assert marker.future is not None
        try:
            async with asyncio.timeout(timeout):
                return await marker.future
        except TimeoutError:
            return False

    def close(self, timeout: float = 30.0) -> None:
        """Store what is queued, stop the writer and close the store (once: closing
        again does nothing)."""
        if self._closed:
            return
        self.flush(timeout)
        self._closed = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        _LIVE.discard(self)

    # -- reading ------------------------------------------------------------------------

    def query(self, filters: RecordFilters | None = None, **given: Any) -> list[RecordEvent]:
        """The stored events matching ``filters`` (or the same fields as keywords), newest
        first unless ``oldest_first``. Blocks: on a loop, use ``aquery``."""
        return self.store.query(filters or RecordFilters(**given))

    async def aquery(self, filters: RecordFilters | None = None, **given: Any) -> list[RecordEvent]:
        """``query`` in a worker thread, awaited."""
        return await asyncio.to_thread(self.query, filters, **given)

    # -- the writer thread --------------------------------------------------------------

    def _drain(self) -> tuple[list[_Row], list[_Flushed]]:
        rows: list[_Row] = self._retry
        markers: list[_Flushed] = []
        self._retry = []
        queue, replica, null = self._queue, self.replica, self.store.null
        while True:
            try:
                item = queue.popleft()
            except IndexError:
                return rows, markers
            if type(item) is tuple:
                build, arguments = item
                try:
                    row = build(replica, null, *arguments)
                except Exception:  # a bug of ours: that event is lost, the record goes on
                    log.exception("building a record event failed")
                    continue
                if row is not None:
                    rows.append(row)
            elif isinstance(item, _Flushed):
                markers.append(item)
            else:
                assert isinstance(item, RecordEvent)
                item.replica = replica
                rows.append(item.row(null))

    def _round(self) -> bool:
        """Write what is queued; False once closed and empty."""
        rows, markers = self._drain()
        if rows:
            try:
                self.store.write_rows(rows)
                self.failed = None
            except Exception as exc:
                if self.failed is None:
                    log.warning("the record could not be written to %s: %s; retrying",
                                self.store.where, exc)
                self.failed = f"{type(exc).__name__}: {exc}"
                self._retry = rows
                self._queue.extendleft(reversed(markers))  # not acknowledged yet
                return not self._closed
        for marker in markers:
            marker.settle()
        return not (self._closed and not self._queue)


_LIVE: Final[weakref.WeakSet[Recorder]] = weakref.WeakSet()


@atexit.register
def _at_exit() -> None:
    """A process that ends normally stores what it recorded."""
    for recorder in list(_LIVE):
        recorder.close(timeout=5.0)


def _write_loop(owner: weakref.ref[Recorder]) -> None:
    recorder = owner()
    if recorder is None:
        return
    store, wake = recorder.store, recorder._wake
    interval = recorder.settings.flush_seconds
    keep = recorder._keep
    del recorder  # held weakly between rounds: a dropped recorder's thread ends
    if not _opened(owner, store, wake, interval):
        return
    pruned = 0.0
    try:
        while True:
            wake.wait(interval)
            wake.clear()
            recorder = owner()
            if recorder is None:
                return
            now = time.time()
            if keep > 0 and now - pruned >= _PRUNE_SECONDS:
                pruned = now
                try:
                    store.prune(now - keep)
                except Exception as exc:
                    log.warning("pruning the record at %s failed: %s", store.where, exc)
            going = recorder._round()
            del recorder
            if not going:
                return
    finally:
        store.close()


def _opened(
    owner: weakref.ref[Recorder], store: RecordStore, wake: threading.Event, interval: float
) -> bool:
    """Open ``store``, trying again every ``interval`` (up to 5 s apart) while it cannot be
    (a database not up yet): the events wait queued meanwhile. False once the recorder is
    closed or dropped first."""
    pause = interval
    while True:
        try:
            store.open()
            return True
        except Exception as exc:
            recorder = owner()
            if recorder is None or recorder._closed:
                return False
            if recorder.failed is None:
                log.warning("the record cannot be opened at %s: %s; retrying", store.where, exc)
            recorder.failed = f"{type(exc).__name__}: {exc}"
            del recorder
        wake.wait(pause)
        wake.clear()
        pause = min(pause * 2, 5.0)


def open_record(settings: RecordSettings, target: str) -> Recorder:
    """The recorder of ``[record]``: ``target`` a SQLite path or ``postgresql://...``."""
    if target.startswith(("postgresql://", "postgres://")):
        from toolplug.state._record_pg import PostgresStore  # the postgres extra

        return Recorder(PostgresStore(target), settings)
    return Recorder(SqliteStore(target), settings)
