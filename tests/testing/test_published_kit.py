"""The contract kit's checks of a plugin's prompts and resources: an installed distribution
whose items pass, and one whose every item breaks one rule, each reported once."""

from __future__ import annotations

import sys

import pytest

from tests.helpers.cli import Site
from toolplug.testing import ContractError, check_plugin

_GOOD = '''
from toolplug import Message, prompt, provides, resource
import base64

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


@prompt(description="Review code.")
def review(code: str) -> list:
    return [Message("user", f"Review: {code}")]


@resource("notes://logo", mime_type="image/png")
def logo() -> bytes:
    return PNG


@resource("notes://{day}/summary", mime_type="application/json")
def summary(day: str) -> str:
    return '{"day": "%s"}' % day


register_prompts = provides(review)
register_resources = provides(logo, summary)
'''

_BAD = '''
from toolplug import prompt, provides, resource


@prompt(description="Needs a real number.")
def square(number: str) -> str:
    return str(float(number) ** 2)  # "example" is no number


@prompt(description="Renders nothing.")
def empty() -> list:
    return []


@resource("notes://logo", mime_type="image/png")
def logo() -> bytes:
    return b"GIF89a not a png"


@resource("notes://text", mime_type="image/png")
def text() -> str:
    return "words, said to be a picture"


@resource("notes://bytes", mime_type="text/plain")
def raw() -> bytes:
    return b"bytes said to be text"


@resource("toolplug://mine")
def mine() -> str:
    return "taken"


register_prompts = provides(square, empty)
register_resources = provides(logo, text, raw, mine)
'''


def _check(site: Site, monkeypatch: pytest.MonkeyPatch, name: str, source: str,
           **options: object) -> None:
    module = name.replace("-", "_")
    site.add(name, entry_points={module: module}, modules={module: source})
    monkeypatch.syspath_prepend(str(site.path))
    try:
        check_plugin(name, **options)  # type: ignore[arg-type]
    finally:
        sys.modules.pop(module, None)


def test_a_plugin_of_prompts_and_resources_alone_passes(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check(site, monkeypatch, "toolplug-notes-good", _GOOD)


def test_each_broken_item_is_reported(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ContractError) as raised:
        _check(site, monkeypatch, "toolplug-notes-bad", _BAD)
    found = sorted(raised.value.problems)
    assert len(found) == 6, found
    assert found[0] == "prompt 'empty': rendered no message; give at least one"
    assert found[1].startswith(
        "prompt 'square': rendering it with {\"number\": \"example\"} failed: "
    )
    assert "ValueError" in found[1]
    assert found[2:] == [
        "resource 'notes://bytes': read bytes, but its mime_type 'text/plain' is text; return str",
        "resource 'notes://logo': its bytes are not image/png: they look like image/gif",
        "resource 'notes://text': read text, but its mime_type 'image/png' is not a text type; "
        "return bytes, or declare a text type",
        "resource 'toolplug://mine': the toolplug: scheme is toolplug serve's own; use a scheme "
        "of yours",
    ]


def test_example_arguments_are_the_authors_to_give(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _BAD.split("@prompt(description=\"Renders nothing.\")", maxsplit=1)[0] + (
        "register_prompts = provides(square)\n"
    )
    _check(site, monkeypatch, "toolplug-notes-square", source,
           prompt_arguments={"square": {"number": "3"}})
