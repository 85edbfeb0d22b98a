"""The record in PostgreSQL: one database the replicas of ``toolplug serve --http`` share
(``[record] store = "postgresql://..."``; ``pip install "toolplug[postgres]"``).

psycopg 3's async connection, on an event loop of the recorder's writer thread (the
caller's loop never waits for the database); each batch is one transaction, committed
before ``flush`` returns. Queries open a connection of their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from toolplug.state._events import COLUMNS, RecordEvent, RecordFilters

__all__ = ["PostgresStore"]

_CREATE: Final = (
    "CREATE TABLE IF NOT EXISTS toolplug_events (id BIGSERIAL PRIMARY KEY, "
    "time DOUBLE PRECISION NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL, call_id TEXT, "
    "principal TEXT, session TEXT, conversation TEXT, replica TEXT NOT NULL, status TEXT, "
    "size BIGINT, duration_ms DOUBLE PRECISION, rule TEXT, reason TEXT, labels TEXT, "
    "sources TEXT, arguments TEXT, trace_id TEXT, span_id TEXT, detail TEXT)",
    "CREATE INDEX IF NOT EXISTS toolplug_events_time ON toolplug_events (time)",
    "CREATE INDEX IF NOT EXISTS toolplug_events_tool ON toolplug_events (tool, time)",
    "CREATE INDEX IF NOT EXISTS toolplug_events_principal ON toolplug_events (principal, time)",
    "CREATE INDEX IF NOT EXISTS toolplug_events_conversation "
    "ON toolplug_events (conversation, time)",
)
_INSERT: Final = (
    f"INSERT INTO toolplug_events ({', '.join(COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(COLUMNS))})"
)
_SELECT: Final = f"SELECT id, {', '.join(COLUMNS)} FROM toolplug_events"
_CREATED: Final = 4242_0047
"""The advisory lock that makes two replicas creating the table at once take turns."""


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(
            '[record] store = "postgresql://..." needs psycopg: pip install "toolplug[postgres]"'
        ) from None
    return psycopg


class PostgresStore:
    """The record in one PostgreSQL database (table ``toolplug_events``)."""

    def __init__(self, address: str) -> None:
        _psycopg()  # the missing extra is said at once, with the line that installs it
        self.address = address
        parts = urlsplit(address)
        shown = parts.hostname or ""
        if parts.port:
            shown += f":{parts.port}"
        if parts.username:
            shown = f"{parts.username}@{shown}"
        self.where = urlunsplit((parts.scheme, shown, parts.path, "", ""))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._db: Any = None

    def open(self) -> None:
        if self._loop is None:  # kept across a failed open: the writer tries again
            self._loop = asyncio.new_event_loop()
        self._db = self._loop.run_until_complete(self._open())

    async def _open(self) -> Any:
        psycopg = _psycopg()
        db = await psycopg.AsyncConnection.connect(self.address)
        async with db.transaction():
            await db.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATED,))
            for statement in _CREATE:
                await db.execute(statement)
        return db

    def _run(self, coroutine: Any) -> Any:
        assert self._loop is not None, "open() first"
        return self._loop.run_until_complete(coroutine)

    null: Final = None

    def write(self, events: Sequence[RecordEvent]) -> None:
        self._run(self._write([e.row() for e in events]))

    def write_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self._run(self._write(list(rows)))

    async def _write(self, rows: list[tuple[Any, ...]]) -> None:
        db = await self._connected()
        async with db.transaction(), db.cursor() as cursor:
            await cursor.executemany(_INSERT, rows)

    async def _connected(self) -> Any:
        if self._db is None or self._db.closed or self._db.broken:
            self._db = await _psycopg().AsyncConnection.connect(self.address)
        return self._db

    def prune(self, before: float) -> int:
        return int(self._run(self._prune(before)))

    async def _prune(self, before: float) -> int:
        db = await self._connected()
        async with db.transaction():
            cursor = await db.execute("DELETE FROM toolplug_events WHERE time < %s", (before,))
            return int(cursor.rowcount)

    def query(self, filters: RecordFilters) -> list[RecordEvent]:
        return asyncio.run(self.aquery(filters))

    async def aquery(self, filters: RecordFilters) -> list[RecordEvent]:
        """``query`` awaited on the caller's loop (a connection of its own)."""
        psycopg = _psycopg()
        where, values = filters.where(lambda _n: "%s")
        order = "ASC" if filters.oldest_first else "DESC"
        sql = f"{_SELECT}{where} ORDER BY id {order}"
        if filters.limit is not None:
            sql += f" LIMIT {int(filters.limit)}"
        async with await psycopg.AsyncConnection.connect(self.address) as db:
            try:
                cursor = await db.execute(sql, values)
            except psycopg.errors.UndefinedTable:
                return []
            return [RecordEvent.from_row(tuple(row)) for row in await cursor.fetchall()]

    def close(self) -> None:
        if self._loop is None:
            return
        if self._db is not None:
            self._loop.run_until_complete(self._db.close())
            self._db = None
        self._loop.close()
        self._loop = None
