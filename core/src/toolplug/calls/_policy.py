"""Call policy: how calls to one tool run (time limit, retries, cache, rate limit).

The values come from the tool's ``[tools.<name>]`` table; the configuration checks them
when it loads (the keys are ``toolplug.contract._metadata.POLICY_KEYS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolplug.runtime._config import Config

__all__ = ["CallPolicy", "call_policy"]


@dataclass(frozen=True)
class CallPolicy:
    """How calls to one tool are run: time limit, retries, caching and rate limit."""

    timeout_seconds: float | None = None
    """None means the tool's metadata default."""
    retries: int = 0
    retry_backoff_seconds: float = 0.5
    cache_ttl_seconds: float = 0.0
    rate_limit_calls: int = 0
    """0 means no rate limit."""
    rate_limit_per_seconds: float = 1.0
    rate_limit_wait: bool = True


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
    )
