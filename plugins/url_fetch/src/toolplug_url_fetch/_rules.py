"""What a url_fetch call may ask for: headers, bodies, auth profiles, download paths.

Standard library only: these checks run before any network code is imported, and each
refusal raises ``ToolFailure`` with the error type the tool declares.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Final
from urllib.parse import urlsplit

from toolplug import ToolContext, ToolFailure

__all__ = [
    "BODY_METHODS",
    "METHODS",
    "REFUSED_HEADERS",
    "AuthHeader",
    "Redactor",
    "checked_headers",
    "download_target",
    "environment",
    "resolve_profile",
    "url_host",
]

METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE")
BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})

REFUSED_HEADERS: Final[Mapping[str, str]] = {
    # Credentials: they come only from an auth profile, never from the model.
    "authorization": "credentials come only from a configured auth_profile",
    "proxy-authorization": "credentials come only from a configured auth_profile",
    "cookie": "cookies are credentials; they are never sent",
    "cookie2": "cookies are credentials; they are never sent",
    "set-cookie": "it is a response header, and a credential",
    "x-api-key": "credentials come only from a configured auth_profile",
    "x-auth-token": "credentials come only from a configured auth_profile",
    "private-token": "credentials come only from a configured auth_profile",
    # Set by the HTTP layer for each hop; a caller's value would be wrong or unsafe.
    "host": "the host comes from the URL",
    "content-length": "it is computed from the body",
    "transfer-encoding": "it is chosen by the HTTP layer",
    # Hop-by-hop headers (RFC 9110 section 7.6.1): about one connection, not the request.
    "connection": "it is a hop-by-hop header",
    "keep-alive": "it is a hop-by-hop header",
    "proxy-connection": "it is a hop-by-hop header",
    "te": "it is a hop-by-hop header",
    "trailer": "it is a hop-by-hop header",
    "upgrade": "it is a hop-by-hop header",
}
"""Request header names (lower case) a caller may not set, and why."""

_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _fail(kind: str, message: str) -> ToolFailure:
    return ToolFailure(kind, message, retry_possible=False)


def checked_headers(headers: object) -> dict[str, str]:
    """The caller's headers, or a ValidationError naming the first one that may not be sent."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise _fail("ValidationError", "headers: expected an object of header name -> value")
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise _fail("ValidationError", f"headers: {name!r} is not a valid header name")
        reason = REFUSED_HEADERS.get(name.lower())
        if reason is not None:
            raise _fail("ValidationError", f"headers: {name!r} may not be set ({reason})")
        if not isinstance(value, str) or any(c in value for c in "\r\n\x00"):
            raise _fail(
                "ValidationError", f"headers: the value of {name!r} must be a string on one line"
            )
        if any(key.lower() == name.lower() for key in checked):
            raise _fail("ValidationError", f"headers: {name!r} is given twice")
        checked[name] = value
    return checked


def url_host(url: str) -> str | None:
    """The URL's host, lower case and without a trailing dot; ``None`` when unreadable."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


def environment(context: ToolContext) -> Mapping[str, str]:
    """Where secrets are read from: an ``env`` the host passes with the call, else the
    environment the registry was loaded with (``toolplug.load(env=...)``)."""
    explicit = context.host.get("env")
    if isinstance(explicit, Mapping):
        return explicit
    return context.env


@dataclass(frozen=True)
class AuthHeader:
    """The header an auth profile adds, and where it may go."""

    profile: str
    name: str
    value: str = field(repr=False)
    secret: str = field(repr=False)
    hosts: frozenset[str]


# Headers a profile may not name: the HTTP layer owns them.
_PROFILE_FORBIDDEN: Final = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "cookie",
        "set-cookie",
    }
)


def resolve_profile(
    name: str, url: str, profiles: Mapping[str, Any], env: Mapping[str, str]
) -> AuthHeader:
    """The header of auth profile ``name`` for ``url``.

    Raises:
        ToolFailure: PermissionError for an unknown profile or a host the profile does not
            list; UnavailableError when its environment variable is unset; ValidationError
            for a profile naming a header the HTTP layer owns. No message holds the secret.
    """
    host = url_host(url)
    profile = profiles.get(name)
    if not isinstance(profile, Mapping):
        known = ", ".join(sorted(profiles)) or "none are configured"
        raise _fail(
            "PermissionError",
            f"auth_profile {name!r} (asked for host {host or '(none)'!r}) is not configured "
            f"(known: {known}); profiles are defined under [tools.url_fetch.auth_profiles.NAME]",
        )
    hosts = frozenset(str(h).rstrip(".").lower() for h in profile.get("hosts", ()))
    if host is None or host not in hosts:
        raise _fail(
            "PermissionError",
            f"auth_profile {name!r} may not be sent to host {host or '(none)'!r}; it is limited "
            f"to {', '.join(sorted(hosts)) or 'no host'}",
        )
    header = str(profile.get("header") or "Authorization")
    if not _TOKEN.fullmatch(header) or header.lower() in _PROFILE_FORBIDDEN:
        raise _fail(
            "ValidationError",
            f"auth_profile {name!r}: header {header!r} cannot carry a credential",
        )
    variable = str(profile.get("env", ""))
    secret = env.get(variable) if variable else None
    if not secret:
        raise _fail(
            "UnavailableError",
            f"auth_profile {name!r} reads its secret from the environment variable "
            f"{variable or '(none configured)'}, which is not set",
        )
    if any(c in secret for c in "\r\n\x00"):
        raise _fail(
            "ValidationError",
            f"auth_profile {name!r}: the value of {variable} must be on one line",
        )
    scheme = str(profile.get("scheme") or "")
    value = f"{scheme} {secret}" if scheme else secret
    return AuthHeader(profile=name, name=header, value=value, secret=secret, hosts=hosts)


class Redactor:
    """Replaces the secret (and the header value carrying it) with ``***`` in any data."""

    def __init__(self, *secrets: str) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def text(self, value: str) -> str:
        """``value`` with every secret replaced."""
        for secret in self._secrets:
            value = value.replace(secret, "***")
        return value

    def data(self, value: Any) -> Any:
        """A copy of JSON-like ``value`` with every secret replaced in keys and strings."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def download_target(root: Path, raw: object) -> Path:
    """Where ``download_path`` may be written: a file inside ``root``, parents created.

    Raises:
        ToolFailure: PermissionError for an absolute path, ``..``, or a path that leads out of
            ``root`` through a symbolic link; ValidationError for an empty path or one that
            names a directory.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise _fail("ValidationError", "download_path: give a relative file path, e.g. 'a.pdf'")
    if "\x00" in raw:
        raise _fail("ValidationError", "download_path: the path contains a NUL character")
    posix, windows = PurePosixPath(raw), PureWindowsPath(raw)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or raw.startswith("~"):
        raise _fail(
            "PermissionError",
            f"download_path {raw!r} is absolute; give a path relative to the downloads directory",
        )
    parts = [p for p in re.split(r"[\\/]+", raw) if p not in ("", ".")]
    if ".." in parts:
        raise _fail("PermissionError", f"download_path {raw!r} may not contain '..'")
    if not parts or raw.endswith(("/", "\\")):
        raise _fail("ValidationError", f"download_path {raw!r} names a directory, not a file")
    root.mkdir(parents=True, exist_ok=True)
    base = root.resolve()
    target = base.joinpath(*parts)
    _inside(base, target, raw)  # before creating anything: a planted link must not be followed
    target.parent.mkdir(parents=True, exist_ok=True)
    _inside(base, target, raw)  # again, now that the parents exist
    if target.is_dir():
        raise _fail("ValidationError", f"download_path {raw!r} is a directory")
    return target


def _inside(base: Path, target: Path, raw: str) -> None:
    resolved = target.resolve()
    if resolved == base or not resolved.is_relative_to(base):
        raise _fail(
            "PermissionError",
            f"download_path {raw!r} leads outside the downloads directory (through a "
            "symbolic link)",
        )
