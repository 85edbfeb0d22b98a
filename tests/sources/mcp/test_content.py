"""A mounted MCP server's pictures, sound and resources arrive as parts, and go out again.

The server is the SDK's own (tests/helpers/mcp_servers.py ``MEDIA``) in a child process,
returning real PNG, WAV and PDF bytes the test wrote; it is mounted with
``[mcp_servers.media]`` into a registry, and into a real ``toolplug serve`` that the SDK's
``ClientSession`` calls: the bytes come back byte for byte.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

import toolplug
from tests.helpers.mcp_servers import stdio_table, write_media_server
from tests.helpers.media import pdf, png, wav
from tests.helpers.serve import TIMEOUT, child_env
from toolplug.sources.mcp import _mount

# The server's tools are read-only by its own word, which this configuration believes.
TRUSTED = "trust_annotations = true"


@pytest.fixture
def media(tmp_path: Path) -> Path:
    folder = tmp_path / "media"
    folder.mkdir()
    (folder / "red.png").write_bytes(png(4, 3))
    (folder / "quiet.wav").write_bytes(wav(1600))
    (folder / "report.pdf").write_bytes(pdf())
    return folder


@pytest.fixture
def table(tmp_path: Path, media: Path) -> str:
    return stdio_table("media", write_media_server(tmp_path), str(media), extra=TRUSTED)


@pytest.fixture
def registry(tmp_path: Path, table: str) -> Iterator[toolplug.Registry]:
    config = tmp_path / "toolplug.toml"
    config.write_text(f'cache_dir = "{tmp_path / "cache"}"\n' + table, encoding="utf-8")
    made = toolplug.load(config)
    yield made
    made.close()


def test_each_block_is_the_matching_part(registry: toolplug.Registry, media: Path) -> None:
    result = registry.call("media_album", {})
    assert result.error is None, result
    # the text blocks are the output, as before parts existed
    assert result.output.endswith("The album of March.\n\nPlayed in order.")
    image, audio, report, notes, link = result.parts
    assert isinstance(image, toolplug.Image)
    assert (image.mime_type, image.data) == ("image/png", (media / "red.png").read_bytes())
    assert isinstance(audio, toolplug.Audio)
    assert (audio.mime_type, audio.data) == ("audio/wav", (media / "quiet.wav").read_bytes())
    assert isinstance(report, toolplug.EmbeddedResource)
    assert (report.uri, report.mime_type, report.data, report.text) == (
        "memo://march/report.pdf", "application/pdf", (media / "report.pdf").read_bytes(), None,
    )
    assert isinstance(notes, toolplug.EmbeddedResource)
    assert (notes.uri, notes.text, notes.data) == ("memo://march/notes", "Notes of March.", None)
    assert link == toolplug.ResourceLink(
        "https://example.com/march", "march", mime_type="text/html", size_bytes=1234,
        description="The album online",
    )


def test_a_block_that_makes_no_part_is_an_error_naming_it(registry: toolplug.Registry) -> None:
    result = registry.call("media_garbled", {})
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert "MCP server 'media'" in result.error.message
    assert "content[0] (image): its data is not base64" in result.error.message


def test_the_bytes_go_out_of_toolplug_serve_unchanged(
    tmp_path: Path, table: str, media: Path
) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolplug", "serve"],
        env=child_env(tmp_path / "served", config=table), cwd=str(tmp_path),
    )

    async def session() -> types.CallToolResult:
        with anyio.fail_after(TIMEOUT):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                return await client.call_tool("media_album", {})

    reply = anyio.run(session)
    assert not reply.is_error, reply
    text, image, audio, report, notes, link = reply.content
    assert isinstance(text, types.TextContent)
    assert "Played in order." in text.text
    assert isinstance(image, types.ImageContent)
    assert base64.b64decode(image.data) == (media / "red.png").read_bytes()
    assert isinstance(audio, types.AudioContent)
    assert base64.b64decode(audio.data) == (media / "quiet.wav").read_bytes()
    assert isinstance(report, types.EmbeddedResource)
    assert isinstance(report.resource, types.BlobResourceContents)
    assert str(report.resource.uri) == "memo://march/report.pdf"
    assert base64.b64decode(report.resource.blob) == (media / "report.pdf").read_bytes()
    assert isinstance(notes, types.EmbeddedResource)
    assert isinstance(notes.resource, types.TextResourceContents)
    assert notes.resource.text == "Notes of March."
    assert isinstance(link, types.ResourceLink)
    assert (str(link.uri), link.size) == ("https://example.com/march", 1234)


@pytest.mark.parametrize(
    "meta",
    [
        {"toolplug/error": {"error_type": "rm -rf /", "error_message": "x"}},
        {"toolplug/error": {"error_type": "RateLimitError", "error_message": 5}},
        {"toolplug/error": {"error_type": "RateLimitError", "error_message": ""}},
        {"toolplug/error": {"error_type": "RateLimitError", "error_message": "x",
                            "retry_possible": "yes"}},
        {"toolplug/error": "RateLimitError"},
        {"toolplug/error": {"error_type": "E" * 200 + "Error", "error_message": "x"}},
    ],
)
def test_a_served_error_not_of_its_shape_is_read_as_the_servers_words(meta: Any) -> None:
    answer = types.CallToolResult(
        content=[types.TextContent(type="text", text="it broke")], is_error=True, _meta=meta
    )
    result = _mount._result(answer, "far")
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("ExecutionError", "it broke")


def test_a_served_error_keeps_its_type_message_and_retry_advice() -> None:
    error = {"error": True, "error_type": "RateLimitError", "error_message": "slow down",
             "retry_possible": True}
    answer = types.CallToolResult(
        content=[types.TextContent(type="text", text="RateLimitError: slow down\n...")],
        is_error=True, _meta={"toolplug/error": error},
    )
    result = _mount._result(answer, "far")
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("RateLimitError", "slow down")
    assert result.error.retry_possible
