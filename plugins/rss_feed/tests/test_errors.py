"""Documents that are not feeds, cut feeds, the size limit, HTTP errors, refused addresses."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from toolplug import Registry

MakeRegistry = Callable[..., Registry]
Feed = Callable[[str], bytes]

PAGE = b"""<!DOCTYPE html>
<html><head><title>Garden</title>
<link rel="alternate" type="application/rss+xml" title="Posts" href="/feed.xml">
<link rel="stylesheet" href="/style.css">
</head><body><h1>Welcome</h1><p>Our garden.</p></body></html>"""


def test_html_page_is_a_parse_error_naming_its_feed(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    server.expect_request("/blog").respond_with_data(PAGE, content_type="text/html")
    result = make_registry().call(
        "rss_feed", {"action": "fetch", "url": server.url_for("/blog")}
    )
    assert result.error is not None
    assert result.error.type == "ParseError"
    assert "is a web page, not an RSS or Atom feed" in result.error.message
    assert server.url_for("/feed.xml") in result.error.message


def test_html_without_feed_link_says_where_to_look(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    server.expect_request("/blog").respond_with_data(
        b"<html><body><p>Hello</p></body></html>", content_type="text/html"
    )
    result = make_registry().call(
        "rss_feed", {"action": "fetch", "url": server.url_for("/blog")}
    )
    assert result.error is not None
    assert result.error.type == "ParseError"
    assert "/feed, /rss or /atom.xml" in result.error.message


@pytest.mark.parametrize(
    "body",
    [
        b"",  # nothing at all
        b'{"items": []}',  # JSON
        b"<?xml version='1.0'?><note><to>you</to></note>",  # XML, but not a feed
    ],
)
def test_other_documents_are_parse_errors(
    make_registry: MakeRegistry, server: HTTPServer, body: bytes
) -> None:
    server.expect_request("/feed").respond_with_data(body, content_type="application/xml")
    result = make_registry().call(
        "rss_feed", {"action": "fetch", "url": server.url_for("/feed")}
    )
    assert result.error is not None
    assert result.error.type == "ParseError"
    assert result.error.retry_possible is False


def test_feed_cut_mid_document_gives_items_and_a_warning(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    whole = feed("rss20")
    cut = whole[: whole.index(b"Straw")]  # inside the second item's CDATA
    server.expect_request("/feed").respond_with_data(cut, content_type="application/rss+xml")
    result = make_registry().call(
        "rss_feed", {"action": "fetch", "url": server.url_for("/feed")}
    )
    assert result.ok, result.error
    assert [item["title"] for item in result.data["items"]] == [
        "Winter mulch",
        "Planting & pruning",
    ]
    assert len(result.warnings) == 1
    assert "is not well-formed" in result.warnings[0]
    assert "some items may be missing or incomplete" in result.warnings[0]
    assert "Warning: the feed at" in result.for_model()


def big_feed(size: int, item_bytes: int) -> bytes:
    """An RSS 2.0 feed of about ``size`` bytes whose items are about ``item_bytes`` each."""
    words = ("lorem ipsum " * (item_bytes // 12)).strip()
    parts = [b'<?xml version="1.0"?>\n<rss version="2.0"><channel><title>Big</title>']
    total, number = 0, 0
    while total < size:
        item = (
            f"<item><title>Post {number}</title><link>https://big.example/{number}</link>"
            f"<pubDate>Mon, 01 Jan 2024 00:{number // 60 % 60:02d}:{number % 60:02d} GMT"
            f"</pubDate><description>{words}</description></item>\n"
        ).encode()
        parts.append(item)
        total += len(item)
        number += 1
    parts.append(b"</channel></rss>")
    return b"".join(parts)


def test_ten_megabytes_past_the_cap_gives_the_items_before_the_cut(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    body = big_feed(10_000_000, 200_000)
    assert len(body) >= 10_000_000
    server.expect_request("/big").respond_with_data(body, content_type="application/rss+xml")
    result = make_registry().call(
        "rss_feed", {"action": "fetch", "url": server.url_for("/big"), "limit": 50}
    )
    assert result.ok, result.error
    # The guard's default cap is 5 MB: 24 items fit whole, the 25th is cut and dropped.
    titles = {item["title"] for item in result.data["items"]}
    assert titles == {f"Post {n}" for n in range(24)}
    assert result.warnings == (
        f"the feed at {server.url_for('/big')} is larger than the 5000000-byte limit "
        "([network] max_bytes); only the 24 complete item(s) before the cut were read",
    )


def test_ten_megabytes_without_a_complete_item_is_a_parse_error(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    body = big_feed(10_000_000, 10_000_000)  # one item, larger than the cap by itself
    server.expect_request("/big").respond_with_data(body, content_type="application/rss+xml")
    result = make_registry(network={"allow": ["127.0.0.1/32"], "max_bytes": 1_000_000}).call(
        "rss_feed", {"action": "fetch", "url": server.url_for("/big")}
    )
    assert result.error is not None
    assert result.error.type == "ParseError"
    assert "larger than the 1000000-byte limit ([network] max_bytes)" in result.error.message


@pytest.mark.parametrize(
    ("status", "error_type", "retry"),
    [
        (404, "NotFoundError", False),
        (410, "NotFoundError", False),  # gone for good
        (401, "PermissionError", False),
        (403, "PermissionError", False),
        (429, "RateLimitError", True),
        (500, "UnavailableError", True),
        (502, "UnavailableError", True),
        (418, "ExecutionError", False),  # anything else
    ],
)
def test_http_errors(
    make_registry: MakeRegistry, server: HTTPServer, status: int, error_type: str, retry: bool
) -> None:
    server.expect_request("/feed").respond_with_response(Response("nope", status=status))
    url = server.url_for("/feed")
    result = make_registry().call("rss_feed", {"action": "fetch", "url": url})
    assert result.error is not None
    assert (result.error.type, result.error.retry_possible) == (error_type, retry)
    assert f"HTTP {status}" in result.error.message
    assert url in result.error.message


def test_refused_address_is_a_permission_error(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    result = make_registry(network={}).call(
        "rss_feed", {"action": "fetch", "url": server.url_for("/feed")}
    )
    assert result.error is not None
    assert result.error.type == "PermissionError"
    assert "[network] allow" in result.error.message
    assert server.log == []


def test_fetch_without_url_names_the_parameter(make_registry: MakeRegistry) -> None:
    result = make_registry().call("rss_feed", {"action": "fetch"})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "parameter url" in result.error.message


@pytest.mark.parametrize("url", ["ftp://files.example/feed.xml", "blog.example/feed"])
def test_fetch_with_a_non_http_url_is_refused(make_registry: MakeRegistry, url: str) -> None:
    result = make_registry().call("rss_feed", {"action": "fetch", "url": url})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "url" in result.error.message
