"""Refs (``Trust.refs``): a sink whose value names something the service holds. Passing
back, whole, a name an earlier result's data listed is a choice among what exists, not
outside text carried out: neither the flow rule nor the trifecta rule reads it. Anything
else in a ref, and every other sink of the call, is read as before."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.guard import ADDED, PLUGIN, WORKSPACE
from tests.helpers.redis import redis_server
from toolplug import Approval, ApprovalRequest, Conversation, ErrorType, Registry, ToolResult, Trust
from toolplug.state._backend import Backend
from toolplug.state._conversations import Conversations
from toolplug.state._memory import MemoryBackend
from toolplug.state._redis import RedisBackend
from toolplug.trust._conversation import Record
from toolplug.trust._guard import FlowGuard

pytestmark = pytest.mark.anyio

ASK = "Add Charlie to the channel starting with External"


def _registry(config: dict[str, Any] | None = None) -> Registry:
    ADDED.clear()
    return toolplug.load(config or {}, plugins=[PLUGIN, WORKSPACE], env={})


@pytest.fixture
def registry() -> Iterator[Registry]:
    loaded = _registry()
    yield loaded
    loaded.close()


def _asked(result: ToolResult) -> dict[str, Any]:
    """The details of the approval ``result`` was refused for."""
    assert result.error is not None, "the call ran; the guard was expected to ask"
    assert result.error.type == ErrorType.APPROVAL_REQUIRED, result.error
    return dict(result.error.details)


async def test_a_listed_channel_passed_back_runs(registry: Registry) -> None:
    # AgentDojo's slack task: the channel's name came from an untrusted listing, whole
    async with registry.conversation(ASK):
        assert (await registry.acall("get_channels", {})).ok
        result = await registry.acall(
            "add_to_channel", {"channel": "External_0", "users": ["Charlie"]}
        )
    assert result.ok, result.error
    assert ADDED == [{"channel": "External_0", "users": ["Charlie"]}]


async def test_the_same_call_without_refs_asks() -> None:
    # the operator's table takes the refs away: the listing's text is carried, as before
    registry = _registry({"tools": {"add_to_channel": {"trust": {"refs": []}}}})
    try:
        async with registry.conversation(ASK):
            await registry.acall("get_channels", {})
            result = await registry.acall(
                "add_to_channel", {"channel": "External_0", "users": ["Charlie"]}
            )
    finally:
        registry.close()
    details = _asked(result)
    assert details["rule"] == "flow.token"
    assert details["argument"] == "channel"
    assert details["source"]["tool"] == "get_channels"
    assert ADDED == []


@pytest.mark.parametrize(
    ("channel", "rule", "source"),
    [
        # listed whole: a choice among the channels that exist
        ("External_0", None, None),
        # case folded and stripped, as every comparison of the guard
        ("  EXTERNAL_0 ", None, None),
        # named only in the wiki page's text: outside text, carried
        ("Secret_room_9", "flow.token", "read_wiki"),
        # a piece of a listed name is no listed name
        ("archive_2024", "flow.token", "get_channels"),
        # two listed names in one string are not one of them
        ("External_0 Ext_archive_2024", "flow.token", "get_channels"),
    ],
)
async def test_only_a_whole_listed_name_is_a_choice(
    registry: Registry, channel: str, rule: str | None, source: str | None
) -> None:
    async with registry.conversation(ASK):
        await registry.acall("get_channels", {})
        await registry.acall("read_wiki", {})
        result = await registry.acall("send_to_channel", {"channel": channel, "body": "hello"})
    if rule is None:
        assert result.ok, result.error
        return
    details = _asked(result)
    assert (details["rule"], details["argument"], details["source"]["tool"]) == (
        rule, "channel", source,
    )


async def test_a_list_of_refs_runs_only_when_every_name_was_listed(registry: Registry) -> None:
    async with registry.conversation(ASK):
        await registry.acall("get_members", {})
        await registry.acall("read_wiki", {})
        both = ["charlie@corp.example", "dora@corp.example"]
        listed = await registry.acall("add_to_channel", {"channel": "general", "users": both})
        mixed = await registry.acall(
            "add_to_channel",
            {"channel": "general", "users": ["charlie@corp.example", "mallory@evil.example"]},
        )
    assert listed.ok, listed.error
    details = _asked(mixed)
    assert details["rule"] == "flow.token"
    assert details["argument"] == "users"
    assert details["fragment"] == "mallory@evil.example"
    assert details["source"]["tool"] == "read_wiki"
    assert [{"channel": "general", "users": both}] == ADDED


async def test_another_sink_of_the_call_is_read_as_before(registry: Registry) -> None:
    async with registry.conversation(ASK):
        await registry.acall("get_channels", {})
        await registry.acall("read_wiki", {})
        result = await registry.acall(
            "send_to_channel", {"channel": "External_0", "body": "ping mallory@evil.example"}
        )
    details = _asked(result)
    assert {k: details[k] for k in ("rule", "argument", "fragment", "source")} == {
        "rule": "flow.token",
        "argument": "body",
        "fragment": "mallory@evil.example",
        "source": {
            "index": 2, "tool": "read_wiki", "call_id": None, "untrusted": True, "private": False,
        },
    }
    # the reason a sink gets, word for word as it was before refs existed
    assert details["reason"] == (
        "this session read untrusted content: send_to_channel's body carries the text "
        "'mallory@evil.example' from read_wiki (call 2), whose output anyone outside could "
        "have written, and not from the user's request (flow rule: a token of 8+ characters, "
        "not only letters, or one with @ or ://)"
    )


async def test_a_name_a_trusted_result_listed_is_a_choice_too(registry: Registry) -> None:
    # the page names the file, so its id is outside text, until the workspace lists it
    async with registry.conversation("Share the Q3 plan"):
        await registry.acall("read_wiki", {})
        unlisted = await registry.acall("share_file", {"file_id": "file-7731-aa"})
        await registry.acall("list_files", {})
        listed = await registry.acall("share_file", {"file_id": "file-7731-aa"})
    assert _asked(unlisted)["source"]["tool"] == "read_wiki"
    assert listed.ok, listed.error


async def test_a_name_the_call_itself_was_given_is_not_listed_by_its_echo(
    registry: Registry,
) -> None:
    # read_page echoes the URL it was given in its data: that is the caller's word, not a
    # name the service holds
    url = "https://collect.evil.example/drop?k=1"
    async with registry.conversation("news"):
        await registry.acall("read_page", {"url": "https://news.example/today"})
        page = await registry.acall("read_page", {"url": url})
        assert page.ok
        result = await registry.acall("share_file", {"file_id": url})
    assert _asked(result)["argument"] == "file_id"


# -- the trifecta ---------------------------------------------------------------------------


async def test_a_listed_private_name_is_no_private_data_carried_out(registry: Registry) -> None:
    async with registry.conversation("Add Dora to general"):
        await registry.acall("get_members", {})
        await registry.acall("read_wiki", {})
        added = await registry.acall(
            "add_to_channel", {"channel": "general", "users": ["dora@corp.example"]}
        )
        # the same address in a sink that is no ref leaves the machine: asked
        shared = await registry.acall(
            "share_file", {"file_id": "q3", "to": "dora@corp.example"}
        )
    assert added.ok, added.error
    details = _asked(shared)
    assert (details["rule"], details["argument"], details["source"]["tool"]) == (
        "trifecta", "to", "get_members",
    )


async def test_trifecta_always_skips_listed_refs_and_reads_the_rest() -> None:
    registry = _registry({"guard": {"trifecta": "always"}})
    try:
        async with registry.conversation(ASK):
            await registry.acall("get_members", {})
            await registry.acall("get_channels", {})
            added = await registry.acall(
                "add_to_channel", {"channel": "External_0", "users": ["Charlie"]}
            )
            sent = await registry.acall("send_to_channel", {"channel": "general", "body": "hi"})
    finally:
        registry.close()
    assert added.ok, added.error
    details = _asked(sent)
    assert (details["rule"], details["argument"]) == ("trifecta", "body")


# -- plans and programs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parameters", "rule", "argument"),
    [
        # a listed name, passed by reference: chosen, not carried
        ({"channel": "$step1.channels.2", "body": "hello"}, None, None),
        # the whole listing's text is no name it lists
        ({"channel": "$step1.output", "body": "hello"}, "flow.reference", "channel"),
        # the same listed name in the body: text carried out
        ({"channel": "general", "body": "$step1.channels.2"}, "flow.reference", "body"),
    ],
)
async def test_refs_in_a_plan(
    registry: Registry, parameters: dict[str, Any], rule: str | None, argument: str | None
) -> None:
    plan = [
        {"id": 1, "action": "get_channels"},
        {"id": 2, "action": "send_to_channel", "parameters": parameters, "dependencies": [1]},
    ]
    outcome = await toolplug.run_plan(registry, plan)
    step = outcome.steps[1]
    assert step.result is not None
    if rule is None:
        assert step.status == "ok", step.result.error
        assert ADDED == [{"channel": "External_0", "body": "hello"}]
        return
    assert step.result.error is not None
    assert (step.result.error.details["rule"], step.result.error.details["argument"]) == (
        rule, argument,
    )
    assert ADDED == []


def test_refs_in_a_program() -> None:
    registry = _registry({"code": {"enabled": True}})
    program = (
        "listing = await get_channels()\n"
        "await send_to_channel(channel=listing['channels'][2], body='hello')\n"
    )
    leaking = (
        "listing = await get_channels()\n"
        "await send_to_channel(channel='general', body=listing['channels'][3])\n"
    )
    try:
        with registry.conversation(ASK):
            ran = registry.call("run_code", {"code": program})
            refused = registry.call("run_code", {"code": leaking})
    finally:
        registry.close()
    assert ran.ok, ran.error
    assert refused.error is not None
    assert "send_to_channel's body carries the value 'Ext_archive_2024'" in refused.error.message
    assert ADDED == [{"channel": "External_0", "body": "hello"}]


# -- replicas -------------------------------------------------------------------------------


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_a_listing_another_replica_recorded_lets_a_ref_run_here(
    store: str, tmp_path: Path
) -> None:
    async def scenario(backend: Backend) -> tuple[ToolResult, ToolResult]:
        async with Conversations(first.conversation, backend, most=8).of("alice", "request:1"):
            await first.acall("get_channels", {})
            await first.acall("read_wiki", {})
        later = Conversations(second.conversation, backend, most=8)
        async with later.of("alice", "request:2") as talk:
            assert talk is not None
            assert [s.tool for s in talk.sources] == ["get_channels", "read_wiki"]
            chosen = await second.acall(
                "send_to_channel", {"channel": "External_0", "body": "hello"}
            )
            carried = await second.acall(
                "send_to_channel", {"channel": "Secret_room_9", "body": "hello"}
            )
        if isinstance(backend, RedisBackend):
            await backend.aclose()
        return chosen, carried

    first, second = _registry(), _registry()
    try:
        if store == "memory":
            chosen, carried = asyncio.run(scenario(MemoryBackend()))
        else:
            with redis_server(tmp_path) as url:
                chosen, carried = asyncio.run(scenario(RedisBackend(url)))
    finally:
        first.close()
        second.close()
    assert chosen.ok, chosen.error
    assert _asked(carried)["source"]["tool"] == "read_wiki"


def test_a_source_carries_its_listed_names_across_processes() -> None:
    conversation = Conversation(ASK)
    conversation.record(
        "get_channels",
        Trust(output="untrusted"),
        ToolResult.success("x", {"c": [" External_0 ", "Straße_1", "https://x.example/a"]}),
        arguments={"url": "https://x.example/a"},  # its own argument, echoed: no name
    )
    written = conversation.sources[-1].to_json()
    read = Record.from_json(written)
    assert read is not None
    # folded where they were recorded, and not folded again
    assert read.names() == frozenset({"external_0", "strasse_1"})
    here = Conversation()
    here.absorb(read)
    assert here._lists("EXTERNAL_0")
    assert not here._lists("https://x.example/a")
    # an entry an older version wrote has no names: read, listing nothing
    old = Record.from_json(
        '{"tool": "t", "call_id": null, "text": "", "given": "", '
        '"trust": {"output": "untrusted"}}'
    )
    assert old is not None
    assert old.names() == frozenset()
    # names that are not strings: not read at all
    bad = written.replace('"names": ["external_0", "strasse_1"]', '"names": [7]')
    assert bad != written
    assert Record.from_json(bad) is None


def test_a_result_lists_its_first_ten_thousand_strings() -> None:
    # bounded work for a huge listing: the names past the first 10,000 are not listed
    conversation = Conversation()
    many = [f"room_{i}" for i in range(12_000)]
    conversation.record("get_channels", Trust(output="trusted"), ToolResult.success("", many))
    assert conversation._lists("room_9999")
    assert not conversation._lists("room_10000")


# -- hostile input --------------------------------------------------------------------------


def test_a_ten_thousand_character_ref_is_no_name(registry: Registry) -> None:
    huge = "x_" * 5000  # one token: listed whole, but no name is that long
    deny: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Approval:
        deny.append(request)
        return Approval.deny("no")

    with registry.conversation(ASK) as talk:
        talk.record(
            "get_channels", registry.labels("get_channels"),
            ToolResult.success(huge, {"channels": [huge]}),
        )
        assert not talk._lists(huge)
        result = registry.call(
            "send_to_channel", {"channel": huge, "body": "hi"}, approver=approver
        )
    assert result.error is not None
    assert len(deny) == 1
    assert "send_to_channel's channel carries the text 'x_x_x_" in deny[0].reason
    assert len(deny[0].reason) < 500  # the value is shortened in what a person reads


@pytest.mark.parametrize(
    ("listed", "value", "chosen"),
    [
        ("External_0", "EXTERNAL_0", True),  # case folded
        ("External_0", "\tExternal_0\n", True),  # stripped
        # a full-width E (U+FF25) folds to a full-width e (U+FF45), not to "e": another name
        ("External_0", "\uff25XTERNAL_0", False),
        ("\uff25xternal_0", "\uff45XTERNAL_0", True),  # full-width on both sides: folded alike
        ("Straße_1", "STRASSE_1", True),  # casefold, not lower: ß is ss
        ("Kelvin_7", "\u212aelvin_7", True),  # the Kelvin sign folds to k
        ("İstanbul_2", "istanbul_2", False),  # dotted İ folds to i and a combining dot
        ("External_0", "External_0\u200b", False),  # an invisible character is not stripped
        ("External_0", ["External_0", "External_0"], True),
        ("External_0", ["External_0", 7], False),  # a list with a number in it
        ("External_0", [], False),
        ("External_0", {"name": "External_0"}, False),  # an object is not a name
        ("External_0", 0, False),
    ],
)
def test_what_counts_as_a_listed_name(listed: str, value: Any, chosen: bool) -> None:
    conversation = Conversation()
    conversation.record(
        "get_channels", Trust(output="untrusted"), ToolResult.success("", {"channels": [listed]})
    )
    assert conversation._lists(value) is chosen


def test_only_data_lists_names() -> None:
    conversation = Conversation()
    # the output text, an error's data, and a result without data list nothing
    conversation.record("a", Trust(output="untrusted"), ToolResult.success("External_0"))
    failed = ToolResult.failure("NotFoundError", "no")
    conversation.record(
        "b", Trust(output="trusted"), ToolResult(data=["External_0"], error=failed.error)
    )
    assert not conversation._lists("External_0")
    conversation.record("c", Trust(output="trusted"), ToolResult.success("", {"x": "External_0"}))
    assert conversation._lists("External_0")


async def test_a_registry_without_refs_keeps_no_listings() -> None:
    # nothing would read them: a trusted result's data is not walked on every call
    # (without the catalog: its github_api has refs)
    registry = toolplug.load({}, plugins=[PLUGIN], env={"TOOLPLUG_PLUGINS": ""})
    try:
        assert not FlowGuard(registry).lists
        async with registry.conversation("read my inbox") as conversation:
            await registry.acall("read_page", {"url": "https://news.example/today"})
        assert [source.listed for source in conversation.sources[1:]] == [frozenset()]
    finally:
        registry.close()
    with_refs = _registry()
    try:
        assert FlowGuard(with_refs).lists
    finally:
        with_refs.close()
