"""The tool's work: fetch feeds through the network guard, with conditional GET, and merge.

Size limit: the body is read up to the guard's ``[network] max_bytes``. A feed cut there is
parsed anyway, because feeds put their newest items first: the complete items before the
cut are returned with a warning (the last one is dropped, as the cut may have gone through
it). When not one complete item came before the cut, the call fails with a ParseError that
says the feed is larger than the limit.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolplug import Citation, ToolContext, ToolFailure, ToolResult
from toolplug_rss_feed import MAX_LIMIT
from toolplug_rss_feed._cache import CacheEntry, FeedCache
from toolplug_rss_feed._parse import Item, newest_first, parse_feed

if TYPE_CHECKING:
    import httpx

    from toolplug.http import NetworkError

ACCEPT: Final = (
    "application/rss+xml, application/atom+xml, application/rdf+xml;q=0.9, "
    "application/xml;q=0.8, text/xml;q=0.8, */*;q=0.1"
)
_CONFIGURE: Final = (
    "no feeds are configured for get_configured; add them to toolplug.toml:\n"
    "[tools.rss_feed]\n"
    'feeds = ["https://blog.example.org/feed.xml"]\n'
    "or call rss_feed with action fetch and the url of a feed"
)


@dataclass
class FeedOutcome:
    """One feed's answer."""

    url: str
    title: str
    items: list[Item]
    cached: bool
    warnings: list[str] = field(default_factory=list)


def _limit(arguments: dict[str, Any]) -> int:
    wanted = arguments.get("limit", 5)
    if isinstance(wanted, bool) or not isinstance(wanted, int):
        raise ToolFailure("ValidationError", f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return max(1, min(wanted, MAX_LIMIT))


def _checked_url(arguments: dict[str, Any]) -> str:
    url = arguments.get("url")
    if url is None or (isinstance(url, str) and not url.strip()):
        raise ToolFailure(
            "ValidationError",
            "action fetch needs the parameter url: the feed's address, such as "
            "https://blog.example.org/feed.xml (use action get_configured for the "
            "configured feeds)",
        )
    if not isinstance(url, str) or not url.strip().lower().startswith(("http://", "https://")):
        raise ToolFailure(
            "ValidationError", f"url must be an http:// or https:// address, got {url!r}"
        )
    return url.strip()


def network_failure(exc: NetworkError, url: str) -> ToolFailure:
    """The result for an error of the network guard, naming the feed."""
    from toolplug.http import guard_failure

    return guard_failure(exc, f"feed {url}: {exc.reason}")


def _status_failure(status: int, url: str, headers: dict[str, str]) -> ToolFailure | None:
    if 200 <= status < 300:
        return None
    if status in (404, 410):
        return ToolFailure("NotFoundError", f"there is no feed at {url} (HTTP {status})")
    if status in (401, 403):
        return ToolFailure(
            "PermissionError", f"{url} refused access (HTTP {status}); the feed may be private"
        )
    if status == 429:
        wait = headers.get("retry-after")
        hint = f"retry after {wait} s" if wait and wait.isdigit() else "wait before retrying"
        return ToolFailure(
            "RateLimitError", f"{url} is rate limiting requests (HTTP 429); {hint}",
            retry_possible=True,
        )
    if status >= 500:
        return ToolFailure(
            "UnavailableError", f"{url} had a server error (HTTP {status}); try again later",
            retry_possible=True,
        )
    return ToolFailure("ExecutionError", f"{url} answered HTTP {status}, not a feed")


async def fetch_feed(
    url: str,
    context: ToolContext,
    cache: FeedCache,
    summary_chars: int,
    client: httpx.AsyncClient,
) -> FeedOutcome:
    """Fetch one feed, sending the validators of its cache entry; a 304 is served from it.

    Raises:
        ToolFailure: for every way the request or the document can fail.
    """
    from toolplug.http import NetworkError, fetch

    entry = cache.load(url)
    if entry is not None and entry.summary_chars != summary_chars:
        entry = None  # its summaries were cut to another length: fetch in full
    headers = {"Accept": ACCEPT}
    if entry is not None and entry.etag:
        headers["If-None-Match"] = entry.etag
    if entry is not None and entry.last_modified:
        headers["If-Modified-Since"] = entry.last_modified
    try:
        response = await fetch("GET", url, policy=context.network, headers=headers, client=client)
    except NetworkError as exc:
        raise network_failure(exc, url) from None
    if response.status == 304:
        if entry is None:
            raise ToolFailure(
                "ExecutionError",
                f"{url} answered 304 Not Modified to a request that asked for the whole feed",
            )
        return FeedOutcome(url, entry.title, entry.items, True, list(entry.warnings))
    failure = _status_failure(response.status, url, response.headers)
    if failure is not None:
        raise failure
    # Parsing a few megabytes takes a while: keep the event loop free for the other feeds.
    parsed = await asyncio.to_thread(
        functools.partial(
            parse_feed,
            response.content,
            url=response.final_url,
            content_type=response.headers.get("content-type"),
            summary_chars=summary_chars,
            cut_at=context.network.max_bytes if response.truncated else None,
        )
    )
    for item in parsed.items:
        item["feed_url"] = url
    warnings = list(parsed.warnings)
    etag = response.headers.get("etag")
    last_modified = response.headers.get("last-modified")
    if etag or last_modified:
        problem = cache.save(
            CacheEntry(
                url=url,
                etag=etag,
                last_modified=last_modified,
                summary_chars=summary_chars,
                title=parsed.title,
                items=parsed.items[:MAX_LIMIT],
                warnings=parsed.warnings,
            )
        )
        if problem is not None:
            warnings.append(problem)
    else:
        cache.forget(url)  # without validators an old entry can never be used again
    return FeedOutcome(url, parsed.title, parsed.items, False, warnings)


async def _gather(
    urls: list[str], context: ToolContext, cache: FeedCache, summary_chars: int
) -> list[FeedOutcome | ToolFailure]:
    from toolplug.http import new_client

    async def one(url: str, client: httpx.AsyncClient) -> FeedOutcome | ToolFailure:
        try:
            return await fetch_feed(url, context, cache, summary_chars, client)
        except ToolFailure as failure:
            return failure

    async with new_client() as client:
        return list(await asyncio.gather(*(one(url, client) for url in urls)))


async def run(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    """Run one call; never raises: every failure is returned as an error result."""
    try:
        return await _run(arguments, context)
    except ToolFailure as failure:
        return failure.to_result()
    except Exception as exc:  # a library's bug must not reach the host as a crash
        return ToolResult.failure(
            "ExecutionError", f"rss_feed failed: {type(exc).__name__}: {exc}"
        )


async def _run(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    action = arguments.get("action")
    limit = _limit(arguments)
    if action == "fetch":
        urls = [_checked_url(arguments)]
    elif action == "get_configured":
        urls = list(dict.fromkeys(str(u) for u in context.config.get("feeds") or []))
        if not urls:
            raise ToolFailure("ValidationError", _CONFIGURE)
    else:
        raise ToolFailure(
            "ValidationError", f"action must be get_configured or fetch, got {action!r}"
        )
    summary_chars = int(context.config.get("summary_chars", 500))
    directory = context.config.get("cache_dir")
    cache = FeedCache(Path(directory).expanduser() if directory else context.cache_dir)
    outcomes = await _gather(urls, context, cache, summary_chars)
    feeds = [o for o in outcomes if isinstance(o, FeedOutcome)]
    failures = [
        (url, o) for url, o in zip(urls, outcomes, strict=True) if isinstance(o, ToolFailure)
    ]
    if not feeds:
        if len(failures) == 1:
            raise failures[0][1]
        raise ToolFailure(
            failures[0][1].type,
            "every configured feed failed: "
            + "; ".join(f"{url}: {failure.message}" for url, failure in failures),
            retry_possible=any(failure.retry_possible for _, failure in failures),
        )
    return _result(action, urls, outcomes, limit)


def _result(
    action: str, urls: list[str], outcomes: list[FeedOutcome | ToolFailure], limit: int
) -> ToolResult:
    feeds = [o for o in outcomes if isinstance(o, FeedOutcome)]
    items = newest_first([item for feed in feeds for item in feed.items])[:limit]
    warnings = [w for feed in feeds for w in feed.warnings]
    summary: list[dict[str, Any]] = []
    for url, outcome in zip(urls, outcomes, strict=True):
        if isinstance(outcome, ToolFailure):
            warnings.append(f"the feed {url} failed: {outcome.type}: {outcome.message}")
            summary.append({"url": url, "title": "", "cached": False, "error": outcome.message})
        else:
            summary.append(
                {"url": url, "title": outcome.title, "cached": outcome.cached, "error": None}
            )
    cached = all(feed.cached for feed in feeds) and len(feeds) == len(outcomes)
    data = {"items": items, "feeds": summary, "cached": cached}
    citations = [Citation(title=item["title"], url=item["link"]) for item in items if item["link"]]
    return ToolResult.success(
        _text(action, feeds, items, cached), data, citations=citations, warnings=warnings
    )


def _text(action: str, feeds: list[FeedOutcome], items: list[Item], cached: bool) -> str:
    if action == "fetch":
        feed = feeds[0]
        source = f'"{feed.title}" ({feed.url})'
        empty = f"The feed {source} has no items."
        head = f"Newest {len(items)} of {len(feed.items)} items from {source}"
    else:
        source = f"{len(feeds)} configured feed" + ("" if len(feeds) == 1 else "s")
        empty = f"No items in the {source}."
        head = f"Newest {len(items)} items from {source}"
    if cached:
        suffix = " (unchanged since the last fetch, from the cache)"
        empty, head = empty.rstrip(".") + suffix + ".", head + suffix
    if not items:
        return empty
    lines = [head + ":", ""]
    for number, item in enumerate(items, start=1):
        lines.append(f"{number}. {item['title']}")
        about = [f"published {item['published']}" if item["published"] else "undated"]
        if item["author"]:
            about.append(f"by {item['author']}")
        if action != "fetch":
            about.append(f"in {item['feed_title']}")
        described = ", ".join(about)
        lines.append(f"   {described[0].upper()}{described[1:]}")
        if item["link"]:
            lines.append(f"   {item['link']}")
        if item["summary"]:
            lines.append(f"   {item['summary']}")
        lines.append("")
    return "\n".join(lines).rstrip()
