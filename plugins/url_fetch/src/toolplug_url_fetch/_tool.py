"""The ``url_fetch`` tool: its contract, and the checks a call passes before anything is sent.

Only ``toolplug`` and the standard library are imported here; the HTTP half (``_fetch``) is
imported when the tool runs.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from toolplug import (
    Annotations,
    ConfigField,
    ErrorSpec,
    Example,
    File,
    Guidelines,
    Image,
    Part,
    Tool,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
    Trust,
)
from toolplug_url_fetch._rules import (
    BODY_METHODS,
    METHODS,
    Redactor,
    checked_headers,
    download_target,
    environment,
    resolve_profile,
)

if TYPE_CHECKING:
    from toolplug.http import FetchResult

__all__ = ["UrlFetch"]

_DEFAULTS: Final[dict[str, Any]] = {
    "max_timeout_seconds": 60.0,
    "max_bytes": 2_000_000,
    "max_download_bytes": 50_000_000,
    "auth_profiles": {},
}
_PAGE_CHARS: Final = 20_000
"""Characters of a text answer returned when max_chars is not given: a page that, with the
status lines and its copy in ``data`` (JSON escapes, headers and all), fits the default
output budget of a call (50,000 characters), so it comes back whole and its next_offset is
exactly where to read on."""
_TOKEN_PATTERN: Final = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
_AUTH_PROFILES_SCHEMA: Final = {
    "type": "object",
    "propertyNames": {"pattern": r"^[A-Za-z0-9_.-]+$"},
    "additionalProperties": {
        "type": "object",
        "properties": {
            "header": {
                "type": "string",
                "pattern": _TOKEN_PATTERN,
                "description": "The header that carries the secret (default Authorization).",
            },
            "scheme": {
                "type": "string",
                "pattern": r"^[!#$%&'*+.^_`|~0-9A-Za-z-]*$",
                "description": "Put before the secret with a space, e.g. Bearer or token.",
            },
            "env": {
                "type": "string",
                "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$",
                "description": "The environment variable holding the secret.",
            },
            "hosts": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "description": "The only hosts the secret is sent to (exact, any case).",
            },
        },
        "required": ["env", "hosts"],
        "additionalProperties": False,
    },
}


_METHOD_ANNOTATIONS: Final[Mapping[str, Annotations]] = {
    "GET": Annotations(read_only=True, destructive=False, idempotent=True, open_world=True),
    "POST": Annotations(read_only=False, destructive=False, idempotent=False, open_world=True),
    "PUT": Annotations(read_only=False, destructive=True, idempotent=True, open_world=True),
    "PATCH": Annotations(read_only=False, destructive=True, idempotent=False, open_world=True),
    "DELETE": Annotations(read_only=False, destructive=True, idempotent=True, open_world=True),
}
"""The annotations of a call by its method (``UrlFetch.annotations_for``)."""
_DOWNLOAD: Final = Annotations(
    read_only=False, destructive=True, idempotent=True, open_world=True
)
"""A GET with download_path: it writes (and may replace) a file in the downloads directory."""


class UrlFetch(Tool):
    """One guarded HTTP request: the answer as text, a description, or a file."""

    metadata = ToolMetadata(
        name="url_fetch",
        title="Fetch a URL",
        description=(
            "Make one HTTP(S) request and return the response text, an image or PDF as "
            "itself, a description of another binary body, or save the body to a file in "
            "the cache directory."
        ),
        category="utility",
        optionality="optional",
        usage_hint=(
            "Use to read a specific web page or API response, to call an HTTP API (with a "
            "configured auth profile when it needs a key), or to download a file for later "
            "steps."
        ),
        guidelines=Guidelines(
            do=(
                "You have an exact URL and need what it says: a page, a JSON API answer, a "
                "raw file.",
                "You must call an HTTP API with GET, POST, PUT, PATCH or DELETE.",
                "An API needs a key: name its auth_profile; the key is added for you and only "
                "sent to that profile's hosts.",
                "A later step needs the file itself (a PDF, an image, an archive): save it "
                "with download_path.",
            ),
            do_not=(
                "You do not know the URL yet: search first.",
                "You only need to know whether links work: check them all at once with a "
                "link checker.",
                "You would put a token, password or cookie in headers or the URL: that is "
                "refused; use an auth_profile.",
                "The request would change something (POST, PUT, PATCH, DELETE) that the user "
                "did not ask for.",
            ),
            common_mistakes=(
                "Sending a body with GET or DELETE: only POST, PUT and PATCH take one.",
                "Passing a JSON body as a string: give the object itself, it is sent as JSON "
                "with Content-Type application/json.",
                "Giving download_path as an absolute path or with '..': it is a path inside "
                "the downloads directory, such as 'reports/q3.pdf'.",
                "Ignoring truncated: true: the body was cut at max_bytes; raise max_bytes "
                "(up to the configured cap) or download the file.",
                "Stopping at the first page of a long text: when next_offset is set, call "
                "again with offset set to it for the rest.",
            ),
        ),
        requires_capabilities=("network",),
        produces=("web_content", "files"),
        parts=("image", "file"),
        parameters={
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "The absolute http(s) URL to request.",
                },
                "method": {
                    "type": "string",
                    "enum": list(METHODS),
                    "default": "GET",
                    "description": "The HTTP method.",
                },
                "headers": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": (
                        "Extra request headers. Credentials (Authorization, Cookie, "
                        "X-Api-Key ...), Host, Content-Length and hop-by-hop headers are "
                        "refused."
                    ),
                },
                "body": {
                    "type": ["string", "object", "array", "number", "boolean", "null"],
                    "description": (
                        "The request body, only for POST, PUT and PATCH: a string is sent "
                        "as text, any other JSON value as JSON."
                    ),
                },
                "auth_profile": {
                    "type": "string",
                    "description": (
                        "The name of a configured auth profile whose secret is added as a "
                        "header; only allowed for that profile's hosts."
                    ),
                },
                "download_path": {
                    "type": "string",
                    "description": (
                        "Save the body to this relative path under the downloads directory "
                        "and return its metadata (path, bytes, sha256) instead of the body."
                    ),
                },
                "timeout_seconds": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": (
                        "Time limit for the whole request, redirects included; capped by "
                        "the configured max_timeout_seconds."
                    ),
                },
                "max_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "description": (
                        "The most body bytes to read; capped by the configured max_bytes "
                        "(max_download_bytes with download_path). The rest is cut and "
                        "flagged as truncated."
                    ),
                },
                # Defaults in the descriptions, as for max_bytes: the tool fills them in.
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": (
                        "For a text answer: where to start, in characters into the body's "
                        "text (default 0). To read on, pass the next_offset of the last "
                        "answer (the request is sent again, so only with GET)."
                    ),
                },
                "max_chars": {
                    "type": "integer",
                    "minimum": 1,
                    "description": (
                        "For a text answer: the most characters of the body's text to return "
                        f"from offset on (default {_PAGE_CHARS})."
                    ),
                },
            },
            "required": ["url"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "final_url": {"type": "string"},
                "method": {"type": "string"},
                "status": {"type": "integer"},
                "reason": {"type": "string"},
                "ok": {"type": "boolean"},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "content_type": {"type": ["string", "null"]},
                "charset": {"type": ["string", "null"]},
                "redirects": {"type": "array", "items": {"type": "object"}},
                "bytes": {"type": "integer"},
                "truncated": {"type": "boolean"},
                "sha256": {"type": "string"},
                "elapsed_ms": {"type": "number"},
                "text": {
                    "type": ["string", "null"],
                    "description": "The body, when text: at most max_chars characters from "
                    "offset on.",
                },
                "offset": {
                    "type": "integer",
                    "description": "A text answer: the first character of the text returned.",
                },
                "chars": {
                    "type": "integer",
                    "description": "A text answer: the characters in text.",
                },
                "total_chars": {
                    "type": "integer",
                    "description": "A text answer: the length of the whole text (of the bytes "
                    "read: all of the body unless truncated).",
                },
                "next_offset": {
                    "type": ["integer", "null"],
                    "description": "A text answer: the offset of the rest; null when text "
                    "reaches the end.",
                },
                "binary": {
                    "type": ["boolean", "null"],
                    "description": "True when the body was described, not shown; null for a "
                    "download.",
                },
                "download": {
                    "type": "object",
                    "properties": {
                        "path": {
                            "type": "string",
                            "description": "Where the file is, as downloads/<download_path> "
                            "(the downloads directory by its alias; its absolute path is "
                            "in the operator's log, not here).",
                        },
                        "bytes": {"type": "integer"},
                        "content_type": {"type": ["string", "null"]},
                        "truncated": {"type": "boolean"},
                        "sha256": {"type": "string"},
                    },
                    "required": ["path", "bytes", "content_type", "truncated", "sha256"],
                },
            },
            "required": ["url", "final_url", "status", "ok", "bytes", "truncated"],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="A refused header, a body with GET or DELETE, credentials in the URL, "
                "a download_path that names a directory, an offset with another method than "
                "GET or with download_path, or an offset past the end of the text.",
            ),
            ErrorSpec(
                type="PermissionError",
                when="The network guard refused the URL or a redirect (private address, "
                "scheme ...), the auth_profile is unknown or not for this host, or "
                "download_path leads outside the downloads directory.",
            ),
            ErrorSpec(
                type="TimeoutError",
                when="The request took longer than timeout_seconds.",
                retry_possible=True,
            ),
            ErrorSpec(
                type="NetworkError",
                when="The host did not resolve, or the connection failed or broke.",
                retry_possible=True,
            ),
            ErrorSpec(
                type="UnavailableError",
                when="The auth profile's environment variable is not set, or the HTTP client "
                "is not installed.",
            ),
            ErrorSpec(
                type="NotFoundError",
                when="A download answered 404 or 410 (nothing is saved).",
            ),
            ErrorSpec(
                type="ExecutionError",
                when="A download answered with another non-2xx status, or the file could not "
                "be written.",
                retry_possible=True,
            ),
        ),
        examples=(
            Example(
                description="Read a documentation page",
                input={"url": "https://docs.python.org/3/library/json.html"},
            ),
            Example(
                description="Read on in a long page, from the next_offset of the last answer",
                input={"url": "https://docs.python.org/3/library/json.html", "offset": 20000},
            ),
            Example(
                description="Create an issue through an API whose token lives in a profile",
                input={
                    "url": "https://api.github.com/repos/OWNER/REPO/issues",
                    "method": "POST",
                    "auth_profile": "github",
                    "headers": {"Accept": "application/vnd.github+json"},
                    "body": {"title": "Broken link in README", "body": "The docs link 404s."},
                },
            ),
            Example(
                description="Download a PDF for a later step",
                input={
                    "url": "https://www.rfc-editor.org/rfc/rfc9110.pdf",
                    "download_path": "rfc/rfc9110.pdf",
                },
                output={
                    "url": "https://www.rfc-editor.org/rfc/rfc9110.pdf",
                    "final_url": "https://www.rfc-editor.org/rfc/rfc9110.pdf",
                    "status": 200,
                    "ok": True,
                    "bytes": 1048576,
                    "truncated": False,
                    "download": {
                        "path": "downloads/rfc/rfc9110.pdf",
                        "bytes": 1048576,
                        "content_type": "application/pdf",
                        "truncated": False,
                        "sha256": "9f2c…",
                    },
                },
            ),
        ),
        config_fields=(
            ConfigField(
                name="max_timeout_seconds",
                type="number",
                description="The longest timeout_seconds a call may ask for.",
                default=60.0,
                json_schema={"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
            ),
            ConfigField(
                name="max_bytes",
                type="integer",
                description="The most body bytes returned to the model (default 2 MB).",
                default=2_000_000,
                json_schema={"type": "integer", "minimum": 1},
            ),
            ConfigField(
                name="max_download_bytes",
                type="integer",
                description="The most bytes saved by one download (default 50 MB).",
                default=50_000_000,
                json_schema={"type": "integer", "minimum": 1},
            ),
            ConfigField(
                name="auth_profiles",
                type="object",
                description="Named credentials: { header, scheme, env, hosts } each; the "
                "secret is read from the environment variable env and sent only to hosts.",
                default={},
                json_schema=_AUTH_PROFILES_SCHEMA,
            ),
        ),
        required_packages=("toolplug-url-fetch",),
        setup_instructions="pip install toolplug-url-fetch; the network must not be turned "
        "off (offline = true) or denied by the host.",
        # A response is whatever the server (or a page's author) wrote. The url, headers and
        # body leave the machine; download_path writes a file. Not private: most fetches
        # are public pages. A host whose auth profiles reach private APIs says so with
        # [tools.url_fetch] trust = { private = true } (docs/configuration.md). The url is
        # where the request goes: a link the user's own data holds, whole, is fetched
        # without the trifecta's question (docs/security.md, destinations).
        trust=Trust(
            output="untrusted",
            sinks=("url", "headers", "body", "download_path"),
            destinations=("url",),
            # read as what they are: the URL decomposed, the path resolved
            url_sinks=("url",),
            path_sinks=("download_path",),
        ),
        # What a call may do, the worst of every method: a DELETE or a PUT destroys or
        # replaces what the server holds. annotations_for says what one call does.
        annotations=Annotations(
            read_only=False, destructive=True, idempotent=False, open_world=True
        ),
        # Above the largest timeout a call may ask for (max_timeout_seconds, 60 by default).
        timeout_seconds=90.0,
    )

    @classmethod
    def annotations_for(cls, arguments: Mapping[str, Any]) -> Annotations:
        """What this call does, by its method (RFC 9110's safe and idempotent methods).

        A GET only reads: read-only, so it runs unasked (the flow guard still reads its
        URL once the conversation has read private data). With ``download_path`` a GET
        also writes a file in the downloads directory, replacing one already there:
        destructive. POST adds (not destructive, not idempotent); PUT replaces, PATCH
        changes and DELETE removes what the server holds: destructive. A method the tool
        does not know gets the declared annotations, the worst of them.
        """
        method = str(arguments.get("method") or "GET").upper()
        found = _METHOD_ANNOTATIONS.get(method)
        if found is None:
            return cls.metadata.annotations
        if method == "GET" and arguments.get("download_path") is not None:
            return _DOWNLOAD
        return found

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Check the request, send it through the guard, and shape the answer."""
        try:
            return await _run(arguments, context)
        except ToolFailure as failure:
            return failure.to_result()


async def _run(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    settings = {**_DEFAULTS, **dict(context.config)}
    warnings: list[str] = []
    url = arguments.get("url")
    if not isinstance(url, str) or not url.strip():
        raise ToolFailure("ValidationError", "url: give an absolute http(s) URL")
    url = url.strip()
    try:
        has_credentials = "@" in urlsplit(url).netloc
    except ValueError:
        has_credentials = False  # the guard names what is wrong with it
    if has_credentials:
        raise ToolFailure(
            "ValidationError",
            "url: a user name or password in the URL is not accepted; use an auth_profile",
        )
    method = str(arguments.get("method") or "GET").upper()
    if method not in METHODS:
        raise ToolFailure(
            "ValidationError", f"method: expected one of {', '.join(METHODS)}, got {method!r}"
        )
    headers = checked_headers(arguments.get("headers"))
    body = _body(method, arguments.get("body"), headers)
    timeout = _timeout(arguments.get("timeout_seconds"), settings, context, warnings)
    downloading = arguments.get("download_path") is not None
    max_bytes = _max_bytes(arguments.get("max_bytes"), settings, downloading, warnings)
    page = _page(arguments, method, downloading)

    auth = None
    profile = arguments.get("auth_profile")
    if profile is not None:
        profiles = settings.get("auth_profiles") or {}
        auth = resolve_profile(str(profile), url, profiles, environment(context))
        if any(name.lower() == auth.name.lower() for name in headers):
            raise ToolFailure(
                "ValidationError",
                f"headers: {auth.name!r} is set by auth_profile {auth.profile!r}; remove it",
            )
    redactor = Redactor(*(() if auth is None else (auth.secret,)))
    target = None
    downloads = context.cache_dir / "downloads"
    if downloading:
        target = download_target(downloads, arguments["download_path"])

    try:
        from toolplug_url_fetch import _fetch
    except ImportError as exc:
        raise ToolFailure(
            "UnavailableError", f"the HTTP client is missing ({exc}); pip install 'toolplug[http]'"
        ) from None
    request = _fetch.Request(
        method=method,
        url=url,
        headers=headers,
        body=body,
        timeout=timeout,
        max_bytes=max_bytes,
        auth=auth,
    )
    try:
        result = await _fetch.perform(request, context.network)
        data = {"method": method, **_fetch.describe(result)}
        if target is not None:
            return _downloaded(
                result, data, target, redactor, warnings, downloads=downloads.resolve()
            )
        return _answer(result, data, redactor, warnings, settings, page=page, tool=context.tool)
    except ToolFailure as failure:
        raise ToolFailure(
            failure.type, redactor.text(failure.message), retry_possible=failure.retry_possible
        ) from None


def _body(method: str, body: Any, headers: dict[str, str]) -> bytes | None:
    """The encoded body (setting Content-Type when the caller did not)."""
    if body is None:
        return None
    if method not in BODY_METHODS:
        raise ToolFailure(
            "ValidationError",
            f"body: {method} requests carry no body; only POST, PUT and PATCH take one",
        )
    has_type = any(name.lower() == "content-type" for name in headers)
    if isinstance(body, str):
        if not has_type:
            headers["Content-Type"] = "text/plain; charset=utf-8"
        return body.encode("utf-8")
    try:
        encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ToolFailure("ValidationError", f"body: not a JSON value ({exc})") from None
    if not has_type:
        headers["Content-Type"] = "application/json"
    return encoded.encode("utf-8")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _timeout(
    asked: Any, settings: Mapping[str, Any], context: ToolContext, warnings: list[str]
) -> float:
    cap = float(settings["max_timeout_seconds"])
    if asked is None:
        return min(context.network.timeout_seconds, cap)
    if not _number(asked) or asked <= 0:
        raise ToolFailure(
            "ValidationError", f"timeout_seconds: expected a number > 0, got {asked!r}"
        )
    if asked > cap:
        warnings.append(
            f"timeout_seconds {asked:g} is above the configured cap; {cap:g} s was used"
        )
        return cap
    return float(asked)


def _max_bytes(
    asked: Any, settings: Mapping[str, Any], downloading: bool, warnings: list[str]
) -> int:
    key = "max_download_bytes" if downloading else "max_bytes"
    cap = int(settings[key])
    if asked is None:
        return cap
    if isinstance(asked, bool) or not isinstance(asked, int) or asked < 1:
        raise ToolFailure(
            "ValidationError", f"max_bytes: expected a whole number >= 1, got {asked!r}"
        )
    if asked > cap:
        warnings.append(f"max_bytes {asked} is above the configured {key}; {cap} was used")
        return cap
    return asked


def _page(arguments: Mapping[str, Any], method: str, downloading: bool) -> tuple[int, int]:
    """``(offset, max_chars)`` of the text to return, checked before anything is sent."""
    found = []
    for name, value, least in (
        ("offset", arguments.get("offset", 0), 0),
        ("max_chars", arguments.get("max_chars", _PAGE_CHARS), 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ToolFailure(
                "ValidationError", f"{name}: expected a whole number >= {least}, got {value!r}"
            )
        found.append(value)
    offset, limit = found
    if offset and downloading:
        raise ToolFailure(
            "ValidationError",
            "offset: a download saves the whole body; leave offset out with download_path",
        )
    if offset and method != "GET":
        raise ToolFailure(
            "ValidationError",
            f"offset: reading on sends the request again, which only GET may do; a {method} "
            "is not repeated to page through its answer (ask for less instead)",
        )
    return offset, limit


_DOWNLOAD_FAILURES: Final = {404: "NotFoundError", 410: "NotFoundError"}
_LOG: Final = logging.getLogger("toolplug.url_fetch")
"""Where the downloads directory's absolute path goes: the operator's log, never the model."""


def _downloaded(
    result: FetchResult,
    data: dict[str, Any],
    target: Path,
    redactor: Redactor,
    warnings: list[str],
    *,
    downloads: Path,
) -> ToolResult:
    from toolplug_url_fetch._fetch import save

    status = result.status
    if not 200 <= status < 300:
        kind = _DOWNLOAD_FAILURES.get(status, "ExecutionError")
        raise ToolFailure(
            kind,
            redactor.text(
                f"HTTP {status} {data['reason']} from {result.final_url}; nothing was saved"
            ),
            retry_possible=kind == "ExecutionError" and (status >= 500 or status == 429),
        )
    save(result.content, target)
    # The model, and so its provider, reads the file's place by the alias "downloads"; the
    # host's absolute path (its home directory, its user name) goes to the operator's log.
    shown = "downloads/" + target.relative_to(downloads).as_posix()
    _LOG.info("url_fetch saved %s to %s", redactor.text(result.final_url), target)
    download = {
        "path": shown,
        "bytes": data["bytes"],
        "content_type": data["content_type"],
        "truncated": data["truncated"],
        "sha256": data["sha256"],
    }
    data = {**data, "download": download, "text": None, "binary": None}
    lines = [
        f"Saved {data['bytes']} bytes ({data['content_type'] or 'no content type'}) from "
        f"{result.final_url} to {shown}.",
        f"sha256 {data['sha256']}",
    ]
    if data["truncated"]:
        lines.append(
            "The download was cut at the byte limit: the file is incomplete (truncated: true)."
        )
        warnings.append("the download was truncated at max_bytes")
    return ToolResult.success(
        redactor.text("\n".join(lines)),
        redactor.data(data),
        warnings=[redactor.text(w) for w in warnings],
    )


def _answer(
    result: FetchResult,
    data: dict[str, Any],
    redactor: Redactor,
    warnings: list[str],
    settings: Mapping[str, Any],
    *,
    page: tuple[int, int],
    tool: str,
) -> ToolResult:
    from toolplug_url_fetch._fetch import is_text

    media = data["content_type"]
    shown = media or "no content type"
    parts: list[Part] = []
    head = f"HTTP {data['status']} {data['reason']}".rstrip() + f" from {result.final_url}"
    lines = [head]
    if data["redirects"]:
        hops = ", ".join(f"{hop['status']} -> {hop['url']}" for hop in data["redirects"])
        lines.append(f"Redirected: {hops}")
    if is_text(media, result.content):
        # Redacted before it is paged: a secret split by a page boundary would slip through.
        whole = redactor.text(result.text())
        offset, limit = page
        total = len(whole)
        if offset > total:
            raise ToolFailure(
                "ValidationError",
                f"offset {offset} is past the end of the text from {result.final_url}, which "
                f"is {total} characters long; give an offset from 0 to {total}",
            )
        text = whole[offset : offset + limit]
        end = offset + len(text)
        data = {
            **data,
            "text": text,
            "binary": False,
            "offset": offset,
            "chars": len(text),
            "total_chars": total,
            "next_offset": end if end < total else None,
        }
        charset = f"; charset {data['charset']}" if data["charset"] else ""
        lines.append(f"Content-Type: {shown}{charset}; {data['bytes']} bytes")
        if data["truncated"]:
            lines.append(
                f"Truncated: only the first {data['bytes']} bytes were read; raise max_bytes "
                f"(cap {settings['max_bytes']}) or use download_path for the whole body."
            )
            warnings.append("the body was truncated at max_bytes")
        if end < total:
            lines.append(
                f"Characters {offset} to {end} of {total} shown; call {tool} again with "
                f"offset {end} for the rest."
            )
        elif offset:
            lines.append(f"Characters {offset} to {end} of {total} shown: the end of the text.")
        lines += ["", text]
    else:
        data = {**data, "text": None, "binary": True}
        part = None if data["truncated"] else _part(media, result.content, result.final_url)
        if part is not None:
            lines.append(
                f"{'Image' if part.kind == 'image' else 'File'} attached: {part.mime_type}, "
                f"{data['bytes']} bytes, sha256 {data['sha256']}."
            )
            parts.append(part)
        else:
            size = f"{data['bytes']} bytes" + (" (truncated)" if data["truncated"] else "")
            lines.append(
                f"Binary body not shown: {shown}, {size}, sha256 {data['sha256']}. "
                "Use download_path to save it."
            )
    if not data["ok"]:
        warnings.append(f"the server answered HTTP {data['status']}")
    return ToolResult.success(
        redactor.text("\n".join(lines)),
        redactor.data(data),
        parts=parts,
        warnings=[redactor.text(w) for w in warnings],
    )


_PART_IMAGES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _part(media: str | None, content: bytes, url: str) -> Image | File | None:
    """The body as an image or a PDF when its Content-Type says so and its first bytes
    agree (``Part.problem``); None for anything else, which is described instead."""
    if media == "image/jpg":  # a common misspelling of image/jpeg
        media = "image/jpeg"
    part: Image | File
    if media in _PART_IMAGES:
        part = Image(content, media)
    elif media == "application/pdf":
        name = unquote(urlsplit(url).path.rsplit("/", 1)[-1]).strip() or None
        part = File(content, media, name=name)
    else:
        return None
    return part if part.problem() is None else None
