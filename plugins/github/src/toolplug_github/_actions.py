"""The five actions of ``github_api``: argument checks, GitHub calls, text for the model."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, urljoin

from toolplug import Citation, ErrorType, ToolContext, ToolFailure, ToolResult
from toolplug_github._client import ACCEPT_RAW, GitHub, Response, Scrubber, next_link

DEFAULT_API_URL: Final = "https://api.github.com"
DEFAULT_MAX_FILE_BYTES: Final = 200_000
DEFAULT_LIMIT: Final = 5
MAX_LIMIT: Final = 30
RELEASE_BODY_CHARS: Final = 1_000
"""The most characters of one release's notes returned."""
ISSUE_BODY_CHARS: Final = 4_000
"""The most characters of an issue's or pull request's description returned."""
_MAX_PAGES: Final = 10
_BINARY_SNIFF: Final = 8_000
_OWNER: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,99})")
_REPO: Final = re.compile(r"[A-Za-z0-9_.-]{1,100}")

# The parameters each action needs, and the ones it may use besides.
_NEEDS: Final[dict[str, tuple[str, ...]]] = {
    "get_file": ("owner", "repo", "path"),
    "get_readme": ("owner", "repo"),
    "list_releases": ("owner", "repo"),
    "get_issue": ("owner", "repo", "issue_number"),
    "search_code": ("query",),
}
_USES: Final[dict[str, tuple[str, ...]]] = {
    "get_file": ("ref",),
    "get_readme": ("ref", "path"),
    "list_releases": ("limit",),
    "get_issue": (),
    "search_code": ("owner", "repo", "limit"),
}


@dataclass(frozen=True)
class Call:
    """One call's checked arguments and its connection to GitHub."""

    action: str
    args: Mapping[str, Any]
    github: GitHub
    max_file_bytes: int

    @property
    def owner(self) -> str:
        return str(self.args["owner"])

    @property
    def repo(self) -> str:
        return str(self.args["repo"])

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"

    def repo_path(self) -> str:
        return f"/repos/{quote(self.owner, safe='')}/{quote(self.repo, safe='')}"


async def run_action(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    """Run one ``github_api`` call; every failure comes back as an error result."""
    from toolplug.http import new_client

    token = context.config.get("token")
    if not isinstance(token, str) or not token:
        return ToolResult.failure(
            ErrorType.UNAVAILABLE,
            "no GitHub token is configured: export GITHUB_TOKEN, or set "
            '[tools.github_api] token = { env = "VAR" } (see `toolplug doctor`)',
        )
    scrub = Scrubber(token)
    try:
        action, args, warnings = check_arguments(arguments)
        api_url = str(context.config.get("api_url") or DEFAULT_API_URL)
        max_file_bytes = int(context.config.get("max_file_bytes") or DEFAULT_MAX_FILE_BYTES)
        async with new_client() as client:
            github = GitHub(api_url=api_url, token=token, policy=context.network, client=client)
            call = Call(action, args, github, max_file_bytes)
            result = await _ACTIONS[action](call)
    except ToolFailure as failure:
        return ToolResult.failure(
            failure.type,
            scrub.text(failure.message),
            retry_possible=failure.retry_possible,
            details=scrub.value(failure.details),
        )
    return ToolResult.success(
        scrub.text(result.output),
        scrub.value(result.data),
        citations=[Citation(scrub.text(c.title), scrub.text(c.url)) for c in result.citations],
        warnings=[scrub.text(w) for w in (*warnings, *result.warnings)],
    )


# --- arguments ------------------------------------------------------------------------


def _invalid(message: str, field: str) -> ToolFailure:
    return ToolFailure(ErrorType.VALIDATION, message, details={"field": field})


def check_arguments(arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """The action, its arguments (checked, defaults filled) and warnings about unused ones.

    Raises:
        ToolFailure: A ``ValidationError`` naming the first missing or malformed parameter.
    """
    action = arguments.get("action")
    if action not in _NEEDS:
        raise _invalid(
            f"action must be one of {', '.join(_NEEDS)}; got {action!r}", "action"
        )
    args: dict[str, Any] = {}
    for name in _NEEDS[action]:
        value = arguments.get(name)
        if value is None or value == "":
            raise _invalid(f"{name} is required for action {action}", name)
        args[name] = value
    for name in _USES[action]:
        if arguments.get(name) is not None:
            args[name] = arguments[name]
    _check_strings(action, args)
    if "owner" in args and "repo" not in args and action == "search_code":
        raise _invalid("repo is required with owner for action search_code", "repo")
    if "repo" in args and "owner" not in args and action == "search_code":
        raise _invalid("owner is required with repo for action search_code", "owner")
    if "issue_number" in args:
        number = _whole(args["issue_number"])
        if number is None or number < 1:
            raise _invalid(
                f"issue_number must be a whole number of 1 or more; got {args['issue_number']!r}",
                "issue_number",
            )
        args["issue_number"] = number
    if "limit" in _USES[action]:
        limit = _whole(args.get("limit", DEFAULT_LIMIT))
        if limit is None or not 1 <= limit <= MAX_LIMIT:
            raise _invalid(
                f"limit must be a whole number from 1 to {MAX_LIMIT}; got {args.get('limit')!r}",
                "limit",
            )
        args["limit"] = limit
    if "path" in args:
        args["path"] = _clean_path(args["path"], action)
    unused = sorted(
        name
        for name, value in arguments.items()
        # limit has a default that callers fill in; only a value someone chose is worth a word.
        if value is not None
        and name not in ("action", "limit")
        and name not in args
    )
    warnings = [f"{name} is not used by action {action}; ignored" for name in unused]
    return action, args, warnings


def _whole(value: Any) -> int | None:
    """``value`` as an int when it is a whole number (JSON may send ``3.0``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _check_strings(action: str, args: Mapping[str, Any]) -> None:
    for name in ("owner", "repo", "path", "ref", "query"):
        if name in args and not isinstance(args[name], str):
            raise _invalid(f"{name} must be a string for action {action}", name)
    owner = args.get("owner")
    repo = args.get("repo")
    if isinstance(repo, str) and "/" in repo:
        first, _, rest = repo.strip("/").partition("/")
        raise _invalid(
            f"repo is the repository name alone; got {repo!r}: pass owner={first!r} and "
            f"repo={rest.split('/')[0]!r}",
            "repo",
        )
    if isinstance(owner, str) and not _OWNER.fullmatch(owner):
        raise _invalid(
            f"owner must be a GitHub user or organization login such as 'python'; got {owner!r}",
            "owner",
        )
    if isinstance(repo, str) and (not _REPO.fullmatch(repo) or repo in (".", "..")):
        raise _invalid(
            f"repo must be a repository name (letters, digits, '.', '-', '_'); got {repo!r}",
            "repo",
        )


def _clean_path(path: str, action: str) -> str:
    """The path without surrounding slashes; ``..`` and ``.`` segments are refused."""
    parts = [p for p in path.strip().strip("/").split("/") if p != ""]
    if any(p in (".", "..") for p in parts) or any(ord(c) < 32 for c in path):
        raise _invalid(
            f"path must be a plain path inside the repository (no '.' or '..' segments) for "
            f"action {action}; got {path!r}",
            "path",
        )
    return "/".join(parts)


# --- results ----------------------------------------------------------------------------


@dataclass
class Outcome:
    """What an action produced, before the token is scrubbed from it."""

    output: str
    data: dict[str, Any]
    citations: list[Citation]
    warnings: list[str]


def _at(ref: str | None) -> str:
    return f" at {ref!r}" if ref else ""


def _query(**params: str | int | None) -> str:
    pairs = [f"{k}={quote(str(v), safe='')}" for k, v in params.items() if v is not None]
    return "?" + "&".join(pairs) if pairs else ""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _opt_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _cap(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit].rstrip() + " …", True


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}{'' if text.endswith(chr(10)) else chr(10)}{fence}"


# --- get_file and get_readme --------------------------------------------------------------


async def get_file(call: Call) -> Outcome:
    """A file (decoded, capped), a directory listing, a symlink or a submodule."""
    path: str = call.args["path"]
    ref = call.args.get("ref")
    shown = path or "/"
    what = f"{shown!r} in {call.full_name}{_at(ref)}"
    url = call.github.url(
        f"{call.repo_path()}/contents/{quote(path, safe='/')}" + _query(ref=ref)
    )
    response = await call.github.get(
        url,
        what=what,
        not_found=(
            f"GitHub found no file or directory {shown!r} in {call.full_name}{_at(ref)}: the "
            "path, the ref or the repository does not exist, or the token cannot see a "
            "private repository"
        ),
    )
    body = response.json(what)
    if isinstance(body, list):
        return _directory(call, path, ref, body)
    if not isinstance(body, Mapping):
        raise ToolFailure(ErrorType.PARSE, f"GitHub's answer for {what} was not an object")
    return await _content(call, body, ref, url, what)


async def get_readme(call: Call) -> Outcome:
    """The repository's README (or a directory's), decoded and capped."""
    directory: str = call.args.get("path", "")
    ref = call.args.get("ref")
    in_dir = f" of directory {directory!r}" if directory else ""
    what = f"the README{in_dir} of {call.full_name}{_at(ref)}"
    suffix = f"/{quote(directory, safe='/')}" if directory else ""
    url = call.github.url(f"{call.repo_path()}/readme{suffix}" + _query(ref=ref))
    response = await call.github.get(
        url,
        what=what,
        not_found=(
            f"GitHub found no README{in_dir} in {call.full_name}{_at(ref)}: the repository has "
            "none there, the ref or repository does not exist, or the token cannot see a "
            "private repository"
        ),
    )
    body = response.json(what)
    if not isinstance(body, Mapping):
        raise ToolFailure(ErrorType.PARSE, f"GitHub's answer for {what} was not an object")
    return await _content(call, body, ref, url, what)


def _directory(call: Call, path: str, ref: str | None, body: list[Any]) -> Outcome:
    entries: list[dict[str, Any]] = []
    for item in body:
        if not isinstance(item, Mapping):
            continue
        entries.append({
            "name": _text(item.get("name")),
            "path": _text(item.get("path")),
            "type": _text(item.get("type")) or "file",
            "size": _int(item.get("size")),
            "url": _opt_text(item.get("html_url")),
        })
    # Directories first, then files, each by name: the order a reader expects.
    entries.sort(key=lambda e: (e["type"] != "dir", e["name"].lower(), e["name"]))
    shown = path or "/"
    lines = [f"Directory {shown} in {call.full_name}{_at(ref)} ({len(entries)} entries):"]
    for entry in entries:
        if entry["type"] == "dir":
            lines.append(f"- {entry['name']}/")
        elif entry["type"] == "file":
            lines.append(f"- {entry['name']} ({entry['size']} bytes)")
        else:
            lines.append(f"- {entry['name']} ({entry['type']})")
    data = _file_data(call, path, ref, kind="dir")
    data["entries"] = entries
    citations = []
    first = entries[0]["url"] if entries else None
    if first:
        # The contents API gives no address for the directory itself; its entries' pages
        # (.../blob/REF/DIR/NAME) lead to it (.../tree/REF/DIR).
        data["url"] = first.rsplit("/", 1)[0].replace("/blob/", "/tree/", 1)
        citations.append(Citation(f"{call.full_name}: {shown}", data["url"]))
    return Outcome("\n".join(lines), data, citations, [])


def _file_data(call: Call, path: str, ref: str | None, *, kind: str) -> dict[str, Any]:
    return {
        "action": call.action,
        "owner": call.owner,
        "repo": call.repo,
        "ref": ref,
        "path": path,
        "type": kind,
        "size": 0,
        "sha": None,
        "url": None,
        "binary": False,
        "truncated": False,
        "content": None,
    }


async def _content(
    call: Call, body: Mapping[str, Any], ref: str | None, url: str, what: str
) -> Outcome:
    """A contents-API object: a file, a symlink or a submodule."""
    kind = _text(body.get("type")) or "file"
    path = _text(body.get("path")) or call.args.get("path", "")
    data = _file_data(call, path, ref, kind=kind)
    size = _int(body.get("size"))
    html_url = _opt_text(body.get("html_url"))
    data.update(size=size, sha=_opt_text(body.get("sha")), url=html_url)
    citations = [Citation(f"{call.full_name}: {path}", html_url)] if html_url else []
    label = f"{call.full_name}/{path}{_at(ref)}"
    if kind == "symlink":
        target = _opt_text(body.get("target"))
        data["target"] = target
        return Outcome(f"{label} is a symbolic link to {target!r}.", data, citations, [])
    if kind == "submodule":
        sub = _opt_text(body.get("submodule_git_url"))
        data["submodule_url"] = sub
        output = f"{label} is a Git submodule: {sub} at commit {data['sha']}."
        return Outcome(output, data, citations, [])
    raw, cut = await _file_bytes(call, body, url, what, size)
    text = _decode_text(raw, cut)
    if text is None:
        data["binary"] = True
        output = (
            f"{label} is a binary file ({size} bytes, sha {data['sha']}); its content is not "
            "shown."
        )
        if html_url:
            output += f"\nView it at {html_url}"
        return Outcome(output, data, citations, [])
    warnings = []
    if cut:
        data["truncated"] = True
        warnings.append(
            f"{path} is {size} bytes; only the first {call.max_file_bytes} bytes are shown "
            "(raise [tools.github_api] max_file_bytes to see more)"
        )
    data["content"] = text
    header = f"{label} ({size} bytes, sha {str(data['sha'])[:12]})"
    if html_url:
        header += f"\n{html_url}"
    return Outcome(f"{header}\n\n{_fence(text)}", data, citations, warnings)


async def _file_bytes(
    call: Call, body: Mapping[str, Any], url: str, what: str, size: int
) -> tuple[bytes, bool]:
    """The file's first ``max_file_bytes`` bytes, and whether the file is longer."""
    cap = call.max_file_bytes
    encoding = body.get("encoding")
    content = body.get("content")
    if encoding == "base64" and isinstance(content, str):
        try:
            raw = base64.b64decode(content)
        except (binascii.Error, ValueError):
            raise ToolFailure(
                ErrorType.PARSE, f"GitHub's base64 content for {what} does not decode"
            ) from None
        return raw[:cap], len(raw) > cap
    if size == 0:
        return b"", False
    # Files over 1 MB come without content; the raw media type gives the bytes themselves,
    # and the guard stops reading at the cap.
    response: Response = await call.github.get(
        url, what=what, not_found=f"GitHub no longer has {what}", accept=ACCEPT_RAW,
        max_bytes=cap,
    )
    return response.content, response.truncated or size > cap


def _decode_text(raw: bytes, cut: bool) -> str | None:
    """The bytes as UTF-8 text, or ``None`` when they look binary."""
    if b"\x00" in raw[:_BINARY_SNIFF]:
        return None
    data = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The cap may cut a character in half: drop the partial one at the very end.
        if cut and exc.reason == "unexpected end of data" and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8", errors="strict")
        return None


# --- list_releases ------------------------------------------------------------------------


async def list_releases(call: Call) -> Outcome:
    """The newest releases, following ``Link: rel="next"`` until ``limit`` are found."""
    limit: int = call.args["limit"]
    what = f"the releases of {call.full_name}"
    url: str | None = call.github.url(f"{call.repo_path()}/releases" + _query(per_page=limit))
    found: list[Mapping[str, Any]] = []
    warnings: list[str] = []
    pages = 0
    while url is not None and len(found) < limit and pages < _MAX_PAGES:
        response = await call.github.get(
            url,
            what=what,
            not_found=(
                f"GitHub found no repository {call.full_name}: it does not exist, or the token "
                "cannot see a private repository"
            ),
        )
        pages += 1
        body = response.json(what)
        if not isinstance(body, list):
            raise ToolFailure(ErrorType.PARSE, f"GitHub's answer for {what} was not a list")
        found.extend(item for item in body if isinstance(item, Mapping))
        url = next_link(response.headers)
        if url is not None:
            url = urljoin(response.url, url)
        if url is not None and not call.github.is_api(url):
            warnings.append(
                "GitHub's next-page link points away from the configured API host; "
                "it was not followed"
            )
            url = None
    releases = [_release(item) for item in found]
    # Newest first by publication; drafts (never published) go last.
    releases.sort(key=lambda r: r["published"] or "", reverse=True)
    releases = releases[:limit]
    if not releases:
        output = f"{call.full_name} has no published releases."
    else:
        lines = [f"Releases of {call.full_name}, newest first:"]
        for index, release in enumerate(releases, 1):
            flags = [f for f in ("prerelease", "draft") if release[f]]
            title = release["tag"]
            if release["name"] and release["name"] != release["tag"]:
                title += f" ({release['name']})"
            published = (release["published"] or "not published")[:10]
            extra = f", {', '.join(flags)}" if flags else ""
            lines.append(f"{index}. {title}, {published}{extra}: {release['url']}")
            if release["body"]:
                lines.extend("   " + line for line in release["body"].splitlines() if line.strip())
        output = "\n".join(lines)
    citations = [
        Citation(f"{call.full_name} {r['tag']}", r["url"]) for r in releases if r["url"]
    ]
    data = {"action": "list_releases", "owner": call.owner, "repo": call.repo,
            "releases": releases}
    return Outcome(output, data, citations, warnings)


def _release(item: Mapping[str, Any]) -> dict[str, Any]:
    body, cut = _cap(_text(item.get("body")).strip(), RELEASE_BODY_CHARS)
    return {
        "tag": _text(item.get("tag_name")),
        "name": _opt_text(item.get("name")),
        "published": _opt_text(item.get("published_at")),
        "url": _opt_text(item.get("html_url")),
        "prerelease": bool(item.get("prerelease")),
        "draft": bool(item.get("draft")),
        "body": body,
        "body_truncated": cut,
    }


# --- get_issue ----------------------------------------------------------------------------


async def get_issue(call: Call) -> Outcome:
    """An issue or pull request: its state, labels, author and description."""
    number: int = call.args["issue_number"]
    what = f"#{number} in {call.full_name}"
    url = call.github.url(f"{call.repo_path()}/issues/{number}")
    response = await call.github.get(
        url,
        what=what,
        not_found=(
            f"GitHub found no issue or pull request #{number} in {call.full_name}: it does not "
            "exist (or was deleted or transferred), the repository does not exist, or the token "
            "cannot see a private repository"
        ),
    )
    item = response.json(what)
    if not isinstance(item, Mapping):
        raise ToolFailure(ErrorType.PARSE, f"GitHub's answer for {what} was not an object")
    pull = item.get("pull_request")
    is_pull = isinstance(pull, Mapping)
    user = item.get("user")
    body, cut = _cap(_text(item.get("body")).strip(), ISSUE_BODY_CHARS)
    labels = sorted(
        _text(label.get("name")) if isinstance(label, Mapping) else _text(label)
        for label in item.get("labels") or []
    )
    data: dict[str, Any] = {
        "action": "get_issue",
        "owner": call.owner,
        "repo": call.repo,
        "number": _int(item.get("number")) or number,
        "title": _text(item.get("title")),
        "state": _text(item.get("state")),
        "state_reason": _opt_text(item.get("state_reason")),
        "labels": [label for label in labels if label],
        "author": _opt_text(user.get("login")) if isinstance(user, Mapping) else None,
        "body": body,
        "body_truncated": cut,
        "comments": _int(item.get("comments")),
        "is_pull_request": is_pull,
        "url": _opt_text(item.get("html_url")),
        "created_at": _opt_text(item.get("created_at")),
        "updated_at": _opt_text(item.get("updated_at")),
        "closed_at": _opt_text(item.get("closed_at")),
        "merged_at": _opt_text(pull.get("merged_at")) if isinstance(pull, Mapping) else None,
    }
    kind = "Pull request" if is_pull else "Issue"
    state = data["state"]
    if data["merged_at"]:
        state = "merged"
    elif data["state_reason"] and data["state"] == "closed":
        state += f" ({data['state_reason']})"
    lines = [
        f"{kind} {call.full_name}#{data['number']}: {data['title']}",
        f"State: {state}; author: {data['author'] or 'unknown'}; comments: {data['comments']}",
    ]
    if data["labels"]:
        lines.append("Labels: " + ", ".join(data["labels"]))
    if data["url"]:
        lines.append(data["url"])
    lines += ["", body or "(no description)"]
    warnings = []
    if cut:
        warnings.append(f"the description was cut to {ISSUE_BODY_CHARS} characters")
    citations = (
        [Citation(f"{call.full_name}#{data['number']}: {data['title']}", data["url"])]
        if data["url"] else []
    )
    return Outcome("\n".join(lines), data, citations, warnings)


# --- search_code --------------------------------------------------------------------------


async def search_code(call: Call) -> Outcome:
    """Code search: the path, repository and URL of each hit."""
    query: str = call.args["query"]
    limit: int = call.args["limit"]
    if "owner" in call.args and "repo:" not in query.lower():
        query = f"{query} repo:{call.full_name}"
    what = f"the code search {query!r}"
    url = call.github.url("/search/code" + _query(q=query, per_page=limit))
    response = await call.github.get(
        url, what=what, not_found=f"GitHub's code search is not available at {call.github.api_url}"
    )
    body = response.json(what)
    if not isinstance(body, Mapping):
        raise ToolFailure(ErrorType.PARSE, f"GitHub's answer for {what} was not an object")
    items = []
    for hit in body.get("items") or []:
        if not isinstance(hit, Mapping):
            continue
        repository = hit.get("repository")
        full_name = (
            _text(repository.get("full_name")) if isinstance(repository, Mapping) else ""
        )
        owner, _, repo = full_name.partition("/")
        items.append({
            "name": _text(hit.get("name")),
            "path": _text(hit.get("path")),
            "repository": full_name,
            # apart, as get_file takes them: a hit passed back whole is a ref (trust.refs)
            "owner": owner,
            "repo": repo,
            "url": _opt_text(hit.get("html_url")),
            "sha": _opt_text(hit.get("sha")),
        })
    items = items[:limit]
    total = _int(body.get("total_count"))
    incomplete = bool(body.get("incomplete_results"))
    if not items:
        output = f"No code found for {query!r}."
    else:
        lines = [f"Code search {query!r}: {total} hits, showing {len(items)}:"]
        lines += [
            f"{i}. {item['repository']}: {item['path']} {item['url'] or ''}".rstrip()
            for i, item in enumerate(items, 1)
        ]
        output = "\n".join(lines)
    warnings = []
    if incomplete:
        warnings.append("GitHub stopped the search early; the hits may be incomplete")
    citations = [
        Citation(f"{item['repository']}: {item['path']}", item["url"])
        for item in items if item["url"]
    ]
    data = {
        "action": "search_code",
        "query": query,
        "total_count": total,
        "incomplete_results": incomplete,
        "items": items,
    }
    return Outcome(output, data, citations, warnings)


_ACTIONS: Final[dict[str, Callable[[Call], Awaitable[Outcome]]]] = {
    "get_file": get_file,
    "get_readme": get_readme,
    "list_releases": list_releases,
    "get_issue": get_issue,
    "search_code": search_code,
}
