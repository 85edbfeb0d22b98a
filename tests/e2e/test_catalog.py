"""The catalog as a whole: every ADR category has a tool, and each new distribution stands
on its own (built as a wheel, installed beside the core alone, it lists only its tools)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import Run
from tests.helpers.venv import clean_env, run, uv_command
from toolplug.render._search import search_tools_metadata

WORKSPACE = Path(__file__).resolve().parents[2]
CORE = WORKSPACE / "core"


# What each catalog tool's trust labels say (issue #33), and the reason in a few words.
LABELS = {
    # search results are written by anyone; the query is sent out
    "web_search": ("untrusted", False, ("query",)),
    # feeds are written by their publishers; the url is requested
    "rss_feed": ("untrusted", False, ("url",)),
    # what remote servers answered; every URL is requested
    "link_validator": ("untrusted", False, ("urls",)),
    # pages say anything; url, headers and body go out, download_path writes a file
    "url_fetch": ("untrusted", False, ("url", "headers", "body", "download_path")),
    # issues and code are written by anyone; private repositories; the request goes to GitHub
    "github_api": ("untrusted", True, ("owner", "repo", "path", "ref", "query")),
    # the user's own calendar, with invitations anyone can send
    "calendar": ("untrusted", True, ()),
    # the user's own files, which may hold downloads
    "read_file": ("untrusted", True, ()),
    # reports only what it wrote; the path and content change the world
    "write_file": ("trusted", False, ("path", "content")),
    # titles and authors kept from pages; a local store
    "citations": ("untrusted", False, ()),
    # the author's own configured links
    "static_links": ("trusted", False, ()),
    # scores computed here
    "readability": ("trusted", False, ()),
    # a picture of the numbers it was given
    "chart": ("trusted", False, ()),
    # the account's own status; text and ids publish, answer or delete
    "mastodon": ("trusted", False, ("text", "content_warning", "in_reply_to_id", "status_id")),
    # prints what the tools it called returned; each call is checked on its own
    "run_code": ("untrusted", True, ()),
}


def test_every_catalog_tool_declares_its_trust_labels() -> None:
    registry = toolplug.load({"code": {"enabled": True}}, env={})
    try:
        unlabelled = sorted(n for n, t in registry.tools.items() if t.metadata.trust is None)
        assert unlabelled == [], "declare trust=Trust(...) in the metadata of each"
        found = {
            name: (labels.output, labels.private, labels.sinks)
            for name in registry.tools
            for labels in [registry.labels(name)]
        }
        assert found == LABELS
        # the fetchers' URLs are where their requests go; GitHub's owner, repo, path and
        # ref name what it holds; no other catalog tool has a destination or a ref
        assert {
            name: (labels.refs, labels.destinations)
            for name in registry.tools
            for labels in [registry.labels(name)]
            if labels.destinations or labels.refs
        } == {
            "rss_feed": ((), ("url",)),
            "link_validator": ((), ("urls",)),
            "url_fetch": ((), ("url",)),
            "github_api": (("owner", "repo", "path", "ref"), ()),
        }
    finally:
        registry.close()


def test_search_tools_is_labelled_trusted() -> None:
    # it answers with the installed tools' own definitions, from the local index
    assert search_tools_metadata().trust == toolplug.Trust(output="trusted")


def test_every_adr_category_has_a_tool(cli: Any) -> None:
    listed: Run = cli("list", "--all", "--json")
    assert listed.code == 0, listed.err
    categories = {tool["category"] for tool in json.loads(listed.out)}
    assert {"research", "reference", "enhance", "publish", "utility"} <= categories


@pytest.mark.slow
@pytest.mark.parametrize(
    ("plugin", "distribution", "tools"),
    [
        ("citations", "toolplug-citations", ["citations"]),
        ("readability", "toolplug-readability", ["readability"]),
        ("mastodon", "toolplug-mastodon", ["mastodon"]),
    ],
)
def test_the_distribution_builds_and_installs_alone(
    tmp_path: Path, plugin: str, distribution: str, tools: list[str]
) -> None:
    uv = uv_command("tests/e2e/test_catalog.py")
    env = clean_env(tmp_path)
    dist = tmp_path / "dist"
    run(
        [
            *uv,
            "build",
            "--wheel",
            "--quiet",
            "--out-dir",
            str(dist),
            str(WORKSPACE / "plugins" / plugin),
        ],
        cwd=tmp_path,
        env=env,
    )
    [wheel] = dist.glob("*.whl")
    assert wheel.name.startswith(distribution.replace("-", "_") + "-0.1.0-")
    venv = tmp_path / "venv"
    run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=tmp_path, env=env)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run(
        [
            *uv,
            "pip",
            "install",
            "--quiet",
            "--refresh-package",
            "toolplug",
            "--python",
            str(python),
            str(CORE),
            str(wheel),
        ],
        cwd=tmp_path,
        env=env,
    )
    listed = json.loads(
        run([str(python), "-m", "toolplug", "list", "--all", "--json"], cwd=tmp_path, env=env)
    )
    assert sorted(tool["name"] for tool in listed) == tools
    assert {tool["distribution"] for tool in listed} == {distribution}
    doctor = run([str(python), "-m", "toolplug", "doctor"], cwd=tmp_path, env=env)
    assert f"{distribution} 0.1.0 ({plugin} = toolplug_{plugin}): loaded" in doctor
