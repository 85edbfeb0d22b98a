"""The SQLite backend: one database file shared by every process on this machine that opens
it (WAL, so readers never wait for a writer; a busy writer is waited for, not failed).

What the approvals' inbox and remembered decisions keep by default when ``[calls] store``
is this process's memory: a ``toolplug approvals approve ID`` run in another process reads
and decides the same requests. Every statement runs in the backend's one worker thread, so
no caller's event loop waits on the file, and a process holds that one thread however many
calls wait. Times are wall-clock seconds (several processes read them).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

__all__ = ["SqliteBackend"]

_T = TypeVar("_T")

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB, expires REAL);
CREATE TABLE IF NOT EXISTS list (key TEXT, n INTEGER, value TEXT, PRIMARY KEY (key, n));
CREATE TABLE IF NOT EXISTS idx (name TEXT, member TEXT, score REAL, PRIMARY KEY (name, member));
CREATE TABLE IF NOT EXISTS stamp (key TEXT, at REAL);
CREATE INDEX IF NOT EXISTS stamp_key ON stamp (key, at);
"""


def _expires(ttl: float | None) -> float | None:
    return None if ttl is None else time.time() + ttl


class _File:
    """The database file, its one connection and the thread every statement runs in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None,
                                 check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=10000")
            db.executescript(_SCHEMA)
            self._db = db
        return self._db

    def _in_transaction(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        db = self._connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            found = work(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return found

    async def run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """``work(connection)`` in one transaction, in the worker thread, awaited."""
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix="toolplug-sqlite"
                )
            pool = self._pool
        future = pool.submit(self._in_transaction, work)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            if self._db is not None:
                pool.submit(self._db.close).result()
                self._db = None
            pool.shutdown(wait=True)


class SqliteBackend:
    """Values, lists, windows and indexes in one SQLite file (``toolplug.state._backend``)."""

    local = False

    def __init__(self, path: Path, *, prefix: str = "", file: _File | None = None) -> None:
        self.path = path
        self.prefix = prefix
        self._file = file or _File(path)

    def part(self, prefix: str, *, entries: int, chars: int = 0) -> SqliteBackend:
        return SqliteBackend(self.path, prefix=self.prefix + prefix, file=self._file)

    @property
    def safe_url(self) -> str:
        """Where the file is."""
        return f"sqlite:{self.path}"

    def _live(self, db: sqlite3.Connection, key: str) -> Any:
        row = db.execute("SELECT value, expires FROM kv WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        if row[1] is not None and row[1] <= time.time():
            db.execute("DELETE FROM kv WHERE key = ?", (key,))
            return None
        return row[0]

    async def get(self, key: str) -> str | None:
        found = await self._file.run(lambda db: self._live(db, self.prefix + key))
        return found.decode() if isinstance(found, bytes) else found

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        names = [self.prefix + k for k in keys]
        found = await self._file.run(lambda db: [self._live(db, n) for n in names])
        return [f.decode() if isinstance(f, bytes) else f for f in found]

    def _put(self, db: sqlite3.Connection, key: str, value: Any, ttl: float | None, *,
             absent: bool = False, present: bool = False) -> bool:
        exists = self._live(db, key) is not None
        if (absent and exists) or (present and not exists):
            return False
        db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", (key, value, _expires(ttl)))
        return True

    async def set(
        self, key: str, value: str, ttl: float | None, *,
        only_if_absent: bool = False, only_if_present: bool = False,
    ) -> bool:
        name = self.prefix + key
        return await self._file.run(
            lambda db: self._put(
                db, name, value, ttl, absent=only_if_absent, present=only_if_present
            )
        )

    async def set_many(
        self, values: Mapping[str, str], ttl: float | None, *, only_if_present: bool = False
    ) -> None:
        def work(db: sqlite3.Connection) -> None:
            for key, value in values.items():
                self._put(db, self.prefix + key, value, ttl, present=only_if_present)

        await self._file.run(work)

    async def delete(self, *keys: str) -> None:
        names = [(self.prefix + k,) for k in keys]
        await self._file.run(lambda db: db.executemany("DELETE FROM kv WHERE key = ?", names))

    async def swap(self, key: str, expected: str, value: str, ttl: float | None) -> bool:
        name = self.prefix + key

        def work(db: sqlite3.Connection) -> bool:
            found = self._live(db, name)
            if (found.decode() if isinstance(found, bytes) else found) != expected:
                return False
            db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", (name, value, _expires(ttl)))
            return True

        return await self._file.run(work)

    async def append(self, key: str, value: str, ttl: float | None) -> int:
        name = self.prefix + key

        def work(db: sqlite3.Connection) -> int:
            count = db.execute("SELECT COUNT(*) FROM list WHERE key = ?", (name,)).fetchone()[0]
            db.execute("INSERT INTO list VALUES (?, ?, ?)", (name, count, value))
            return int(count) + 1

        return await self._file.run(work)

    async def read_list(self, key: str, start: int) -> list[str]:
        name = self.prefix + key
        rows = await self._file.run(lambda db: db.execute(
            "SELECT value FROM list WHERE key = ? AND n >= ? ORDER BY n", (name, start)
        ).fetchall())
        return [r[0] for r in rows]

    async def admit(self, key: str, calls: int, per_seconds: float) -> float:
        name = self.prefix + key

        def work(db: sqlite3.Connection) -> float:
            now = time.time()
            db.execute("DELETE FROM stamp WHERE key = ? AND at <= ?", (name, now - per_seconds))
            stamps = [r[0] for r in db.execute(
                "SELECT at FROM stamp WHERE key = ? ORDER BY at", (name,)
            ).fetchall()]
            if len(stamps) < calls:
                db.execute("INSERT INTO stamp VALUES (?, ?)", (name, now))
                return 0.0
            return max(float(stamps[0]) + per_seconds - now, 1e-6)

        return await self._file.run(work)

    async def index_add(
        self, index: str, member: str, score: float, *, keep: int, drop_below: float,
        ttl: float | None,
    ) -> list[str]:
        name = self.prefix + index

        def work(db: sqlite3.Connection) -> list[str]:
            db.execute("INSERT OR REPLACE INTO idx VALUES (?, ?, ?)", (name, member, score))
            db.execute("DELETE FROM idx WHERE name = ? AND score < ?", (name, drop_below))
            over = db.execute(
                "SELECT member FROM idx WHERE name = ? ORDER BY score DESC LIMIT -1 OFFSET ?",
                (name, keep),
            ).fetchall()
            dropped = [r[0] for r in over]
            db.executemany("DELETE FROM idx WHERE name = ? AND member = ?",
                           [(name, m) for m in dropped])
            return dropped

        return await self._file.run(work)

    async def index_newest(self, index: str, *, drop_below: float) -> list[tuple[str, float]]:
        name = self.prefix + index
        rows = await self._file.run(lambda db: db.execute(
            "SELECT member, score FROM idx WHERE name = ? AND score >= ? ORDER BY score DESC",
            (name, drop_below),
        ).fetchall())
        return [(r[0], float(r[1])) for r in rows]

    async def write_text(self, key: str, text: str, ttl: float) -> bool:
        return await self.set(key, text, ttl)

    async def read_text(self, key: str, start: int, end: int) -> str | None:
        found = await self.get(key)
        return None if found is None else found[start:end]

    async def write_bytes(self, key: str, data: bytes, ttl: float) -> bool:
        name = self.prefix + key
        return await self._file.run(lambda db: self._put(db, name, data, ttl))

    async def read_bytes(self, key: str, start: int = 0, end: int | None = None) -> bytes | None:
        name = self.prefix + key
        found = await self._file.run(functools.partial(self._live, key=name))
        if found is None:
            return None
        data = found if isinstance(found, bytes) else str(found).encode()
        return data[start:end]

    def warning(self) -> str | None:
        return None

    @property
    def problem(self) -> str | None:
        return None

    async def aclose(self) -> None:
        self._file.close()
