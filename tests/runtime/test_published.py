"""The registry's prompts and resources: what is offered, rendered, read and completed, and
every way a plugin or a host gets them wrong, through ``toolplug.load`` with two plugins
registered from code (the second publishing what the first took)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import toolplug
from tests.helpers.media import png
from toolplug import (
    Capability,
    EmbeddedResource,
    EnvVar,
    Message,
    PluginError,
    PublishedContext,
    PublishedError,
    Registry,
    ResourceTemplate,
    prompt,
    provides,
    resource,
)

THREADS: list[str] = []
MISSING_KEY = "environment variable WEATHER_KEY is not set"


@prompt(description="Greet someone.", arguments={"who": "Whom to greet"})
def greet(who: str, tone: str = "warm") -> str:
    THREADS.append(threading.current_thread().name)
    return f"Greet {who}, {tone}ly. Token s3cret."


async def _suggest(argument: str, typed: str, others: Mapping[str, str]) -> list[str]:
    return [v for v in ("alice", "albert", "bob") if v.startswith(typed)]


@prompt(description="A conversation to go on with.", complete=_suggest)
async def chat(who: str, context: PublishedContext) -> list[Message]:
    await asyncio.sleep(0)
    return [
        Message("user", f"Hello {who} from {context.host.get('client')}"),
        Message("assistant", EmbeddedResource("notes://today", text="s3cret note")),
    ]


@prompt(description="Needs a key.", requires=("weather_key",))
def forecast() -> str:
    return "Sunny."


@prompt(description="Renders nonsense.")
def broken() -> Any:
    return 42


@prompt(description="Raises.")
def raising() -> str:
    raise RuntimeError("render exploded")


@resource("notes://today", mime_type="text/plain")
def today() -> str:
    return "Buy milk with s3cret."


@resource("notes://picture", mime_type="image/png")
async def picture() -> bytes:
    return png()


@resource("notes://{day}/summary", complete=lambda a, typed, o: ["monday", "tuesday"])
def summary(day: str) -> str:
    return f"Summary of {day}."


@resource("notes://locked", requires=("weather_key",))
def locked() -> str:
    return "hidden"


class Publisher:
    """A plugin made in code: prompts, resources, a capability and a bad item each."""

    register_prompts = provides(greet, chat, forecast, broken, raising, "not a prompt")
    register_resources = provides(today, picture, summary, locked)
    register_capabilities = provides(
        Capability(name="weather_key", description="A key.", detectors=(EnvVar("WEATHER_KEY"),),
                   setup="export WEATHER_KEY=...")
    )


class Copycat:
    """A second plugin publishing a prompt name and a URI the first took."""

    register_prompts = provides(prompt(name="greet", description="Another greet.")(lambda: "x"))
    register_resources = provides(
        resource("notes://today")(lambda: "other"),
        ResourceTemplate("notes://{day}/summary", "again", lambda v, c: ""),
    )


@pytest.fixture
def registry() -> Iterator[Registry]:
    found = toolplug.load(
        {}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("publisher", Publisher), ("copycat", Copycat)]
    )
    found.redactor.add("s3cret")
    yield found
    found.close()


def test_offered_items_leave_out_what_lacks_a_capability(registry: Registry) -> None:
    assert [p.name for p in registry.prompts()] == ["broken", "chat", "greet", "raising"]
    assert [r.uri for r in registry.resources()] == ["notes://picture", "notes://today"]
    assert [t.uri_template for t in registry.resource_templates()] == ["notes://{day}/summary"]
    why = registry.published_availability(forecast)
    assert not why.available
    assert why.reasons == (f"capability 'weather_key' is missing: {MISSING_KEY}",)
    assert why.setup == ("export WEATHER_KEY=...",)


def test_a_granted_capability_offers_them() -> None:
    granted = toolplug.load(
        {}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("publisher", Publisher)],
        grant=["weather_key"],
    )
    try:
        assert "forecast" in [p.name for p in granted.prompts()]
        assert granted.read_resource("notes://locked").text == "hidden"
    finally:
        granted.close()


def test_bad_items_and_duplicates_are_reported_against_their_plugin(registry: Registry) -> None:
    problems = [(p.kind, p.plugin, p.message) for p in registry.problems]
    assert ("register", "publisher",
            "register_prompts got 'not a prompt'; expected a toolplug.Prompt") in problems
    duplicates = sorted(m for kind, plugin, m in problems if kind == "duplicate"
                        and plugin == "copycat")
    assert duplicates == [
        "prompt 'greet' is already registered by publisher; that one is kept and this one is "
        "ignored",
        "resource 'notes://today' is already registered by publisher; that one is kept and "
        "this one is ignored",
        "resource template 'notes://{day}/summary' is already registered by publisher; that "
        "one is kept and this one is ignored",
    ]
    assert registry.read_resource("notes://today").text == "Buy milk with ***."  # the first


def test_get_prompt_renders_in_a_worker_thread_and_redacts(registry: Registry) -> None:
    THREADS.clear()
    got = asyncio.run(registry.aget_prompt("greet", {"who": "Ada"}))
    assert got.messages == (Message("user", "Greet Ada, warmly. Token ***."),)
    assert len(THREADS) == 1
    assert THREADS[0] != threading.main_thread().name  # a worker's, not the loop's
    assert registry.get_prompt("greet", {"who": "Bo", "tone": "cool"}).messages[0].content == (
        "Greet Bo, coolly. Token ***."
    )


def test_an_async_prompt_with_parts_sync_and_async(registry: Registry) -> None:
    got = registry.get_prompt("chat", {"who": "Ada"}, context={"client": "me"})
    assert [m.role for m in got.messages] == ["user", "assistant"]
    assert got.messages[0].content == "Hello Ada from me"
    assert got.messages[1].content == EmbeddedResource("notes://today", text="*** note")

    async def inside_a_loop() -> Any:  # the sync form from a running loop still works
        return registry.get_prompt("chat", {"who": "Bo"})

    assert asyncio.run(inside_a_loop()).messages[0].content == "Hello Bo from None"


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        # a prompt nobody published
        ("nope", {}, ("unknown_prompt", None, "unknown prompt 'nope'; the prompts offered: "
         "broken, chat, greet, raising")),
        # a required argument left out
        ("greet", {}, ("missing_argument", "who", "prompt 'greet' needs the argument 'who' "
         "(Whom to greet)")),
        # blank is missing too
        ("greet", {"who": "  "}, ("missing_argument", "who", "needs the argument 'who'")),
        # an argument it does not take
        ("greet", {"who": "a", "mood": "x"}, ("unknown_argument", "mood",
         "prompt 'greet' takes no argument 'mood'; its arguments: tone, who")),
        # registered, but its capability is missing
        ("forecast", {}, ("unavailable", None, "prompt 'forecast' is not offered: capability "
         "'weather_key' is missing")),
    ],
)
def test_get_prompt_refuses_bad_input_naming_it(
    registry: Registry, name: str, arguments: dict[str, str],
    expected: tuple[str, str | None, str],
) -> None:
    kind, argument, message = expected
    with pytest.raises(PublishedError) as raised:
        registry.get_prompt(name, arguments)
    assert (raised.value.kind, raised.value.prompt, raised.value.argument) == (
        kind, name, argument
    )
    assert message in str(raised.value)


def test_a_plugins_failure_is_a_plugin_error(registry: Registry) -> None:
    with pytest.raises(PluginError, match="prompt 'broken' rendered int; expected text"):
        registry.get_prompt("broken")
    with pytest.raises(PluginError, match="raising raised RuntimeError: render exploded"):
        asyncio.run(registry.aget_prompt("raising"))


def test_read_resource_text_blob_and_template(registry: Registry) -> None:
    text = registry.read_resource("notes://today")
    assert (text.mime_type, text.text, text.data) == ("text/plain", "Buy milk with ***.", None)
    blob = asyncio.run(registry.aread_resource("notes://picture"))
    assert (blob.mime_type, blob.data) == ("image/png", png())
    templated = registry.read_resource("notes://mon%20day/summary")
    assert (templated.uri, templated.text, templated.mime_type) == (
        "notes://mon%20day/summary", "Summary of mon day.", "text/plain"
    )


@pytest.mark.parametrize(
    ("uri", "kind"),
    [
        ("notes://tomorrow", "unknown_resource"),  # nothing has that URI
        ("notes://a/b/summary", "unknown_resource"),  # no template matches
        ("notes://locked", "unavailable"),  # its capability is missing
    ],
)
def test_read_resource_refuses_naming_the_uri(registry: Registry, uri: str, kind: str) -> None:
    with pytest.raises(PublishedError) as raised:
        registry.read_resource(uri)
    assert (raised.value.kind, raised.value.uri) == (kind, uri)
    assert uri in str(raised.value)


def test_complete_prompt_arguments_and_template_variables(registry: Registry) -> None:
    assert asyncio.run(registry.acomplete("prompt", "chat", "who", "al")) == ["alice", "albert"]
    assert registry.complete("prompt", "greet", "who", "a") == []  # it suggests nothing
    assert registry.complete("resource", "notes://{day}/summary", "day") == ["monday", "tuesday"]
    with pytest.raises(PublishedError, match="takes no argument 'where'"):
        registry.complete("prompt", "chat", "where")
    with pytest.raises(PublishedError, match="has no variable 'month'"):
        registry.complete("resource", "notes://{day}/summary", "month")
    with pytest.raises(PublishedError, match="unknown prompt 'nope'"):
        registry.complete("prompt", "nope", "x")
