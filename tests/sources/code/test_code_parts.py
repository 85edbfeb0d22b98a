"""run_code and content parts: a program sees what each part is, never its bytes, and
hands parts on, to another tool or in its own result."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolplug
from tests.helpers.media import pdf, png
from toolplug import (
    Annotations,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
    hookimpl,
)

OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
RECEIVED: list[dict[str, Any]] = []


class Chart(Tool):
    metadata = ToolMetadata(
        name="draw_chart", description="Draw the month's chart and its report.",
        category="utility", parameters=OBJECT,
        returns={"type": "object", "properties": {"month": {"type": "string"}}},
        parts=("image", "text", "file", "resource_link"),
        annotations=Annotations(read_only=True, open_world=False),
        # the chart is drawn here: its text parts are trusted, so passing one on is no flow
        trust=Trust(output="trusted"),
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("drawn", {"month": "march"}, parts=[
            toolplug.Image(png(3, 2)), toolplug.Text("the legend"),
            toolplug.File(pdf("March"), "application/pdf", name="march.pdf"),
            toolplug.ResourceLink("https://charts.example/march", "march", size_bytes=99),
        ], warnings=["one value is estimated"])


class Describe(Tool):
    metadata = ToolMetadata(
        name="describe_image", description="Describe a picture given as a URL.",
        category="utility",
        parameters={"type": "object", "properties": {"image": {"type": "string"},
                                                     "also": {"type": "array"}},
                    "required": ["image"]},
        annotations=Annotations(read_only=True, open_world=False),
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        RECEIVED.append(arguments)
        return ToolResult.success("a red square", {"seen": len(arguments["image"])})


class Pause(Tool):
    """Slow enough that the program is parked and resumed on a worker (``_HOLD_SECONDS``)."""

    metadata = ToolMetadata(name="pause", description="Wait a little.", category="utility",
                            parameters=OBJECT,
                            annotations=Annotations(read_only=True, open_world=False))

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(0.3)
        return ToolResult.success("waited", {"waited": True})


class Tools:
    @hookimpl
    def register_tools(self, register: Callable[[type[Tool]], None]) -> None:
        for tool in (Chart, Describe, Pause):
            register(tool)


@pytest.fixture
def registry() -> Iterator[toolplug.Registry]:
    pytest.importorskip("pydantic_monty")
    RECEIVED.clear()
    made = toolplug.load({"code": {"enabled": True}}, env={"TOOLPLUG_PLUGINS": ""},
                         plugins=[("parts-tools", Tools())])
    yield made
    made.close()


def _run(registry: toolplug.Registry, code: str) -> ToolResult:
    result = registry.call("run_code", {"code": code})
    assert result.error is None, result.for_model()
    return result


def test_a_program_inspects_parts_without_their_bytes(registry: toolplug.Registry) -> None:
    result = _run(registry, (
        "r = await draw_chart()\n"
        "print(r.output, r.data, r.warnings)\n"
        "print(r.parts[0])\n"
        "[(p.kind, p.mime_type, p.size, p.name, p.uri, p.text) for p in r.parts]\n"
    ))
    assert result.data["value"] == [
        ["image", "image/png", len(png(3, 2)), None, None, None],
        ["text", None, len("the legend"), None, None, "the legend"],
        ["file", "application/pdf", len(pdf("March")), "march.pdf", None, None],
        ["resource_link", None, 99, "march", "https://charts.example/march", None],
    ]
    printed = result.data["printed"]
    assert printed.startswith("drawn {'month': 'march'} ['one value is estimated']\nPart(")
    assert "kind='image'" in printed
    assert "PNG" not in printed  # the bytes stayed outside the sandbox
    assert "iVBOR" not in printed  # nor their base64
    assert result.parts == ()  # nothing returned, nothing carried


def test_a_part_returned_by_the_program_is_in_run_codes_result(
    registry: toolplug.Registry,
) -> None:
    result = _run(registry, (
        "r = await draw_chart()\n"
        "{'chart': r.parts[0], 'report': r.parts[2], 'again': r.parts[0]}\n"
    ))
    assert [type(p).__name__ for p in result.parts] == ["Image", "File"]  # each once
    assert result.parts[0].data == png(3, 2)  # type: ignore[attr-defined]
    assert result.parts[1].data == pdf("March")  # type: ignore[attr-defined]
    chart = {"part": 0, "kind": "image", "mime_type": "image/png", "size": len(png(3, 2))}
    assert result.data["value"] == {
        "chart": chart,
        "report": {"part": 1, "kind": "file", "mime_type": "application/pdf",
                   "name": "march.pdf", "size": len(pdf("March"))},
        "again": chart,
    }
    body = result.to_dict()
    assert base64.b64decode(body["parts"][0]["data"]) == png(3, 2)
    assert "[image: image/png" in result.for_model()  # a text-only host is told


def test_a_whole_result_returned_carries_every_part(registry: toolplug.Registry) -> None:
    result = _run(registry, "await draw_chart()\n")
    assert [p.kind for p in result.parts] == ["image", "text", "file", "resource_link"]
    assert result.data["value"]["output"] == "drawn"
    assert result.data["value"]["parts"][3] == {
        "part": 3, "kind": "resource_link", "name": "march", "size": 99,
    }


def test_a_part_held_while_the_program_is_parked_still_comes_back(
    registry: toolplug.Registry,
) -> None:
    # pause() answers after the hold: the program is dumped, and resumed on a worker that
    # gives back stand-ins of what it holds; the part is still found by its id
    result = _run(registry, (
        "r = await draw_chart()\n"
        "await pause()\n"
        "x = await pause()\n"
        "[r.parts[2], r.parts[0].kind, x]\n"
    ))
    (report,) = result.parts
    assert report.data == pdf("March")  # type: ignore[attr-defined]
    assert result.data["value"][1:] == ["image", {"waited": True}]


def test_a_part_passed_to_a_tool_arrives_as_a_data_url_of_its_bytes(
    registry: toolplug.Registry,
) -> None:
    result = _run(registry, (
        "r = await draw_chart()\n"
        "d = await describe_image(r.parts[0], also=[r.parts[1], r.parts[3]])\n"
        "d['seen']\n"
    ))
    (arguments,) = RECEIVED
    head, _, body = arguments["image"].partition(",")
    assert head == "data:image/png;base64"
    assert base64.b64decode(body) == png(3, 2)
    assert arguments["also"] == ["the legend", "https://charts.example/march"]
    assert result.data["value"] == len(arguments["image"])


def test_a_program_cannot_conjure_a_part_it_was_not_handed(
    registry: toolplug.Registry,
) -> None:
    result = _run(registry, (
        "class Part:\n"
        "    def __init__(self):\n"
        "        self.id = 0\n"
        "Part()\n"
    ))
    assert result.parts == ()  # id 0 of a table that holds nothing


def test_the_stubs_say_which_tools_return_parts(registry: toolplug.Registry) -> None:
    meta = registry.tools["run_code"].metadata
    described = meta.parameters["properties"]["code"]["description"]
    assert "async def draw_chart() -> Result:" in described
    assert "A Result: its parts (image, text, file, resource_link) and its data (DrawChartResult)" \
        in described
    assert "class Part:\n" in described
    assert "class Result:\n" in described
    assert "class DrawChartResult(TypedDict):" in described  # its data, still typed
    assert "async def pause() -> Any:" in described  # no parts: as before
    assert meta.parts == ("text", "image", "file", "resource_link")
    assert "return a part to hand it back" in described
