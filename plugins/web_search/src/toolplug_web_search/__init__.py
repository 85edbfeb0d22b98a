"""toolplug-web-search: search the web through DuckDuckGo (ddgs) or a SearXNG instance.

The backend is chosen in the configuration; ddgs needs no key and is the default::

    [tools.web_search]
    backend = "searxng"                      # or "ddgs"
    searxng_url = "https://searx.example.org"

This module imports only toolplug and the standard library, so that listing tools stays
cheap; the search itself lives in ``_search`` and is imported when the tool runs.
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
    "BACKEND_CAPABILITY",
    "TOOLPLUG_CONTRACT",
    "WebSearchTool",
    "backend_problem",
    "register_capabilities",
    "register_tools",
]

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

BACKENDS: Final = ("ddgs", "searxng")
MAX_RESULTS: Final = 20
"""The hard cap on results per call, whatever the caller or the engine asks for."""


def backend_problem(ctx: DetectContext) -> str | None:
    """Why the configured search backend cannot work, or None when it can.

    Reads ``[tools.web_search] backend`` and ``searxng_url`` through ``ctx``, and asks
    ``ctx.has_package`` whether ddgs can be imported.
    """
    backend = ctx.config("tools.web_search.backend") or "ddgs"
    if backend == "ddgs":
        if not ctx.has_package("ddgs"):
            return "backend 'ddgs' needs the Python package ddgs, which is not installed"
        return None
    if backend == "searxng":
        if not ctx.config("tools.web_search.searxng_url"):
            return "backend 'searxng' needs searxng_url, which is not set"
        return None
    return f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}"


BACKEND_CAPABILITY: Final = Capability(
    name="web_search_backend",
    description="The configured web search backend is usable (ddgs installed, or a SearXNG URL).",
    detectors=(Check(backend_problem),),
    setup=(
        "For DuckDuckGo (the default): pip install ddgs.\n"
        "For SearXNG, in toolplug.toml:\n"
        "[tools.web_search]\n"
        'backend = "searxng"\n'
        'searxng_url = "https://searx.example.org"  # an instance with JSON output enabled'
    ),
)

_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "The page title"},
        "url": {"type": "string", "description": "The page address"},
        "snippet": {"type": "string", "description": "The engine's excerpt of the page"},
    },
    "required": ["title", "url", "snippet"],
    "additionalProperties": False,
}


class WebSearchTool(Tool):
    """Searches the web with the configured backend and returns numbered, cited results."""

    metadata = ToolMetadata(
        name="web_search",
        title="Web search",
        description="Search the web for current information and return titles, snippets and URLs.",
        category="research",
        optionality="optional",
        usage_hint=(
            "Reach for it when the answer depends on facts that are recent or may have changed "
            "since training: news and dates, releases and version numbers, documentation, or a "
            "claim that needs checking and a source to cite."
        ),
        guidelines=Guidelines(
            do=(
                "The content refers to current events, recent releases or dates near today",
                "A technical detail may have moved since training (versions, APIs, changelogs)",
                "A claim, number or quotation needs checking, or a source to cite",
                "You need the official documentation or home page of a project",
            ),
            do_not=(
                "The user's message already contains the information",
                "The subject is settled knowledge that is unlikely to have changed",
                "You already know the answer well and no citation is wanted",
                "The task is plain creative writing",
            ),
            common_mistakes=(
                "Writing the query as a long question; use a few distinctive keywords",
                "Leaving recency at 'any' when looking for news or the latest release",
                "Searching again at once after a RateLimitError instead of waiting",
                "Treating an empty result as proof that something does not exist",
                "Quoting a snippet as if it were the page; snippets are short and may be stale",
            ),
        ),
        requires_capabilities=("network", "web_search_backend"),
        produces=("search_results", "citations"),
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "What to search for: a few distinctive keywords",
                },
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_RESULTS,
                    "default": 5,
                    "description": f"How many results to return (1 to {MAX_RESULTS})",
                },
                "recency": {
                    "type": "string",
                    "enum": ["day", "week", "month", "year", "any"],
                    "default": "any",
                    "description": "Only pages from the past day, week, month or year; any for all",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "backend": {"type": "string", "enum": list(BACKENDS)},
                "recency": {"type": "string"},
                "results": {"type": "array", "items": _RESULT_SCHEMA, "maxItems": MAX_RESULTS},
            },
            "required": ["query", "backend", "recency", "results"],
        },
        errors=(
            ErrorSpec(type="ValidationError", when="the query is empty or only white space"),
            ErrorSpec(
                type="RateLimitError",
                when="the search engine is rate limiting these requests (wait before retrying)",
                retry_possible=True,
            ),
            ErrorSpec(
                type="TimeoutError",
                when="the search engine did not answer in time",
                retry_possible=True,
            ),
            ErrorSpec(
                type="NetworkError",
                when="the search engine could not be reached or the connection broke",
                retry_possible=True,
            ),
            ErrorSpec(
                type="PermissionError",
                when="the network guard refuses the SearXNG address (allow it in [network] allow)",
            ),
            ErrorSpec(
                type="UnavailableError",
                when="the SearXNG instance has a server error, or does not offer JSON output",
                retry_possible=True,
            ),
            ErrorSpec(
                type="ParseError",
                when="the SearXNG instance answered with something other than JSON results",
            ),
            ErrorSpec(type="ExecutionError", when="the search library failed unexpectedly"),
        ),
        examples=(
            Example(
                description="What changed in a recent release",
                input={"query": "Python 3.13 new features", "recency": "month"},
            ),
            Example(
                description="Check a figure, three sources are enough",
                input={"query": "Iceland population 2024", "max_results": 3},
            ),
            Example(
                description="Find the official documentation of a library option",
                input={"query": "httpx timeout configuration docs"},
                output={
                    "query": "httpx timeout configuration docs",
                    "backend": "ddgs",
                    "recency": "any",
                    "results": [
                        {
                            "title": "Timeouts - HTTPX",
                            "url": "https://www.python-httpx.org/advanced/timeouts/",
                            "snippet": "HTTPX enforces timeouts everywhere by default.",
                        }
                    ],
                },
            ),
        ),
        config_fields=(
            ConfigField(
                name="backend",
                type="string",
                description="The search backend: ddgs (DuckDuckGo, no key) or searxng",
                default="ddgs",
                json_schema={"enum": list(BACKENDS)},
            ),
            ConfigField(
                name="searxng_url",
                type="string",
                description="Base URL of the SearXNG instance (needed for backend searxng)",
                json_schema={"pattern": "^https?://"},
            ),
            ConfigField(
                name="region",
                type="string",
                description="ddgs region code, such as us-en or de-de; wt-wt is no region",
                default="wt-wt",
            ),
        ),
        required_packages=("ddgs",),
        setup_instructions=(
            "The ddgs backend needs the package ddgs (installed with toolplug-web-search). "
            'For SearXNG set backend = "searxng" and searxng_url under [tools.web_search]; '
            "the instance must list json in search.formats of its settings.yml."
        ),
        # Results are titles, snippets and URLs anyone on the web could have written. The
        # query goes to the search backend: a value placed there leaves the machine.
        trust=Trust(output="untrusted", sinks=("query",)),
        annotations=Annotations(read_only=True, idempotent=True, open_world=True),
        timeout_seconds=30,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Search with the configured backend; every failure comes back as a result."""
        from toolplug_web_search._search import search

        return await search(arguments, context)


register_tools = provides(WebSearchTool)
register_capabilities = provides(BACKEND_CAPABILITY)
