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

``PrincipalTokens`` keeps the same entries for one principal of a served toolplug
(``serve --http`` under ``[serve.auth]``) on the state backend instead, so that every
replica sharing it (Redis) sees one principal's sign-in, and its refresh lock is a key
there. ``Tokens`` is what both offer a client, every method awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import stat
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from toolplug.state._keyring import SECRET_FIELDS, SERVICE, KeyringUnusable, Vault, vault

if TYPE_CHECKING:
    from filelock import FileLock

    from toolplug.state._backend import Backend

__all__ = ["FILE_NAME", "KeyringUnusable", "PrincipalTokens", "TokenStore", "Tokens"]

FILE_NAME: Final = "tokens.json"
_OWNER_ONLY: Final = stat.S_IRUSR | stat.S_IWUSR  # 0600
_LOCK_SECONDS: Final = 30.0
_SWAPS: Final = 20
"""Compare-and-set attempts of one update of a principal's entry before it gives up."""

Release = Callable[[], Awaitable[None]]


class Tokens(Protocol):
    """Where a client keeps what it is given, by key (a protected resource's URL)."""

    async def aentry(self, key: str) -> dict[str, Any]:
        """What is kept for ``key`` (empty: nothing)."""

    async def aupdate(self, key: str, **fields: Any) -> None:
        """Merge ``fields`` into ``key``'s entry (a field set to None is dropped)."""

    async def aforget(self, key: str) -> dict[str, Any]:
        """Drop ``key``'s entry; what it held."""

    async def hold(self, key: str) -> Release:
        """Wait for ``key``'s refresh lock and take it; what releases it."""

    @property
    def where(self) -> str:
        """Where the tokens are kept, in words (a sign-in's answer names it)."""


class TokenStore:
    """The tokens file in ``directory`` (``STATE_DIR/oauth``); with ``keep`` ``"keyring"``
    (or ``"auto"`` where one is usable) the secret fields of each entry (``SECRET_FIELDS``:
    its tokens, its client) live in the OS keyring instead (``toolplug.state._keyring``),
    the rest in the file. Which it is is settled on first use (finding a keyring may ask
    a system service), and ``KeyringUnusable`` says why a required keyring cannot be used.
    The file's lock guards the keyring's entries too: a read-modify-write of either is
    one at a time across processes, and ``lock(key)`` is the refresh lock either way."""

    def __init__(self, directory: Path, keep: str = "file") -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self.keep = keep
        self._vault: Vault | bool | None = None if keep == "file" else False  # False: unsettled

    def vault(self) -> Vault | None:
        """The keyring the secrets are kept in, None for the file alone."""
        if self._vault is False:
            self._vault = vault(self.keep)
        assert not isinstance(self._vault, bool)
        return self._vault

    def entry(self, key: str) -> dict[str, Any]:
        """What is kept for ``key`` (empty: nothing)."""
        found = self._read().get(key)
        entry = dict(found) if isinstance(found, dict) else {}
        kept = self.vault()
        if kept is not None:
            entry.update(kept.get(key))
        return entry

    def keys(self) -> list[str]:
        """Every key something is kept for."""
        return sorted(self._read())

    def update(self, key: str, **fields: Any) -> None:
        """Merge ``fields`` into ``key``'s entry (a field set to None is dropped)."""
        kept = self.vault()
        with self._writing() as entries:
            entry = dict(entries.get(key) or {})
            if kept is not None:
                secret = {k: v for k, v in fields.items() if k in SECRET_FIELDS}
                # a secret the file held before a keyring was used moves there too
                moved = {k: entry.pop(k) for k in SECRET_FIELDS & entry.keys()}
                if secret or moved:
                    held = {**moved, **kept.get(key), **secret}
                    kept.put(key, {k: v for k, v in held.items() if v is not None})
                fields = {k: v for k, v in fields.items() if k not in SECRET_FIELDS}
            entry.update(fields)
            entries[key] = {k: v for k, v in entry.items() if v is not None}

    def forget(self, key: str) -> dict[str, Any]:
        """Drop ``key``'s entry; what it held (empty: nothing was kept)."""
        kept = self.vault()
        with self._writing() as entries:
            gone = entries.pop(key, None)
            found = dict(gone) if isinstance(gone, dict) else {}
            if kept is not None:
                found.update(kept.get(key))
                kept.put(key, {})
        return found

    def lock(self, key: str) -> FileLock:
        """The lock held while ``key``'s token is refreshed (one refresh across
        processes): a file beside the tokens, named by a digest of the key."""
        self._directory()
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return _file_lock(self.directory / f"refresh-{digest}.lock")

    # -- awaited: the file is read and written on a worker thread ----------------------------

    @property
    def where(self) -> str:
        kept = self.vault()
        if kept is None:
            return str(self.path)
        return f'the keyring ({kept.name}, service "{SERVICE}"), the rest in {self.path}'

    async def aentry(self, key: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.entry, key)

    async def aupdate(self, key: str, **fields: Any) -> None:
        await asyncio.to_thread(lambda: self.update(key, **fields))

    async def aforget(self, key: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.forget, key)

    async def hold(self, key: str) -> Release:
        lock = await asyncio.to_thread(self.lock, key)
        # Waited for on a worker thread (the loop runs meanwhile); a wait given up
        # (cancelled, timed out) still ends in that thread, which may then take the lock:
        # it is let go as soon as it is taken, or it would be held until the process ends.
        taking = asyncio.ensure_future(asyncio.to_thread(lock.acquire))
        try:
            await asyncio.shield(taking)
        except asyncio.CancelledError:
            taking.add_done_callback(lambda done: _let_go(lock, done))
            raise

        async def release() -> None:
            lock.release()  # the loop's thread, not the taker's: the lock is not thread-local

        return release

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
    """A lock on ``path`` (filelock, of the mcp extra: only signing in needs it). Not
    thread-local (filelock's default is): ``hold`` takes it on a worker thread and lets
    it go on the loop's, and a thread-local lock let go from another thread stays held."""
    from filelock import FileLock

    return FileLock(path, timeout=_LOCK_SECONDS, thread_local=False)


def _let_go(lock: FileLock, taking: asyncio.Future[Any]) -> None:
    if not taking.cancelled() and taking.exception() is None:
        lock.release()


class PrincipalTokens:
    """One principal's entries on the state backend: ``PRINCIPAL:DIGEST`` under the part
    it is given, each written by compare-and-set (two replicas never lose each other's
    fields), kept until evicted; the refresh lock a key with a time to live."""

    def __init__(self, backend: Backend, principal: str) -> None:
        self.backend = backend
        self.principal = principal

    @property
    def where(self) -> str:
        return "the state backend ([calls] store), under this principal"

    def _key(self, key: str) -> str:
        return f"{self.principal}:{hashlib.sha256(key.encode()).hexdigest()[:32]}"

    async def aentry(self, key: str) -> dict[str, Any]:
        raw = await self.backend.get(self._key(key))
        return _entry_of(raw)

    async def aupdate(self, key: str, **fields: Any) -> None:
        where = self._key(key)
        for _ in range(_SWAPS):
            raw = await self.backend.get(where)
            entry = _entry_of(raw)
            entry.update(fields)
            value = json.dumps({k: v for k, v in entry.items() if v is not None}, sort_keys=True)
            if raw is None:
                written = await self.backend.set(where, value, None, only_if_absent=True)
            else:
                written = await self.backend.swap(where, raw, value, None)
            if written:
                return
        raise RuntimeError(f"the tokens of {key} changed {_SWAPS} times while being written")

    async def aforget(self, key: str) -> dict[str, Any]:
        where = self._key(key)
        gone = _entry_of(await self.backend.get(where))
        await self.backend.delete(where)
        return gone

    async def hold(self, key: str) -> Release:
        where = self._key(key) + ":refresh"
        mine = secrets.token_hex(8)
        deadline = time.monotonic() + _LOCK_SECONDS
        while not await self.backend.set(where, mine, _LOCK_SECONDS, only_if_absent=True):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the refresh of {key} stayed locked {_LOCK_SECONDS:g} s")
            await asyncio.sleep(0.05)

        async def release() -> None:
            # another holder's only once this one's time ran out: then it is not deleted
            if await self.backend.swap(where, mine, "", 0.001):
                await self.backend.delete(where)

        return release


def _entry_of(raw: str | None) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        found = json.loads(raw)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
