"""toolplug.integrations._parts: what every integration hands its framework of a result's parts."""

from __future__ import annotations

import logging

import pytest

from toolplug import Audio, EmbeddedResource, File, Image, ResourceLink, Text, ToolResult
from toolplug.integrations._parts import binary, carried, file_name, text_of, web_link

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
WAV = b"RIFF\x00\x00\x00\x00WAVEfmt "


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        # a picture, a recording and a file are themselves
        (Image(PNG), Image(PNG)),
        (Audio(WAV), Audio(WAV)),
        (File(b"%PDF-1.4", "application/pdf"), File(b"%PDF-1.4", "application/pdf")),
        # an embedded resource's bytes are the part their MIME type names, named after its URI
        (EmbeddedResource("mem://shots/a.png", data=PNG, mime_type="image/png"), Image(PNG)),
        (EmbeddedResource("mem://a.wav", data=WAV, mime_type="audio/wav"), Audio(WAV)),
        (
            EmbeddedResource("mem://docs/r.pdf", data=b"%PDF-1", mime_type="application/pdf"),
            File(b"%PDF-1", "application/pdf", name="r.pdf"),
        ),
        # without a MIME type: a file of bytes
        (
            EmbeddedResource("mem://blob", data=b"\x01"),
            File(b"\x01", "application/octet-stream", name="blob"),
        ),
        # text and links hold no bytes
        (EmbeddedResource("mem://notes", text="hello"), None),
        (Text("hello"), None),
        (ResourceLink("https://x.test/a.png", "a.png", "image/png"), None),
    ],
)
def test_binary_is_the_bytes_a_part_holds(part: object, expected: object) -> None:
    assert binary(part) == expected  # type: ignore[arg-type]


def test_text_of_and_web_link_tell_text_and_fetchable_links_apart() -> None:
    assert text_of(Text("more")) == "more"
    assert text_of(EmbeddedResource("mem://n", text="note")) == "note"
    assert text_of(Image(PNG)) is None
    fetchable = ResourceLink("https://x.test/a.png", "a.png", "image/png")
    assert web_link(fetchable) is fetchable
    # a provider cannot fetch a file:// link, nor know what a link without a type is
    assert web_link(ResourceLink("file:///a.png", "a.png", "image/png")) is None
    assert web_link(ResourceLink("https://x.test/a", "a")) is None


def test_a_file_without_a_name_is_named_by_its_type() -> None:
    assert file_name(File(b"%PDF-1", "application/pdf", name="march.pdf")) == "march.pdf"
    assert file_name(File(b"%PDF-1", "application/pdf")) == "file.pdf"
    assert file_name(File(b"\x01")) == "file.bin"


def test_a_part_left_as_text_is_in_its_place_and_a_lost_binary_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    link = ResourceLink("toolplug://results/1", "full result")
    result = ToolResult.success("x", parts=[Image(PNG), Audio(WAV), link])
    with caplog.at_level(logging.WARNING, logger="toolplug.integrations"):
        items = carried(result, "a framework", "tool", lambda p: p if p.kind == "image" else None)
    assert items == [Image(PNG), Audio(WAV).describe(), link.describe()]
    # the recording is a loss and said so; the link's text is all there is to it
    [warned] = caplog.records
    assert warned.getMessage().startswith("a framework cannot carry the audio part 1 of tool's")
