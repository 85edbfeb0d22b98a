"""The ``link_validator`` tool: its contract, and the thin layer between a call and the checker.

Only ``toolplug`` and the standard library are imported here; the checker (httpx, through
``toolplug.http``) is imported when the tool runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

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
)

if TYPE_CHECKING:
    from toolplug_link_validator._check import LinkReport

__all__ = ["DEFAULT_MAX_URLS", "LinkValidator"]

DEFAULT_MAX_URLS: Final = 100
_DEFAULTS: Final[dict[str, Any]] = {
    "max_urls": DEFAULT_MAX_URLS,
    "concurrency": 20,
    "per_host": 4,
    "url_timeout_seconds": 10.0,
}
_SHOWN_PER_SECTION: Final = 25  # the output lists this many links per section, then counts

_REDIRECT_HOP: Final = {
    "type": "object",
    "properties": {
        "status": {"type": "integer", "description": "The redirect's HTTP status (301, 302 ...)."},
        "url": {"type": "string", "description": "The absolute URL it pointed to."},
    },
    "required": ["status", "url"],
}
_LINK: Final = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "The URL as given."},
        "ok": {"type": "boolean", "description": "A final 2xx (and the expected content type)."},
        "status": {"type": ["integer", "null"], "description": "Final HTTP status, if any."},
        "final_url": {"type": ["string", "null"], "description": "Where redirects ended."},
        "redirects": {"type": "array", "items": _REDIRECT_HOP, "description": "Chain followed."},
        "content_type": {"type": ["string", "null"], "description": "Media type, no params."},
        "error": {"type": ["string", "null"], "description": "Why it is not good, or null."},
        "elapsed_ms": {"type": "number", "description": "Network time for this URL."},
        "method": {"enum": ["HEAD", "GET"], "description": "GET when HEAD was refused."},
    },
    "required": [
        "url",
        "ok",
        "status",
        "final_url",
        "redirects",
        "content_type",
        "error",
        "elapsed_ms",
    ],
}


class LinkValidator(Tool):
    """Checks that URLs answer, where they redirect, and what they serve."""

    metadata = ToolMetadata(
        name="link_validator",
        title="Link validator",
        description=(
            "Check many URLs at once: whether each answers with success, where its redirects "
            "lead, and whether it serves the expected content type."
        ),
        category="reference",
        optionality="optional",
        usage_hint=(
            "Use before putting links into content: it confirms each URL still answers "
            "(no 404 or server error), shows where redirects end up, and can confirm the kind "
            "of content served. Pass every link in one call."
        ),
        guidelines=Guidelines(
            do=(
                "You are about to cite, publish or hand over URLs and need to know they work.",
                "A list of links (a reference section, a README, search results) needs a "
                "broken-link check.",
                "You need to know where an old or shortened link leads now.",
                "A link must serve a particular kind of content, such as a PDF or an HTML page.",
            ),
            do_not=(
                "You need what a page says: fetch it instead; this tool does not read bodies.",
                "The URLs are placeholders or examples (example.com, localhost) that are not "
                "meant to resolve.",
                "The same links were already checked earlier in this conversation.",
                "There is a single link you are about to fetch anyway: the fetch will tell you.",
            ),
            common_mistakes=(
                "Calling the tool once per URL: pass all links in one call; they are checked "
                "concurrently.",
                "Treating a redirect as a broken link: a redirect to a working page is fine, "
                "but cite its final_url.",
                "Reading 401, 403 or 429 as 'the page is gone': some sites turn away automated "
                "checks; report such a link as unverified, not dead.",
                "Giving a file extension as expected_content_type: give a media type such as "
                "'application/pdf'.",
            ),
        ),
        requires_capabilities=("network",),
        produces=("link_reports",),
        parameters={
            "type": "object",
            "properties": {
                "urls": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": DEFAULT_MAX_URLS,
                    "description": (
                        "The absolute http(s) URLs to check, all in one call. A malformed "
                        "entry is reported on its own; the others are still checked."
                    ),
                },
                "expected_content_type": {
                    "type": "string",
                    "description": (
                        "A media type every link must serve, e.g. 'text/html' or "
                        "'application/pdf'; parameters such as charset are ignored."
                    ),
                },
            },
            "required": ["urls"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "results": {"type": "array", "items": _LINK, "description": "In input order."},
                "summary": {
                    "type": "object",
                    "properties": {
                        "total": {"type": "integer"},
                        "ok": {"type": "integer"},
                        "broken": {"type": "integer"},
                        "redirected": {"type": "integer"},
                    },
                    "required": ["total", "ok", "broken", "redirected"],
                },
            },
            "required": ["results", "summary"],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="No URL was given, more than max_urls were given, or the configuration "
                "holds an impossible limit.",
            ),
            ErrorSpec(
                type="UnavailableError",
                when="The HTTP client is not installed (pip install 'toolplug[http]').",
            ),
        ),
        examples=(
            Example(
                description="Check the links of a reference section before publishing",
                input={
                    "urls": [
                        "https://docs.python.org/3/library/asyncio.html",
                        "https://pluggy.readthedocs.io/en/stable/",
                        "https://github.com/encode/httpx",
                    ]
                },
                output={
                    "results": [
                        {
                            "url": "https://docs.python.org/3/library/asyncio.html",
                            "ok": True,
                            "status": 200,
                            "final_url": "https://docs.python.org/3/library/asyncio.html",
                            "redirects": [],
                            "content_type": "text/html",
                            "error": None,
                            "elapsed_ms": 84.0,
                            "method": "HEAD",
                        },
                        {
                            "url": "https://pluggy.readthedocs.io/en/stable/",
                            "ok": True,
                            "status": 200,
                            "final_url": "https://pluggy.readthedocs.io/en/stable/",
                            "redirects": [],
                            "content_type": "text/html",
                            "error": None,
                            "elapsed_ms": 121.0,
                            "method": "HEAD",
                        },
                        {
                            "url": "https://github.com/encode/httpx",
                            "ok": True,
                            "status": 200,
                            "final_url": "https://github.com/encode/httpx",
                            "redirects": [
                                {"status": 301, "url": "https://github.com/encode/httpx"}
                            ],
                            "content_type": "text/html",
                            "error": None,
                            "elapsed_ms": 230.0,
                            "method": "HEAD",
                        },
                    ],
                    "summary": {"total": 3, "ok": 3, "broken": 0, "redirected": 1},
                },
            ),
            Example(
                description="Make sure a download link serves a PDF",
                input={
                    "urls": ["https://www.rfc-editor.org/rfc/rfc9110.pdf"],
                    "expected_content_type": "application/pdf",
                },
            ),
        ),
        config_fields=(
            ConfigField(
                name="max_urls",
                type="integer",
                description="The most URLs one call may check (the parameters schema "
                f"advertises {DEFAULT_MAX_URLS}; a lower value is enforced by the tool).",
                default=DEFAULT_MAX_URLS,
                json_schema={"type": "integer", "minimum": 1, "maximum": 10_000},
            ),
            ConfigField(
                name="concurrency",
                type="integer",
                description="The most requests in flight at once, over all hosts.",
                default=20,
                json_schema={"type": "integer", "minimum": 1, "maximum": 500},
            ),
            ConfigField(
                name="per_host",
                type="integer",
                description="The most requests in flight to one host at once.",
                default=4,
                json_schema={"type": "integer", "minimum": 1, "maximum": 100},
            ),
            ConfigField(
                name="url_timeout_seconds",
                type="number",
                description="Network time allowed per URL, redirects included. (Not named "
                "timeout_seconds: that key sets the time limit of the whole call.)",
                default=10.0,
                json_schema={"type": "number", "exclusiveMinimum": 0, "maximum": 300},
            ),
        ),
        required_packages=("toolplug-link-validator",),
        setup_instructions="pip install toolplug-link-validator; the network must not be "
        "turned off (offline = true) or denied by the host.",
        # Statuses, reasons, redirect targets and content types are what remote servers
        # answered. Every URL is requested: a value placed in one leaves the machine. The
        # URLs are where the requests go (destinations).
        trust=Trust(
            output="untrusted", sinks=("urls",), destinations=("urls",), url_sinks=("urls",)
        ),
        annotations=Annotations(
            read_only=True, destructive=False, idempotent=True, open_world=True
        ),
        # 100 URLs on one host at 4 at a time, each allowed 10 s, is 250 s in the worst case.
        timeout_seconds=300.0,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Check the URLs and summarise broken, redirected and good links."""
        settings = {**_DEFAULTS, **dict(context.config)}
        urls = arguments.get("urls")
        if not isinstance(urls, list) or not urls:
            return ToolResult.failure("ValidationError", "urls: give at least one URL")
        limit = settings["max_urls"]
        if len(urls) > limit:
            return ToolResult.failure(
                "ValidationError",
                f"urls: {len(urls)} URLs given, at most {limit} per call "
                f"([tools.link_validator] max_urls); split the list",
            )
        expected = arguments.get("expected_content_type")
        if expected is not None and (not isinstance(expected, str) or "/" not in expected):
            return ToolResult.failure(
                "ValidationError",
                f"expected_content_type: expected a media type such as 'text/html', "
                f"got {expected!r}",
            )
        problem = _check_settings(settings)
        if problem:
            return ToolResult.failure("ValidationError", problem)
        try:
            from toolplug_link_validator._check import check_links
        except ImportError as exc:
            return ToolResult.failure(
                "UnavailableError",
                f"the HTTP client is missing ({exc}); pip install 'toolplug[http]'",
            )
        warnings: list[str] = []
        progress = _host_progress(context.host, warnings)
        reports = await check_links(
            [u if isinstance(u, str) else repr(u) for u in urls],
            policy=context.network,
            concurrency=int(settings["concurrency"]),
            per_host=int(settings["per_host"]),
            timeout=float(settings["url_timeout_seconds"]),
            expected_content_type=expected,
            progress=progress,
        )
        return ToolResult.success(
            summarise(reports),
            {"results": [r.to_dict() for r in reports], "summary": _counts(reports)},
            warnings=warnings,
        )


def _check_settings(settings: Mapping[str, Any]) -> str | None:
    for key in ("max_urls", "concurrency", "per_host"):
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"[tools.link_validator] {key}: expected a whole number >= 1, got {value!r}"
    timeout = settings["url_timeout_seconds"]
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout < math.inf
    ):
        return (
            "[tools.link_validator] url_timeout_seconds: expected a number of seconds > 0, "
            f"got {timeout!r}"
        )
    return None


def _host_progress(
    host: Mapping[str, Any], warnings: list[str]
) -> Callable[[int, int], None] | None:
    """The host's ``progress`` callable, shielded: a failing bar must not fail the check."""
    progress = host.get("progress")
    if not callable(progress):
        return None
    failed = False

    def report(done: int, total: int) -> None:
        nonlocal failed
        if failed:
            return
        try:
            progress(done, total)
        except Exception as exc:  # the host's callback, not ours: note it and go on
            failed = True
            warnings.append(f"the progress callback raised {type(exc).__name__}; it was dropped")

    return report


def _counts(reports: list[LinkReport]) -> dict[str, int]:
    return {
        "total": len(reports),
        "ok": sum(r.ok for r in reports),
        "broken": sum(not r.ok for r in reports),
        "redirected": sum(r.ok and bool(r.redirects) for r in reports),
    }


def summarise(reports: list[LinkReport]) -> str:
    """Text for the model: broken links first, then redirected ones, then how many are good."""
    counts = _counts(reports)
    good = counts["ok"] - counts["redirected"]
    lines = [
        f"Checked {counts['total']} link{'s' * (counts['total'] != 1)}: "
        f"{counts['broken']} broken, {counts['redirected']} redirected, {good} good."
    ]
    broken = [r for r in reports if not r.ok]
    if broken:
        lines += ["", "Broken:"]
        for report in broken[:_SHOWN_PER_SECTION]:
            where = ""
            if report.redirects and report.final_url and report.final_url != report.url:
                where = f" (after redirects, at {report.final_url})"
            lines.append(f"- {report.url}: {report.error}{where}")
        lines += _more(len(broken))
    redirected = [r for r in reports if r.ok and r.redirects]
    if redirected:
        lines += ["", "Redirected (cite the final URL):"]
        for report in redirected[:_SHOWN_PER_SECTION]:
            chain = ", ".join(str(hop["status"]) for hop in report.redirects)
            lines.append(f"- {report.url} -> {report.final_url} ({chain})")
        lines += _more(len(redirected))
    if good:
        lines += ["", f"{good} link{'s' * (good != 1)} answered {_ok_phrase(reports)} directly."]
    return "\n".join(lines)


def _more(count: int) -> list[str]:
    hidden = count - _SHOWN_PER_SECTION
    return [f"- ... and {hidden} more (see data.results)"] if hidden > 0 else []


def _ok_phrase(reports: list[LinkReport]) -> str:
    statuses = sorted({r.status for r in reports if r.ok and not r.redirects and r.status})
    return "with " + "/".join(str(s) for s in statuses) if statuses else "successfully"
