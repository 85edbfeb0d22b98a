"""Remembered decisions: approved or denied for a conversation, or always where the
arguments match; per owner, listed as [policies] rules, revoked; from an approver, from
the command line (a subprocess) deciding a waiting request."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import Site
from tests.helpers.posting import posting_plugin
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


async def _cli(config: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "toolplug", "approvals", *args, "--config", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def test_approved_always_from_the_command_line(tools: Any, tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'approvals.db'}"
    config = tmp_path / "toolplug.toml"
    config.write_text(f'[approvals]\ninbox = true\nstore = "{store}"\nwait_seconds = 1\n')
    registry = _load(tools, {"inbox": True, "store": store, "wait_seconds": 1})

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "daily report"}))
        for _ in range(400):
            pending = await registry.approvals.apending()
            if pending:
                break
            await asyncio.sleep(0.025)
        code, _, err = await _cli(config, "approve", pending[0].id, "--remember", "always")
        assert code == 0, err
        assert (await asyncio.wait_for(call, 10)).ok
        again = await registry.acall("post", {"text": "daily report"})  # runs unasked
        assert again.ok
        assert await registry.approvals.apending() == []
        other = await registry.acall("post", {"text": "something else"})  # waits, expires
        assert other.error is not None
        assert other.error.details["expired"] is True
        code, out, _ = await _cli(config, "remembered")
        assert code == 0
        assert '[[policies.post]]' in out
        assert 'schema = { const = "daily report" }' in out
        code, out, _ = await _cli(config, "remembered", "--json")
        (kept,) = json.loads(out)
        code, _, err = await _cli(config, "forget", kept["id"])
        assert code == 0, err
        code, _, err = await _cli(config, "forget", kept["id"])  # replayed
        assert code == 1
        assert "no remembered decision" in err
        late = await registry.acall("post", {"text": "daily report"})  # revoked: waits again
        assert late.error is not None
        assert late.error.details["expired"] is True

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert tools.RAN == ["daily report", "daily report"]
