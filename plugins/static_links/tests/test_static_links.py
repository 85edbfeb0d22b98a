"""static_links: discovery, availability, the contract kit, and real calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import toolplug
from toolplug.testing import check_plugin
from toolplug_static_links import StaticLinksTool

LINKS = [
    {"name": "github", "url": "https://github.com/example", "description": "Source code"},
    {"name": "Mastodon", "url": "https://social.example/@me"},
]


@pytest.fixture
def registry(toolplug_config: Callable[..., dict[str, Any]]) -> toolplug.Registry:
    return toolplug.load(toolplug_config(tools={"static_links": {"links": LINKS}}))


def test_entry_point_is_discovered() -> None:
    tool = toolplug.load({}).tools["static_links"]
    assert tool.cls is StaticLinksTool
    assert tool.distribution == "toolplug-static-links"


def test_unavailable_without_links_and_says_how_to_fix() -> None:
    availability = toolplug.load({}).availability("static_links")
    assert not availability.available
    assert availability.reasons == (
        "capability 'static_links' is missing: configuration key tools.static_links.links "
        "is not set: set [tools.static_links] links",
    )
    assert any("[tools.static_links]" in step for step in availability.setup)


def test_contract() -> None:
    check_plugin("toolplug-static-links", config={"tools": {"static_links": {"links": LINKS}}})


def test_list(registry: toolplug.Registry) -> None:
    result = registry.call("static_links", {})
    assert result.ok
    assert result.output == (
        "- github: https://github.com/example (Source code)\n"
        "- Mastodon: https://social.example/@me"
    )
    assert [c.url for c in result.citations] == [link["url"] for link in LINKS]
    assert result.data["links"][1] == {
        "name": "Mastodon", "url": "https://social.example/@me", "description": "",
    }


def test_get_is_case_insensitive(registry: toolplug.Registry) -> None:
    result = registry.call("static_links", {"action": "get", "name": "mastodon"})
    assert result.output == "- Mastodon: https://social.example/@me"


def test_get_errors(registry: toolplug.Registry) -> None:
    missing = registry.call("static_links", {"action": "get"})
    assert missing.error is not None
    assert missing.error.type == "ValidationError"
    unknown = registry.call("static_links", {"action": "get", "name": "x"})
    assert unknown.error is not None
    assert unknown.error.message == "no link named 'x'; configured names: Mastodon, github"


def test_bad_links_in_config_name_the_key(toolplug_config: Callable[..., dict[str, Any]]) -> None:
    bad = toolplug_config(tools={"static_links": {"links": [{"name": "x"}]}})
    with pytest.raises(toolplug.ConfigError, match=r"links\[0\]: 'url' is a required property"):
        toolplug.load(bad)
