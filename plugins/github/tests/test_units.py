"""Pure helpers: argument checks, Link parsing, origins, scrubbing (no server needed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolplug import ToolFailure
from toolplug_github._actions import check_arguments
from toolplug_github._client import Scrubber, next_link, origin

SECRET = "ghp_unit_secret_7777"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # limit defaults to 5 when a caller runs the tool without the core's defaults
        ({"action": "list_releases", "owner": "o", "repo": "r"},
         {"owner": "o", "repo": "r", "limit": 5}),
        # JSON numbers such as 3.0 are whole numbers too
        ({"action": "get_issue", "owner": "o", "repo": "r", "issue_number": 3.0},
         {"owner": "o", "repo": "r", "issue_number": 3}),
        # surrounding and doubled slashes go; "/" alone is the root
        ({"action": "get_file", "owner": "o", "repo": "r", "path": "//a//b/"},
         {"owner": "o", "repo": "r", "path": "a/b"}),
        ({"action": "get_file", "owner": "o", "repo": "r", "path": "/"},
         {"owner": "o", "repo": "r", "path": ""}),
        # get_readme takes an optional directory
        ({"action": "get_readme", "owner": "o", "repo": "r.js", "path": "docs"},
         {"owner": "o", "repo": "r.js", "path": "docs"}),
    ],
)
def test_check_arguments(arguments: dict[str, Any], expected: dict[str, Any]) -> None:
    action, args, warnings = check_arguments(arguments)
    assert action == arguments["action"]
    assert args == expected
    assert warnings == []


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"action": "get_issue", "owner": "o", "repo": "r", "issue_number": 2.5}, "issue_number"),
        ({"action": "get_issue", "owner": "o", "repo": "r", "issue_number": True}, "issue_number"),
        ({"action": "search_code", "query": "x", "limit": 0}, "limit"),
        ({"action": "get_file", "owner": "o", "repo": "r", "path": 7}, "path"),
        ({"action": "delete_repo", "owner": "o", "repo": "r"}, "action"),
        ({}, "action"),
    ],
)
def test_check_arguments_rejects(arguments: dict[str, Any], field: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        check_arguments(arguments)
    assert caught.value.type == "ValidationError"
    assert caught.value.details["field"] == field
    assert field in caught.value.message


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        # GitHub's usual shape
        ('<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; '
         'rel="last"', "https://api.github.com/x?page=2"),
        # next after other relations, unquoted rel
        ("<https://a/x?page=1>; rel=prev, <https://a/x?page=3>; rel=next",
         "https://a/x?page=3"),
        # several relations in one rel value
        ('<https://a/x?page=3>; rel="next last"', "https://a/x?page=3"),
        # no next page
        ('<https://a/x?page=1>; rel="first"', None),
        ("", None),
        ("garbage", None),
    ],
)
def test_next_link(header: str, expected: str | None) -> None:
    assert next_link({"link": header} if header else {}) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.github.com/repos", ("https", "api.github.com", 443)),
        ("HTTPS://API.GitHub.com.:443/x", ("https", "api.github.com", 443)),
        ("http://127.0.0.1:8080/api/v3", ("http", "127.0.0.1", 8080)),
        ("https://api.github.com@evil.example/", None),  # user info: never the API
        ("https://evil.example\\@api.github.com/", None),  # backslash: read differently
        ("ftp://api.github.com/", None),
        ("https://api.github.com:99999/", None),  # invalid port
    ],
)
def test_origin(url: str, expected: tuple[str, str, int] | None) -> None:
    assert origin(url) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(value=json_values, prefix=st.text(max_size=5), suffix=st.text(max_size=5))
def test_scrubber_removes_the_secret_everywhere(value: Any, prefix: str, suffix: str) -> None:
    planted = {"planted": f"{prefix}{SECRET}{suffix}", f"key{SECRET}": [value, SECRET]}
    scrubbed = Scrubber(SECRET).value(planted)
    assert SECRET not in json.dumps(scrubbed, ensure_ascii=False)
