"""GitHub REST access (files, READMEs, releases, issues, code search) for toolplug agents.

The entry module holds only what listing and prompting need (metadata, the capability,
the hooks) and imports nothing but toolplug and the standard library; the HTTP work lives
in ``toolplug_github._actions`` and is imported when the tool runs.
"""

from __future__ import annotations

from typing import Any, Final

from toolplug import (
    Annotations,
    Capability,
    Check,
    ConfigField,
    DetectContext,
    ErrorSpec,
    Example,
    Guidelines,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
    provides,
)

__all__ = [
    "GITHUB_TOKEN",
    "TOOLPLUG_CONTRACT",
    "GitHubApiTool",
    "register_capabilities",
    "register_tools",
]

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

ACTIONS: Final = ("get_file", "get_readme", "list_releases", "get_issue", "search_code")

_TOKEN_SETUP: Final = """\
Create a fine-grained personal access token (read-only) and export it:
1. Open https://github.com/settings/personal-access-tokens/new (on GitHub Enterprise
   Server: https://HOST/settings/personal-access-tokens/new).
2. Repository access: "Public repositories", or only the repositories the agent may read.
3. Repository permissions, all "Read-only": Contents, Issues, Metadata (Metadata is
   always included). Grant nothing else: the tool never writes.
4. Generate the token and export it before starting the agent:
       export GITHUB_TOKEN=github_pat_...
   or keep it in another variable and point toolplug at it in toolplug.toml:
       [tools.github_api]
       token = { env = "MY_GITHUB_TOKEN" }
For a repository of an organization that uses SAML single sign-on, also authorize the
token for that organization (on the token's settings page)."""

GITHUB_TOKEN: Final = "github_token"
"""The capability the ``github_api`` tool requires: a GitHub token is configured."""


def _token_problem(ctx: DetectContext) -> str | None:
    # Reading GITHUB_TOKEN through ctx records that the answer depends on it; the resolved
    # config value already covers GITHUB_TOKEN and any { env = "VAR" } indirection.
    from_env = ctx.env("GITHUB_TOKEN")
    if from_env or ctx.config("tools.github_api.token"):
        return None
    return (
        "no GitHub token: GITHUB_TOKEN is not set and [tools.github_api] token has no value "
        '(token = { env = "VAR" } counts only when VAR is set)'
    )


_CAPABILITY: Final = Capability(
    name=GITHUB_TOKEN,
    description="A GitHub token for the REST API (GITHUB_TOKEN or [tools.github_api] token).",
    detectors=(Check(_token_problem),),
    setup=_TOKEN_SETUP,
)

_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": list(ACTIONS),
            "description": (
                "The operation: get_file (a file or directory listing), get_readme, "
                "list_releases, get_issue (an issue or pull request), search_code."
            ),
        },
        "owner": {
            "type": "string",
            "minLength": 1,
            "description": (
                "Repository owner, a user or organization login such as 'python'. Required "
                "by every action except search_code (where, with repo, it narrows the search)."
            ),
        },
        "repo": {
            "type": "string",
            "minLength": 1,
            "description": "Repository name alone, without the owner, such as 'cpython'.",
        },
        "path": {
            "type": "string",
            "description": (
                "get_file: path of a file or directory in the repository, such as "
                "'docs/index.md' ('/' is the root). get_readme: optional directory whose "
                "README to read."
            ),
        },
        "ref": {
            "type": "string",
            "minLength": 1,
            "description": (
                "Branch, tag or commit SHA to read from (get_file, get_readme); "
                "the repository's default branch when left out."
            ),
        },
        "issue_number": {
            "type": "integer",
            "minimum": 1,
            "description": "Issue or pull request number (get_issue).",
        },
        "query": {
            "type": "string",
            "minLength": 1,
            "description": (
                "Code search query with GitHub qualifiers, such as "
                "'load_config language:python repo:owner/name' (search_code)."
            ),
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 30,
            "default": 5,
            "description": "Most releases (list_releases) or hits (search_code) to return.",
        },
    },
    "required": ["action"],
    "additionalProperties": False,
}

_NULLABLE_STRING: Final = {"type": ["string", "null"]}

_RETURNS: Final[dict[str, Any]] = {
    "oneOf": [
        {
            "description": "get_file and get_readme",
            "type": "object",
            "properties": {
                "action": {"enum": ["get_file", "get_readme"]},
                "owner": {"type": "string"},
                "repo": {"type": "string"},
                "ref": _NULLABLE_STRING,
                "path": {"type": "string"},
                "type": {"enum": ["file", "dir", "symlink", "submodule"]},
                "size": {"type": "integer"},
                "sha": _NULLABLE_STRING,
                "url": _NULLABLE_STRING,
                "binary": {"type": "boolean"},
                "truncated": {"type": "boolean"},
                "content": _NULLABLE_STRING,
                "entries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "path": {"type": "string"},
                            "type": {"type": "string"},
                            "size": {"type": "integer"},
                            "url": _NULLABLE_STRING,
                        },
                        "required": ["name", "path", "type"],
                    },
                },
                "target": _NULLABLE_STRING,
                "submodule_url": _NULLABLE_STRING,
            },
            "required": ["action", "owner", "repo", "path", "type"],
        },
        {
            "description": "list_releases, newest first",
            "type": "object",
            "properties": {
                "action": {"const": "list_releases"},
                "owner": {"type": "string"},
                "repo": {"type": "string"},
                "releases": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "tag": {"type": "string"},
                            "name": _NULLABLE_STRING,
                            "published": _NULLABLE_STRING,
                            "url": _NULLABLE_STRING,
                            "prerelease": {"type": "boolean"},
                            "draft": {"type": "boolean"},
                            "body": {"type": "string"},
                            "body_truncated": {"type": "boolean"},
                        },
                        "required": ["tag", "published", "url", "prerelease", "body"],
                    },
                },
            },
            "required": ["action", "owner", "repo", "releases"],
        },
        {
            "description": "get_issue (issues and pull requests)",
            "type": "object",
            "properties": {
                "action": {"const": "get_issue"},
                "owner": {"type": "string"},
                "repo": {"type": "string"},
                "number": {"type": "integer"},
                "title": {"type": "string"},
                "state": {"type": "string"},
                "state_reason": _NULLABLE_STRING,
                "labels": {"type": "array", "items": {"type": "string"}},
                "author": _NULLABLE_STRING,
                "body": {"type": "string"},
                "body_truncated": {"type": "boolean"},
                "comments": {"type": "integer"},
                "is_pull_request": {"type": "boolean"},
                "url": _NULLABLE_STRING,
                "created_at": _NULLABLE_STRING,
                "updated_at": _NULLABLE_STRING,
                "closed_at": _NULLABLE_STRING,
                "merged_at": _NULLABLE_STRING,
            },
            "required": [
                "action", "number", "title", "state", "labels", "author", "body",
                "comments", "is_pull_request", "url",
            ],
        },
        {
            "description": "search_code",
            "type": "object",
            "properties": {
                "action": {"const": "search_code"},
                "query": {"type": "string"},
                "total_count": {"type": "integer"},
                "incomplete_results": {"type": "boolean"},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "path": {"type": "string"},
                            "repository": {"type": "string"},
                            "owner": {"type": "string"},
                            "repo": {"type": "string"},
                            "url": _NULLABLE_STRING,
                            "sha": _NULLABLE_STRING,
                        },
                        "required": ["path", "repository", "owner", "repo", "url"],
                    },
                },
            },
            "required": ["action", "query", "total_count", "items"],
        },
    ],
}

METADATA: Final = ToolMetadata(
    name="github_api",
    title="GitHub",
    description=(
        "Read files, READMEs, releases, issues and pull requests from GitHub repositories, "
        "and search code across GitHub."
    ),
    category="reference",
    optionality="optional",
    usage_hint=(
        "Use to quote real code, documentation or release notes from a named GitHub "
        "repository, to check which version of a library is current, or to bring an issue "
        "or pull request into the discussion; cite the URL it returns."
    ),
    guidelines=Guidelines(
        do=(
            "The user names a repository, project, issue or pull request and wants its actual "
            "content or status.",
            "You need working example code from a known open-source library, or its README.",
            "You are citing a project's own documentation or release notes and want the link.",
            "You need the latest release or tag of a library (list_releases, limit 1-5).",
        ),
        do_not=(
            "Writing general code you already know how to write: answer from your knowledge.",
            "The repository is probably private or internal: the token likely cannot see it, "
            "and the call ends in NotFoundError.",
            "The user's message or earlier tool results already contain what you need.",
            "Browsing a repository file by file: read the README or the one file you need.",
        ),
        common_mistakes=(
            "Putting 'owner/name' or a URL into repo: pass owner='psf' and repo='requests'.",
            "Using get_file for a repository's README: get_readme finds it whatever its file "
            "name or format.",
            "Treating a 404 as proof that something does not exist: private repositories "
            "answer 404 to a token without access.",
            "Writing search_code queries as natural language: use code terms plus qualifiers "
            "such as language:, repo:, path: or extension:.",
            "Retrying at once after a RateLimitError: wait until the reset time it names.",
        ),
    ),
    requires_capabilities=(GITHUB_TOKEN, "network"),
    produces=("github_content", "citations"),
    parameters=_PARAMETERS,
    returns=_RETURNS,
    errors=(
        ErrorSpec(
            type="ValidationError",
            when="A parameter the action needs is missing or malformed (the message names it), "
            "or GitHub rejected a search query (422).",
        ),
        ErrorSpec(
            type="NotFoundError",
            when="The repository, path, ref, README, issue or pull request does not exist, "
            "or the token cannot see a private repository (GitHub answers 404 to both).",
        ),
        ErrorSpec(
            type="PermissionError",
            when="GitHub rejected the token (401) or refused access (403: missing token "
            "permissions, SAML single sign-on not authorized), or the network guard refused "
            "the API address.",
        ),
        ErrorSpec(
            type="RateLimitError",
            when="GitHub's primary or secondary rate limit was reached; the message and "
            "details give the time to retry.",
            retry_possible=True,
        ),
        ErrorSpec(
            type="NetworkError",
            when="GitHub answered with a server error (5xx) or could not be reached.",
            retry_possible=True,
        ),
        ErrorSpec(
            type="TimeoutError",
            when="GitHub did not answer within the network time limit.",
            retry_possible=True,
        ),
        ErrorSpec(
            type="ParseError",
            when="GitHub's answer was not the JSON the API promises (or too large to read).",
        ),
        ErrorSpec(
            type="UnavailableError",
            when="No GitHub token is configured.",
        ),
        ErrorSpec(
            type="ExecutionError",
            when="GitHub answered with an unexpected status.",
        ),
    ),
    examples=(
        Example(
            description="Read a repository's README",
            input={"action": "get_readme", "owner": "psf", "repo": "requests"},
        ),
        Example(
            description="Read one file at a tag",
            input={
                "action": "get_file",
                "owner": "pallets",
                "repo": "flask",
                "path": "src/flask/app.py",
                "ref": "3.0.0",
            },
        ),
        Example(
            description="The three newest releases of a library",
            input={"action": "list_releases", "owner": "pydantic", "repo": "pydantic", "limit": 3},
        ),
        Example(
            description="Context for a pull request under discussion",
            input={"action": "get_issue", "owner": "python", "repo": "cpython", "issue_number": 1},
        ),
        Example(
            description="Find example usage of a function",
            input={"action": "search_code", "query": "NewToolRegistry language:go"},
        ),
    ),
    config_fields=(
        ConfigField(
            name="token",
            type="string",
            description=(
                "GitHub token (fine-grained, read-only). Secret: give it as "
                '{ env = "VAR" } or { file = "PATH" }, or set GITHUB_TOKEN.'
            ),
            env_var="GITHUB_TOKEN",
            secret=True,
        ),
        ConfigField(
            name="api_url",
            type="string",
            description=(
                "Base URL of the REST API; https://HOST/api/v3 for GitHub Enterprise Server."
            ),
            default="https://api.github.com",
            json_schema={"type": "string", "pattern": r"^https?://[^\s/?#]+(/[^\s?#]*)?$"},
        ),
        ConfigField(
            name="max_file_bytes",
            type="integer",
            description="The most bytes of one file get_file or get_readme returns.",
            default=200_000,
            json_schema={"type": "integer", "minimum": 1, "maximum": 50_000_000},
        ),
    ),
    setup_instructions=(
        "For GitHub Enterprise Server set api_url under [tools.github_api] "
        '(api_url = "https://HOST/api/v3") and create the token on that server.'
    ),
    # Issues, pull requests, READMEs and code are written by anyone with an account, and
    # the token reaches the user's private repositories. Owner, repo, path, ref and query
    # are sent to GitHub's API: values placed in them leave the machine. Owner, repo, path
    # and ref name what GitHub holds: a hit of search_code or an entry of a directory,
    # passed back whole as the result's data gave it, is a choice among what exists.
    trust=Trust(
        output="untrusted",
        private=True,
        sinks=("owner", "repo", "path", "ref", "query"),
        refs=("owner", "repo", "path", "ref"),
    ),
    annotations=Annotations(read_only=True, destructive=False, idempotent=True, open_world=True),
    timeout_seconds=60.0,
)


class GitHubApiTool(Tool):
    """The ``github_api`` tool: read-only GitHub REST calls, one action per call."""

    metadata = METADATA

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Run one action against the configured GitHub API."""
        from toolplug_github._actions import run_action

        return await run_action(arguments, context)


register_tools = provides(GitHubApiTool)
register_capabilities = provides(_CAPABILITY)
