"""An image or a PDF comes back as itself (a part), against a real server on 127.0.0.1:
by its Content-Type, confirmed by its first bytes; anything else as before."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any

from pytest_httpserver import HTTPServer

import toolplug
from toolplug import File, Image

Fetch = Callable[..., toolplug.ToolResult]


def _png(width: int, height: int) -> bytes:
    """A real PNG of green pixels, written as the format says."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x00\xa0\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


_PDF = (
    b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    b"2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n"
    b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"
)


def test_the_declared_metadata_says_images_and_files_come_back() -> None:
    registry = toolplug.load({"network": {"allow": ["127.0.0.1"]}})
    try:
        assert registry.get("url_fetch").metadata.parts == ("image", "file")
    finally:
        registry.close()


def test_a_png_is_an_image_part_with_a_line_saying_so(
    server: HTTPServer, fetch: Fetch
) -> None:
    png = _png(7, 5)
    server.expect_request("/chart.png").respond_with_data(png, content_type="image/png")
    result = fetch(url=server.url_for("/chart.png"))
    assert result.ok, result.error
    [part] = result.parts
    assert part == Image(png, "image/png")
    assert struct.unpack(">II", png[16:24]) == (7, 5)
    assert f"Image attached: image/png, {len(png)} bytes" in result.output
    assert result.data["binary"] is True
    assert result.data["text"] is None
    assert "[image: image/png" in result.for_model()


def test_a_pdf_is_a_file_part_named_after_the_url(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/docs/q3 report.pdf").respond_with_data(
        _PDF, content_type="application/pdf"
    )
    result = fetch(url=server.url_for("/docs/q3%20report.pdf"))
    assert result.ok, result.error
    [part] = result.parts
    assert isinstance(part, File)
    assert (part.name, part.mime_type, part.data) == ("q3 report.pdf", "application/pdf", _PDF)
    assert "File attached: application/pdf" in result.output


def _described(result: toolplug.ToolResult) -> dict[str, Any]:
    assert result.ok, result.error
    assert result.parts == ()
    assert "Binary body not shown" in result.output
    data: dict[str, Any] = result.data
    return data


def test_what_the_bytes_or_the_bounds_do_not_confirm_is_described(
    server: HTTPServer, fetch: Fetch
) -> None:
    png = _png(40, 40)
    server.expect_request("/big.png").respond_with_data(png, content_type="image/png")
    # cut at max_bytes: a cut picture is no picture
    cut = _described(fetch(url=server.url_for("/big.png"), max_bytes=64))
    assert cut["truncated"] is True
    # a PNG sent as octet-stream: the Content-Type decides, not a guess
    server.expect_request("/blob").respond_with_data(
        png, content_type="application/octet-stream"
    )
    _described(fetch(url=server.url_for("/blob")))
    # a PDF label on bytes that are not a PDF
    server.expect_request("/fake.pdf").respond_with_data(
        b"<html>not a pdf</html>" * 3, content_type="application/pdf"
    )
    _described(fetch(url=server.url_for("/fake.pdf")))


def test_html_is_still_text(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/page").respond_with_data(
        "<html><body><p>hello</p></body></html>", content_type="text/html"
    )
    result = fetch(url=server.url_for("/page"))
    assert result.ok, result.error
    assert result.parts == ()
    assert result.data["binary"] is False
    assert "hello" in result.data["text"]
