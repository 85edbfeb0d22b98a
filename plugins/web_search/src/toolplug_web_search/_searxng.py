"""The SearXNG backend: its JSON API, fetched through toolplug's network guard.

``GET {searxng_url}/search?q=...&format=json[&time_range=day|week|month|year]``; the
instance must allow the ``json`` format (``search.formats`` in its settings.yml).
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlencode, urlsplit

from toolplug import ToolContext, ToolFailure
from toolplug_web_search._search import Hit, Query, make_hit, network_failure

TIME_RANGES: Final[dict[str, str | None]] = {
    "day": "day",
    "week": "week",
    "month": "month",
    "year": "year",
    "any": None,
}


def search_url(base: str, query: Query) -> str:
    """The request URL for ``query`` on the instance at ``base``."""
    root = base.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    if not urlsplit(root).path.endswith("/search"):
        root += "/search"
    params = {"q": query.text, "format": "json"}
    time_range = TIME_RANGES[query.recency]
    if time_range is not None:
        params["time_range"] = time_range
    return f"{root}?{urlencode(params)}"


async def search_searxng(query: Query, context: ToolContext) -> list[Hit]:
    """Search the configured SearXNG instance.

    Raises:
        ToolFailure: for every way the request or the answer can fail.
    """
    from toolplug.http import NetworkError, fetch

    base = context.config.get("searxng_url")
    if not base:
        raise ToolFailure(
            "UnavailableError",
            'backend "searxng" needs searxng_url under [tools.web_search]',
        )
    url = search_url(str(base), query)
    try:
        response = await fetch(
            "GET", url, policy=context.network, headers={"Accept": "application/json"}
        )
    except NetworkError as exc:
        raise network_failure(exc) from None
    _check_status(response.status, response.headers)
    if response.truncated:
        raise ToolFailure(
            "ParseError",
            f"the SearXNG answer is larger than the {context.network.max_bytes}-byte limit "
            "([network] max_bytes) and was cut off",
        )
    try:
        body: Any = response.json()
    except ValueError:
        kind = response.content_type or "no content type"
        raise ToolFailure(
            "ParseError",
            f"SearXNG answered with something that is not JSON ({kind}); check that "
            "searxng_url points at the instance itself",
        ) from None
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list):
        raise ToolFailure(
            "ParseError", "the SearXNG answer has no results list; is this a SearXNG instance?"
        )
    hits = (
        make_hit(row.get("title"), row.get("url"), row.get("content"))
        for row in results
        if isinstance(row, dict)
    )
    return [hit for hit in hits if hit is not None]


def _check_status(status: int, headers: dict[str, str]) -> None:
    if 200 <= status < 300:
        return
    if status == 429:
        wait = headers.get("retry-after")
        hint = f"retry after {wait} s" if wait and wait.isdigit() else "wait before retrying"
        raise ToolFailure(
            "RateLimitError",
            f"the SearXNG instance is rate limiting these requests (HTTP 429); {hint}",
            retry_possible=True,
            details={"retry_after": wait} if wait else None,
        )
    if status == 403:
        raise ToolFailure(
            "UnavailableError",
            "the SearXNG instance refused the request (HTTP 403); it probably does not offer "
            "JSON output: add json to search.formats in its settings.yml",
        )
    if status >= 500:
        raise ToolFailure(
            "UnavailableError",
            f"the SearXNG instance had a server error (HTTP {status}); try again later",
            retry_possible=True,
        )
    raise ToolFailure(
        "ExecutionError",
        f"the SearXNG instance answered HTTP {status}; check searxng_url",
    )
