"""Text answers page by page: offset and max_chars against a real server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import toolplug
from toolplug_url_fetch import UrlFetch

Fetch = Callable[..., toolplug.ToolResult]

CUT = "\n[output cut by toolplug"
"""Where the core's notice starts in a reply cut to the output budget."""


def numbered(lines: int) -> str:
    """Text whose every part is told apart from every other: a misplaced page shows."""
    return "".join(f"line {n:05d}: the quick brown fox\n" for n in range(lines))


def ok(result: toolplug.ToolResult) -> dict[str, Any]:
    assert result.error is None, result.error
    assert isinstance(result.data, dict)
    assert UrlFetch.metadata.returns is not None
    Draft202012Validator(UrlFetch.metadata.returns).validate(result.data)
    return result.data


def body_of(result: toolplug.ToolResult) -> str:
    """The text in the output: what follows the status lines, up to a cut notice."""
    _, blank, rest = result.output.partition("\n\n")
    assert blank, result.output
    return rest.partition(CUT)[0]


def test_pages_follow_next_offset_to_the_end(server: HTTPServer, fetch: Fetch) -> None:
    text = numbered(10)  # 320 characters
    server.expect_request("/log").respond_with_data(text, content_type="text/plain")
    pieces: list[str] = []
    seen: list[tuple[int, int | None]] = []
    offset: int | None = 0
    while offset is not None:
        result = fetch(url=server.url_for("/log"), offset=offset, max_chars=100)
        data = ok(result)
        assert (data["offset"], data["total_chars"]) == (offset, 320)
        assert data["chars"] == len(data["text"]) <= 100
        assert body_of(result) == data["text"]
        pieces.append(data["text"])
        seen.append((offset, data["next_offset"]))
        offset = data["next_offset"]
    assert "".join(pieces) == text
    assert seen == [(0, 100), (100, 200), (200, 300), (300, None)]


def test_the_status_lines_say_which_characters_came(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/log").respond_with_data(numbered(10), content_type="text/plain")
    first = fetch(url=server.url_for("/log"), max_chars=64)
    assert (
        "\nCharacters 0 to 64 of 320 shown; call url_fetch again with offset 64 for the rest.\n"
        in (first.output)
    )
    last = fetch(url=server.url_for("/log"), offset=288)
    assert "\nCharacters 288 to 320 of 320 shown: the end of the text.\n" in last.output
    whole = fetch(url=server.url_for("/log"))
    assert "Characters" not in whole.output.partition("\n\n")[0]  # one page: nothing to say
    assert ok(whole)["next_offset"] is None


def test_offsets_count_characters_of_the_decoded_text(server: HTTPServer, fetch: Fetch) -> None:
    text = "é" * 10 + "ü" * 10 + "ß" * 10
    server.expect_request("/latin").respond_with_data(
        text.encode("iso-8859-1"), content_type="text/plain; charset=ISO-8859-1"
    )
    data = ok(fetch(url=server.url_for("/latin"), offset=5, max_chars=20))
    assert data["text"] == "é" * 5 + "ü" * 10 + "ß" * 5
    assert (data["bytes"], data["total_chars"], data["next_offset"]) == (30, 30, 25)


def test_offset_at_the_end_and_past_it(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/abc").respond_with_data("abc", content_type="text/plain")
    at_end = ok(fetch(url=server.url_for("/abc"), offset=3))
    assert (at_end["text"], at_end["chars"], at_end["next_offset"]) == ("", 0, None)
    past = fetch(url=server.url_for("/abc"), offset=4)
    assert past.error is not None
    assert past.error.type == "ValidationError"
    assert "offset 4 is past the end of the text" in past.error.message
    assert "3 characters long" in past.error.message


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        # a POST is not sent again to read on
        ({"method": "POST", "body": {"q": "x"}, "offset": 10}, "only GET"),
        ({"method": "DELETE", "offset": 10}, "only GET"),
        # a download saves everything; there is nothing to page
        ({"download_path": "a.txt", "offset": 10}, "download_path"),
    ],
)
def test_offset_where_it_cannot_apply_is_refused_before_sending(
    server: HTTPServer, fetch: Fetch, arguments: dict[str, object], says: str
) -> None:
    result = fetch(url=server.url_for("/x"), **arguments)
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert says in result.error.message
    assert len(server.log) == 0


def test_offset_zero_is_fine_with_any_method(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/echo", method="POST").respond_with_data("done")
    assert ok(fetch(url=server.url_for("/echo"), method="POST", body="x", offset=0))["text"] == (
        "done"
    )


def test_a_binary_answer_has_no_pages(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/img").respond_with_data(
        b"\x89PNG\r\n\x1a\n\x00", content_type="image/png"
    )
    data = ok(fetch(url=server.url_for("/img"), offset=5))
    assert data["binary"] is True
    assert "next_offset" not in data


def test_a_secret_split_by_a_page_boundary_stays_hidden(
    secret: str, server: HTTPServer, fetch: Fetch
) -> None:
    def careless(request: Request) -> Response:  # puts the credential it got in the page
        token = request.headers["Authorization"].removeprefix("Bearer ")
        return Response("a" * 95 + token + "b" * 100, content_type="text/plain")

    server.expect_request("/me").respond_with_handler(careless)
    pages = [
        fetch(url=server.url_for("/me"), auth_profile="local", offset=offset, max_chars=100)
        for offset in (0, 100)
    ]
    texts = [ok(page)["text"] for page in pages]
    assert "".join(texts) == "a" * 95 + "***" + "b" * 100  # offsets count the redacted text
    for page in pages:
        assert secret[:6] not in page.output
        assert secret[-6:] not in page.output


def test_the_default_page_fits_the_default_budget(server: HTTPServer, fetch: Fetch) -> None:
    text = numbered(3_000)  # 96,000 characters: more than one reply may hold
    server.expect_request("/big").respond_with_data(text, content_type="text/plain")
    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = fetch(url=server.url_for("/big"), offset=offset)
        data = ok(result)
        assert CUT not in result.output  # the tool paged, not the core
        assert not any("structured data was cut" in w for w in result.warnings)
        pieces.append(body_of(result))
        offset = data["next_offset"]
    assert "".join(pieces) == text
    assert len(pieces) == 5


def test_a_reply_cut_by_the_budget_reads_on_with_a_larger_offset(
    server: HTTPServer, fetch: Fetch
) -> None:
    text = numbered(80)  # 2,560 characters; the budget below is 1,000
    server.expect_request("/big").respond_with_data(text, content_type="text/plain")
    pieces: list[str] = []
    offset, cuts = 0, 0
    while offset < len(text):
        result = fetch(url=server.url_for("/big"), offset=offset, config={"max_output_chars": 1000})
        assert result.error is None, result.error
        if CUT in result.output:
            cuts += 1
            assert "call the tool again with a larger offset for the rest" in result.output
        received = body_of(result)
        assert received
        pieces.append(received)
        offset += len(received)  # the next offset: the last one plus the text that came back
    assert cuts >= 2
    assert "".join(pieces) == text


def test_a_renamed_url_fetch_names_itself_as_the_model_sees_it(
    server: HTTPServer, cache_dir: Path
) -> None:
    """Under a transform the model is offered ``read_page``, not ``url_fetch``: the paging
    hint must name the tool it can call."""
    server.expect_request("/log").respond_with_data(numbered(10), content_type="text/plain")
    registry = toolplug.load(
        config={
            "network": {"allow": ["127.0.0.1/32"]},
            "cache_dir": str(cache_dir),
            "transforms": {"read_page": {"from": "url_fetch"}},
        },
        env={"TOOLPLUG_PLUGINS": "toolplug-url-fetch"},
        approver=lambda request: True,
    )
    try:
        result = registry.call("read_page", {"url": server.url_for("/log"), "max_chars": 64})
    finally:
        registry.close()
    assert result.ok, result.error
    assert "call read_page again with offset 64" in result.output
