"""Small pieces of HTTP the guarded client needs: redirects, headers, charsets, bodies, and
the result of a fetch."""

from __future__ import annotations

import base64
import codecs
import json
import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "TOKEN",
    "BoundedBody",
    "FetchResult",
    "basic_auth",
    "checked_headers",
    "known_charset",
    "parse_content_type",
    "redirect_method",
    "without_headers",
]


def redirect_method(status: int, method: str) -> str:
    """The method for the request after a redirect, as browsers choose it.

    303 turns anything but HEAD into GET; 301 and 302 turn POST into GET; 307 and 308 keep it.
    """
    if status == 303 and method != "HEAD":
        return "GET"
    if status in (301, 302) and method == "POST":
        return "GET"
    return method


def without_headers(headers: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """A copy of ``headers`` without the given names (compared case-insensitively)."""
    drop = {name.lower() for name in names}
    return {name: value for name, value in headers.items() if name.lower() not in drop}


def basic_auth(username: str, password: str | None) -> str:
    """The ``Authorization`` value for HTTP Basic authentication with these credentials."""
    token = f"{username}:{password or ''}".encode()
    return "Basic " + base64.b64encode(token).decode("ascii")


def parse_content_type(value: str | None) -> tuple[str | None, dict[str, str]]:
    """Media type (lower case, no parameters) and parameters of a ``Content-Type`` value."""
    if not value:
        return None, {}
    media, *rest = value.split(";")
    params: dict[str, str] = {}
    for item in rest:
        key, eq, val = item.partition("=")
        if eq:
            params[key.strip().lower()] = val.strip().strip('"')
    return (media.strip().lower() or None), params


def known_charset(name: str | None) -> str | None:
    """``name`` when Python has a codec for it, else ``None``."""
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


class BoundedBody:
    """Collects a response body up to a byte cap, never holding more than the cap plus a chunk.

    ``gzip`` and ``deflate`` bodies are decoded here, in steps that never inflate past the
    cap, so a small compressed body cannot expand to gigabytes in memory (decompression bomb).
    Other content codings are kept as received.

    Example:
        >>> body = BoundedBody(4)
        >>> body.feed(b"abcdef")
        False
        >>> body.content, body.truncated
        (b'abcd', True)
    """

    def __init__(self, cap: int, content_encoding: str | None = None) -> None:
        self.cap = cap
        self.truncated = False
        """True when the body had more than ``cap`` bytes and was cut."""
        self._buffer = bytearray()
        coding = (content_encoding or "").strip().lower()
        self.decoded = coding in ("gzip", "x-gzip", "deflate")
        """True when the body was gzip- or deflate-decoded."""
        self._coding = coding
        self._inflater: zlib._Decompress | None = None
        if coding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif coding == "deflate":
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS)
        self._started = False
        self._members = 0
        self._ended = False

    @property
    def content(self) -> bytes:
        """The body so far, at most ``cap`` bytes."""
        return bytes(self._buffer)

    def feed(self, chunk: bytes) -> bool:
        """Add a chunk as received; returns False once the cap is passed (stop reading).

        Raises:
            zlib.error: The body is not valid for its declared content coding.
        """
        if self.truncated:
            return False
        if self._inflater is None:
            self._append(chunk)
            return not self.truncated
        data = chunk
        while data and not self.truncated and not self._ended:
            # One byte past the room left is enough to know that the body goes on.
            room = self.cap - len(self._buffer) + 1
            try:
                out = self._inflater.decompress(data, room)
            except zlib.error:
                if self._members:
                    # Bytes after a complete gzip member that are no member: padding some
                    # servers add. Browsers ignore them, and so does this.
                    self._ended = True
                    break
                if self._coding != "deflate" or self._started:
                    raise
                # Some servers send raw deflate without the zlib header that RFC 9110 asks for.
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                out = self._inflater.decompress(data, room)
            self._started = True
            self._append(out)
            data = self._inflater.unconsumed_tail
            if not data and self._inflater.eof:
                self._members += 1
                if self._coding == "deflate":
                    self._ended = True  # anything after a deflate stream is ignored
                    break
                # A gzip body may hold several members one after the other.
                data = self._inflater.unused_data
                self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        return not self.truncated

    def finish(self) -> None:
        """Flush what the decoder still holds (little: at most its window)."""
        if self._inflater is not None and not self.truncated:
            self._append(self._inflater.flush())

    def _append(self, data: bytes) -> None:
        room = self.cap - len(self._buffer)
        if len(data) > room:
            self._buffer += data[:room]
            self.truncated = True
        else:
            self._buffer += data


TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP token: what a method or a header name may be made of."""


def checked_headers(headers: Mapping[str, str], source: str) -> dict[str, str]:
    """The headers as a dict, each name a token and each value one line of text.

    Raises:
        ValueError: a name or value is not allowed (``source`` says which argument held it).
    """
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not TOKEN.fullmatch(name):
            raise ValueError(f"{source}: {name!r} is not a valid header name")
        if not isinstance(value, str) or any(c in value for c in "\r\n\x00"):
            raise ValueError(f"{source}: the value of {name!r} must be a string on one line")
        checked[name] = value
    return checked


@dataclass
class FetchResult:
    """What a guarded fetch returned: the final response after any redirects."""

    url: str
    """The URL requested (without user name and password)."""
    final_url: str
    """The URL of the response returned, after redirects (without user name and password)."""
    status: int
    """The HTTP status code of the final response."""
    headers: dict[str, str]
    """Response headers, names in lower case; repeated headers joined with ``", "``."""
    content: bytes = field(repr=False)
    """The body, gzip/deflate-decoded, at most ``max_bytes`` long."""
    truncated: bool
    """True when the body was longer than ``max_bytes`` and was cut there."""
    redirects: list[tuple[int, str]]
    """``(status, absolute location)`` of every redirect followed, in order."""
    elapsed_ms: float
    """Wall time of the whole fetch in milliseconds, redirects included."""

    @property
    def content_type(self) -> str | None:
        """The media type, lower case and without parameters (``"text/html"``), if declared."""
        return parse_content_type(self.headers.get("content-type"))[0]

    @property
    def charset(self) -> str | None:
        """The ``charset`` parameter of ``Content-Type``, when Python knows that codec."""
        return known_charset(parse_content_type(self.headers.get("content-type"))[1].get("charset"))

    def text(self) -> str:
        """The body as text: the declared charset, else UTF-8, else Windows-1252.

        Undecodable bytes become U+FFFD. A character cut in half by ``max_bytes`` is dropped.
        """
        data = self.content
        declared = self.charset
        if declared is not None:
            return data.decode(declared, errors="replace")
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self.truncated and exc.reason == "unexpected end of data":
                return data[: exc.start].decode("utf-8", errors="replace")
        lenient = data.decode("utf-8", errors="replace")
        # Real multi-byte characters elsewhere: UTF-8 text with a stray byte, not Windows-1252.
        if any(ord(char) > 127 and char != "\ufffd" for char in lenient):
            return lenient
        return data.decode("cp1252", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON.

        Raises:
            ValueError: The body is not valid JSON (a truncated body rarely is).
        """
        return json.loads(self.text())
