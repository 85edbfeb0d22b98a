"""read_file page by page: offset and max_chars on real files, and the output budget's cut."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import toolplug
from toolplug import ToolResult
from toolplug_files import ReadFileTool

Load = Callable[..., toolplug.Registry]
Call = Callable[[toolplug.Registry, str, Mapping[str, Any]], ToolResult]
Roots = dict[str, Path]

CUT = "\n[output cut by toolplug"
"""Where the core's notice starts in a reply cut to the output budget."""


def ok(result: ToolResult) -> dict[str, Any]:
    assert result.error is None, result.error
    assert isinstance(result.data, dict)
    assert ReadFileTool.metadata.returns is not None
    Draft202012Validator(ReadFileTool.metadata.returns).validate(result.data)
    return result.data


def numbered(lines: int) -> str:
    """Text whose every part is told apart from every other: a misplaced page shows."""
    return "".join(f"line {n:05d}: the quick brown fox\n" for n in range(lines))


def test_pages_follow_next_offset_to_the_end(load: Load, call: Call, roots: Roots) -> None:
    text = numbered(10)  # 320 characters
    (roots["cache"] / "log.txt").write_text(text, encoding="utf-8")
    registry = load()
    pieces: list[str] = []
    seen: list[tuple[int, int | None]] = []
    offset: int | None = 0
    while offset is not None:
        result = call(
            registry, "read_file", {"path": "log.txt", "offset": offset, "max_chars": 100}
        )
        data = ok(result)
        assert result.output == data["content"]  # the output is the text itself
        assert (data["offset"], data["total_chars"]) == (offset, 320)
        assert data["chars"] == len(data["content"]) <= 100
        pieces.append(data["content"])
        seen.append((offset, data["next_offset"]))
        offset = data["next_offset"]
    assert "".join(pieces) == text
    assert seen == [(0, 100), (100, 200), (200, 300), (300, None)]


def test_a_page_with_more_says_where_to_read_on(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "log.txt").write_text(numbered(10), encoding="utf-8")
    result = call(load(), "read_file", {"path": "log.txt", "offset": 64, "max_chars": 32})
    assert ok(result)["next_offset"] == 96
    assert result.output == "line 00002: the quick brown fox\n"
    assert result.warnings == (
        "file_cache_dir/log.txt: characters 64 to 96 of 320 were returned; call read_file "
        "again with offset 96 for the rest",
    )
    last = call(load(), "read_file", {"path": "log.txt", "offset": 288, "max_chars": 32})
    assert ok(last)["next_offset"] is None
    assert last.warnings == ()


def test_offsets_count_characters_not_bytes(load: Load, call: Call, roots: Roots) -> None:
    text = "é" * 10 + "ü" * 10 + "🦜" * 10  # 30 characters, 80 bytes
    (roots["cache"] / "u.txt").write_text(text, encoding="utf-8")
    result = call(load(), "read_file", {"path": "u.txt", "offset": 5, "max_chars": 20})
    data = ok(result)
    assert result.output == "é" * 5 + "ü" * 10 + "🦜" * 5
    assert (data["offset"], data["chars"], data["next_offset"]) == (5, 20, 25)
    assert (data["total_chars"], data["size_bytes"]) == (30, 80)


def test_a_byte_order_mark_is_not_counted(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "bom.txt").write_bytes(b"\xef\xbb\xbfabcdef")
    data = ok(call(load(), "read_file", {"path": "bom.txt", "offset": 2, "max_chars": 2}))
    assert (data["content"], data["total_chars"], data["next_offset"]) == ("cd", 6, 4)


def test_offset_at_the_end_returns_nothing_more(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "a.txt").write_text("abc", encoding="utf-8")
    result = call(load(), "read_file", {"path": "a.txt", "offset": 3})
    data = ok(result)
    assert (data["content"], data["chars"], data["next_offset"]) == ("", 0, None)
    assert (
        result.output
        == "(no more text: file_cache_dir/a.txt has 3 characters and offset 3 is the end)"
    )


def test_offset_past_the_end_is_refused(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "a.txt").write_text("abc", encoding="utf-8")
    result = call(load(), "read_file", {"path": "a.txt", "offset": 4})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert result.error.message == (
        "offset 4 is past the end of file_cache_dir/a.txt, whose text is 3 characters long; "
        "give an offset from 0 to 3"
    )


def test_offset_past_what_max_bytes_lets_it_read(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "long.txt").write_text("0123456789" * 3, encoding="utf-8")
    registry = load(read={"max_bytes": 12})
    data = ok(call(registry, "read_file", {"path": "long.txt", "offset": 10}))
    assert (data["content"], data["total_chars"], data["truncated"]) == ("01", 12, True)
    refused = call(registry, "read_file", {"path": "long.txt", "offset": 20})
    assert refused.error is not None
    assert "the first 12 bytes: read_file max_bytes" in refused.error.message


@pytest.mark.parametrize(
    "arguments",
    [
        {"offset": -1},  # before the beginning
        {"max_chars": 0},  # an empty page
        {"offset": "10"},  # a number as text
    ],
)
def test_bad_paging_arguments_are_validation_errors(
    load: Load, call: Call, roots: Roots, arguments: dict[str, Any]
) -> None:
    (roots["cache"] / "a.txt").write_text("abc", encoding="utf-8")
    result = call(load(), "read_file", {"path": "a.txt", **arguments})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert next(iter(arguments)) in result.error.message


def test_a_binary_file_has_no_pages(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "b.bin").write_bytes(b"\x00\x01\x02" * 100)
    data = ok(call(load(), "read_file", {"path": "b.bin", "offset": 10}))
    assert (data["binary"], data["content"], data["chars"]) == (True, None, 0)
    assert (data["total_chars"], data["next_offset"]) == (None, None)


def test_the_default_page_fits_the_default_budget(load: Load, call: Call, roots: Roots) -> None:
    text = numbered(3_000)  # 96,000 characters: more than one reply may hold
    (roots["cache"] / "big.txt").write_text(text, encoding="utf-8")
    registry = load(read={"max_bytes": 1_000_000})
    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = call(registry, "read_file", {"path": "big.txt", "offset": offset})
        data = ok(result)
        assert "output cut by toolplug" not in result.output  # the tool paged, not the core
        assert not any("structured data was cut" in w for w in result.warnings)
        assert data["chars"] <= 20_000
        pieces.append(result.output)
        offset = data["next_offset"]
    assert "".join(pieces) == text
    assert len(pieces) == 5


@pytest.mark.parametrize(
    ("settings", "arguments"),
    [
        # a budget configured below the page: the core cuts every reply at 1,000 characters
        ({"max_output_chars": 1000}, {}),
        # the default budget (50,000), and a page asked for that is larger than it
        ({}, {"max_chars": 100_000}),
    ],
)
def test_a_reply_cut_by_the_budget_reads_on_with_a_larger_offset(
    load: Load, call: Call, roots: Roots, settings: dict[str, Any], arguments: dict[str, Any]
) -> None:
    budget = settings.get("max_output_chars", 50_000)
    text = numbered(budget * 5 // 2 // 32)  # two and a half budgets
    (roots["cache"] / "big.txt").write_text(text, encoding="utf-8")
    registry = load(read={"max_bytes": 1_000_000, **settings})
    pieces: list[str] = []
    offset, cuts = 0, 0
    while offset < len(text):
        result = call(registry, "read_file", {"path": "big.txt", "offset": offset, **arguments})
        assert result.error is None, result.error
        received, notice, rest = result.output.partition(CUT)
        if notice:
            cuts += 1
            assert "call the tool again with a larger offset for the rest" in rest
        else:
            assert received == text[offset:]
        assert received
        assert text.startswith(received, offset)
        pieces.append(received)
        offset += len(received)  # the next offset: the last one plus what came back
    assert cuts >= 2
    assert "".join(pieces) == text
