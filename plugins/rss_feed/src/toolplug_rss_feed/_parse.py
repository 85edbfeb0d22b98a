"""Feed documents into plain items: feedparser for the formats, html.parser for the text.

feedparser reads RSS 0.9x, 1.0 and 2.0 and Atom 0.3 and 1.0. Every item comes out as plain
text (HTML stripped, white space collapsed), with its date in ISO 8601 UTC.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any, Final, TypedDict
from urllib.parse import urljoin

from toolplug import ToolFailure

_SPACE: Final = re.compile(r"\s+")
_EMAIL: Final = r"[^\s()<>]+@[^\s()<>]+"
# RSS 2.0 writes "ana@example.org (Ana Lima)"; feedparser writes Atom's as "Name (email)".
_EMAIL_THEN_NAME: Final = re.compile(rf"{_EMAIL} ?\((?P<name>[^()]+)\)")
_NAME_THEN_EMAIL: Final = re.compile(rf"(?P<name>[^()<>@]+?) ?[(<]{_EMAIL}[)>]")
# Content whose text is not prose a reader sees.
_SKIPPED: Final = frozenset({"script", "style", "template", "noscript", "head", "title"})
# Elements that separate words: "<p>one</p><p>two</p>" reads "one two", not "onetwo".
_BREAKS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt",
        "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header",
        "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "td", "th", "tr",
        "ul",
    }
)  # fmt: skip
_FEED_TYPES: Final = frozenset(
    {"application/rss+xml", "application/atom+xml", "application/rdf+xml", "application/feed+json"}
)


class Item(TypedDict):
    """One feed item as the tool returns it."""

    title: str
    link: str | None
    published: str | None
    author: str | None
    summary: str
    feed_title: str
    feed_url: str


@dataclass
class ParsedFeed:
    """A parsed feed: its title, its items newest first, and what was wrong with it."""

    title: str
    items: list[Item]
    warnings: list[str] = field(default_factory=list)


class _TextExtractor(HTMLParser):
    """Collects the visible text of an HTML fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skipping += 1
        elif tag in _BREAKS:
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BREAKS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _BREAKS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def strip_html(fragment: str) -> str:
    """The visible text of an HTML fragment on one line: tags dropped, entities decoded."""
    extractor = _TextExtractor()
    extractor.feed(fragment)
    extractor.close()
    return collapse("".join(extractor.parts))


def collapse(text: str) -> str:
    """Runs of white space as one space, none at the ends."""
    return _SPACE.sub(" ", text).strip()


def shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary and marked with an ellipsis."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,.;:") + "…"


def iso_utc(parsed: Any) -> str | None:
    """feedparser's UTC ``struct_time`` as ``2024-05-01T12:00:00Z``, or None."""
    if parsed is None:
        return None
    try:
        year, month, day, hour, minute, second = (int(part) for part in tuple(parsed)[:6])
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except (TypeError, ValueError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _text(value: Any, detail: Any) -> str:
    """A text construct as plain text; HTML only when the feed says it is HTML."""
    text = str(value or "")
    kind = str(detail.get("type", "")) if isinstance(detail, dict) else ""
    if "html" in kind:
        return strip_html(text)
    return collapse(text)


def _link(entry: Any) -> str | None:
    link = entry.get("link")
    if link:
        return str(link)
    for candidate in entry.get("links") or []:
        if candidate.get("href") and candidate.get("rel", "alternate") == "alternate":
            return str(candidate["href"])
    ident = str(entry.get("id") or "")
    return ident if ident.startswith(("http://", "https://")) else None


def _author(entry: Any) -> str | None:
    # feedparser's own split of "email (Name)" breaks on long top-level domains; redo it.
    raw = collapse(str(entry.get("author") or ""))
    for pattern in (_EMAIL_THEN_NAME, _NAME_THEN_EMAIL):
        found = pattern.fullmatch(raw)
        if found:
            return collapse(found["name"])
    if raw:
        return raw
    detail = entry.get("author_detail")
    name = detail.get("name") if isinstance(detail, dict) else None
    return collapse(str(name or "")) or None


def _summary(entry: Any, limit: int) -> str:
    if limit <= 0:
        return ""
    if entry.get("summary"):
        text = _text(entry["summary"], entry.get("summary_detail") or {"type": "text/html"})
    else:
        contents = entry.get("content") or [{}]
        text = _text(contents[0].get("value"), contents[0])
    return shorten(text, limit)


def to_item(entry: Any, feed_title: str, feed_url: str, summary_chars: int) -> Item:
    """One feedparser entry as an ``Item``."""
    published = (
        entry.get("published_parsed") or entry.get("updated_parsed") or entry.get("created_parsed")
    )
    return Item(
        title=_text(entry.get("title"), entry.get("title_detail")) or "(untitled)",
        link=_link(entry),
        published=iso_utc(published),
        author=_author(entry),
        summary=_summary(entry, summary_chars),
        feed_title=feed_title,
        feed_url=feed_url,
    )


def newest_first(items: list[Item]) -> list[Item]:
    """Dated items newest first, then undated ones in feed order (the sort is stable)."""
    # ISO 8601 UTC strings of one shape sort as the moments they name.
    return sorted(items, key=lambda item: (item["published"] is not None, item["published"] or ""),
                  reverse=True)


class _FeedLinks(HTMLParser):
    """Finds ``<link rel="alternate" type="application/rss+xml" href="...">`` in a web page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "link":
            return
        values = {name: (value or "") for name, value in attrs}
        rel = values.get("rel", "").lower().split()
        if "alternate" in rel and values.get("type", "").lower() in _FEED_TYPES:
            href = values.get("href", "").strip()
            if href:
                self.found.append(href)


def feed_links(page: bytes, base: str) -> list[str]:
    """The feeds a web page announces, as absolute URLs (at most three)."""
    finder = _FeedLinks()
    finder.feed(page[:200_000].decode("utf-8", errors="replace"))
    finder.close()
    links = [urljoin(base, href) for href in finder.found]
    return [link for link in dict.fromkeys(links) if link.startswith(("http://", "https://"))][:3]


def _not_a_feed(content: bytes, url: str, content_type: str | None, reason: str) -> ToolFailure:
    head = content[:1024].lstrip().lower()
    if not content.strip():
        return ToolFailure("ParseError", f"{url} sent an empty document, not an RSS or Atom feed")
    if (content_type or "").startswith(("text/html", "application/xhtml")) or head.startswith(
        (b"<!doctype html", b"<html")
    ):
        links = feed_links(content, url)
        hint = (
            "; the page names these feeds: " + ", ".join(links)
            if links
            else "; look for the site's feed address (often /feed, /rss or /atom.xml)"
        )
        return ToolFailure(
            "ParseError", f"{url} is a web page, not an RSS or Atom feed{hint}"
        )
    return ToolFailure("ParseError", f"{url} is not an RSS or Atom feed ({reason})")


def parse_feed(
    content: bytes,
    *,
    url: str,
    content_type: str | None,
    summary_chars: int,
    cut_at: int | None = None,
) -> ParsedFeed:
    """Parse a feed document into items, newest first.

    Args:
        content: The body as received.
        url: The feed's final URL: named in messages, the base for relative links.
        content_type: The ``Content-Type`` header, which may name the charset.
        summary_chars: The longest summary kept.
        cut_at: The size limit, when the body was cut there: the last item before the cut
            is dropped (it may be incomplete) and a warning says the feed was too large.

    Raises:
        ToolFailure: ParseError when the document is not a feed, or when it was cut before
            its first complete item.
    """
    import feedparser

    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    # A file object, never bytes or str: feedparser would treat a string as a path or URL.
    parsed = feedparser.parse(io.BytesIO(content), response_headers=headers)
    entries = list(parsed.get("entries") or [])
    reason = parsed.get("bozo_exception")
    described = f"{type(reason).__name__}: {reason}" if reason is not None else "no feed elements"
    if cut_at is not None:
        entries = entries[:-1]
        if not entries:
            raise ToolFailure(
                "ParseError",
                f"the feed at {url} is larger than the {cut_at}-byte limit ([network] "
                "max_bytes) and no complete item came before the cut; raise the limit to "
                "read it",
            )
    elif not entries and not parsed.get("version"):
        raise _not_a_feed(content, url, content_type, described)
    feed = parsed.get("feed") or {}
    title = _text(feed.get("title"), feed.get("title_detail")) or url
    warnings: list[str] = []
    if cut_at is not None:
        warnings.append(
            f"the feed at {url} is larger than the {cut_at}-byte limit ([network] max_bytes); "
            f"only the {len(entries)} complete item(s) before the cut were read"
        )
    elif parsed.get("bozo") and not _harmless(reason):
        warnings.append(
            f"the feed at {url} is not well-formed ({described}); some items may be missing "
            "or incomplete"
        )
    items = [to_item(entry, title, url, summary_chars) for entry in entries]
    return ParsedFeed(title=title, items=newest_first(items), warnings=warnings)


def _harmless(reason: object) -> bool:
    # A mislabelled charset or content type: the document itself parsed cleanly.
    import feedparser

    benign = (feedparser.CharacterEncodingOverride, feedparser.NonXMLContentType)
    return isinstance(reason, benign)
