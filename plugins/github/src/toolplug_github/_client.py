"""The GitHub REST client: guarded requests, the token kept to the API host, errors mapped.

Every request goes through ``toolplug.http.fetch`` (the network guard). The token travels
only in the ``Authorization`` header and only to the configured API origin: a redirect to
any other origin is followed without it, and a pagination link to another origin is not
followed. No message, result or log line built here contains the token; ``Scrubber`` is the
last line of defence for text GitHub sends back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from toolplug import ErrorType, NetworkPolicy, ToolFailure

if TYPE_CHECKING:
    import httpx

    from toolplug.http import FetchResult

API_VERSION: Final = "2022-11-28"
ACCEPT_JSON: Final = "application/vnd.github+json"
ACCEPT_RAW: Final = "application/vnd.github.raw+json"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_MESSAGE_CHARS: Final = 300
# GitHub's advice when a secondary limit names no wait: at least a minute.
_SECONDARY_DEFAULT_WAIT: Final = 60


def _user_agent() -> str:
    try:
        release = version("toolplug-github")
    except PackageNotFoundError:  # running from a source tree without installing
        release = "0"
    return f"toolplug-github/{release} (+https://github.com/toolplug)"


USER_AGENT: Final = _user_agent()


class Scrubber:
    """Replaces the token in any text or JSON-like value with ``***``."""

    def __init__(self, secret: str) -> None:
        self._secret = secret

    def text(self, value: str) -> str:
        """``value`` without the token."""
        return value.replace(self._secret, "***") if self._secret else value

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like value with the token removed from every string in it."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


def origin(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of a plain http(s) URL; ``None`` for anything unusual.

    Anything a browser and ``urlsplit`` might read differently (a backslash, user info,
    white space or control characters) gives ``None``, so it never counts as the API origin.
    """
    if any(c in url for c in "\\@") or any(ord(c) <= 32 or ord(c) == 127 for c in url):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".").lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    return scheme, host, port or _DEFAULT_PORTS[scheme]


@dataclass
class Response:
    """A GitHub answer that was not an error: status, headers, parsed JSON or raw bytes."""

    status: int
    headers: dict[str, str]
    content: bytes
    truncated: bool
    url: str

    def json(self, what: str) -> Any:
        """The body as JSON; a ``ParseError`` naming ``what`` when it is not."""
        if self.truncated:
            raise ToolFailure(
                ErrorType.PARSE,
                f"GitHub's answer for {what} was larger than [network] max_bytes "
                f"({len(self.content)} bytes read); raise it to read this answer",
            )
        try:
            return json.loads(self.content.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            kind = self.headers.get("content-type", "no content type")
            raise ToolFailure(
                ErrorType.PARSE,
                f"GitHub's answer for {what} was not JSON ({kind}); is api_url the REST API "
                "root (https://api.github.com, or https://HOST/api/v3 on Enterprise Server)?",
            ) from None


class GitHub:
    """One tool call's connection to the GitHub REST API."""

    def __init__(
        self,
        *,
        api_url: str,
        token: str,
        policy: NetworkPolicy,
        client: httpx.AsyncClient,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.scrub = Scrubber(token)
        self._token = token
        self._policy = policy
        self._client = client
        self._origin = origin(self.api_url)

    def url(self, path: str) -> str:
        """The absolute URL of an API path such as ``/repos/o/r/readme``."""
        return self.api_url + path

    def is_api(self, url: str) -> bool:
        """Whether ``url`` lies on the configured API origin (where the token may go)."""
        return self._origin is not None and origin(url) == self._origin

    def _headers(self, url: str, accept: str) -> dict[str, str]:
        headers = {
            "Accept": accept,
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
        }
        if self.is_api(url):
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    async def get(
        self,
        url: str,
        *,
        what: str,
        not_found: str,
        accept: str = ACCEPT_JSON,
        max_bytes: int | None = None,
    ) -> Response:
        """GET ``url``; return the answer, or raise ``ToolFailure`` for any error.

        Args:
            url: An absolute URL on the API origin.
            what: What is being fetched, for messages (``"the README of o/r"``).
            not_found: The message for a 404 or 410.
            accept: The ``Accept`` header.
            max_bytes: The most body bytes to read; the guard's default when None.
        """
        from toolplug.http import NetworkError, fetch, guard_failure

        def on_redirect(_old: str, new: str) -> dict[str, str]:
            # Decide each hop's headers here: the token goes to the API origin and nowhere else.
            return self._headers(new, accept)

        try:
            result = await fetch(
                "GET",
                url,
                policy=self._policy,
                headers=self._headers(url, accept),
                max_bytes=max_bytes,
                client=self._client,
                on_redirect=on_redirect,
            )
        except NetworkError as exc:
            raise guard_failure(
                exc, self.scrub.text(f"GitHub request for {what} failed: {exc}")
            ) from None
        except ValueError:
            # fetch() names the bad header but never its value; say which setting to fix.
            raise ToolFailure(
                ErrorType.EXECUTION,
                "the configured GitHub token cannot be sent in an HTTP header (it holds a line "
                "break or another control character); check GITHUB_TOKEN or "
                "[tools.github_api] token",
            ) from None
        if result.status >= 400:
            raise self._failure(result, what=what, not_found=not_found)
        return Response(
            status=result.status,
            headers=result.headers,
            content=result.content,
            truncated=result.truncated,
            url=result.final_url,
        )

    def _failure(self, result: FetchResult, *, what: str, not_found: str) -> ToolFailure:
        """The error for a GitHub answer with status 400 or more."""
        status = result.status
        headers = result.headers
        said = self._github_message(result)
        quoted = f" (GitHub: {said})" if said else ""
        limited = _rate_limit(status, headers, said)
        if limited is not None:
            return limited
        if status == 401:
            return ToolFailure(
                ErrorType.PERMISSION,
                f"GitHub rejected the token (401){quoted}: it is expired, revoked or mistyped. "
                "Create a new fine-grained token with read-only Contents, Issues and Metadata "
                "permissions and export it as GITHUB_TOKEN (or the variable named by "
                "[tools.github_api] token); on GitHub Enterprise Server create it on that "
                "server.",
                details={"status": status},
            )
        if status == 403:
            return self._forbidden(headers, what=what, quoted=quoted)
        if status in (404, 410):
            return ToolFailure(
                ErrorType.NOT_FOUND, not_found + quoted, details={"status": status}
            )
        if status == 422:
            return ToolFailure(
                ErrorType.VALIDATION,
                f"GitHub could not process the request for {what} (422){quoted}",
                details={"status": status},
            )
        if status >= 500:
            return ToolFailure(
                ErrorType.NETWORK,
                f"GitHub answered {status} (a server error) for {what}{quoted}; try again later",
                retry_possible=True,
                details={"status": status},
            )
        return ToolFailure(
            ErrorType.EXECUTION,
            f"GitHub answered {status} for {what}{quoted}",
            details={"status": status},
        )

    def _forbidden(self, headers: Mapping[str, str], *, what: str, quoted: str) -> ToolFailure:
        details: dict[str, Any] = {"status": 403}
        advice: list[str] = []
        sso = headers.get("x-github-sso", "")
        if sso:
            sso_url = _sso_url(sso)
            details["sso_url"] = sso_url
            where = f" at {sso_url}" if sso_url else " (GitHub token settings, 'Configure SSO')"
            advice.append(
                "the organization uses SAML single sign-on: authorize the token for it" + where
            )
        needed = headers.get("x-accepted-github-permissions", "")
        if needed:
            details["accepted_permissions"] = needed
            advice.append(f"the request needs the token permission(s) {needed}")
        if not advice:
            advice.append(
                "check that the token may read this repository: a fine-grained token needs "
                "access to the repository (or its organization must approve the token) and "
                "read-only Contents, Issues and Metadata permissions; a classic token needs "
                "the repo scope for private repositories"
            )
        return ToolFailure(
            ErrorType.PERMISSION,
            self.scrub.text(f"GitHub refused access to {what} (403){quoted}; " + "; ".join(advice)),
            details=self.scrub.value(details),
        )

    def _github_message(self, result: FetchResult) -> str:
        """GitHub's own error message from the body, shortened and without the token."""
        try:
            body = json.loads(result.content.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return ""
        if not isinstance(body, Mapping):
            return ""
        parts: list[str] = []
        if isinstance(body.get("message"), str):
            parts.append(body["message"])
        errors = body.get("errors")
        if isinstance(errors, list):
            for item in errors[:3]:
                if isinstance(item, Mapping) and isinstance(item.get("message"), str):
                    parts.append(item["message"])
                elif isinstance(item, str):
                    parts.append(item)
        text = " ".join(" ".join(parts).split())
        if len(text) > _MESSAGE_CHARS:
            text = text[: _MESSAGE_CHARS - 1] + "…"
        return self.scrub.text(text)


def _sso_url(header: str) -> str | None:
    """The authorization address from ``X-GitHub-SSO: required; url=...``."""
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key.strip().lower() == "url" and value.strip().startswith("https://"):
            return value.strip()
    return None


def _int_header(headers: Mapping[str, str], name: str) -> int | None:
    try:
        return int(headers.get(name, "").strip())
    except ValueError:
        return None


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rate_limit(status: int, headers: Mapping[str, str], said: str) -> ToolFailure | None:
    """A ``RateLimitError`` when the answer says a rate limit was hit, else ``None``."""
    if status not in (403, 429):
        return None
    now = time.time()
    retry_after = _int_header(headers, "retry-after")
    remaining = _int_header(headers, "x-ratelimit-remaining")
    reset = _int_header(headers, "x-ratelimit-reset")
    quoted = f" (GitHub: {said})" if said else ""
    if retry_after is not None:
        kind, wait = "secondary", max(retry_after, 0)
        reset_at = now + wait
    elif remaining == 0 and reset is not None:
        kind, reset_at = "primary", float(reset)
        wait = max(int(reset_at - now + 0.999), 0)
    elif status == 429 or "rate limit" in said.lower():
        kind, wait = "secondary", _SECONDARY_DEFAULT_WAIT
        reset_at = now + wait
    else:
        return None
    when = _iso(reset_at)
    limit = _int_header(headers, "x-ratelimit-limit")
    if kind == "primary":
        of = f" of {limit}" if limit is not None else ""
        message = (
            f"GitHub's primary rate limit is used up (0{of} requests left){quoted}; it resets "
            f"at {when} (in {wait} s). Do not retry before then."
        )
    else:
        message = (
            f"GitHub's secondary rate limit was hit (too many requests in a short time)"
            f"{quoted}; retry after {wait} s, at {when}, and slow down."
        )
    details: dict[str, Any] = {
        "kind": kind,
        "status": status,
        "reset_at": when,
        "retry_after_seconds": wait,
    }
    if limit is not None:
        details["limit"] = limit
    resource = headers.get("x-ratelimit-resource")
    if resource:
        details["resource"] = resource
    return ToolFailure(ErrorType.RATE_LIMIT, message, retry_possible=True, details=details)


def next_link(headers: Mapping[str, str]) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header, if there is one."""
    link = headers.get("link", "")
    for part in link.split(","):
        section = part.strip()
        if not section.startswith("<") or ">" not in section:
            continue
        target, _, params = section[1:].partition(">")
        rels = [
            p.strip().partition("=")[2].strip().strip('"').split()
            for p in params.split(";")
            if p.strip().lower().startswith("rel=")
        ]
        if any("next" in rel for rel in rels):
            return target.strip()
    return None
