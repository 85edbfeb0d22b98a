"""What replicas of ``toolplug serve --http`` share through the call store's Redis.

A stateless (2026-07-28) client may reach any replica behind a load balancer with each
request. Under ``--max-tools`` its list (keyed by its verified principal, ``owner_of``) is kept
in Redis, so every replica lists what a search on another added; and list changes travel
over Redis pub/sub, each with the owner whose list changed, so a client listening on one
replica (``subscriptions/listen``) hears of its own search made on another. The key that
seals the ``requestState`` of approval questions (serve/_approvals.py, through the state
backend) is one for all replicas, so a client may answer on any of them. With the
in-process store there is one replica to ask, and none of this is needed. When Redis
cannot be reached, each replica answers from what it has and says so in its log; nothing
fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from toolplug.state._backend import Backend

from dataclasses import dataclass

from mcp.shared.subscriptions import ToolsListChanged

__all__ = ["OwnListChanged", "RedisBus", "SharedLists"]

log = logging.getLogger("toolplug")

_CHANNEL: Final = "toolplug:events:tools_list_changed"
_LIST_TTL_SECONDS: Final = 24 * 3600
_MAX_LISTS: Final = 1024
"""Principals whose lists this process keeps while Redis is away."""


def _client(url: str) -> Any:
    import redis.asyncio

    return redis.asyncio.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)


class SharedLists:
    """The tool names each principal's search added, kept through the state backend (with
    ``[calls] store`` on Redis, seen by every replica)."""

    def __init__(self, backend: Backend) -> None:
        self._lists = backend.part("listed:", entries=_MAX_LISTS)

    async def names(self, key: str) -> set[str]:
        """What searches on any replica added to this client's list."""
        return set(await self._lists.read_list(key, 0))

    async def add(self, key: str, names: list[str]) -> None:
        """Record what a search added, for a day after the client's last search (a name
        already listed is not added again, so a list grows only with new names)."""
        known = await self.names(key) if names else set()
        for name in dict.fromkeys(names):
            if name not in known:
                await self._lists.append(key, name, _LIST_TTL_SECONDS)


@dataclass(frozen=True)
class OwnListChanged(ToolsListChanged):
    """One owner's tool list changed (``owner_of``): only that owner's listen streams hear
    it (serve/_app.py), so no client learns when another searched."""

    owner: str


class RedisBus:
    """A ``SubscriptionBus`` (the SDK's seam) whose events reach every replica's listeners
    through Redis pub/sub; without Redis, this replica's listeners still hear its own."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._listeners: dict[object, Callable[[Any], None]] = {}
        self._relay: asyncio.Task[None] | None = None
        self._subscribed: asyncio.Event | None = None
        self._redis: Any = None

    async def publish(self, event: Any) -> None:
        """Send the event to every replica (this one hears it back from Redis)."""
        try:  # the owner whose list changed, else "" (a change for every listener)
            await self._connection().publish(_CHANNEL, getattr(event, "owner", ""))
        except Exception as exc:
            log.warning("tool-list changes reach this replica only (%s)", exc)
            self._deliver(event)

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        """Register a listen stream's listener; the relay from Redis starts with the first."""
        token = object()
        self._listeners[token] = listener
        self.start()

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    def _connection(self) -> Any:
        if self._redis is None:
            self._redis = _client(self._url)
        return self._redis

    def start(self) -> None:
        """Relay events from Redis on the running loop from now on."""
        if self._relay is None or self._relay.done():
            self._subscribed = asyncio.Event()
            self._relay = asyncio.get_running_loop().create_task(self._relay_events())

    async def started(self) -> None:
        """``start``, and wait (2 s at most) until Redis relays: the server awaits this
        before it answers a list, so a stream opened afterwards misses nothing."""
        self.start()
        assert self._subscribed is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._subscribed.wait(), 2)

    def _deliver(self, event: Any) -> None:
        for listener in list(self._listeners.values()):
            try:
                listener(event)
            except Exception:  # one listener must not starve the others
                log.exception("a subscription listener failed")

    async def _relay_events(self) -> None:
        while True:
            pubsub = self._connection().pubsub()  # one pool, whatever the reconnects
            try:
                await pubsub.subscribe(_CHANNEL)
                if self._subscribed is not None:
                    self._subscribed.set()
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._deliver(_event(message.get("data")))
            except Exception as exc:
                log.warning("tool-list changes from other replicas are not heard (%s)", exc)
                await asyncio.sleep(1)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()


def _event(data: Any) -> ToolsListChanged:
    """The event a message on the channel stands for: an owner's own change, else (an
    empty message, or "1" from a replica of an older toolplug) one for every listener."""
    owner = data.decode(errors="replace") if isinstance(data, bytes) else str(data or "")
    return OwnListChanged(owner) if ":" in owner else ToolsListChanged()
