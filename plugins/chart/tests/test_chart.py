"""chart: discovery, the contract kit, and real PNGs drawn by matplotlib."""

from __future__ import annotations

import struct
import threading
import zlib
from typing import Any

import pytest

import toolplug
from toolplug import Image
from toolplug.testing import check_plugin
from toolplug_chart import HEIGHT_PX, WIDTH_PX, ChartTool

_TABLE: dict[str, Any] = {
    "labels": ["Q1", "Q2", "Q3"],
    "series": [{"name": "2024", "values": [3, 5, 4]}, {"name": "2025", "values": [4, 6, 7.5]}],
}


@pytest.fixture
def registry() -> toolplug.Registry:
    return toolplug.load({})


def _decoded(png: bytes) -> tuple[int, int, bytes]:
    """Width, height and the inflated pixel rows of a PNG, read chunk by chunk (every CRC
    checked): bytes that are not a whole PNG fail here."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    at, chunks = 8, []
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", png[at + 8 + length : at + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, kind
        chunks.append((kind, body))
        at += 12 + length
    assert chunks[0][0] == b"IHDR"
    assert chunks[-1][0] == b"IEND"
    width, height = struct.unpack(">II", chunks[0][1][:8])
    return width, height, zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))


def test_entry_point_is_discovered() -> None:
    tool = toolplug.load({}).tools["chart"]
    assert tool.cls is ChartTool
    assert tool.distribution == "toolplug-chart"
    assert tool.cls.metadata.parts == ("image",)


def test_contract() -> None:
    check_plugin("toolplug-chart")


@pytest.mark.parametrize("kind", ["bar", "line"])
def test_a_chart_is_a_png_that_decodes(registry: toolplug.Registry, kind: str) -> None:
    result = registry.call("chart", {**_TABLE, "kind": kind, "title": "Sales"})
    assert result.ok, result.error
    [part] = result.parts
    assert isinstance(part, Image)
    assert part.mime_type == "image/png"
    width, height, rows = _decoded(part.data)
    assert (width, height) == (WIDTH_PX, HEIGHT_PX)
    # RGBA, 8 bits: one filter byte and four bytes a pixel per row
    assert len(rows) == height * (1 + 4 * width)
    assert len(set(rows)) > 10  # something is drawn, not one flat colour
    assert result.output == (
        f"A {kind} chart of 2 series (2024, 2025) over 3 labels: a 800x500 PNG of "
        f"{len(part.data)} bytes."
    )
    assert result.data == {"kind": kind, "width_px": 800, "height_px": 500,
                           "bytes": len(part.data), "series": ["2024", "2025"]}


def test_bars_and_lines_draw_different_pictures(registry: toolplug.Registry) -> None:
    bar = registry.call("chart", {**_TABLE, "kind": "bar"}).parts[0]
    line = registry.call("chart", {**_TABLE, "kind": "line"}).parts[0]
    assert bar != line


@pytest.mark.parametrize(
    ("series", "fragment"),
    [
        # one value short
        ([{"name": "a", "values": [1, 2]}], "series[0] ('a') has 2 values for 3 labels"),
        # the same name twice
        ([{"name": "a", "values": [1, 2, 3]}, {"name": "a", "values": [3, 2, 1]}],
         "series[1] ('a'): another series has that name"),
    ],
)
def test_a_table_that_does_not_fit_is_a_validation_error(
    registry: toolplug.Registry, series: list[dict[str, Any]], fragment: str
) -> None:
    result = registry.call("chart", {"labels": ["x", "y", "z"], "series": series})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert fragment in result.error.message


def test_numbers_given_as_strings_are_refused_by_the_schema(
    registry: toolplug.Registry,
) -> None:
    result = registry.call("chart", {"labels": ["x"], "series": [{"name": "a", "values": ["1"]}]})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "values" in result.error.message


def test_charts_drawn_in_threads_side_by_side_are_whole(registry: toolplug.Registry) -> None:
    results: list[toolplug.ToolResult] = []
    threads = [
        threading.Thread(target=lambda: results.append(registry.call("chart", _TABLE)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    pictures = {r.parts[0] for r in results if r.ok}
    assert len(pictures) == 1  # the same table draws the same picture every time
    _decoded(next(iter(pictures)).data)  # type: ignore[attr-defined]


def test_text_the_font_cannot_draw_or_mathtext_does_not_break_the_chart(
    registry: toolplug.Registry,
) -> None:
    # a control character, a character DejaVu Sans has no glyph for, and a mathtext '$'
    table = {"labels": ["a\x02b", "\U0001f600", "$x^$"], "title": "costs in $ and $",
             "series": [{"name": "\x07n", "values": [1, 2, 3]}]}
    result = registry.call("chart", table)
    assert result.ok, result.error
    _decoded(result.parts[0].data)  # type: ignore[attr-defined]


def test_series_named_with_an_underscore_or_nothing_are_in_the_legend(
    registry: toolplug.Registry,
) -> None:
    # matplotlib leaves an artist labelled "_..." or "" out of the legend, with a warning
    # (an error under this suite): the fuzz suite found two series named "_0" and "_1"
    table = {"labels": ["a", "b"], "series": [
        {"name": "_0", "values": [1, 2]}, {"name": "_1", "values": [2, 1]},
        {"name": "\x07", "values": [0, 1]},
    ]}
    result = registry.call("chart", table)
    assert result.ok, result.error
    _decoded(result.parts[0].data)  # type: ignore[attr-defined]


def test_values_beyond_the_bounds_are_refused_before_drawing() -> None:
    """A value near the float's limit overflowed matplotlib's axis limits (a RuntimeWarning
    and a crash the fuzz suite found); the schema bounds values, so it is a clear error."""
    import toolplug

    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": "toolplug-chart"})
    try:
        result = registry.call("chart", {
            "kind": "bar", "labels": ["a", "b"],
            "series": [{"name": "s", "values": [1.0, 1.7e308]}],
        })
    finally:
        registry.close()
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "1e+15" in result.error.message or "1000000000000000" in result.error.message
