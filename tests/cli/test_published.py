"""The plugins' prompts and resources on the command line: ``list --published`` names them
(``--all`` also the ones not offered, with why), ``info`` explains one, ``doctor`` reports
each; a real command line over a site with a plugin that publishes them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.helpers.cli import Site

PUBLISHER = '''
from toolplug import Capability, EnvVar, Message, prompt, provides, resource


@prompt(description="Review a piece of code.", arguments={"code": "The code to review"})
def review(code: str, language: str = "python") -> list[Message]:
    return [Message("user", f"Review this {language} code: {code}")]


@prompt(description="Needs the notes key.", requires=("notes_key",))
def locked() -> str:
    return "hidden"


@resource("notes://today", mime_type="text/plain")
def today() -> str:
    """Today's note."""
    return "Buy milk."


@resource("notes://chart.png", mime_type="image/png")
def chart() -> bytes:
    """The chart of March."""
    return b"\\x89PNG\\r\\n\\x1a\\n"


@resource("notes://{day}/summary")
def summary(day: str) -> str:
    """The summary of a day."""
    return day


@resource("notes://secret", requires=("notes_key",))
def secret() -> str:
    return "hidden"


register_prompts = provides(review, locked)
register_resources = provides(today, chart, summary, secret)
register_capabilities = provides(
    Capability(name="notes_key", description="The notes key.",
               detectors=(EnvVar("NOTES_KEY"),), setup="export NOTES_KEY=...")
)
'''


def _env(site: Site, **extra: str) -> dict[str, str]:
    site.add("toolplug-publisher", entry_points={"publisher": "toolplug_publisher"},
             modules={"toolplug_publisher": PUBLISHER})
    return site.env(
        TOOLPLUG_PLUGINS="toolplug-publisher,toolplug-static-links", TOOLPLUG_NO_CACHE="1",
        **extra,
    )


def test_list_says_what_is_published_besides_the_tools(
    site: Site, cli: Callable[..., Any]
) -> None:
    env = _env(site)
    tools = cli("list", env=env)
    assert tools.code == 0, tools.err
    assert tools.out.rstrip().endswith(
        "Also published: 1 prompt, 2 resources, 1 resource template "
        "(toolplug list --published)"
    )
    listed = json.loads(cli("list", "--all", "--json", env=env).out)  # still the tools
    assert [r["name"] for r in listed] == ["static_links"]


def test_list_published_names_each_with_its_arguments_and_uri(
    site: Site, cli: Callable[..., Any]
) -> None:
    shown = cli("list", "--published", env=_env(site))
    assert shown.code == 0, shown.err
    assert shown.out.splitlines() == [
        "Prompts:",
        "  review(code, language?) - Review a piece of code.",
        "",
        "Resources:",
        "  notes://chart.png (image/png) - The chart of March.",
        "  notes://today (text/plain) - Today's note.",
        "",
        "Resource templates:",
        "  notes://{day}/summary - The summary of a day.",
    ]
    narrowed = cli("list", "--published", "--category", "utility", env=_env_again(site))
    assert narrowed.code == 2
    assert "which have no category nor toolset: drop --category and --toolset" in narrowed.err


def test_list_published_all_says_why_one_is_not_offered(
    site: Site, cli: Callable[..., Any]
) -> None:
    env = _env(site)
    shown = cli("list", "--published", "--all", env=env)
    assert "  locked(): unavailable\n    why: capability 'notes_key' is missing" in shown.out
    assert "    to enable: export NOTES_KEY=...\n" in shown.out
    assert "  notes://secret: unavailable\n" in shown.out
    records = json.loads(cli("list", "--published", "--all", "--json", env=env).out)
    assert sorted(records) == ["prompts", "resource_templates", "resources"]
    locked, review = records["prompts"]
    assert review == {
        "kind": "prompt", "name": "review", "title": None,
        "description": "Review a piece of code.",
        "arguments": [
            {"name": "code", "description": "The code to review", "required": True},
            {"name": "language", "description": "", "required": False},
        ],
        "available": True, "reasons": [], "setup": [], "requires_capabilities": [],
        "plugin": "toolplug-publisher",
    }
    assert (locked["available"], locked["setup"]) == (False, ["export NOTES_KEY=..."])
    assert [r["uri"] for r in records["resources"]] == [
        "notes://chart.png", "notes://secret", "notes://today"
    ]
    (template,) = records["resource_templates"]
    assert (template["uri_template"], template["variables"]) == ("notes://{day}/summary", ["day"])
    offered = json.loads(cli("list", "--published", "--json", env=env).out)
    assert [p["name"] for p in offered["prompts"]] == ["review"]
    granted = json.loads(
        cli("list", "--published", "--json", env=_env_again(site, NOTES_KEY="k")).out
    )
    assert [p["name"] for p in granted["prompts"]] == ["locked", "review"]


def _env_again(site: Site, **extra: str) -> dict[str, str]:
    """The site as ``_env`` made it, with more variables."""
    return site.env(
        TOOLPLUG_PLUGINS="toolplug-publisher,toolplug-static-links", TOOLPLUG_NO_CACHE="1",
        **extra,
    )


def test_info_explains_a_prompt_and_a_resource(site: Site, cli: Callable[..., Any]) -> None:
    env = _env(site)
    prompt = cli("info", "review", env=env)
    assert prompt.code == 0, prompt.err
    assert prompt.out.splitlines()[:6] == [
        "review: Review a piece of code.",
        "",
        "  kind          prompt",
        "  plugin        toolplug-publisher",
        "  available     yes",
        "",
    ]
    assert "  code (required) - The code to review\n  language\n" in prompt.out
    secret = cli("info", "notes://secret", env=env)
    assert "  mime type     not declared\n" in secret.out
    assert "  available     no\n    why not: capability 'notes_key' is missing" in secret.out
    record = json.loads(cli("info", "notes://{day}/summary", "--json", env=env).out)
    assert (record["kind"], record["variables"], record["available"]) == (
        "resource_template", ["day"], True
    )
    unknown = cli("info", "notes://nowhere", env=env)
    assert unknown.code == 2
    assert "no installed tool is named 'notes://nowhere'" in unknown.err


def test_doctor_reports_each_prompt_and_resource(site: Site, cli: Callable[..., Any]) -> None:
    doctor = cli("doctor", env=_env(site))
    assert doctor.code == 0, doctor.err
    part = doctor.out.split("Prompts and resources:\n", 1)[1].split("\n\n", 1)[0]
    assert part.splitlines() == [
        "  Prompts:",
        "    locked(): unavailable",
        "      why: capability 'notes_key' is missing: environment variable NOTES_KEY is not set",
        "      to enable: export NOTES_KEY=...",
        "    review(code, language?): available",
    ]
    assert "    notes://secret: unavailable\n" in doctor.out
    assert "    notes://{day}/summary: available\n" in doctor.out
