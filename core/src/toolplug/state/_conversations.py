"""Conversations kept per owner and session, shared through the state backend.

A server keeps one conversation (``toolplug.trust._guard``) per owner (the verified
principal, the session, the credential, or the stdio client) and session: one principal's
two sessions are two conversations; a stateless client's requests are its one
conversation. In-process conversations past ``most`` go, the oldest first.

With a shared backend (``[calls] store`` on Redis), each conversation also keeps a log
there: every source a call records is appended to a list, and before each call a replica
reads what the others appended since it last looked. So replicas behind a
load balancer guard one conversation together: what a fetch on one brought in is seen by a
send on another. Exact values (what a program received) stay with the program. While
Redis cannot be reached, the backend falls back to this process's memory, as for every
feature.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Final

from toolplug.trust._conversation import Conversation, Record

if TYPE_CHECKING:
    from toolplug.state._backend import Backend

__all__ = ["Conversations"]

_TTL_SECONDS: Final = 24 * 3600.0
"""How long a conversation's log is kept after its last call."""


class Conversations:
    """The conversations of one server's clients, each made on its first call."""

    def __init__(
        self, make: Callable[[], Conversation], backend: Backend | None, *, most: int
    ) -> None:
        self._make = make
        self._backend = (
            backend.part("conversation:", entries=most * 64) if backend is not None else None
        )
        self._most = most
        self._by_client: dict[str, _Kept] = {}

    @contextlib.asynccontextmanager
    async def of(self, owner: str | None, session: str) -> AsyncIterator[Conversation | None]:
        """The owner's conversation of this session, current for the calls made inside
        (none for a client with no owner): brought up to date first, and what the calls
        recorded shared afterwards."""
        if owner is None:
            yield None
            return
        # a stateless request's key is the request itself: the owner's one conversation
        key = owner if session.startswith("request:") else f"{owner}\n{session}"
        kept = self._by_client.get(key)
        if kept is None:
            if len(self._by_client) >= self._most:
                self._by_client.pop(next(iter(self._by_client)))  # the oldest
            kept = self._by_client[key] = _Kept(self._make(), self._backend, key)
        await kept.pull()
        try:
            with kept.conversation:
                yield kept.conversation
        finally:
            await kept.push()


class _Kept:
    """One conversation here, and its log in the backend."""

    def __init__(self, conversation: Conversation, backend: Backend | None, key: str) -> None:
        self.conversation = conversation
        self._backend = backend
        self._key = hashlib.sha256(key.encode()).hexdigest()
        conversation.id = self._key[:16]  # one name on every replica
        self._seen = 0
        """The log's first entries, this many, are in the conversation."""
        self._pushed = 0
        """The conversation's sources up to here are in the log (or came from it)."""
        self._mine: set[int] = set()
        """Log entries this process wrote (not to be read back)."""
        self._theirs: set[int] = set()
        """``id`` of the sources that came from the log (not to be written back)."""

    async def pull(self) -> None:
        """Add what other processes logged since the last look."""
        backend = self._backend
        if backend is None:
            return
        found = await backend.read_list(self._key, self._seen)
        for number, raw in enumerate(found, start=self._seen + 1):
            if number not in self._mine:
                source = Record.from_json(raw)
                if source is not None:
                    self.conversation.absorb(source)
                    self._theirs.add(id(self.conversation.root.sources[-1]))
        self._seen += len(found)
        self._mine = {n for n in self._mine if n > self._seen}

    async def push(self) -> None:
        """Log the sources recorded here since the last push."""
        backend = self._backend
        if backend is None:
            return
        sources = self.conversation.root.sources
        new, self._pushed = sources[self._pushed :], len(sources)
        for source in new:
            if id(source) in self._theirs:
                self._theirs.discard(id(source))
                continue
            self._mine.add(await backend.append(self._key, source.to_json(), _TTL_SECONDS))
