"""Conditional GET: validators are remembered per URL, and a 304 is answered from the cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from toolplug import Registry

MakeRegistry = Callable[..., Registry]
Feed = Callable[[str], bytes]

ETAG = '"garden-v1"'
MODIFIED = "Fri, 15 Mar 2024 08:30:00 GMT"


def first_answer(feed: bytes, seen: list[dict[str, str]]) -> Callable[[Request], Response]:
    """The full feed with validators; records the request's headers."""

    def answer(request: Request) -> Response:
        seen.append(dict(request.headers))
        return Response(
            feed,
            content_type="application/rss+xml",
            headers={"ETag": ETAG, "Last-Modified": MODIFIED},
        )

    return answer


def test_second_fetch_sends_validators_and_304_comes_from_cache(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed, tmp_path: Path
) -> None:
    seen: list[dict[str, str]] = []
    server.expect_ordered_request("/feed").respond_with_handler(first_answer(feed("rss20"), seen))
    # The second request is answered only when it carries both validators; no body is sent.
    server.expect_ordered_request(
        "/feed", headers={"If-None-Match": ETAG, "If-Modified-Since": MODIFIED}
    ).respond_with_response(Response(status=304))
    url = server.url_for("/feed")
    registry = make_registry()
    first = registry.call("rss_feed", {"action": "fetch", "url": url})
    assert first.ok, first.error
    assert "If-None-Match" not in seen[0]
    assert "If-Modified-Since" not in seen[0]
    second = registry.call("rss_feed", {"action": "fetch", "url": url})
    assert second.ok, second.error
    assert second.data["cached"] is True
    assert second.data["feeds"][0]["cached"] is True
    assert second.data["items"] == first.data["items"]
    assert second.citations == first.citations
    assert "(unchanged since the last fetch, from the cache)" in second.output.splitlines()[0]
    assert len(server.log) == 2
    assert server.log[1][1].status_code == 304
    assert server.log[1][1].get_data() == b""


def test_cache_file_is_json_in_the_configured_cache_dir(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed, tmp_path: Path
) -> None:
    seen: list[dict[str, str]] = []
    server.expect_request("/feed").respond_with_handler(first_answer(feed("atom10"), seen))
    url = server.url_for("/feed")
    cache_dir = tmp_path / "my-cache"
    make_registry(cache_dir=str(cache_dir)).call("rss_feed", {"action": "fetch", "url": url})
    files = list((cache_dir / "feeds").iterdir())
    assert len(files) == 1  # no temporary file is left behind
    entry: dict[str, Any] = json.loads(files[0].read_text(encoding="utf-8"))
    assert entry["url"] == url
    assert entry["etag"] == ETAG
    assert entry["last_modified"] == MODIFIED
    assert [item["title"] for item in entry["items"]] == ["Version 2.0", "Version 1.9 <beta>"]


def test_default_cache_dir_is_the_tools_cache(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    seen: list[dict[str, str]] = []
    server.expect_request("/feed").respond_with_handler(first_answer(feed("rss10"), seen))
    registry = make_registry()
    registry.call("rss_feed", {"action": "fetch", "url": server.url_for("/feed")})
    folder = registry.context_for("rss_feed").cache_dir / "feeds"
    assert len(list(folder.glob("*.json"))) == 1


def test_changed_feed_replaces_the_cache(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    seen: list[dict[str, str]] = []
    server.expect_ordered_request("/feed").respond_with_handler(first_answer(feed("rss20"), seen))
    server.expect_ordered_request("/feed", headers={"If-None-Match": ETAG}).respond_with_data(
        feed("rss10"), content_type="application/rdf+xml", headers={"ETag": '"v2"'}
    )
    server.expect_ordered_request("/feed", headers={"If-None-Match": '"v2"'}).respond_with_response(
        Response(status=304)
    )
    url = server.url_for("/feed")
    registry = make_registry()
    registry.call("rss_feed", {"action": "fetch", "url": url})
    changed = registry.call("rss_feed", {"action": "fetch", "url": url})
    assert changed.data["cached"] is False
    assert changed.data["items"][0]["title"] == "Bridge repaired"
    again = registry.call("rss_feed", {"action": "fetch", "url": url})
    assert again.data["cached"] is True
    assert again.data["items"] == changed.data["items"]


def test_no_validators_means_no_conditional_request(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed
) -> None:
    seen: list[dict[str, str]] = []

    def plain(request: Request) -> Response:
        seen.append(dict(request.headers))
        return Response(feed("rss20"), content_type="application/rss+xml")

    server.expect_request("/feed").respond_with_handler(plain)
    registry = make_registry()
    for _ in range(2):
        assert registry.call("rss_feed", {"action": "fetch", "url": server.url_for("/feed")}).ok
    assert len(seen) == 2
    assert not any(h in seen[1] for h in ("If-None-Match", "If-Modified-Since"))


def test_another_summary_length_fetches_in_full(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed, tmp_path: Path
) -> None:
    seen: list[dict[str, str]] = []
    server.expect_request("/feed").respond_with_handler(first_answer(feed("rss20"), seen))
    url = server.url_for("/feed")
    make_registry(cache_dir=str(tmp_path / "c")).call("rss_feed", {"action": "fetch", "url": url})
    shorter = make_registry(cache_dir=str(tmp_path / "c"), summary_chars=10)
    result = shorter.call("rss_feed", {"action": "fetch", "url": url})
    assert result.data["cached"] is False
    assert "If-None-Match" not in seen[1]
    assert all(len(item["summary"]) <= 10 for item in result.data["items"])


def test_a_broken_cache_file_is_ignored(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed, tmp_path: Path
) -> None:
    seen: list[dict[str, str]] = []
    server.expect_request("/feed").respond_with_handler(first_answer(feed("rss20"), seen))
    url = server.url_for("/feed")
    registry = make_registry(cache_dir=str(tmp_path / "c"))
    registry.call("rss_feed", {"action": "fetch", "url": url})
    (cache_file,) = (tmp_path / "c" / "feeds").iterdir()
    cache_file.write_text('{"format": 1, "url": ', encoding="utf-8")  # cut short
    result = registry.call("rss_feed", {"action": "fetch", "url": url})
    assert result.ok, result.error
    assert result.data["cached"] is False
    assert "If-None-Match" not in seen[1]


def test_an_unwritable_cache_is_a_warning(
    make_registry: MakeRegistry, server: HTTPServer, feed: Feed, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be", encoding="utf-8")
    seen: list[dict[str, str]] = []
    server.expect_request("/feed").respond_with_handler(first_answer(feed("rss20"), seen))
    result = make_registry(cache_dir=str(blocker)).call(
        "rss_feed", {"action": "fetch", "url": server.url_for("/feed")}
    )
    assert result.ok, result.error
    assert len(result.data["items"]) == 3
    assert any("could not write the feed cache" in w for w in result.warnings)
