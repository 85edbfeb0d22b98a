"""``toolplug serve``: a result's parts reach an MCP client as MCP content, each as its own type.

The server is the real command over stdio; the tools are a plugin written to toolplug's
public names only, reading real PNG, WAV and PDF files the test writes; the client is the
official SDK's ``ClientSession``, which parses (and would refuse) every block.
"""

from __future__ import annotations

import base64
import hashlib
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from tests.helpers.media import pdf, png, wav
from tests.helpers.serve import TIMEOUT, child_env, error_of

PART_TOOLS = r'''
from typing import Any

import toolplug
from toolplug import (
    Audio, EmbeddedResource, File, Image, ResourceLink, Text, Tool, ToolMetadata, ToolResult,
    hookimpl,
)

FILES = {
    "type": "object",
    "properties": {"folder": {"type": "string"}},
    "required": ["folder"],
}


class Album(Tool):
    metadata = ToolMetadata(
        name="album",
        description="A picture, a recording, a document and resources, in one result.",
        category="utility",
        parameters=FILES,
        parts=("image", "audio", "file", "text", "resource_link", "resource"),
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        folder = arguments["folder"]
        return ToolResult.success(
            "The album of March.",
            parts=[
                Image.from_file(f"{folder}/red.png"),
                Audio.from_file(f"{folder}/quiet.wav"),
                File.from_file(f"{folder}/March report.pdf"),
                File(b"a,b\n1,2\n", "text/csv"),
                Text("Played in order."),
                ResourceLink(
                    "https://example.com/march", "march", mime_type="text/html",
                    size_bytes=1234, description="The album online",
                ),
                EmbeddedResource("memo://march/notes", text="Notes.", mime_type="text/plain"),
                EmbeddedResource(
                    "memo://march/cover", data=open(f"{folder}/red.png", "rb").read(),
                    mime_type="image/png",
                ),
            ],
        )


class Chart(Tool):
    metadata = ToolMetadata(
        name="chart",
        description="A chart with its numbers, and nothing to say.",
        category="utility",
        parameters=FILES,
        returns={"type": "object", "properties": {"total": {"type": "integer"}}},
        parts=("image",),
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        picture = Image.from_file(f"{arguments['folder']}/red.png")
        return ToolResult.success("", {"total": 3}, parts=[picture])


class Broken(Tool):
    metadata = ToolMetadata(
        name="broken", description="Always fails.", category="utility",
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.failure("execution", "the printer is on fire")


@hookimpl
def register_tools(register: Any) -> None:
    register(Album)
    register(Chart)
    register(Broken)
'''


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "media"
    folder.mkdir()
    (folder / "red.png").write_bytes(png(3, 2))
    (folder / "quiet.wav").write_bytes(wav())
    (folder / "March report.pdf").write_bytes(pdf())
    return folder


def _calls(tmp_path: Path, calls: dict[str, dict[str, Any]]) -> dict[str, types.CallToolResult]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolplug", "serve"],
        env=child_env(tmp_path, ("part_tools", PART_TOOLS)), cwd=str(tmp_path),
    )

    async def session() -> dict[str, types.CallToolResult]:
        with anyio.fail_after(TIMEOUT):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                return {name: await client.call_tool(name, args) for name, args in calls.items()}

    return anyio.run(session)


def test_each_part_arrives_as_its_mcp_type_with_its_bytes(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    reply = _calls(tmp_path, {"album": {"folder": str(folder)}})["album"]
    assert not reply.is_error, reply
    (text, image, audio, report, table, more, link, notes, cover) = reply.content

    # the output first, alone: the parts are not described in words beside themselves
    assert isinstance(text, types.TextContent)
    assert text.text == "The album of March."
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == (folder / "red.png").read_bytes()
    assert isinstance(audio, types.AudioContent)
    assert audio.mime_type == "audio/wav"
    assert base64.b64decode(audio.data) == (folder / "quiet.wav").read_bytes()

    # a file: an embedded resource of bytes, at a URI of its digest and its name
    assert isinstance(report, types.EmbeddedResource)
    assert isinstance(report.resource, types.BlobResourceContents)
    assert report.resource.mime_type == "application/pdf"
    data = (folder / "March report.pdf").read_bytes()
    assert base64.b64decode(report.resource.blob) == data
    digest = hashlib.sha256(data).hexdigest()[:32]
    assert str(report.resource.uri) == f"toolplug://parts/{digest}/March%20report.pdf"
    # a file without a name is named after its type
    assert isinstance(table, types.EmbeddedResource)
    assert isinstance(table.resource, types.BlobResourceContents)
    assert str(table.resource.uri).endswith("/file.csv")
    assert base64.b64decode(table.resource.blob) == b"a,b\n1,2\n"

    assert isinstance(more, types.TextContent)
    assert more.text == "Played in order."
    assert isinstance(link, types.ResourceLink)
    assert (str(link.uri), link.name, link.mime_type, link.size, link.description) == (
        "https://example.com/march", "march", "text/html", 1234, "The album online",
    )
    assert isinstance(notes, types.EmbeddedResource)
    assert isinstance(notes.resource, types.TextResourceContents)
    assert (str(notes.resource.uri), notes.resource.text, notes.resource.mime_type) == (
        "memo://march/notes", "Notes.", "text/plain",
    )
    assert isinstance(cover, types.EmbeddedResource)
    assert isinstance(cover.resource, types.BlobResourceContents)
    assert str(cover.resource.uri) == "memo://march/cover"
    assert base64.b64decode(cover.resource.blob) == (folder / "red.png").read_bytes()


def test_structured_content_stays_and_empty_output_sends_no_text(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    replies = _calls(tmp_path, {"chart": {"folder": str(folder)}, "broken": {}})

    chart = replies["chart"]
    assert not chart.is_error, chart
    assert chart.structured_content == {"total": 3}
    [image] = chart.content  # no empty text block before the picture
    assert isinstance(image, types.ImageContent)
    assert base64.b64decode(image.data) == png(3, 2)

    # errors are as they were: one text block and the structured error in _meta
    error = error_of(replies["broken"])
    assert error["error_message"] == "the printer is on fire"
