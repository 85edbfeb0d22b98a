"""The wiring: the entry point is found, the contract holds, availability explains itself."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

import toolplug
import toolplug_github
from toolplug import ConfigError, Registry, ToolResult
from toolplug.testing import check_plugin

ENTRY_MODULE = Path(toolplug_github.__file__)


def test_entry_point_is_discovered(make_registry: Callable[..., Registry]) -> None:
    registry = make_registry()
    tool = registry.tools["github_api"]
    assert tool.distribution == "toolplug-github"
    assert tool.cls is toolplug_github.GitHubApiTool
    assert "github_token" in registry.capabilities
    assert not registry.problems


def test_contract() -> None:
    # Metadata, examples, provider exports, and every example run without a token: each
    # must end in a declared, structured error rather than an exception.
    check_plugin("toolplug-github")


def test_entry_module_imports_only_toolplug_and_stdlib() -> None:
    tree = ast.parse(ENTRY_MODULE.read_text(encoding="utf-8"))
    top_level: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            top_level.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top_level.add(node.module.split(".")[0])
    third_party = {
        name
        for name in top_level
        if name not in sys.stdlib_module_names and name not in ("toolplug", "toolplug_github")
    }
    assert not third_party


def test_listing_does_not_import_httpx() -> None:
    code = (
        "import sys, toolplug\n"
        "r = toolplug.load({}, env={'TOOLPLUG_PLUGINS': 'toolplug-github'})\n"
        "assert 'github_api' in r.tools\n"
        "r.availability('github_api')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'httpcore')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_unavailable_without_token(
    make_registry: Callable[..., Registry], call: Callable[..., ToolResult]
) -> None:
    registry = make_registry(env={"TOOLPLUG_PLUGINS": "toolplug-github"})
    availability = registry.availability("github_api")
    assert not availability.available
    assert any("github_token" in r and "GITHUB_TOKEN" in r for r in availability.reasons)
    setup = "\n".join(availability.setup)
    # How to create the token, its read-only permissions, and how to export it.
    assert "https://github.com/settings/personal-access-tokens/new" in setup
    for permission in ("Contents", "Issues", "Metadata"):
        assert permission in setup
    assert "Read-only" in setup
    assert "export GITHUB_TOKEN=" in setup
    assert 'token = { env = "' in setup
    state = {s.name: s for s in registry.capability_states()}["github_token"]
    assert not state.present
    assert "export GITHUB_TOKEN" in state.setup
    result = call(registry, action="get_readme", owner="octo", repo="hello")
    assert result.error is not None
    assert result.error.type == "UnavailableError"


def test_available_with_github_token(make_registry: Callable[..., Registry]) -> None:
    availability = make_registry().availability("github_api")
    assert availability.available, availability.reasons


@pytest.mark.parametrize(
    ("env", "available"),
    [
        # the named variable is set: available
        ({"OTHER": "ghp_other_value_987"}, True),
        # the named variable is unset and GITHUB_TOKEN too: unavailable
        ({}, False),
        # the named variable is empty: unavailable
        ({"OTHER": ""}, False),
    ],
)
def test_token_through_env_indirection(
    make_registry: Callable[..., Registry], env: dict[str, str], available: bool
) -> None:
    registry = make_registry(
        tools={"token": {"env": "OTHER"}}, env={"TOOLPLUG_PLUGINS": "toolplug-github", **env}
    )
    assert registry.availability("github_api").available is available
    if available:
        assert registry.tool_config("github_api")["token"] == env["OTHER"]
        assert env["OTHER"] not in registry.redact(f"token {env['OTHER']}")


def test_env_indirection_is_used_for_requests(
    api: HTTPServer,
    make_registry: Callable[..., Registry],
    call: Callable[..., ToolResult],
    token: str,
) -> None:
    # The fake API checks that it receives the test token; here it arrives through OTHER.
    api.expect_request("/api/v3/repos/octo/hello/readme").respond_with_json(
        {"type": "file", "path": "README.md", "encoding": "base64", "content": "aGk=", "size": 2}
    )
    registry = make_registry(
        tools={"token": {"env": "OTHER"}},
        env={"TOOLPLUG_PLUGINS": "toolplug-github", "OTHER": token},
    )
    result = call(registry, action="get_readme", owner="octo", repo="hello")
    assert result.ok, result.error
    assert result.data["content"] == "hi"
    assert len(api.log) == 1


def test_token_written_into_config_is_refused(
    toolplug_config: Callable[..., dict[str, Any]],
) -> None:
    secret = "ghp_literal_in_file_0000"
    with pytest.raises(ConfigError) as caught:
        toolplug.load(
            toolplug_config(tools={"github_api": {"token": secret}}),
            env={"TOOLPLUG_PLUGINS": "toolplug-github"},
        )
    assert "tools.github_api.token" in str(caught.value)
    assert secret not in str(caught.value)


def test_offline_makes_it_unavailable(make_registry: Callable[..., Registry]) -> None:
    registry = make_registry()
    assert registry.availability("github_api").available
    offline = toolplug.load(
        {"offline": True}, env={"GITHUB_TOKEN": "ghp_x_1234", "TOOLPLUG_PLUGINS": "toolplug-github"}
    )
    try:
        reasons = offline.availability("github_api").reasons
    finally:
        offline.close()
    assert any("network" in r for r in reasons)


@pytest.mark.parametrize(
    "api_url",
    [
        "ftp://github.example/api/v3",  # not http(s)
        "api.github.com",  # no scheme
        "https://ghe.example/api/v3?x=1",  # a query has no place in a base URL
    ],
)
def test_bad_api_url_is_a_config_error(
    toolplug_config: Callable[..., dict[str, Any]], api_url: str
) -> None:
    with pytest.raises(ConfigError, match=r"tools\.github_api\.api_url"):
        toolplug.load(
            toolplug_config(tools={"github_api": {"api_url": api_url}}),
            env={"TOOLPLUG_PLUGINS": "toolplug-github"},
        )


@pytest.mark.parametrize("action", toolplug_github.ACTIONS)
def test_every_action_is_read_only(action: str) -> None:
    # each action is a GET of GitHub's REST API: the declared annotations hold for every
    # call (no per-call refinement), so none waits for approval
    cls = toolplug_github.GitHubApiTool
    hints = cls.annotations_for({"action": action, "owner": "o", "repo": "r"})
    assert hints == cls.metadata.annotations
    assert (hints.read_only, hints.destructive) == (True, False)
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": "toolplug-github"})
    try:
        assert registry.needs_approval("github_api", {"action": action}) is None
    finally:
        registry.close()
