"""The search itself: check the arguments, ask the backend, format the results for a model."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from toolplug import Citation, ToolContext, ToolFailure, ToolResult
from toolplug_web_search import MAX_RESULTS

if TYPE_CHECKING:
    from toolplug.http import NetworkError

_SNIPPET_CHARS: Final = 400
_SPACE: Final = re.compile(r"\s+")
RECENCIES: Final = ("day", "week", "month", "year", "any")
_RECENCY_WORDS: Final = {
    "day": " from the past day",
    "week": " from the past week",
    "month": " from the past month",
    "year": " from the past year",
    "any": "",
}


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result."""

    title: str
    url: str
    snippet: str

    def to_dict(self) -> dict[str, str]:
        """The result as ``data.results`` holds it."""
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


@dataclass(frozen=True, slots=True)
class Query:
    """A checked search request."""

    text: str
    max_results: int
    recency: str


def clean(text: object, limit: int | None = None) -> str:
    """One line of text: white space collapsed, cut at a word boundary past ``limit``."""
    line = _SPACE.sub(" ", str(text or "")).strip()
    if limit is not None and len(line) > limit:
        cut = line[: limit - 1]
        if " " in cut[limit // 2 :]:
            cut = cut.rsplit(" ", 1)[0]
        line = cut.rstrip(" ,.;:") + "…"
    return line


def make_hit(title: object, url: object, snippet: object) -> Hit | None:
    """A result from an engine's fields, or None when it has no usable URL."""
    address = clean(url)
    if not address.startswith(("http://", "https://")):
        return None
    return Hit(clean(title) or address, address, clean(snippet, _SNIPPET_CHARS))


def check_arguments(arguments: dict[str, Any]) -> Query:
    """The arguments as a ``Query``; ``max_results`` is clamped to 1..20 whatever was asked.

    Raises:
        ToolFailure: ValidationError for an empty query or an unknown recency.
    """
    text = arguments.get("query")
    if not isinstance(text, str) or not text.strip():
        raise ToolFailure("ValidationError", "query must be a non-empty string of search words")
    recency = arguments.get("recency", "any")
    if recency not in RECENCIES:
        raise ToolFailure(
            "ValidationError",
            f"recency must be one of {', '.join(RECENCIES)}; got {recency!r}",
        )
    wanted = arguments.get("max_results", 5)
    if isinstance(wanted, bool) or not isinstance(wanted, int):
        raise ToolFailure(
            "ValidationError", f"max_results must be a whole number from 1 to {MAX_RESULTS}"
        )
    return Query(clean(text), max(1, min(wanted, MAX_RESULTS)), recency)


def network_failure(exc: NetworkError) -> ToolFailure:
    """The result for an error of the network guard, naming the search engine."""
    from toolplug.http import guard_failure

    return guard_failure(exc, f"the search engine request failed: {exc}")


def format_results(query: Query, backend: str, hits: list[Hit]) -> ToolResult:
    """The success result: a numbered list for the model, the results as data, citations."""
    where = _RECENCY_WORDS[query.recency]
    data = {
        "query": query.text,
        "backend": backend,
        "recency": query.recency,
        "results": [hit.to_dict() for hit in hits],
    }
    if not hits:
        return ToolResult.success(
            f'No results found for "{query.text}"{where}. Try other or fewer keywords'
            + (", or a wider recency." if query.recency != "any" else "."),
            data,
        )
    count = f"{len(hits)} result" + ("" if len(hits) == 1 else "s")
    lines = [f'Search results for "{query.text}"{where} ({count}):', ""]
    for number, hit in enumerate(hits, start=1):
        lines.append(f"{number}. {hit.title}")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
        lines.append(f"   Source: {hit.url}")
        lines.append("")
    return ToolResult.success(
        "\n".join(lines).rstrip(),
        data,
        citations=[Citation(title=hit.title, url=hit.url) for hit in hits],
    )


def unique(hits: list[Hit], limit: int) -> list[Hit]:
    """The first ``limit`` hits, without repeated URLs."""
    seen: set[str] = set()
    kept: list[Hit] = []
    for hit in hits:
        if hit.url in seen:
            continue
        seen.add(hit.url)
        kept.append(hit)
        if len(kept) == limit:
            break
    return kept


async def search(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    """Run one search; never raises: every failure is returned as an error result."""
    backend = str(context.config.get("backend", "ddgs"))
    try:
        query = check_arguments(arguments)
        if backend == "searxng":
            from toolplug_web_search._searxng import search_searxng

            hits = await search_searxng(query, context)
        elif backend == "ddgs":
            import asyncio

            from toolplug_web_search._ddgs import search_ddgs

            # ddgs is synchronous; a worker thread keeps the event loop free meanwhile.
            hits = await asyncio.to_thread(search_ddgs, query, context)
        else:
            raise ToolFailure(
                "UnavailableError",
                f"unknown backend {backend!r} in [tools.web_search]; use ddgs or searxng",
            )
    except ToolFailure as failure:
        return failure.to_result()
    except ImportError as exc:
        return ToolResult.failure(
            "UnavailableError",
            f"backend {backend!r} cannot be loaded ({exc}); install it with: pip install ddgs",
        )
    except Exception as exc:  # a library's bug must not reach the host as a crash
        return ToolResult.failure(
            "ExecutionError", f"the {backend} backend failed: {type(exc).__name__}: {exc}"
        )
    return format_results(query, backend, unique(hits, query.max_results))
