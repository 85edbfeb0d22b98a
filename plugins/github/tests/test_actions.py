"""Each action against the loopback fake of the GitHub REST API.

The ``api`` fixture checks the headers of every request (token, Accept, API version, user
agent); the ``call`` fixture scans every result for the token and checks ``data`` against the
tool's ``returns`` schema.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from toolplug import Registry, ToolResult

REPO = "/api/v3/repos/octo/hello"


def contents(path: str, raw: bytes, **extra: Any) -> dict[str, Any]:
    """A contents-API answer for a file, the way GitHub shapes it (base64 in 60-char lines)."""
    encoded = base64.b64encode(raw).decode()
    body = {
        "type": "file",
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "size": len(raw),
        "sha": "3d21ec53a331a6f037a91c368710b99387d012c1",
        "encoding": "base64",
        "content": "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)),
        "html_url": f"https://github.com/octo/hello/blob/main/{path}",
    }
    body.update(extra)
    return body


def ok(result: ToolResult) -> Any:
    """The data of a successful result (fails the test with the error otherwise)."""
    assert result.error is None, result.error
    return result.data


# --- get_file ------------------------------------------------------------------------


def test_get_file_text(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    text = "def main():\n    print('hello')\n"
    api.expect_request(f"{REPO}/contents/src/app.py").respond_with_json(
        contents("src/app.py", text.encode())
    )
    result = call(action="get_file", owner="octo", repo="hello", path="src/app.py")
    data = ok(result)
    assert data["content"] == text
    assert data["type"] == "file"
    assert data["binary"] is False
    assert data["truncated"] is False
    assert data["size"] == len(text)
    assert data["ref"] is None
    assert text in result.output
    assert "octo/hello/src/app.py" in result.output
    assert [c.url for c in result.citations] == ["https://github.com/octo/hello/blob/main/src/app.py"]
    assert not result.warnings
    (request, _), = api.log
    assert request.headers["Accept"] == "application/vnd.github+json"
    assert request.args.to_dict() == {}


def test_get_file_at_ref_with_odd_path(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(
        f"{REPO}/contents/docs/my notes#1.md", query_string={"ref": "release/1.x"}
    ).respond_with_json(contents("docs/my notes#1.md", b"notes\n"))
    result = call(
        action="get_file", owner="octo", repo="hello", path="/docs/my notes#1.md",
        ref="release/1.x",
    )
    data = ok(result)
    assert data["content"] == "notes\n"
    assert data["ref"] == "release/1.x"
    assert "'release/1.x'" in result.output


def test_get_file_directory_lists_entries(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    def entry(name: str, kind: str, size: int = 0) -> dict[str, Any]:
        blob = "tree" if kind == "dir" else "blob"
        return {
            "name": name, "path": f"docs/{name}", "type": kind, "size": size,
            "html_url": f"https://github.com/octo/hello/{blob}/main/docs/{name}",
        }

    api.expect_request(f"{REPO}/contents/docs").respond_with_json(
        [entry("zeta.md", "file", 12), entry("api", "dir"), entry("Alpha.md", "file", 3)]
    )
    result = call(action="get_file", owner="octo", repo="hello", path="docs/")
    data = ok(result)
    assert data["type"] == "dir"
    assert data["content"] is None
    # directories first, then files by name
    assert [e["name"] for e in data["entries"]] == ["api", "Alpha.md", "zeta.md"]
    assert "- api/" in result.output
    assert "- zeta.md (12 bytes)" in result.output
    assert data["url"] == "https://github.com/octo/hello/tree/main/docs"


def test_get_file_root(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(f"{REPO}/contents/").respond_with_json(
        [{"name": "README.md", "path": "README.md", "type": "file", "size": 5,
          "html_url": "https://github.com/octo/hello/blob/main/README.md"}]
    )
    data = ok(call(action="get_file", owner="octo", repo="hello", path="/"))
    assert data["path"] == ""
    assert data["url"] == "https://github.com/octo/hello/tree/main"


@pytest.mark.parametrize(
    "raw",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),  # NUL bytes: binary
        "caf\xe9 au lait".encode("latin-1") * 3,  # no NUL, but not UTF-8: undecodable
    ],
)
def test_get_file_binary_is_described_not_dumped(
    api: HTTPServer, call: Callable[..., ToolResult], raw: bytes
) -> None:
    api.expect_request(f"{REPO}/contents/logo.png").respond_with_json(contents("logo.png", raw))
    result = call(action="get_file", owner="octo", repo="hello", path="logo.png")
    data = ok(result)
    assert data["binary"] is True
    assert data["content"] is None
    assert data["size"] == len(raw)
    assert data["sha"] == "3d21ec53a331a6f037a91c368710b99387d012c1"
    assert "binary file" in result.output
    assert f"{len(raw)} bytes" in result.output
    assert "3d21ec53a331a6f037a91c368710b99387d012c1" in result.output
    assert "PNG" not in result.output
    assert "caf" not in result.output


def test_get_file_over_the_cap_is_truncated(
    api: HTTPServer, make_registry: Callable[..., Registry], call: Callable[..., ToolResult]
) -> None:
    text = "".join(f"line {i:03d}\n" for i in range(100))  # 900 bytes
    api.expect_request(f"{REPO}/contents/big.txt").respond_with_json(
        contents("big.txt", text.encode())
    )
    registry = make_registry(tools={"max_file_bytes": 100})
    result = call(registry, action="get_file", owner="octo", repo="hello", path="big.txt")
    data = ok(result)
    assert data["truncated"] is True
    assert data["content"] == text[:100]
    assert data["size"] == 900
    (warning,) = result.warnings
    assert "900 bytes" in warning
    assert "100 bytes" in warning
    assert "max_file_bytes" in warning
    assert "line 011" not in result.output


def test_cap_in_the_middle_of_a_character_is_still_text(
    api: HTTPServer, make_registry: Callable[..., Registry], call: Callable[..., ToolResult]
) -> None:
    text = "é" * 100  # 200 bytes; a cap of 101 cuts the 51st character in half
    api.expect_request(f"{REPO}/contents/e.txt").respond_with_json(
        contents("e.txt", text.encode())
    )
    registry = make_registry(tools={"max_file_bytes": 101})
    data = ok(call(registry, action="get_file", owner="octo", repo="hello", path="e.txt"))
    assert data["binary"] is False
    assert data["content"] == "é" * 50


def test_file_over_one_megabyte_is_read_raw_up_to_the_cap(
    api: HTTPServer, make_registry: Callable[..., Registry], call: Callable[..., ToolResult]
) -> None:
    # GitHub sends no content for files over 1 MB; the raw media type gives the bytes.
    big = b"x" * 300_000
    api.expect_request(
        f"{REPO}/contents/data.csv", headers={"Accept": "application/vnd.github.raw+json"}
    ).respond_with_data(big, content_type="application/octet-stream")
    api.expect_request(f"{REPO}/contents/data.csv").respond_with_json(
        contents("data.csv", b"", size=2_000_000, encoding="none", content="")
    )
    registry = make_registry(tools={"max_file_bytes": 1000})
    result = call(registry, action="get_file", owner="octo", repo="hello", path="data.csv")
    data = ok(result)
    assert data["content"] == "x" * 1000
    assert data["truncated"] is True
    assert data["size"] == 2_000_000
    accepts = [request.headers["Accept"] for request, _ in api.log]
    assert accepts == ["application/vnd.github+json", "application/vnd.github.raw+json"]


def test_get_file_symlink(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(f"{REPO}/contents/latest").respond_with_json(
        {"type": "symlink", "path": "latest", "target": "v2/", "size": 3, "sha": "abc",
         "html_url": "https://github.com/octo/hello/blob/main/latest"}
    )
    result = call(action="get_file", owner="octo", repo="hello", path="latest")
    data = ok(result)
    assert data["type"] == "symlink"
    assert data["target"] == "v2/"
    assert "symbolic link" in result.output


# --- get_readme ------------------------------------------------------------------------


def test_get_readme(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    readme = "# Hello\n\nA friendly project.\n"
    api.expect_request(f"{REPO}/readme").respond_with_json(
        contents("README.md", readme.encode())
    )
    result = call(action="get_readme", owner="octo", repo="hello")
    data = ok(result)
    assert data["action"] == "get_readme"
    assert data["path"] == "README.md"
    assert data["content"] == readme
    assert "A friendly project." in result.output
    assert result.citations[0].url == "https://github.com/octo/hello/blob/main/README.md"


def test_get_readme_of_a_directory_at_a_ref(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    api.expect_request(f"{REPO}/readme/docs", query_string={"ref": "v1.0"}).respond_with_json(
        contents("docs/README.rst", b"Docs\n====\n")
    )
    data = ok(call(action="get_readme", owner="octo", repo="hello", path="docs", ref="v1.0"))
    assert data["path"] == "docs/README.rst"
    assert data["content"] == "Docs\n====\n"


# --- list_releases ---------------------------------------------------------------------


def release(tag: str, published: str | None, **extra: Any) -> dict[str, Any]:
    body = {
        "tag_name": tag,
        "name": f"Release {tag}",
        "published_at": published,
        "html_url": f"https://github.com/octo/hello/releases/tag/{tag}",
        "prerelease": False,
        "draft": False,
        "body": f"Notes for {tag}",
    }
    body.update(extra)
    return body


def test_list_releases_follows_link_pagination(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    page2 = api.url_for("/api/v3/repositories/42/releases") + "?per_page=4&page=2"
    last = api.url_for("/api/v3/repositories/42/releases") + "?per_page=4&page=9"
    api.expect_request(f"{REPO}/releases", query_string={"per_page": "4"}).respond_with_json(
        [
            release("v3.0.0rc1", "2024-05-02T10:00:00Z", prerelease=True),
            release("v2.1.0", "2024-03-01T10:00:00Z", body="x" * 5000),
        ],
        headers={"Link": f'<{page2}>; rel="next", <{last}>; rel="last"'},
    )
    api.expect_request(
        "/api/v3/repositories/42/releases", query_string={"per_page": "4", "page": "2"}
    ).respond_with_json(
        [
            release("v2.2.0", "2024-04-01T10:00:00Z"),  # published later than v2.1.0
            release("v2.0.0", "2024-01-01T10:00:00Z"),
            release("v1.0.0", "2023-01-01T10:00:00Z"),
        ],
        headers={"Link": f'<{last}>; rel="next"'},  # must not be followed: limit reached
    )
    result = call(action="list_releases", owner="octo", repo="hello", limit=4)
    data = ok(result)
    assert [r["tag"] for r in data["releases"]] == ["v3.0.0rc1", "v2.2.0", "v2.1.0", "v2.0.0"]
    newest = data["releases"][0]
    assert newest["prerelease"] is True
    assert newest["published"] == "2024-05-02T10:00:00Z"
    assert newest["url"] == "https://github.com/octo/hello/releases/tag/v3.0.0rc1"
    assert newest["name"] == "Release v3.0.0rc1"
    capped = data["releases"][2]
    assert capped["body_truncated"] is True
    assert len(capped["body"]) < 1100
    assert len(api.log) == 2
    assert "prerelease" in result.output
    assert len(result.citations) == 4


def test_list_releases_stops_when_the_first_page_is_enough(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    page2 = api.url_for("/api/v3/repositories/42/releases") + "?page=2"
    api.expect_request(f"{REPO}/releases").respond_with_json(
        [release("v2", "2024-02-01T00:00:00Z"), release("v1", "2024-01-01T00:00:00Z")],
        headers={"Link": f'<{page2}>; rel="next"'},
    )
    data = ok(call(action="list_releases", owner="octo", repo="hello", limit=2))
    assert [r["tag"] for r in data["releases"]] == ["v2", "v1"]
    assert len(api.log) == 1


def test_list_releases_default_limit_and_empty(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    api.expect_request(f"{REPO}/releases", query_string={"per_page": "5"}).respond_with_json([])
    result = call(action="list_releases", owner="octo", repo="hello")
    assert ok(result)["releases"] == []
    assert "no published releases" in result.output


def test_next_link_to_another_host_is_not_followed(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    api.expect_request(f"{REPO}/releases").respond_with_json(
        [release("v1", "2024-01-01T00:00:00Z")],
        headers={"Link": '<https://elsewhere.example/releases?page=2>; rel="next"'},
    )
    result = call(action="list_releases", owner="octo", repo="hello", limit=5)
    assert [r["tag"] for r in ok(result)["releases"]] == ["v1"]
    assert any("not followed" in w for w in result.warnings)
    assert len(api.log) == 1


# --- get_issue -------------------------------------------------------------------------


def issue(number: int, **extra: Any) -> dict[str, Any]:
    body = {
        "number": number,
        "title": "Crash when the config is empty",
        "state": "open",
        "state_reason": None,
        "labels": [{"name": "bug"}, {"name": "good first issue"}],
        "user": {"login": "mona"},
        "body": "Steps to reproduce: ...",
        "comments": 7,
        "html_url": f"https://github.com/octo/hello/issues/{number}",
        "created_at": "2024-01-01T00:00:00Z",
        "updated_at": "2024-01-02T00:00:00Z",
        "closed_at": None,
    }
    body.update(extra)
    return body


def test_get_issue(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(f"{REPO}/issues/12").respond_with_json(issue(12))
    result = call(action="get_issue", owner="octo", repo="hello", issue_number=12)
    data = ok(result)
    assert data["title"] == "Crash when the config is empty"
    assert data["state"] == "open"
    assert data["labels"] == ["bug", "good first issue"]
    assert data["author"] == "mona"
    assert data["comments"] == 7
    assert data["is_pull_request"] is False
    assert data["url"] == "https://github.com/octo/hello/issues/12"
    assert result.output.startswith("Issue octo/hello#12: Crash when the config is empty")
    assert "comments: 7" in result.output


def test_get_issue_of_a_merged_pull_request_with_a_long_body(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    api.expect_request(f"{REPO}/issues/99").respond_with_json(
        issue(
            99,
            state="closed",
            body="word " * 2000,
            html_url="https://github.com/octo/hello/pull/99",
            pull_request={"url": "...", "merged_at": "2024-02-02T00:00:00Z"},
        )
    )
    result = call(action="get_issue", owner="octo", repo="hello", issue_number=99)
    data = ok(result)
    assert data["is_pull_request"] is True
    assert data["merged_at"] == "2024-02-02T00:00:00Z"
    assert data["body_truncated"] is True
    assert len(data["body"]) <= 4010
    assert result.output.startswith("Pull request octo/hello#99")
    assert "State: merged" in result.output
    assert any("description was cut" in w for w in result.warnings)


# --- search_code -----------------------------------------------------------------------


def hit(repo: str, file: str) -> dict[str, Any]:
    return {
        "name": file.rsplit("/", 1)[-1],
        "path": file,
        "sha": "f00d",
        "html_url": f"https://github.com/{repo}/blob/abc/{file}",
        "repository": {"full_name": repo},
    }


def test_search_code(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    api.expect_request(
        "/api/v3/search/code", query_string={"q": "NewToolRegistry language:go", "per_page": "2"}
    ).respond_with_json(
        {
            "total_count": 41,
            "incomplete_results": False,
            "items": [hit("acme/agent", "pkg/tools/registry.go"), hit("x/y", "main.go")],
        }
    )
    result = call(action="search_code", query="NewToolRegistry language:go", limit=2)
    data = ok(result)
    assert data["total_count"] == 41
    assert data["items"][0] == {
        "name": "registry.go",
        "path": "pkg/tools/registry.go",
        "repository": "acme/agent",
        "owner": "acme",
        "repo": "agent",
        "url": "https://github.com/acme/agent/blob/abc/pkg/tools/registry.go",
        "sha": "f00d",
    }
    assert "acme/agent: pkg/tools/registry.go" in result.output
    assert len(result.citations) == 2


def test_search_code_in_one_repository(api: HTTPServer, call: Callable[..., ToolResult]) -> None:
    seen: list[str] = []

    def answer(request: Request) -> Response:
        seen.append(request.args["q"])
        body = {"total_count": 0, "incomplete_results": True, "items": []}
        return Response(json.dumps(body), content_type="application/json")

    api.expect_request("/api/v3/search/code").respond_with_handler(answer)
    result = call(action="search_code", query="load_config", owner="octo", repo="hello")
    assert ok(result)["items"] == []
    assert seen == ["load_config repo:octo/hello"]
    assert "No code found" in result.output
    assert any("incomplete" in w for w in result.warnings)


# --- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": "get_file", "repo": "hello", "path": "a"},
         "owner is required for action get_file"),
        ({"action": "get_file", "owner": "octo", "path": "a"},
         "repo is required for action get_file"),
        ({"action": "get_file", "owner": "octo", "repo": "hello"},
         "path is required for action get_file"),
        ({"action": "get_file", "owner": "octo", "repo": "hello", "path": ""},
         "path is required for action get_file"),
        ({"action": "get_readme", "repo": "hello"}, "owner is required for action get_readme"),
        ({"action": "get_readme", "owner": "octo"}, "repo is required for action get_readme"),
        ({"action": "list_releases", "repo": "hello"},
         "owner is required for action list_releases"),
        ({"action": "list_releases", "owner": "octo"},
         "repo is required for action list_releases"),
        ({"action": "get_issue", "owner": "octo", "repo": "hello"},
         "issue_number is required for action get_issue"),
        ({"action": "get_issue", "repo": "hello", "issue_number": 1},
         "owner is required for action get_issue"),
        ({"action": "search_code"}, "query is required for action search_code"),
        ({"action": "search_code", "query": "x", "owner": "octo"},
         "repo is required with owner for action search_code"),
    ],
)
def test_missing_parameter(
    api: HTTPServer, call: Callable[..., ToolResult], arguments: dict[str, Any], message: str
) -> None:
    result = call(**arguments)
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert result.error.message == message
    assert not result.error.retry_possible
    assert len(api.log) == 0


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        # owner/name in repo: the message says how to split it
        ({"action": "get_readme", "owner": "octo", "repo": "octo/hello"},
         "pass owner='octo' and repo='hello'"),
        # a path that climbs out of the repository
        ({"action": "get_file", "owner": "octo", "repo": "hello", "path": "docs/../../x"},
         "no '.' or '..' segments"),
        # a URL as owner
        ({"action": "get_readme", "owner": "https://github.com/octo", "repo": "hello"},
         "owner must be a GitHub user or organization login"),
        # a repo name that is only dots
        ({"action": "get_readme", "owner": "octo", "repo": ".."}, "repo must be a repository name"),
    ],
)
def test_malformed_parameter(
    api: HTTPServer, call: Callable[..., ToolResult], arguments: dict[str, Any], fragment: str
) -> None:
    result = call(**arguments)
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert fragment in result.error.message
    assert len(api.log) == 0


@pytest.mark.parametrize("limit", [0, 31])
def test_limit_out_of_range_is_rejected_before_any_request(
    api: HTTPServer, call: Callable[..., ToolResult], limit: int
) -> None:
    result = call(action="list_releases", owner="octo", repo="hello", limit=limit)
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "limit" in result.error.message
    assert len(api.log) == 0


def test_unused_parameter_is_named_in_a_warning(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    api.expect_request(f"{REPO}/issues/3").respond_with_json(issue(3))
    result = call(action="get_issue", owner="octo", repo="hello", issue_number=3, path="x.py")
    assert result.ok
    assert result.warnings == ("path is not used by action get_issue; ignored",)


def test_relative_next_link_is_resolved_against_the_api(
    api: HTTPServer, call: Callable[..., ToolResult]
) -> None:
    api.expect_request(f"{REPO}/releases", query_string={"per_page": "2"}).respond_with_json(
        [release("v2", "2024-02-01T00:00:00Z")],
        headers={"Link": '</api/v3/repositories/42/releases?per_page=2&page=2>; rel="next"'},
    )
    api.expect_request("/api/v3/repositories/42/releases").respond_with_json(
        [release("v1", "2024-01-01T00:00:00Z")]
    )
    result = call(action="list_releases", owner="octo", repo="hello", limit=2)
    assert [r["tag"] for r in ok(result)["releases"]] == ["v2", "v1"]
    assert not result.warnings
    assert len(api.log) == 2


# --- the flow guard: what search_code found is a choice, not text carried out ---------------


def test_a_hit_passed_back_whole_is_read_without_a_question(
    api: HTTPServer, make_registry: Callable[..., Registry]
) -> None:
    # search_code's output is untrusted and private: before refs, get_file of a hit's path
    # was asked about, its path carried from what the search returned
    api.expect_request("/api/v3/search/code").respond_with_json({
        "total_count": 1,
        "incomplete_results": False,
        "items": [hit("octo-labs/hello-agent", "src/tool_registry.py")],
    })
    api.expect_request(
        "/api/v3/repos/octo-labs/hello-agent/contents/src/tool_registry.py"
    ).respond_with_json(contents("src/tool_registry.py", b"REGISTRY = {}\n"))
    registry = make_registry()
    with registry.conversation("Find where the tool registry is defined and show it."):
        found = registry.call("github_api", {"action": "search_code", "query": "REGISTRY ="})
        [item] = ok(found)["items"]
        shown = registry.call("github_api", {
            "action": "get_file", "owner": item["owner"], "repo": item["repo"],
            "path": item["path"],
        })
        # a piece of the listed path is no listed path: read as any sink, and asked
        piece = registry.call("github_api", {
            "action": "get_file", "owner": item["owner"], "repo": item["repo"],
            "path": "src/tool_registry",
        })
    assert "REGISTRY = {}" in ok(shown)["content"]
    assert piece.error is not None
    assert piece.error.type == "ApprovalRequiredError"
    assert piece.error.details["argument"] == "path"
