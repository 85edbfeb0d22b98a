"""GitHub's official REST description (npm ``@octokit/openapi``) as tools, called against
Prism (npm ``@stoplight/prism-cli``) mocking it on 127.0.0.1. Prism checks every request
toolplug sends against the description and logs each violation: the tests read its log.

Skipped, with the reason, only where node and npm are absent or the packages are not
installed (.ci/run installs them in tests/sources/openapi/node).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.openapi import GITHUB_SPEC, node_missing, prism_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(node_missing() is not None, reason=node_missing() or ""),
]


@pytest.fixture(scope="module")
def prism(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("prism")
    with prism_server(folder) as url:
        yield url, folder / "prism.txt"


@pytest.fixture(scope="module")
def github(
    prism: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[toolplug.Registry]:
    url, _ = prism
    registry = toolplug.load(
        {
            "network": {"allow": ["127.0.0.1"]},
            "cache_dir": str(tmp_path_factory.mktemp("cache")),
            "openapi": {"github": {
                "spec": str(GITHUB_SPEC), "base_url": url, "prefix": "",
                "auth": {"type": "bearer", "token": {"env": "GH_TOKEN"}},
            }},
        },
        env={"GH_TOKEN": "ghp_not_a_real_token"},
    )
    yield registry
    registry.close()


def _requests_seen(log: Path, count: int) -> list[str]:
    """The last ``count`` requests in Prism's log, each with the lines logged for it."""
    deadline = time.monotonic() + 10
    while True:  # Prism writes its log a moment after it answers
        blocks = re.split(r"(?=\[HTTP SERVER\] )", log.read_text(encoding="utf-8"))[1:]
        if len(blocks) >= count and all("Responding with" in b for b in blocks[-count:]):
            return blocks[-count:]
        if time.monotonic() > deadline:
            return blocks[-count:]
        time.sleep(0.1)


def _request_violations(block: str) -> list[str]:
    return re.findall(r"Violation: (request\S* .*)", block)


CALLS: list[tuple[str, dict[str, Any]]] = [
    # path parameters
    ("repos_get", {"owner": "octocat", "repo": "hello-world"}),
    # a required query parameter and an enum
    ("search_repos", {"q": "toolplug language:python", "sort": "stars", "per_page": 5}),
    # a JSON body with required fields (a write: approved by the host)
    ("issues_create", {"owner": "octocat", "repo": "hello-world", "title": "Found a bug",
                       "body": "It broke.", "labels": ["bug"]}),
    # a path parameter holding a slash, and a query parameter
    ("repos_get_content", {"owner": "octocat", "repo": "hello-world",
                           "path": "docs/README.md", "ref": "main"}),
    # PUT with a body and an integer path parameter
    ("pulls_merge", {"owner": "octocat", "repo": "hello-world", "pull_number": 42,
                     "merge_method": "squash"}),
]


def test_every_request_passes_prisms_validation(
    github: toolplug.Registry, prism: tuple[str, Path]
) -> None:
    _, log = prism
    for name, arguments in CALLS:
        result = github.call(name, arguments, approved=True)
        assert result.ok, (name, result.error)
        assert result.data is not None, name
    blocks = _requests_seen(log, len(CALLS))
    assert [re.search(r"\] (\w+) (\S+)", b).group(1) for b in blocks] == [  # type: ignore[union-attr]
        "get", "get", "post", "get", "put"
    ]
    for (name, _), block in zip(CALLS, blocks, strict=True):
        assert "The request passed the validation rules" in block, (name, block)
        assert _request_violations(block) == [], name


def test_prism_does_see_a_request_the_description_forbids(
    github: toolplug.Registry, prism: tuple[str, Path]
) -> None:
    """The check above can fail: a request without a required query parameter is caught."""
    url, log = prism
    from toolplug.http import NetworkPolicy, fetch_sync

    answer = fetch_sync(
        "GET", f"{url}/search/repositories", policy=NetworkPolicy(allow=("127.0.0.1",)),
        headers={"Accept": "application/json"},
    )
    assert answer.status == 422
    (block,) = _requests_seen(log, 1)
    assert _request_violations(block) == ["request.query Request query must have required "
                                          "property 'q'"]


def test_writes_are_asked_reads_are_not(github: toolplug.Registry) -> None:
    assert github.needs_approval("issues_create", {}) is not None
    assert github.needs_approval("repos_get", {}) is None
    assert "destructive" in (github.needs_approval("repos_delete", {}) or "")


def test_the_thousand_operations_are_tools(github: toolplug.Registry) -> None:
    names = [n for n, t in github.tools.items() if t.plugin == "openapi:github"]
    assert len(names) > 1000
    assert all(re.fullmatch(r"[a-z][a-z0-9_]{0,63}", n) for n in names)
    assert github.get("repos_get").metadata.title == "GET /repos/{owner}/{repo}"


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("create an issue in a repository", "issues_create"),
        ("search code", "search_code"),
        ("add a label to an issue", "issues_add_labels"),
        ("fork a repository", "repos_create_fork"),
        ("merge a pull request", "pulls_merge"),
        ("get the contents of a file in a repository", "repos_get_content"),
    ],
)
def test_search_finds_the_operation_for_a_plain_request(
    github: toolplug.Registry, request_text: str, expected: str
) -> None:
    found = [hit.name for hit in github.select().search(request_text, 3)]
    assert expected in found, found
