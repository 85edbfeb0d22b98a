"""Content parts: what a tool author makes, and what a part says about itself."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

import toolplug
from tests.helpers.media import wav
from tests.helpers.parts import png
from toolplug import (
    Audio,
    EmbeddedResource,
    File,
    Image,
    ResourceLink,
    Text,
    ToolMetadata,
    ToolResult,
)
from toolplug.contract._parts import part_for, sniff


def test_a_result_carries_its_parts_in_order() -> None:
    image, clip = Image(png()), Audio(wav())
    link = ResourceLink("file:///reports/march.pdf", "march.pdf", "application/pdf", 52_000)
    result = ToolResult.success("The chart of March.", parts=[image, Text("and"), clip, link])
    assert result.parts == (image, Text("and"), clip, link)
    body = result.to_dict()
    assert [p["kind"] for p in body["parts"]] == ["image", "text", "audio", "resource_link"]
    assert base64.b64decode(body["parts"][0]["data"]) == png()
    assert body["parts"][3] == {
        "kind": "resource_link", "uri": "file:///reports/march.pdf", "name": "march.pdf",
        "mime_type": "application/pdf", "size_bytes": 52_000,
    }


def test_a_text_only_host_reads_each_part_in_its_place() -> None:
    result = ToolResult.success(
        "Two pictures.", parts=[Image(png()), Text("then"), File(b"%PDF-1.7", "application/pdf",
                                                               name="a.pdf")],
        warnings=["one was cut"],
    )
    assert result.for_model() == (
        "Two pictures.\n\n[image: image/png, 69 B]\n\nthen\n\n"
        "[file: a.pdf, application/pdf, 8 B]\n\nWarning: one was cut"
    )


def test_bytes_stay_bytes_and_the_repr_stays_short() -> None:
    big = Image(png() + b"\x00" * 5_000_000)
    assert isinstance(big.data, bytes)
    assert repr(big) == "Image(image/png, 4.8 MB)"


def test_a_part_from_a_file_reads_its_type_from_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "chart.dat").write_bytes(png())
    (tmp_path / "note.wav").write_bytes(wav())
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    assert Image.from_file(tmp_path / "chart.dat").mime_type == "image/png"
    assert Audio.from_file(tmp_path / "note.wav").mime_type == "audio/wav"
    csv = File.from_file(tmp_path / "notes.csv")
    assert (csv.mime_type, csv.name, csv.data) == ("text/csv", "notes.csv", b"a,b\n1,2\n")
    unknown = tmp_path / "blob"
    unknown.write_bytes(b"\x01\x02")
    assert File.from_file(unknown).mime_type == "application/octet-stream"


@pytest.mark.parametrize(
    ("data", "mime", "kind"),
    [
        (png(), None, Image),
        (wav(), None, Audio),
        (b"%PDF-1.4 ...", None, File),
        (b"plain", "text/plain; charset=utf-8", File),
        (b"GIF89a", "IMAGE/GIF", Image),
        (b"\x00\x01", None, File),
    ],
)
def test_part_for_picks_the_kind_a_mime_type_names(
    data: bytes, mime: str | None, kind: type
) -> None:
    assert type(part_for(data, mime)) is kind


def test_sniff_knows_the_formats_hosts_show() -> None:
    assert sniff(png()) == "image/png"
    assert sniff(wav()) == "audio/wav"
    assert sniff(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff(b"hello") is None


@pytest.mark.parametrize(
    ("part", "problem"),
    [
        (Image(b"GIF89a...", "image/png"), "its bytes are not image/png: they look like image/gif"),
        (Image(b"hello", "image/png"), "its bytes are not image/png: they are not in that format"),
        (Audio(png(), "audio/wav"), "its bytes are not audio/wav: they look like image/png"),
        (File(b"", "application/pdf"), "it has no bytes"),
        (EmbeddedResource("test://x", data=b"no", mime_type="application/pdf"),
         "its bytes are not application/pdf: they are not in that format"),
    ],
)
def test_a_part_whose_bytes_are_not_what_it_says_has_a_problem(
    part: toolplug.Part, problem: str
) -> None:
    assert part.problem() == problem


def test_well_made_parts_have_no_problem() -> None:
    for part in (
        Image(png()), Audio(wav()), File(b"%PDF-1.7", "application/pdf"),
        File(b"anything", "application/x-custom"), Text("hi"),
        EmbeddedResource("test://r", text='{"a": 1}', mime_type="application/json"),
        ResourceLink("https://example.org/a", "a"),
    ):
        assert part.problem() is None, part


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Image(png(), "audio/wav"), "Image: 'audio/wav' is not an image/* type"),
        (lambda: Audio(wav(), "video/mp4"), "Audio: 'video/mp4' is not an audio/* type"),
        (lambda: File(b"x", "pdf"), "File: 'pdf' is not a MIME type such as 'image/png'"),
        (lambda: ResourceLink("reports/a.pdf", "a"), "'reports/a.pdf' is not a URI"),
        (lambda: ResourceLink("file:///a", ""), "name must not be empty"),
        (lambda: EmbeddedResource("test://x"), "give exactly one of text and data"),
        (lambda: EmbeddedResource("test://x", text="a", data=b"b"), "exactly one of"),
    ],
)
def test_a_badly_made_part_says_what_is_wrong(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        make()  # type: ignore[operator]


def test_data_must_be_bytes() -> None:
    with pytest.raises(TypeError, match=r"data must be bytes, got str \(read a file with "
                                        r"Image.from_file\(path\)\)"):
        Image("chart.png")  # type: ignore[arg-type]


def test_success_refuses_what_is_not_a_part() -> None:
    with pytest.raises(TypeError, match=r"parts\[1\] is a str, not a part"):
        ToolResult.success("x", parts=[Text("a"), "b"])  # type: ignore[list-item]


def test_metadata_says_which_parts_a_tool_returns() -> None:
    meta = ToolMetadata(name="chart", description="Draw a chart.", category="utility",
                        parts=("image",))
    assert meta.parts == ("image",)
    with pytest.raises(ValueError, match="parts"):
        ToolMetadata(name="chart", description="Draw.", category="utility",
                     parts=("video",))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("part", "argument"),
    [
        # bytes: a data URL of the part's own MIME type
        (Image(png()), "data:image/png;base64," + base64.b64encode(png()).decode()),
        (File(b"%PDF-1.7", "application/pdf", name="a.pdf"), "data:application/pdf;base64,"
         + base64.b64encode(b"%PDF-1.7").decode()),
        (EmbeddedResource("file:///x.bin", data=b"\x00\x01"),
         "data:application/octet-stream;base64,AAE="),  # no type: octet-stream
        # text as text, a link as its URI
        (Text("more"), "more"),
        (EmbeddedResource("file:///notes.md", text="# Notes"), "# Notes"),
        (ResourceLink("file:///reports/march.pdf", "march.pdf"), "file:///reports/march.pdf"),
    ],
)
def test_a_part_as_an_argument_is_one_string(part: toolplug.Part, argument: str) -> None:
    from toolplug.contract._parts import as_argument

    assert as_argument(part) == argument
