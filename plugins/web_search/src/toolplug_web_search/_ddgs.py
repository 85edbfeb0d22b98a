"""The ddgs backend: DuckDuckGo and the other engines the ddgs package queries, no key needed.

ddgs makes its own HTTP requests (through its own client), so the network guard's address
checks do not apply to it; it only ever talks to the public search engines it knows. The
``network`` capability (``offline = true``, a host's denial) still turns it off.
"""

from __future__ import annotations

import math
from typing import Any, Final

from ddgs import DDGS
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from toolplug import ToolContext, ToolFailure
from toolplug_web_search._search import Hit, Query, make_hit

TIMELIMITS: Final[dict[str, str | None]] = {
    "day": "d",
    "week": "w",
    "month": "m",
    "year": "y",
    "any": None,
}
_NO_RESULTS: Final = "No results found."
_RATE_LIMIT_WORDS: Final = ("ratelimit", "rate limit", "too many requests", "429")
_MAX_ENGINE_TIMEOUT: Final = 20


def search_ddgs(query: Query, context: ToolContext) -> list[Hit]:
    """Search with ddgs (blocking: call it in a worker thread).

    Raises:
        ToolFailure: RateLimitError, TimeoutError or NetworkError, each retryable.
    """
    region = str(context.config.get("region") or "wt-wt")
    # ddgs takes whole seconds per engine request; stay inside the guard's time limit.
    timeout = max(1, min(_MAX_ENGINE_TIMEOUT, math.ceil(context.network.timeout_seconds)))
    try:
        rows: list[dict[str, Any]] = DDGS(timeout=timeout).text(
            query.text,
            region=region,
            safesearch="moderate",
            timelimit=TIMELIMITS[query.recency],
            max_results=query.max_results,
        )
    except DDGSException as exc:
        if str(exc) == _NO_RESULTS and not isinstance(exc, RatelimitException | TimeoutException):
            return []
        raise _failure(exc) from None
    hits = (make_hit(row.get("title"), row.get("href"), row.get("body")) for row in rows or [])
    return [hit for hit in hits if hit is not None]


def _failure(exc: DDGSException) -> ToolFailure:
    # ddgs re-raises an engine's error wrapped in a plain DDGSException: look inside too.
    inner = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else exc
    text = str(exc)
    if isinstance(exc, RatelimitException) or isinstance(inner, RatelimitException) or any(
        word in text.lower() for word in _RATE_LIMIT_WORDS
    ):
        return ToolFailure(
            "RateLimitError",
            "the search engines are rate limiting these requests; wait a minute before "
            "searching again",
            retry_possible=True,
        )
    if isinstance(exc, TimeoutException) or isinstance(inner, TimeoutException):
        return ToolFailure(
            "TimeoutError", f"the search engines did not answer in time ({text})",
            retry_possible=True,
        )
    return ToolFailure(
        "NetworkError", f"the search engines could not be reached or failed: {text}",
        retry_possible=True,
    )
