"""The tools, prompts and resources the MCP conformance suite's server scenarios ask
for, as a toolplug plugin.

Written to toolplug's public names only (``import toolplug``), as a third party would
write it; test_conformance.py installs it beside ``toolplug serve``. Each tool returns
what its scenario asks for (the requirements are in the harness's scenario texts).
"""

from __future__ import annotations

import asyncio
import json
import struct
import wave
import zlib
from io import BytesIO
from typing import Any

from toolplug import (
    Annotations,
    Audio,
    EmbeddedResource,
    Image,
    Message,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    hookimpl,
    prompt,
    provides,
    resource,
)

READ = Annotations(read_only=True, idempotent=True, open_world=False)
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def _png() -> bytes:
    """One red pixel, as PNG."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(
        b"IEND", b""
    )


def _wav() -> bytes:
    """A tenth of a second of silence, as WAV."""
    out = BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(b"\x00\x00" * 800)
    return out.getvalue()


def _metadata(name: str, description: str, **more: Any) -> ToolMetadata:
    return ToolMetadata(
        name=name, description=description, category="utility", parameters=NO_ARGUMENTS,
        annotations=READ, **more,
    )


class SimpleText(Tool):
    metadata = _metadata("test_simple_text", "Return one line of text.")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("This is a simple text response for testing.")


class ImageContent(Tool):
    metadata = _metadata("test_image_content", "Return a picture.", parts=("image",))

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("", parts=[Image(_png(), "image/png")])


class AudioContent(Tool):
    metadata = _metadata("test_audio_content", "Return a recording.", parts=("audio",))

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("", parts=[Audio(_wav(), "audio/wav")])


class Embedded(Tool):
    metadata = _metadata(
        "test_embedded_resource", "Return a resource's contents.", parts=("resource",)
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        resource = EmbeddedResource(
            "test://embedded-resource", text="This is an embedded resource content.",
            mime_type="text/plain",
        )
        return ToolResult.success("", parts=[resource])


class Mixed(Tool):
    metadata = _metadata(
        "test_multiple_content_types", "Return text, a picture and a resource.",
        parts=("image", "resource"),
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success(
            "Multiple content types test:",
            parts=[
                Image(_png(), "image/png"),
                EmbeddedResource(
                    "test://mixed-content-resource", text='{"test":"data","value":123}',
                    mime_type="application/json",
                ),
            ],
        )


class Failing(Tool):
    metadata = _metadata("test_error_handling", "Always fail.")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.failure(
            "execution", "This tool intentionally returns an error for testing"
        )


class Progress(Tool):
    metadata = _metadata("test_tool_with_progress", "Report progress 0, 50 and 100 of 100.")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        report = context.host.get("progress")
        for done in (0, 50, 100):
            if report is not None:
                report(done, 100)
            if done < 100:
                await asyncio.sleep(0.05)
        return ToolResult.success("Progress reported.")


class Schema2020(Tool):
    metadata = ToolMetadata(
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        category="utility",
        annotations=READ,
        parameters={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
            },
            "additionalProperties": False,
        },
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success(f"Hello, {arguments.get('name', 'nobody')}.")


class Logging(Tool):
    metadata = _metadata("test_tool_with_logging", "Log three lines as it works.")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        context.log("info", "Tool execution started")
        await asyncio.sleep(0.05)
        context.log("info", "Tool processing data")
        await asyncio.sleep(0.05)
        context.log("info", "Tool execution completed")
        return ToolResult.success("Logged three lines.")


def _prompted(name: str, field: str, description: str) -> ToolMetadata:
    return ToolMetadata(
        name=name, description=description, category="utility", annotations=READ,
        parameters={
            "type": "object", "properties": {field: {"type": "string"}}, "required": [field],
        },
    )


class Sampling(Tool):
    metadata = _prompted("test_sampling", "prompt", "Ask the client's model to answer a prompt.")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        sampled = await context.sample(arguments["prompt"], max_tokens=100)
        return ToolResult.success(f"LLM response: {sampled.text}")


async def _asked(context: ToolContext, message: str, form: dict[str, Any]) -> str:
    answer = await context.ask(message, form)
    return f"action={answer.action}, content={json.dumps(dict(answer.content))}"


class Elicitation(Tool):
    metadata = _prompted("test_elicitation", "message", "Ask the user their name and email.")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        form = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        return ToolResult.success("User response: " + await _asked(
            context, arguments["message"], form
        ))


class Defaults(Tool):
    metadata = _metadata(
        "test_elicitation_sep1034_defaults", "Ask a form whose every field has a default."
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        form = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {
                    "type": "string", "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "default": True},
            },
        }
        answer = await _asked(context, "Check these details.", form)
        return ToolResult.success(f"Elicitation completed: {answer}")


class Enums(Tool):
    metadata = _metadata("test_elicitation_sep1330_enums", "Ask a form of every kind of choice.")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        def titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
            return [{"const": value, "title": title} for value, title in pairs]

        form = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": titled(
                    ("value1", "First Option"), ("value2", "Second Option"),
                    ("value3", "Third Option"),
                )},
                "legacyEnum": {
                    "type": "string", "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {"type": "array", "items": {"anyOf": titled(
                    ("value1", "First Choice"), ("value2", "Second Choice"),
                    ("value3", "Third Choice"),
                )}},
            },
        }
        answer = await _asked(context, "Choose.", form)
        return ToolResult.success(f"Elicitation completed: {answer}")


@hookimpl
def register_tools(register: Any) -> None:
    for tool in (
        SimpleText, ImageContent, AudioContent, Embedded, Mixed, Failing, Progress, Schema2020,
        Logging, Sampling, Elicitation, Defaults, Enums,
    ):
        register(tool)


# -- prompts (prompts-get-*, completion-complete) ------------------------------------------


@prompt(description="A prompt without arguments.")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


def _suggest(argument: str, typed: str, others: Any) -> list[str]:
    return [v for v in ("paris", "park", "party", "test", "testing") if v.startswith(typed)]


@prompt(
    description="A prompt with two arguments.",
    arguments={"arg1": "First test argument", "arg2": "Second test argument"},
    complete=_suggest,
)
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@prompt(
    description="A prompt that embeds a resource.",
    arguments={"resourceUri": "URI of the resource to embed"},
)
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
    embedded = EmbeddedResource(
        resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
    )
    return [
        Message("user", embedded), Message("user", "Please process the embedded resource above.")
    ]


@prompt(description="A prompt with a picture.")
def test_prompt_with_image() -> list[Message]:
    return [
        Message("user", Image(_png(), "image/png")),
        Message("user", "Please analyze the image above."),
    ]


register_prompts = provides(
    test_simple_prompt, test_prompt_with_arguments, test_prompt_with_embedded_resource,
    test_prompt_with_image,
)


# -- resources (resources-read-*, resources-templates-read, resources-(un)subscribe) -------


@resource("test://static-text", name="static text", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@resource("test://static-binary", name="static binary", mime_type="image/png")
def static_binary() -> bytes:
    return _png()


@resource("test://template/{id}/data", name="template data", mime_type="application/json")
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@resource("test://watched-resource", name="watched", mime_type="text/plain")
def watched() -> str:
    return "A resource clients subscribe to."


register_resources = provides(static_text, static_binary, template_data, watched)
