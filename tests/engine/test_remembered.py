"""Remembered decisions: approved or denied for a conversation, or always where the
arguments match; per owner, listed as [policies] rules, revoked; from an approver, from
the command line (a subprocess) deciding a waiting request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import Site
from tests.helpers.posting import approvals_cli, posting_plugin
from toolplug import Approval, ErrorType


@pytest.fixture
def tools(site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with posting_plugin(site, monkeypatch, "kept_tools") as module:
        yield module


def _load(tools: Any, approvals: dict[str, Any], **options: Any) -> Any:
    return toolplug.load({"approvals": approvals}, env={"TOOLPLUG_PLUGINS": ""},
                         plugins=[("kept_tools", tools)], **options)


def test_remembered_for_this_conversation(tools: Any) -> None:
    asked: list[str] = []

    def approver(request: Any) -> Approval:
        asked.append(request.arguments["text"])
        return Approval.approve("fine", remember="conversation")

    registry = _load(tools, {"store": "memory"}, approver=approver)
    try:
        with registry.conversation("post what I say"):
            assert registry.call("post", {"text": "a"}).ok
            assert registry.call("post", {"text": "a"}).ok  # remembered: not asked again
            assert registry.call("post", {"text": "b"}).ok  # any arguments, this conversation
        with registry.conversation("another one"):
            assert registry.call("post", {"text": "a"}).ok  # another conversation: asked
        (kept, *_) = registry.approvals.remembered()
        assert kept.scope == "conversation"
        assert kept.action == "allow"
    finally:
        registry.close()
    assert asked == ["a", "a"]
    assert tools.RAN == ["a", "a", "b", "a"]


def test_an_always_deny_holds_for_its_owner_only(tools: Any) -> None:
    asked: list[str | None] = []

    def approver(request: Any) -> Approval:
        asked.append(request.arguments["text"])
        return Approval.deny("never this", remember="always", match={
            "argument": "text", "schema": {"pattern": "^spam"},
        })

    registry = _load(tools, {"store": "memory"}, approver=approver)
    try:
        for text in ("spam 1", "spam 2"):
            result = registry.call("post", {"text": text}, context={"client": "alice"})
            assert result.error is not None
            assert result.error.type == ErrorType.PERMISSION
        assert "remembered decision rem_" in result.error.message  # the second: remembered
        registry.call("post", {"text": "spam 3"}, context={"client": "bob"})  # bob is asked
        (rule,) = registry.approvals.remembered("alice")
        (bobs,) = registry.approvals.remembered("bob")  # bob's answer is his own
        assert bobs.id != rule.id
        assert rule.rule().splitlines()[1:] == [
            'action = "deny"', 'argument = "text"', 'schema = { pattern = "^spam" }',
            'reason = "never this"',
        ]
        with pytest.raises(toolplug.UsageError, match="another owner"):
            registry.approvals.forget(rule.id, by="bob")  # forged: not bob's to revoke
        registry.approvals.forget(rule.id, by="alice")
        registry.call("post", {"text": "spam 4"}, context={"client": "alice"})  # asked again
    finally:
        registry.close()
    assert asked == ["spam 1", "spam 3", "spam 4"]
    assert tools.RAN == []


async def _waiting(registry: Any, text: str) -> Any:
    """The pending request of the call posting ``text``, once it waits (a minute at most)."""
    for _ in range(2400):
        for request in await registry.approvals.apending():
            if request.arguments.get("text") == text:
                return request
        await asyncio.sleep(0.025)
    raise AssertionError(f"the call posting {text!r} never waited")


async def _waits_then_denied(registry: Any, tools: Any, text: str) -> None:
    """The call posting ``text`` waits for a person (nothing remembered decides it): it is
    pending, has not run, and ends when denied."""
    ran = list(tools.RAN)
    call = asyncio.create_task(registry.acall("post", {"text": text}))
    request = await _waiting(registry, text)
    assert not call.done()
    assert ran == tools.RAN  # it waits: the tool has not run
    await registry.approvals.adecide(request.id, False, note="not this one")
    result = await asyncio.wait_for(call, 30)
    assert result.error is not None
    assert result.error.type == ErrorType.PERMISSION
    assert "not this one" in result.error.message
    assert ran == tools.RAN


def test_approved_always_from_the_command_line(tools: Any, tmp_path: Path) -> None:
    # A long wait: every decision arrives when its deciding process is ready (a subprocess
    # starts in seconds on a loaded machine), and a call that must wait is seen pending and
    # denied, never left to expire.
    store = f"sqlite:{tmp_path / 'approvals.db'}"
    config = tmp_path / "toolplug.toml"
    config.write_text(f'[approvals]\ninbox = true\nstore = "{store}"\nwait_seconds = 600\n')
    registry = _load(tools, {"inbox": True, "store": store, "wait_seconds": 600})

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "daily report"}))
        request = await _waiting(registry, "daily report")
        code, _, err = await approvals_cli(config, "approve", request.id, "--remember", "always")
        assert code == 0, err
        assert (await asyncio.wait_for(call, 30)).ok
        again = await asyncio.wait_for(  # runs unasked
            registry.acall("post", {"text": "daily report"}), 30
        )
        assert again.ok
        assert await registry.approvals.apending() == []
        await _waits_then_denied(registry, tools, "something else")  # the pattern: exact
        code, out, _ = await approvals_cli(config, "remembered")
        assert code == 0
        assert '[[policies.post]]' in out
        assert 'schema = { const = "daily report" }' in out
        code, out, _ = await approvals_cli(config, "remembered", "--json")
        (kept,) = json.loads(out)
        code, _, err = await approvals_cli(config, "forget", kept["id"])
        assert code == 0, err
        code, _, err = await approvals_cli(config, "forget", kept["id"])  # replayed
        assert code == 1
        assert "no remembered decision" in err
        await _waits_then_denied(registry, tools, "daily report")  # revoked: waits again

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert tools.RAN == ["daily report", "daily report"]
