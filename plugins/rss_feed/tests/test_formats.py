"""RSS 2.0, Atom 1.0 and RSS 1.0 documents served on loopback and read into plain items."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from toolplug import Registry

MakeRegistry = Callable[..., Registry]
Feed = Callable[[str], bytes]

GARDEN = [
    {
        "title": "Winter mulch",
        "link": "https://garden.example/posts/mulch",
        "published": "2024-03-15T08:30:00Z",
        "author": "Ben Okafor",  # dc:creator
        "summary": "Straw keeps roots warm. one two",  # CDATA HTML, style dropped
        "feed_title": "Garden Notes",
    },
    {
        "title": "Planting & pruning",
        "link": "https://garden.example/posts/pruning",
        "published": "2024-01-02T08:00:00Z",  # +0200 in the feed
        "author": "Ana Lima",  # "ana@garden.example (Ana Lima)"
        "summary": "Cut the old wood first. Then water.",  # escaped HTML, &nbsp;
        "feed_title": "Garden Notes",
    },
    {
        "title": "An undated musing",
        "link": "https://garden.example/posts/musing",
        "published": None,  # undated items come last
        "author": None,
        "summary": "Plain words, no markup.",
        "feed_title": "Garden Notes",
    },
]
RELEASES = [
    {
        "title": "Version 2.0",
        "link": "https://releases.example/2.0",  # rel=alternate, not the enclosure
        "published": "2024-06-01T03:30:00Z",  # 23:30 at -04:00 the day before
        "author": "Chen Wei",  # name, not the e-mail address
        "summary": "Big changes & a new logo.",
        "feed_title": "Release Log",  # type="html" title
    },
    {
        "title": "Version 1.9 <beta>",  # type="text": angle brackets are text, kept
        "link": "https://releases.example/1.9",
        "published": "2024-04-10T12:00:00Z",  # no <published>: <updated>
        "author": "Dana Reyes",
        "summary": "Small fixes: one two",  # xhtml content
        "feed_title": "Release Log",
    },
]
VILLAGE = [
    {
        "title": "Bridge repaired",
        "link": "https://news.example/bridge",
        "published": "2024-08-02T09:15:00Z",
        "author": "Roads Team",
        "summary": "Open again.",
        "feed_title": "Village News",
    },
    {
        "title": "Summer fair",
        "link": "https://news.example/fair",
        "published": "2024-07-20T13:00:00Z",  # dc:date at +01:00
        "author": "Parish Office",
        "summary": "Stalls & music on the green.",
        "feed_title": "Village News",
    },
]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (("rss20", "application/rss+xml; charset=utf-8"), GARDEN),
        (("atom10", "application/atom+xml"), RELEASES),
        (("rss10", "application/rdf+xml"), VILLAGE),
        (("rss20", "text/xml"), GARDEN),  # a common, vaguer content type
    ],
)
def test_formats_are_parsed(
    make_registry: MakeRegistry,
    server: HTTPServer,
    feed: Feed,
    document: tuple[str, str],
    expected: list[dict[str, Any]],
) -> None:
    name, content_type = document
    server.expect_request(f"/{name}.xml").respond_with_data(feed(name), content_type=content_type)
    url = server.url_for(f"/{name}.xml")
    result = make_registry().call("rss_feed", {"action": "fetch", "url": url})
    assert result.ok, result.error
    assert result.warnings == ()
    assert result.data["items"] == [dict(item, feed_url=url) for item in expected]
    assert result.data["cached"] is False
    assert result.data["feeds"] == [
        {"url": url, "title": expected[0]["feed_title"], "cached": False, "error": None}
    ]
    assert [(c.title, c.url) for c in result.citations] == [
        (item["title"], item["link"]) for item in expected
    ]


def test_output_lists_items_for_a_model(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    server.expect_request("/feed").respond_with_data(feed("rss20"))
    url = server.url_for("/feed")
    result = make_registry().call("rss_feed", {"action": "fetch", "url": url})
    assert result.output.splitlines()[0] == f'Newest 3 of 3 items from "Garden Notes" ({url}):'
    assert (
        "1. Winter mulch\n"
        "   Published 2024-03-15T08:30:00Z, by Ben Okafor\n"
        "   https://garden.example/posts/mulch\n"
        "   Straw keeps roots warm. one two"
    ) in result.output
    assert "3. An undated musing\n   Undated\n" in result.output


def test_limit_keeps_the_newest(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    server.expect_request("/feed").respond_with_data(feed("rss20"))
    url = server.url_for("/feed")
    result = make_registry().call("rss_feed", {"action": "fetch", "url": url, "limit": 1})
    assert [item["title"] for item in result.data["items"]] == ["Winter mulch"]
    assert result.output.startswith("Newest 1 of 3 items")


@pytest.mark.parametrize(
    ("summary_chars", "expected"),
    [
        (20, "Cut the old wood…"),  # cut at a word boundary, ellipsis included in the count
        (0, ""),  # no summaries at all
        (500, "Cut the old wood first. Then water."),
    ],
)
def test_summary_chars(
    make_registry: MakeRegistry,
    server: HTTPServer,
    feed: Feed,
    summary_chars: int,
    expected: str,
) -> None:
    server.expect_request("/feed").respond_with_data(feed("rss20"))
    registry = make_registry(summary_chars=summary_chars)
    result = registry.call("rss_feed", {"action": "fetch", "url": server.url_for("/feed")})
    summaries = {item["title"]: item["summary"] for item in result.data["items"]}
    assert summaries["Planting & pruning"] == expected
    assert all(len(s) <= summary_chars for s in summaries.values())


def test_a_feed_without_items_is_a_success(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    empty = b'<?xml version="1.0"?><rss version="2.0"><channel><title>Quiet</title></channel></rss>'
    server.expect_request("/feed").respond_with_data(empty, content_type="application/rss+xml")
    url = server.url_for("/feed")
    result = make_registry().call("rss_feed", {"action": "fetch", "url": url})
    assert result.ok, result.error
    assert result.output == f'The feed "Quiet" ({url}) has no items.'
    assert result.data["items"] == []
