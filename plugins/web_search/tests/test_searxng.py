"""The SearXNG backend against a loopback stand-in that checks every query it receives."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from toolplug import Registry

MakeRegistry = Callable[..., Registry]

ROWS = [
    {"title": "First  page", "url": "https://one.example/a", "content": "Alpha\n  text"},
    {"title": "Second page", "url": "https://two.example/b", "content": "Beta text"},
    {"title": "Third page", "url": "https://three.example/c", "content": "Gamma text"},
]


@pytest.mark.parametrize(
    ("recency", "time_range"),
    [
        ("day", "day"),
        ("week", "week"),
        ("month", "month"),
        ("year", "year"),
        ("any", None),  # any sends no time_range at all
    ],
)
def test_query_string_carries_query_format_and_time_range(
    make_registry: MakeRegistry, server: HTTPServer, recency: str, time_range: str | None
) -> None:
    expected = {"q": "rust async runtime", "format": "json"}
    if time_range is not None:
        expected["time_range"] = time_range
    # The stand-in answers only a request whose query string is exactly this.
    server.expect_oneshot_request("/search", method="GET", query_string=expected).respond_with_json(
        {"results": ROWS[:1]}
    )
    registry = make_registry(backend="searxng", searxng_url=server.url_for("/"))
    result = registry.call("web_search", {"query": "  rust async runtime ", "recency": recency})
    assert result.ok, result.error
    assert result.data["results"] == [
        {"title": "First page", "url": "https://one.example/a", "snippet": "Alpha text"}
    ]
    assert result.data["backend"] == "searxng"
    assert result.data["recency"] == recency


def test_output_is_a_numbered_list_with_sources_and_citations(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    server.expect_request("/search").respond_with_json({"results": ROWS})
    registry = make_registry(backend="searxng", searxng_url=server.url_for("/"))
    result = registry.call("web_search", {"query": "pages"})
    assert result.ok, result.error
    assert result.output.splitlines()[0] == 'Search results for "pages" (3 results):'
    assert "1. First page\n   Alpha text\n   Source: https://one.example/a" in result.output
    assert "3. Third page\n   Gamma text\n   Source: https://three.example/c" in result.output
    assert [(c.title, c.url) for c in result.citations] == [
        ("First page", "https://one.example/a"),
        ("Second page", "https://two.example/b"),
        ("Third page", "https://three.example/c"),
    ]


def test_base_url_with_a_path_and_search_suffix(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    # An instance under a sub-path, configured with /search already on the end.
    server.expect_oneshot_request(
        "/searx/search", query_string={"q": "x", "format": "json"}
    ).respond_with_json({"results": []})
    registry = make_registry(backend="searxng", searxng_url=server.url_for("/searx/search"))
    assert registry.call("web_search", {"query": "x"}).ok


def test_max_results_caps_what_the_server_returns(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    many = [
        {"title": f"Page {n}", "url": f"https://site.example/{n}", "content": f"text {n}"}
        for n in range(30)
    ]
    server.expect_request("/search").respond_with_json({"results": many})
    registry = make_registry(backend="searxng", searxng_url=server.url_for("/"))
    two = registry.call("web_search", {"query": "pages", "max_results": 2})
    assert [r["title"] for r in two.data["results"]] == ["Page 0", "Page 1"]
    assert len(two.citations) == 2
    assert "3." not in two.output
    default = registry.call("web_search", {"query": "pages"})
    assert len(default.data["results"]) == 5
    most = registry.call("web_search", {"query": "pages", "max_results": 20})
    assert len(most.data["results"]) == 20


def test_more_than_twenty_is_refused_by_the_schema(make_registry: MakeRegistry) -> None:
    registry = make_registry(backend="searxng", searxng_url="http://127.0.0.1:9/")
    result = registry.call("web_search", {"query": "x", "max_results": 21})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "max_results" in result.error.message


def test_the_tool_itself_clamps_max_results(server: HTTPServer) -> None:
    # Called directly, past the schema check: the cap still holds.
    import asyncio

    from toolplug import NetworkPolicy, ToolContext
    from toolplug_web_search import WebSearchTool

    many = [{"title": f"P{n}", "url": f"https://s.example/{n}", "content": ""} for n in range(40)]
    server.expect_request("/search").respond_with_json({"results": many})
    context = ToolContext(
        tool="web_search",
        config={"backend": "searxng", "searxng_url": server.url_for("/")},
        network=NetworkPolicy(allow=("127.0.0.1/32",)),
    )
    result = asyncio.run(WebSearchTool().run({"query": "p", "max_results": 500}, context))
    assert len(result.data["results"]) == 20


def test_duplicate_urls_and_rows_without_url_are_dropped(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    rows = [
        ROWS[0],
        {"title": "No address", "content": "dropped"},
        {"title": "Not the web", "url": "javascript:alert(1)", "content": "dropped"},
        dict(ROWS[0], title="Same URL again"),
        "not even an object",
        ROWS[1],
    ]
    server.expect_request("/search").respond_with_json({"results": rows})
    registry = make_registry(backend="searxng", searxng_url=server.url_for("/"))
    result = registry.call("web_search", {"query": "q"})
    assert [r["url"] for r in result.data["results"]] == [ROWS[0]["url"], ROWS[1]["url"]]


def test_empty_result_is_a_success_saying_so(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    server.expect_request("/search").respond_with_json({"query": "zzz", "results": []})
    registry = make_registry(backend="searxng", searxng_url=server.url_for("/"))
    result = registry.call("web_search", {"query": "zzz qqq", "recency": "day"})
    assert result.ok
    assert result.output.startswith('No results found for "zzz qqq" from the past day.')
    assert result.data["results"] == []
    assert result.citations == ()


def test_429_is_a_retryable_rate_limit_error(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    server.expect_request("/search").respond_with_data(
        "Too Many Requests", status=429, headers={"Retry-After": "30"}
    )
    registry = make_registry(backend="searxng", searxng_url=server.url_for("/"))
    result = registry.call("web_search", {"query": "x"})
    assert result.error is not None
    assert result.error.type == "RateLimitError"
    assert result.error.retry_possible is True
    assert "retry after 30 s" in result.error.message


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("{not json", "application/json"),  # broken JSON
        ("<html><body>Welcome</body></html>", "text/html"),  # a web page, not the API
        (json.dumps({"results": "many"}), "application/json"),  # JSON of the wrong shape
        (json.dumps([1, 2, 3]), "application/json"),  # JSON, but not an object
    ],
)
def test_malformed_answers_are_parse_errors(
    make_registry: MakeRegistry, server: HTTPServer, body: str, content_type: str
) -> None:
    server.expect_request("/search").respond_with_data(body, content_type=content_type)
    registry = make_registry(backend="searxng", searxng_url=server.url_for("/"))
    result = registry.call("web_search", {"query": "x"})
    assert result.error is not None
    assert result.error.type == "ParseError"
    assert result.error.retry_possible is False


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (403, ("UnavailableError", False, "search.formats")),  # JSON output switched off
        (500, ("UnavailableError", True, "HTTP 500")),  # the instance is broken right now
        (503, ("UnavailableError", True, "HTTP 503")),
        (404, ("ExecutionError", False, "check searxng_url")),  # wrong base URL
    ],
)
def test_http_errors(
    make_registry: MakeRegistry, server: HTTPServer, status: int, expected: tuple[str, bool, str]
) -> None:
    error_type, retry, words = expected
    server.expect_request("/search").respond_with_response(Response("no", status=status))
    registry = make_registry(backend="searxng", searxng_url=server.url_for("/"))
    result = registry.call("web_search", {"query": "x"})
    assert result.error is not None
    assert (result.error.type, result.error.retry_possible) == (error_type, retry)
    assert words in result.error.message


def test_refused_address_is_a_permission_error(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    # Without [network] allow, the guard refuses loopback before any request is sent.
    registry = make_registry(network={}, backend="searxng", searxng_url=server.url_for("/"))
    result = registry.call("web_search", {"query": "x"})
    assert result.error is not None
    assert result.error.type == "PermissionError"
    assert result.error.retry_possible is False
    assert "[network] allow" in result.error.message
    assert server.log == []


def test_closed_port_is_a_retryable_network_error(make_registry: MakeRegistry) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens there any more.
    registry = make_registry(backend="searxng", searxng_url=f"http://127.0.0.1:{port}/")
    result = registry.call("web_search", {"query": "x"})
    assert result.error is not None
    assert result.error.type == "NetworkError"
    assert result.error.retry_possible is True


def test_slow_instance_is_a_retryable_timeout(
    make_registry: MakeRegistry, server: HTTPServer
) -> None:
    import time

    def slow(_request: object) -> Response:
        time.sleep(1.0)
        return Response(json.dumps({"results": []}), content_type="application/json")

    server.expect_request("/search").respond_with_handler(slow)
    registry = make_registry(
        network={"allow": ["127.0.0.1/32"], "timeout_seconds": 0.2},
        backend="searxng",
        searxng_url=server.url_for("/"),
    )
    result = registry.call("web_search", {"query": "x"})
    assert result.error is not None
    assert result.error.type == "TimeoutError"
    assert result.error.retry_possible is True
    # Let the server finish the abandoned request, so its log entry lands in this test and
    # not in whichever test uses the shared server next.
    deadline = time.monotonic() + 5
    while not server.log and time.monotonic() < deadline:
        time.sleep(0.05)
