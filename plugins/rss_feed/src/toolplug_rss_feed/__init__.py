"""toolplug-rss-feed: recent items from RSS and Atom feeds, fetched with conditional GET.

The author's own feeds are configured; any other feed can be fetched by URL::

    [tools.rss_feed]
    feeds = ["https://blog.example.org/feed.xml"]

This module imports only toolplug and the standard library, so that listing tools stays
cheap; fetching and parsing live in ``_feeds`` and are imported when the tool runs.
"""

from __future__ import annotations

from typing import Any, Final

from toolplug import (
    Annotations,
    ConfigField,
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

__all__ = ["MAX_LIMIT", "TOOLPLUG_CONTRACT", "RssFeedTool", "register_tools"]

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

MAX_LIMIT: Final = 50
"""The most items one call returns."""

_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "link": {"type": ["string", "null"]},
        "published": {
            "type": ["string", "null"],
            "description": "ISO 8601 in UTC (2024-05-01T12:00:00Z), or null when undated",
        },
        "author": {"type": ["string", "null"]},
        "summary": {"type": "string", "description": "Plain text, at most summary_chars long"},
        "feed_title": {"type": "string"},
        "feed_url": {"type": "string"},
    },
    "required": ["title", "link", "published", "author", "summary", "feed_title", "feed_url"],
    "additionalProperties": False,
}


class RssFeedTool(Tool):
    """Returns the newest items of one feed, or of all configured feeds merged."""

    metadata = ToolMetadata(
        name="rss_feed",
        title="RSS and Atom feeds",
        description="Get the newest posts from the author's configured feeds or from a feed URL.",
        category="research",
        optionality="optional",
        usage_hint=(
            "Reach for it when the content should point at recent posts: a 'recent posts' or "
            "'you might have missed' section, a newsletter round-up, or continuity with what "
            "the author (or a named blog) has already covered."
        ),
        guidelines=Guidelines(
            do=(
                "The piece would gain from a 'recent posts' or 'in case you missed it' section",
                "You are writing newsletter-style content that links to recent writing",
                "The text should build on or refer back to earlier posts by the author",
                "The user asks what a blog, project or news feed has published lately",
            ),
            do_not=(
                "The piece stands on its own and has no place for links to other posts",
                "The user wants fresh content with no references to earlier work",
                "The feed's subject has nothing to do with the topic at hand",
                "You need to search the web in general (use web_search for that)",
            ),
            common_mistakes=(
                "Calling fetch with a web page's address instead of its feed's (look for "
                "/feed, /rss or /atom.xml, or the page's alternate link)",
                "Calling fetch without url; use get_configured for the author's own feeds",
                "Asking for many items when three to five make a readable section",
                "Presenting a summary as the post's full text; link to the post instead",
            ),
        ),
        requires_capabilities=("network",),
        produces=("feed_items", "citations"),
        parameters={
            "type": "object",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": ["get_configured", "fetch"],
                    "description": (
                        "get_configured reads the author's configured feeds; fetch reads "
                        "the feed at url"
                    ),
                },
                "url": {
                    "type": "string",
                    "pattern": "^https?://",
                    "description": "The RSS or Atom feed's address (required for fetch)",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": 5,
                    "description": f"How many of the newest items to return (1 to {MAX_LIMIT})",
                },
            },
            "required": ["action"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": _ITEM_SCHEMA, "maxItems": MAX_LIMIT},
                "feeds": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "url": {"type": "string"},
                            "title": {"type": "string"},
                            "cached": {"type": "boolean"},
                            "error": {"type": ["string", "null"]},
                        },
                        "required": ["url", "title", "cached", "error"],
                    },
                },
                "cached": {
                    "type": "boolean",
                    "description": "True when every feed answered 304 and came from the cache",
                },
            },
            "required": ["items", "feeds", "cached"],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="fetch without url, a url that is not http(s), or get_configured with no "
                "feeds configured",
            ),
            ErrorSpec(type="NotFoundError", when="the feed address answers 404 or 410"),
            ErrorSpec(
                type="ParseError",
                when="the document is not an RSS or Atom feed (a web page, say), or it is "
                "larger than the size limit and no complete item came before the cut",
            ),
            ErrorSpec(
                type="PermissionError",
                when="the network guard refuses the address, or the server answers 401 or 403",
            ),
            ErrorSpec(
                type="RateLimitError", when="the server answers 429", retry_possible=True
            ),
            ErrorSpec(
                type="TimeoutError", when="the server did not answer in time", retry_possible=True
            ),
            ErrorSpec(
                type="NetworkError",
                when="the server could not be reached or the connection broke",
                retry_possible=True,
            ),
            ErrorSpec(
                type="UnavailableError",
                when="the server answers with a 5xx error",
                retry_possible=True,
            ),
            ErrorSpec(type="ExecutionError", when="the server answers another HTTP error"),
        ),
        examples=(
            Example(
                description="The three newest posts of the author's configured blog",
                input={"action": "get_configured", "limit": 3},
            ),
            Example(
                description="Recent entries of a project's release feed",
                input={
                    "action": "fetch",
                    "url": "https://github.com/python/cpython/releases.atom",
                    "limit": 5,
                },
            ),
        ),
        config_fields=(
            ConfigField(
                name="feeds",
                type="array",
                description="The author's feed URLs, read by action get_configured",
                default=[],
                json_schema={"type": "array", "items": {"type": "string", "pattern": "^https?://"}},
            ),
            ConfigField(
                name="cache_dir",
                type="string",
                description="Where ETags and the last items are kept (default: the tool's cache)",
            ),
            ConfigField(
                name="summary_chars",
                type="integer",
                description="The longest item summary kept, in characters (0: no summaries)",
                default=500,
                json_schema={"type": "integer", "minimum": 0, "maximum": 20000},
            ),
        ),
        setup_instructions=(
            'List the author\'s feeds under [tools.rss_feed] feeds = ["https://..."] to use '
            "get_configured; fetch works with any feed URL."
        ),
        # Feed titles and summaries are written by whoever publishes the feed. The url is
        # requested from its server: a value placed in it leaves the machine. It is where
        # the request goes (a destination).
        trust=Trust(
            output="untrusted", sinks=("url",), destinations=("url",), url_sinks=("url",)
        ),
        annotations=Annotations(read_only=True, idempotent=True, open_world=True),
        timeout_seconds=45,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Fetch and parse; every failure comes back as a result."""
        from toolplug_rss_feed._feeds import run

        return await run(arguments, context)


register_tools = provides(RssFeedTool)
