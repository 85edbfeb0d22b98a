"""get_configured: the configured feeds merged, newest first, limited overall."""

from __future__ import annotations

from collections.abc import Callable

from pytest_httpserver import HTTPServer
from werkzeug import Response

from toolplug import Registry

MakeRegistry = Callable[..., Registry]
Feed = Callable[[str], bytes]


def test_none_configured_says_how_to_configure(make_registry: MakeRegistry) -> None:
    result = make_registry().call("rss_feed", {"action": "get_configured"})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "no feeds are configured" in result.error.message
    assert "[tools.rss_feed]" in result.error.message
    assert 'feeds = ["https://' in result.error.message


def test_two_feeds_are_merged_newest_first(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    server.expect_request("/garden.xml").respond_with_data(feed("rss20"))
    server.expect_request("/village.xml").respond_with_data(feed("rss10"))
    garden, village = server.url_for("/garden.xml"), server.url_for("/village.xml")
    registry = make_registry(feeds=[garden, village])
    result = registry.call("rss_feed", {"action": "get_configured", "limit": 4})
    assert result.ok, result.error
    assert [(i["title"], i["feed_title"], i["feed_url"]) for i in result.data["items"]] == [
        ("Bridge repaired", "Village News", village),  # 2024-08-02
        ("Summer fair", "Village News", village),  # 2024-07-20
        ("Winter mulch", "Garden Notes", garden),  # 2024-03-15
        ("Planting & pruning", "Garden Notes", garden),  # 2024-01-02
    ]
    assert result.data["feeds"] == [
        {"url": garden, "title": "Garden Notes", "cached": False, "error": None},
        {"url": village, "title": "Village News", "cached": False, "error": None},
    ]
    assert result.output.splitlines()[0] == "Newest 4 items from 2 configured feeds:"
    assert "   Published 2024-08-02T09:15:00Z, by Roads Team, in Village News" in result.output
    assert len(result.citations) == 4


def test_default_limit_is_five_overall(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    server.expect_request("/a.xml").respond_with_data(feed("rss20"))
    server.expect_request("/b.xml").respond_with_data(feed("atom10"))
    registry = make_registry(feeds=[server.url_for("/a.xml"), server.url_for("/b.xml")])
    result = registry.call("rss_feed", {"action": "get_configured"})
    assert len(result.data["items"]) == 5
    assert [i["published"] for i in result.data["items"]] == [
        "2024-06-01T03:30:00Z",
        "2024-04-10T12:00:00Z",
        "2024-03-15T08:30:00Z",
        "2024-01-02T08:00:00Z",
        None,
    ]


def test_one_failing_feed_is_a_warning(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    server.expect_request("/ok.xml").respond_with_data(feed("atom10"))
    server.expect_request("/gone.xml").respond_with_response(Response("", status=404))
    ok, gone = server.url_for("/ok.xml"), server.url_for("/gone.xml")
    result = make_registry(feeds=[gone, ok]).call("rss_feed", {"action": "get_configured"})
    assert result.ok, result.error
    assert [i["title"] for i in result.data["items"]] == ["Version 2.0", "Version 1.9 <beta>"]
    assert result.data["feeds"][0]["url"] == gone
    assert "HTTP 404" in result.data["feeds"][0]["error"]
    assert result.warnings == (
        f"the feed {gone} failed: NotFoundError: there is no feed at {gone} (HTTP 404)",
    )


def test_every_feed_failing_is_an_error(make_registry: MakeRegistry, server: HTTPServer) -> None:
    server.expect_request("/a.xml").respond_with_response(Response("", status=503))
    server.expect_request("/b.xml").respond_with_data(
        b"<html><body>hi</body></html>", content_type="text/html"
    )
    a, b = server.url_for("/a.xml"), server.url_for("/b.xml")
    result = make_registry(feeds=[a, b]).call("rss_feed", {"action": "get_configured"})
    assert result.error is not None
    assert result.error.type == "UnavailableError"
    assert result.error.retry_possible is True  # the 503 may pass
    assert result.error.message.startswith("every configured feed failed: ")
    assert a in result.error.message
    assert b in result.error.message


def test_all_cached_is_reported(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    first = server.expect_ordered_request("/a.xml")
    first.respond_with_data(feed("rss20"), headers={"ETag": '"a"'})
    second = server.expect_ordered_request("/a.xml", headers={"If-None-Match": '"a"'})
    second.respond_with_response(Response(status=304))
    registry = make_registry(feeds=[server.url_for("/a.xml")])
    registry.call("rss_feed", {"action": "get_configured"})
    again = registry.call("rss_feed", {"action": "get_configured"})
    assert again.data["cached"] is True
    assert again.output.startswith(
        "Newest 3 items from 1 configured feed (unchanged since the last fetch, from the cache):"
    )
