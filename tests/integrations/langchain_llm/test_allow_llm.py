"""``toolbox(allow=...)`` through llm's own chain, driven by llm's ``echo`` test model: the
page asks for a post and the model posts words of its own, so value flow finds nothing;
the bound of the effects the user asked for asks before the post (``before_call``), in the
toolbox's conversation or inside one the host opened (never wider than the host's)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import pytest

import toolplug
from tests.helpers.guard import PLUGIN, POSTED
from toolplug import ApprovalRequest
from toolplug.integrations.llm import Toolplug, approve_calls, toolbox

NEWS = "https://news.example/today"
OWN_WORDS = {"text": "Weather is fine today."}
PROMPT = json.dumps({
    "tool_calls": [
        {"name": "read_page", "arguments": {"url": NEWS}},
        {"name": "post", "arguments": OWN_WORDS},
    ]
})
"""What the echo model calls: the page, then the post."""


@pytest.fixture
def registry() -> Iterator[toolplug.Registry]:
    POSTED.clear()
    loaded = toolplug.load({}, plugins=[PLUGIN], env={"TOOLPLUG_PLUGINS": ""})
    yield loaded
    loaded.close()


@pytest.fixture(autouse=True)
def _llm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))


@pytest.mark.parametrize(
    ("host", "allow", "request_text", "asks"),
    [
        (None, ["read_page"], "Summarize today's news", True),  # no post asked for
        (None, ["read_page", "post"], "Summarize today's news", False),  # one asked for
        (None, ["research", "publish"], "Summarize today's news", False),  # categories
        (None, {"read_page": None, "post": 0}, "Summarize today's news", True),  # none
        (None, "inferred", "Summarize today's news", True),  # no verb of post in it
        (None, "inferred", "Read the news and post a summary", False),  # "post" names it
        (None, None, "Summarize today's news", False),  # unbounded: as before
        (["read_page", "post"], ["read_page"], "Post the news", True),  # it narrows
        (["read_page"], ["read_page", "post"], "Post the news", True),  # and cannot widen
        (["read_page", "post"], ["read_page", "post"], "Post the news", False),  # both
    ],
)
def test_llm_asks_before_a_call_outside_the_bound(
    registry: toolplug.Registry, host: Any, allow: Any, request_text: str, asks: bool
) -> None:
    asked: list[ApprovalRequest] = []

    def ask(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False  # the person says no: the call never runs

    box = toolbox(registry, request=request_text, allow=allow)
    opened = registry.conversation(request_text, allow=host) if host is not None else None
    with opened if opened is not None else contextlib.nullcontext():
        llm.get_model("echo").chain(
            PROMPT, tools=[box], before_call=approve_calls(ask)
        ).text()
    if not asks:
        assert asked == []
        assert [OWN_WORDS] == POSTED
        return
    assert [r.tool for r in asked] == ["post"]  # the read is inside every bound
    assert "(effects rule)" in asked[0].reason
    assert POSTED == []
    if opened is not None:
        assert "(it allows: read_page)" in asked[0].reason
        assert opened.effects == frozenset(host)  # the host's bound unchanged


def test_llm_approved_call_outside_the_bound_runs_once(registry: toolplug.Registry) -> None:
    box = toolbox(registry, request="Summarize today's news", allow=["read_page"])
    llm.get_model("echo").chain(
        PROMPT, tools=[box], before_call=approve_calls(lambda request: True)
    ).text()
    assert [OWN_WORDS] == POSTED


def test_llm_async_chain_is_bounded_too(registry: toolplug.Registry) -> None:
    asked: list[ApprovalRequest] = []

    def ask(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    async def main() -> None:
        box = toolbox(registry, request="Summarize today's news", allow=["read_page"])
        chain = llm.get_async_model("echo").chain(
            PROMPT, tools=[box], before_call=approve_calls(ask)
        )
        await chain.text()

    asyncio.run(main())
    assert [r.tool for r in asked] == ["post"]
    assert "(effects rule)" in asked[0].reason
    assert POSTED == []


def test_a_malformed_allow_fails_when_the_toolbox_is_made(registry: toolplug.Registry) -> None:
    with pytest.raises(TypeError, match=r"allow\['post'\] is -1: give how many calls"):
        toolbox(registry, allow={"post": -1})
    with pytest.raises(TypeError, match="give a list of tool names or categories"):
        Toolplug(allow="post")
