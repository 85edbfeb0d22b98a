"""A binary file comes back as itself, a part (Image, Audio, File), with real files in the
sandbox's roots; text files as before, and no host path in anything the model sees."""

from __future__ import annotations

import io
import struct
import wave
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import toolplug
from toolplug import Audio, File, Image, ToolResult

Load = Callable[..., toolplug.Registry]
Call = Callable[[toolplug.Registry, str, Mapping[str, Any]], ToolResult]
Roots = dict[str, Path]


def _png(width: int, height: int) -> bytes:
    """A real PNG of grey pixels, written as the format says."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def _wav(frames: int) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(b"\x01\x00" * frames)
    return out.getvalue()


def _host_paths(result: ToolResult, roots: Roots) -> list[str]:
    seen = result.for_model() + repr(result.data) + repr([p.to_dict() for p in result.parts])
    return [str(root) for root in roots.values() if str(root) in seen]


def test_the_declared_metadata_says_binary_files_come_back_as_parts(load: Load) -> None:
    assert load().get("read_file").metadata.parts == ("image", "audio", "file")


def test_an_image_is_an_image_part(load: Load, call: Call, roots: Roots) -> None:
    png = _png(6, 4)
    (roots["cache"] / "plots").mkdir()
    (roots["cache"] / "plots" / "q3.png").write_bytes(png)
    result = call(load(), "read_file", {"path": "plots/q3.png"})
    assert result.ok, result.error
    assert result.parts == (Image(png, "image/png"),)
    assert result.output == (
        f"file_cache_dir/plots/q3.png is a binary file ({len(png)} bytes, PNG image), "
        "attached as an image."
    )
    assert result.data["binary"] is True
    assert result.data["content"] is None
    assert _host_paths(result, roots) == []


def test_a_recording_is_audio_and_anything_else_a_named_file(
    load: Load, call: Call, roots: Roots
) -> None:
    sound = _wav(400)
    (roots["state"] / "beep.wav").write_bytes(sound)
    heard = call(load(), "read_file", {"path": "file_state_dir/beep.wav"})
    assert heard.ok, heard.error
    [audio] = heard.parts
    assert isinstance(audio, Audio)
    assert audio.mime_type == "audio/wav"
    with wave.open(io.BytesIO(audio.data)) as reader:
        assert reader.getnframes() == 400
    blob = bytes(range(256)) * 3
    (roots["cache"] / "table.db").write_bytes(blob)
    got = call(load(), "read_file", {"path": "table.db"})
    assert got.ok, got.error
    # named by its file name only: the alias and the host's directories stay out
    assert got.parts == (File(blob, "application/octet-stream", name="table.db"),)
    assert "attached as a file" in got.output
    assert _host_paths(got, roots) == []


def test_a_name_that_promises_what_the_bytes_are_not_is_a_plain_file(
    load: Load, call: Call, roots: Roots
) -> None:
    # .mp3 by name, but no MP3's first bytes: not passed on as audio/mpeg
    (roots["cache"] / "song.mp3").write_bytes(b"\x00\x00\x00 not an mp3 \x00")
    result = call(load(), "read_file", {"path": "song.mp3"})
    assert result.ok, result.error
    [part] = result.parts
    assert isinstance(part, File)
    assert part.mime_type == "application/octet-stream"
    assert part.problem() is None


def test_text_files_are_text_as_before(load: Load, call: Call, roots: Roots) -> None:
    (roots["cache"] / "notes.md").write_text("# notes\n", encoding="utf-8")
    result = call(load(), "read_file", {"path": "notes.md"})
    assert result.ok, result.error
    assert (result.output, result.parts) == ("# notes\n", ())
