"""Call policy: how calls run (time limit, retries, cache, rate limit, concurrency).

Per tool, the values come from the tool's ``[tools.<name>]`` table; the configuration
checks them when it loads (the keys are ``toolplug.contract._metadata.POLICY_KEYS``). For
all calls, they come from the ``[calls]`` table, checked here by ``calls_settings`` when
``toolplug.load()`` builds the registry.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from toolplug.calls._limits import DEFAULT_OUTPUT_CHARS
from toolplug.contract._approval import APPROVAL_POLICIES
from toolplug.contract._errors import ConfigError
from toolplug.contract._metadata import POLICY_KEYS

if TYPE_CHECKING:
    from toolplug.runtime._config import Config

__all__ = ["CALLS_KEYS", "CallPolicy", "CallsSettings", "call_policy", "calls_settings"]

CALLS_KEYS: Final = {
    "sync_workers": "a whole number of threads, 1 or more",
    "max_concurrency": "a whole number of calls, 1 or more",
    "store": '"memory", or the URL of a Redis server: "redis://HOST:PORT/DB"',
    "cache_entries": "a whole number of cached results, 1 or more",
    "telemetry_content": "a boolean: true records arguments and results in telemetry spans",
    "max_output_chars": "a whole number of characters a result may hand back, 1,000 or more",
}
"""The keys of the ``[calls]`` table, and what each expects."""

_STORE_SCHEMES: Final = ("redis://", "rediss://", "unix://")


@dataclass(frozen=True)
class CallPolicy:
    """How calls to one tool are run: time limit, retries, caching, rate and concurrency."""

    timeout_seconds: float | None = None
    """None means the tool's metadata default."""
    retries: int = 0
    retry_backoff_seconds: float = 0.5
    cache_ttl_seconds: float = 0.0
    rate_limit_calls: int = 0
    """0 means no rate limit."""
    rate_limit_per_seconds: float = 1.0
    rate_limit_wait: bool = True
    max_concurrency: int = 0
    """0 means no limit of the tool's own."""
    max_output_chars: int = 0
    """0 means the tool's metadata, else the ``[calls]`` default."""


def call_policy(config: Config, tool: str) -> CallPolicy:
    """The call policy for one tool, from its table's policy keys."""
    table = config.tools.get(tool, {})
    rate = table.get("rate_limit", {})
    timeout = table.get("timeout_seconds")
    return CallPolicy(
        timeout_seconds=float(timeout) if timeout is not None else None,
        retries=int(table.get("retries", 0)),
        retry_backoff_seconds=float(table.get("retry_backoff_seconds", 0.5)),
        cache_ttl_seconds=float(table.get("cache_ttl_seconds", 0.0)),
        rate_limit_calls=int(rate.get("calls", 1)) if rate else 0,
        rate_limit_per_seconds=float(rate.get("per_seconds", 1.0)),
        rate_limit_wait=bool(rate.get("wait", True)),
        max_concurrency=int(table.get("max_concurrency", 0)),
        max_output_chars=int(table.get("max_output_chars", 0)),
    )


@dataclass(frozen=True)
class CallsSettings:
    """The ``[calls]`` table: what all calls of one registry share."""

    sync_workers: int = min(32, (os.cpu_count() or 1) + 4)
    """Threads that run sync tools for ``acall`` (and for ``call`` when limits apply)."""
    max_concurrency: int = 0
    """At most this many calls run at once (0: no limit); the others wait their turn."""
    store: str = "memory"
    """Where the result cache and rate limits live: ``memory`` or a Redis URL."""
    cache_entries: int = 10_000
    """The in-process result cache keeps at most this many results."""
    max_output_chars: int = DEFAULT_OUTPUT_CHARS
    """The output budget of a call whose tool sets none."""
    telemetry_content: bool = False
    """Record arguments and results (secrets redacted) in telemetry spans."""


def calls_settings(config: Config) -> CallsSettings:
    """Check the ``[calls]`` table and each tool's ``max_concurrency`` and ``approval``;
    build the settings.

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """

    def fail(key: str, value: Any) -> ConfigError:
        return ConfigError(
            f"got {value!r}",
            file=config.source,
            key=key,
            expected=CALLS_KEYS[key.rpartition(".")[2]],
        )

    table: Mapping[str, Any] = config.calls
    for key in table:
        if key not in CALLS_KEYS:
            raise ConfigError(
                "unknown key",
                file=config.source,
                key=f"calls.{key}",
                expected="one of " + ", ".join(sorted(CALLS_KEYS)),
            )
    values: dict[str, Any] = {}
    for key in ("sync_workers", "max_concurrency", "cache_entries", "max_output_chars"):
        if key in table:
            value = table[key]
            least = 1000 if key == "max_output_chars" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise fail(f"calls.{key}", value)
            values[key] = value
    if "store" in table:
        store = table["store"]
        if not isinstance(store, str) or not (
            store == "memory" or store.startswith(_STORE_SCHEMES)
        ):
            raise fail("calls.store", store)
        values["store"] = store
    if "telemetry_content" in table:
        if not isinstance(table["telemetry_content"], bool):
            raise fail("calls.telemetry_content", table["telemetry_content"])
        values["telemetry_content"] = table["telemetry_content"]
    for name, tool_table in config.tools.items():
        for key, least in (("max_concurrency", 1), ("max_output_chars", 1000)):
            value = tool_table.get(key, least)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise fail(f"tools.{name}.{key}", value)
        if tool_table.get("approval", "auto") not in APPROVAL_POLICIES:
            raise ConfigError(
                f"got {tool_table['approval']!r}",
                file=config.source,
                key=f"tools.{name}.approval",
                expected=POLICY_KEYS["approval"],
            )
    return CallsSettings(**values)
