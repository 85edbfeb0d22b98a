"""A plugin's prompts and resources through the real ``toolplug serve`` (stdio, and
streamable HTTP for per-session subscriptions) and the official SDK's client: listed, got,
read, subscribed to, completed, and each bad input answered with an error naming it."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, ClientSession, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import toolplug
from tests.helpers.serve import CONFIG, TIMEOUT, child_env, free_port, http_server, stdio_params
from toolplug import Registry, prompt, provides, resource
from toolplug.serve import build_server

NOTES = '''
from toolplug import (
    ConfigField, EnvVar, Capability, Image, Message, Tool, ToolMetadata, ToolResult,
    prompt, provides, resource, resource_changed,
)
import base64

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


class Touch(Tool):
    metadata = ToolMetadata(
        name="touch_note", description="Mark a note as changed.", category="utility",
        parameters={"type": "object", "properties": {"uri": {"type": "string"}},
                    "required": ["uri"]},
        config_fields=(ConfigField(name="token", type="string", description="A token",
                                   env_var="NOTES_TOKEN", secret=True),),
    )

    def run(self, arguments, context):
        resource_changed(arguments["uri"])
        return ToolResult.success("touched")


@prompt(description="Brief someone on a topic.", arguments={"topic": "What about"},
        complete=lambda name, typed, others: [t for t in ("taxes", "tea", "trains")
                                              if t.startswith(typed)])
def brief(topic: str, reader: str = "you") -> str:
    return f"Brief {reader} on {topic}; token n0tes-s3cret."


@prompt(description="Look at a picture.")
async def look() -> list:
    return [Message("user", Image(PNG, "image/png")), Message("assistant", "I see it.")]


@prompt(description="Needs what is missing.", requires=("never_here",))
def hidden() -> str:
    return "no"


@resource("notes://today", mime_type="text/plain")
def today() -> str:
    return "Buy milk; token n0tes-s3cret."


@resource("notes://picture", mime_type="image/png")
def picture() -> bytes:
    return PNG


@resource("notes://{day}/summary", mime_type="text/plain",
          complete=lambda name, typed, others: ["monday", "tuesday"])
def summary(day: str) -> str:
    return f"Summary of {day}."


register_tools = provides(Touch)
register_prompts = provides(brief, look, hidden)
register_resources = provides(today, picture, summary)
register_capabilities = provides(
    Capability(name="never_here", description="Never.", detectors=(EnvVar("NEVER_HERE_X"),))
)
'''


def _env(tmp_path: Path) -> dict[str, str]:
    return {**child_env(tmp_path, ("notes_plugin", NOTES), config=CONFIG),
            "NOTES_TOKEN": "n0tes-s3cret"}


async def _refusal(call: Any) -> types.ErrorData:
    try:
        await call
    except MCPError as exc:
        return exc.error
    raise AssertionError("the server answered instead of refusing")


async def _stdio_session(tmp_path: Path) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    env = _env(tmp_path)  # first: the site it installs is the one stdio_params finds
    params = stdio_params(tmp_path)
    params.env = env
    with anyio.fail_after(TIMEOUT):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            seen["capabilities"] = init.capabilities
            seen["prompts"] = (await session.list_prompts()).prompts
            seen["resources"] = (await session.list_resources()).resources
            seen["templates"] = (await session.list_resource_templates()).resource_templates
            seen["brief"] = await session.get_prompt("brief", {"topic": "tea"})
            seen["look"] = await session.get_prompt("look")
            seen["today"] = (await session.read_resource("notes://today")).contents[0]
            seen["picture"] = (await session.read_resource("notes://picture")).contents[0]
            seen["summary"] = (await session.read_resource("notes://friday/summary")).contents[0]
            seen["complete_prompt"] = await session.complete(
                types.PromptReference(type="ref/prompt", name="brief"),
                {"name": "topic", "value": "t"},
            )
            seen["complete_template"] = await session.complete(
                types.ResourceTemplateReference(type="ref/resource", uri="notes://{day}/summary"),
                {"name": "day", "value": ""},
            )
            seen["unknown_uri"] = await _refusal(session.read_resource("notes://tomorrow"))
            seen["missing_argument"] = await _refusal(session.get_prompt("brief", {}))
            seen["unknown_argument"] = await _refusal(
                session.get_prompt("brief", {"topic": "tea", "mood": "x"})
            )
            seen["unknown_prompt"] = await _refusal(session.get_prompt("nope"))
            seen["hidden"] = await _refusal(session.get_prompt("hidden"))
            seen["bad_completion"] = await _refusal(session.complete(
                types.PromptReference(type="ref/prompt", name="brief"),
                {"name": "where", "value": ""},
            ))
    return seen


def test_prompts_and_resources_over_stdio(tmp_path: Path) -> None:
    seen = anyio.run(_stdio_session, tmp_path)
    capabilities = seen["capabilities"]
    assert capabilities.resources.subscribe is True
    assert capabilities.completions is not None
    # the plugin's prompts after toolplug's own; the one whose capability is missing is not
    assert [p.name for p in seen["prompts"]] == ["optional_tools", "brief", "look"]
    brief = seen["prompts"][1]
    assert brief.description == "Brief someone on a topic."
    assert [(a.name, a.description, a.required) for a in brief.arguments] == [
        ("topic", "What about", True), ("reader", None, False)
    ]
    assert [(str(r.uri), r.mime_type) for r in seen["resources"]] == [
        ("notes://picture", "image/png"), ("notes://today", "text/plain")
    ]
    assert [t.uri_template for t in seen["templates"]] == [
        "toolplug://results/{id}{?offset,length}", "notes://{day}/summary"
    ]
    # text from the plugin is redacted as results are
    (message,) = seen["brief"].messages
    assert message.content.text == "Brief you on tea; token ***."
    picture, said = seen["look"].messages
    assert isinstance(picture.content, types.ImageContent)
    assert picture.content.mime_type == "image/png"
    assert base64.b64decode(picture.content.data).startswith(b"\x89PNG")
    assert (said.role, said.content.text) == ("assistant", "I see it.")
    assert seen["today"].text == "Buy milk; token ***."
    assert isinstance(seen["picture"], types.BlobResourceContents)
    assert base64.b64decode(seen["picture"].blob).startswith(b"\x89PNG")
    assert (str(seen["summary"].uri), seen["summary"].text) == (
        "notes://friday/summary", "Summary of friday."
    )
    assert seen["complete_prompt"].completion.values == ["taxes", "tea", "trains"]
    assert seen["complete_template"].completion.values == ["monday", "tuesday"]
    # each bad input: a JSON-RPC error naming it
    unknown = seen["unknown_uri"]
    assert (unknown.code, unknown.message) == (-32002, "resource not found: notes://tomorrow")
    assert unknown.data == {"uri": "notes://tomorrow"}
    missing = seen["missing_argument"]
    assert (missing.code, missing.data) == (
        types.INVALID_PARAMS, {"prompt": "brief", "argument": "topic"}
    )
    assert missing.message == "prompt 'brief' needs the argument 'topic' (What about)"
    assert seen["unknown_argument"].message == (
        "prompt 'brief' takes no argument 'mood'; its arguments: reader, topic"
    )
    assert seen["unknown_prompt"].code == types.INVALID_PARAMS
    assert seen["unknown_prompt"].message == (
        "unknown prompt 'nope'; this server offers 'optional_tools', 'brief', 'look'"
    )
    assert seen["hidden"].message.startswith(
        "prompt 'hidden' is not offered: capability 'never_here' is missing"
    )
    assert seen["bad_completion"].message == "prompt 'brief' takes no argument 'where'"


async def _watch(url: str) -> dict[str, list[str]]:
    """Two sessions: one subscribes to notes://today, then the other (not subscribed)
    touches it, and it and another URI; what each session heard."""
    heard: dict[str, list[str]] = {"watcher": [], "other": []}
    got_one = anyio.Event()

    def listener(name: str) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                heard[name].append(str(message.params.uri))
                got_one.set()
        return on_message

    with anyio.fail_after(TIMEOUT):
        async with (
            httpx2.AsyncClient() as http_a, httpx2.AsyncClient() as http_b,
            streamable_http_client(url, http_client=http_a) as (read_a, write_a),
            streamable_http_client(url, http_client=http_b) as (read_b, write_b),
            ClientSession(read_a, write_a, message_handler=listener("watcher")) as watcher,
            ClientSession(read_b, write_b, message_handler=listener("other")) as other,
        ):
            await watcher.initialize()
            await other.initialize()
            await watcher.subscribe_resource("notes://today")
            await watcher.subscribe_resource("notes://picture")
            await watcher.unsubscribe_resource("notes://picture")
            for uri in ("notes://elsewhere", "notes://picture", "notes://today"):
                reply = await other.call_tool("touch_note", {"uri": uri})
                assert not reply.is_error
            await got_one.wait()
            await anyio.sleep(0.5)  # time for a wrong notification to arrive, were there one
    return heard


# resources/subscribe is the handshake-era method (MCP 2025-11-25, what the conformance
# suite and today's clients speak); the SDK warns that 2026-07-28 replaced it by listen
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_change_reaches_the_subscribed_session_only(tmp_path: Path) -> None:
    port = free_port()
    with http_server(tmp_path, port, env={**os.environ, **_env(tmp_path)}):
        heard = anyio.run(_watch, f"http://127.0.0.1:{port}/mcp")
    assert heard == {"watcher": ["notes://today"], "other": []}


class _Greeter:
    """A plugin made in code, for the server built in this process."""

    register_prompts = provides(
        prompt(name="greet", description="Greet someone.")(lambda who: f"Hello {who}.")
    )
    register_resources = provides(
        resource("greet://{who}", name="greeting", mime_type="text/plain")(
            lambda who: f"Hi {who}."
        )
    )


async def _modern(registry: Registry) -> dict[str, Any]:
    """The SDK's Client at its latest protocol version, against the server in memory."""
    seen: dict[str, Any] = {}
    async with Client(build_server(registry)) as client:
        seen["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
        seen["got"] = (await client.get_prompt("greet", {"who": "Ada"})).messages[0]
        seen["read"] = (await client.read_resource("greet://Bo")).contents[0]
        seen["missing"] = await _refusal(client.read_resource("greet://a/b"))
    return seen


def test_the_latest_protocol_gets_and_reads_them_too() -> None:
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("greeter", _Greeter)])
    try:
        seen = anyio.run(_modern, registry)
    finally:
        registry.close()
    assert seen["prompts"] == ["optional_tools", "greet"]
    assert seen["got"].content.text == "Hello Ada."
    assert seen["read"].text == "Hi Bo."
    assert (seen["missing"].code, seen["missing"].data) == (-32002, {"uri": "greet://a/b"})
