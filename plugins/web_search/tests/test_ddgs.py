"""The ddgs backend with ``DDGS`` replaced where the backend module looks it up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from toolplug import Registry

MakeRegistry = Callable[..., Registry]

ROWS = [
    {
        "title": "Go 1.23 Release Notes",
        "href": "https://go.dev/doc/go1.23",
        "body": "Go 1.23\n is out",
    },
    {
        "title": "Range over func",
        "href": "https://go.dev/blog/range-functions",
        "body": "Iterators",
    },
]


@pytest.mark.parametrize(
    ("recency", "timelimit"),
    [("day", "d"), ("week", "w"), ("month", "m"), ("year", "y"), ("any", None)],
)
def test_arguments_passed_to_ddgs(
    make_registry: MakeRegistry, fake_ddgs: Any, recency: str, timelimit: str | None
) -> None:
    fake_ddgs.rows = ROWS
    registry = make_registry(region="de-de")
    result = registry.call(
        "web_search", {"query": "go 1.23 iterators", "recency": recency, "max_results": 7}
    )
    assert result.ok, result.error
    assert len(fake_ddgs.calls) == 1
    call = fake_ddgs.calls[0]
    assert call["query"] == "go 1.23 iterators"
    assert call["region"] == "de-de"
    assert call["timelimit"] == timelimit
    assert call["max_results"] == 7


def test_default_region_and_max_results(make_registry: MakeRegistry, fake_ddgs: Any) -> None:
    registry = make_registry()
    registry.call("web_search", {"query": "anything"})
    assert fake_ddgs.calls[0]["region"] == "wt-wt"
    assert fake_ddgs.calls[0]["max_results"] == 5
    assert fake_ddgs.calls[0]["timelimit"] is None
    # ddgs's per-request timeout stays within the network guard's limit, in whole seconds.
    assert fake_ddgs.inits == [{"timeout": 15}]


def test_result_fields_are_mapped(make_registry: MakeRegistry, fake_ddgs: Any) -> None:
    fake_ddgs.rows = [*ROWS, {"title": "no link", "body": "dropped"}]
    result = make_registry().call("web_search", {"query": "go"})
    assert result.ok, result.error
    assert result.data == {
        "query": "go",
        "backend": "ddgs",
        "recency": "any",
        "results": [
            {
                "title": "Go 1.23 Release Notes",
                "url": "https://go.dev/doc/go1.23",
                "snippet": "Go 1.23 is out",
            },
            {
                "title": "Range over func",
                "url": "https://go.dev/blog/range-functions",
                "snippet": "Iterators",
            },
        ],
    }
    assert "1. Go 1.23 Release Notes\n   Go 1.23 is out\n   Source: https://go.dev/doc/go1.23" in (
        result.output
    )
    assert [c.url for c in result.citations] == [r["href"] for r in ROWS]


def test_long_snippets_are_shortened(make_registry: MakeRegistry, fake_ddgs: Any) -> None:
    fake_ddgs.rows = [{"title": "t", "href": "https://x.example/", "body": "word " * 500}]
    result = make_registry().call("web_search", {"query": "q"})
    snippet = result.data["results"][0]["snippet"]
    assert len(snippet) <= 400
    assert snippet.endswith("…")


def test_more_rows_than_asked_are_cut(make_registry: MakeRegistry, fake_ddgs: Any) -> None:
    fake_ddgs.rows = [
        {"title": f"r{n}", "href": f"https://x.example/{n}", "body": ""} for n in range(12)
    ]
    result = make_registry().call("web_search", {"query": "q", "max_results": 3})
    assert [r["title"] for r in result.data["results"]] == ["r0", "r1", "r2"]


@pytest.mark.parametrize(
    "error",
    [
        RatelimitException("https://duckduckgo.com 202 Ratelimit"),  # raised directly
        DDGSException(RatelimitException("202 Ratelimit")),  # wrapped, as ddgs re-raises
    ],
)
def test_rate_limit_is_a_retryable_rate_limit_error(
    make_registry: MakeRegistry, fake_ddgs: Any, error: Exception
) -> None:
    fake_ddgs.error = error
    result = make_registry().call("web_search", {"query": "q"})
    assert result.error is not None
    assert result.error.type == "RateLimitError"
    assert result.error.retry_possible is True


def test_no_results_exception_is_an_empty_success(
    make_registry: MakeRegistry, fake_ddgs: Any
) -> None:
    # ddgs raises this when every engine answered with nothing.
    fake_ddgs.error = DDGSException("No results found.")
    result = make_registry().call("web_search", {"query": "qqqzzz"})
    assert result.ok
    assert result.output.startswith('No results found for "qqqzzz"')
    assert result.data["results"] == []


def test_empty_list_is_an_empty_success(make_registry: MakeRegistry, fake_ddgs: Any) -> None:
    result = make_registry().call("web_search", {"query": "qqqzzz"})
    assert result.ok
    assert result.data["results"] == []


@pytest.mark.parametrize(
    ("error", "error_type"),
    [
        (TimeoutException("timed out"), "TimeoutError"),
        (DDGSException(TimeoutException("timed out")), "TimeoutError"),
        (DDGSException("ConnectError: ConnectError('dns error')"), "NetworkError"),
    ],
)
def test_engine_failures_are_retryable(
    make_registry: MakeRegistry, fake_ddgs: Any, error: Exception, error_type: str
) -> None:
    fake_ddgs.error = error
    result = make_registry().call("web_search", {"query": "q"})
    assert result.error is not None
    assert (result.error.type, result.error.retry_possible) == (error_type, True)


def test_an_unexpected_exception_does_not_reach_the_host(
    make_registry: MakeRegistry, fake_ddgs: Any
) -> None:
    fake_ddgs.error = KeyError("surprise")
    result = make_registry().call("web_search", {"query": "q"})
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert "KeyError" in result.error.message


def test_blank_query_is_a_validation_error(make_registry: MakeRegistry, fake_ddgs: Any) -> None:
    result = make_registry().call("web_search", {"query": "   "})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert fake_ddgs.calls == []
