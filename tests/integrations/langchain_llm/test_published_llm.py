"""toolplug.integrations.llm's fragment loaders of the plugins' prompts and resources,
through llm's own command line and its echo model (llm-echo: the reply shows the prompt and
the attachments it was given), over a site with a plugin that publishes them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import llm
import pytest

from tests.helpers.cli import Site
from tests.helpers.media import png

PICTURE = png(3, 2)
PICTURE_ID = llm.Attachment(type="image/png", content=PICTURE).id()  # type: ignore[no-untyped-call]
"""llm's id of an attachment: the hash of its bytes."""

PUBLISHER = f'''
from toolplug import Image, Message, prompt, provides, resource

PICTURE = {PICTURE!r}


@prompt(description="Show a picture and ask about it.")
def show(subject: str) -> list[Message]:
    return [Message("user", Image(PICTURE, "image/png")), Message("user", f"What is {{subject}}?")]


@prompt(description="A conversation with a reply in it.")
def replied() -> list[Message]:
    return [Message("user", "Hi."), Message("assistant", "Hello.")]


@resource("notes://today", mime_type="text/plain")
def today() -> str:
    return "Buy milk."


@resource("notes://chart.png", mime_type="image/png")
def chart() -> bytes:
    return PICTURE


register_prompts = provides(show, replied)
register_resources = provides(today, chart)
'''


@pytest.fixture
def env(site: Site, tmp_path: Path) -> dict[str, str]:
    site.add("toolplug-publisher", entry_points={"publisher": "toolplug_publisher"},
             modules={"toolplug_publisher": PUBLISHER})
    return site.env(
        TOOLPLUG_PLUGINS="toolplug-publisher", TOOLPLUG_NO_CACHE="1",
        LLM_USER_PATH=str(tmp_path / "llm-home"),
    )


def echo(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llm", "-m", "echo", *args], capture_output=True, text=True,
        env=env, check=False, timeout=120,
    )


def said(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


def test_a_resource_is_a_fragment_or_an_attachment(env: dict[str, str]) -> None:
    reply = said(echo(env, "-f", "toolplug-resource:notes://today",
                      "-f", "toolplug-resource:notes://chart.png", "Read these."))
    assert reply["prompt"] == "Buy milk.\nRead these."
    (attachment,) = reply["attachments"]
    assert attachment["type"] == "image/png"
    assert attachment["id"] == PICTURE_ID


def test_a_prompt_is_its_fragments_and_attachments(env: dict[str, str]) -> None:
    reply = said(echo(env, "-f", "toolplug-prompt:show?subject=this+chart", "Be brief."))
    assert reply["prompt"] == "What is this chart?\nBe brief."
    assert [(a["type"], a["id"]) for a in reply["attachments"]] == [
        ("image/png", PICTURE_ID)
    ]


def test_what_cannot_be_a_fragment_is_refused_with_its_reason(env: dict[str, str]) -> None:
    missing = echo(env, "-f", "toolplug-prompt:show", "x")
    assert missing.returncode != 0
    assert "prompt 'show' needs the argument 'subject'" in missing.stderr
    replied = echo(env, "-f", "toolplug-prompt:replied", "x")
    assert "message 1 is the assistant's" in replied.stderr
    unknown = echo(env, "-f", "toolplug-resource:notes://nowhere", "x")
    assert "resource not found: notes://nowhere" in unknown.stderr
