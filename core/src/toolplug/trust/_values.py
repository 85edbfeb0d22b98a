"""Values as the flow guard and the policies compare them: what a text says, not how it is
written, and what a sink value is made of (addresses, a URL's parts, a resolved path).

``canon`` is the one form both sides of every comparison take: the text recorded from an
untrusted or private result (once, when it is recorded) and each sink value checked (per
call). It decodes HTML entities and percent-encoding, applies Unicode NFKC (full-width
letters, ligatures), removes format characters (category Cf: zero-width spaces and
joiners, the soft hyphen, bidirectional controls, tag characters), maps letters that look
like Latin ones to them (Unicode's confusables data, as the ``confusable-homoglyphs``
package ships it) and case folds. ASCII text without ``&`` or ``%`` (most of what a tool
returns) is only case folded: none of the other steps could change it.

``pieces`` decomposes a sink token (``_conversation.Conversation._carried``): the addresses
of an address list (``,`` ``;``, display names, ``mailto:``), a URL's query values, path
segments and its address, a path resolved. ``url_prefix_in`` says whether a text names the
host and a path prefix of a URL. ``policy_forms`` gives what a ``[policies]`` rule reads of
a value besides the value itself.
"""

from __future__ import annotations

import functools
import html
import json
import posixpath
import re
import unicodedata
from importlib import resources
from typing import Any, Final
from urllib.parse import unquote, urlsplit

__all__ = [
    "canon", "joined", "pieces", "plain", "policy_forms", "resolved", "unmask",
    "url_prefix_in",
]

_LINE_BREAK: Final = re.compile(r"[ \t]*(?:\r\n|[\n\r\v\f\x85\u2028\u2029])[ \t]*")
"""A line break and the blanks around it: what a page breaks a value across lines with."""

_ADDRESS_SPLIT: Final = re.compile(r"[,;\s<>\"]+")

_DISPLAY_NAME: Final = re.compile(r"(?:\"[^\"]*\"|[^,;<>\"]*)\s*<([^<>]*)>")
"""``"Me" <me@x>`` or ``Me <me@x>``: the address between the angle brackets."""

_QUERY_SPLIT: Final = re.compile(r"[&;=]")

_TARGETS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
"""The ASCII letters and digits a confusable character is mapped to (never punctuation:
a look-alike of ``/`` stays what it is, and so does the value)."""


@functools.cache
def _invisible() -> dict[int, None]:
    """Every format character (Unicode category Cf), and the variation selectors, to none."""
    table: dict[int, None] = {
        code: None
        for code in (*range(0x20000), *range(0xE0000, 0xE1000))  # where Cf characters are
        if unicodedata.category(chr(code)) == "Cf"
    }
    for code in (*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)):
        table[code] = None
    return table


@functools.cache
def _skeleton() -> dict[int, str | None]:
    """Each non-ASCII character Unicode's confusables data says reads as one ASCII letter or
    digit, to that letter (Cyrillic ``\\u0435`` to ``e``); read once, on the first text that
    is not ASCII. A character confusable with several takes the lowercase letter first."""
    data = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8")
    table: dict[int, str | None] = {}
    for char, alikes in json.loads(data).items():
        if len(char) != 1 or char.isascii():
            continue
        targets = sorted(
            (a["c"] for a in alikes if a["c"] in _TARGETS),
            key=lambda c: (not c.islower(), not c.isalpha(), c),
        )
        if targets:
            table[ord(char)] = targets[0]
    table.update(_invisible())
    return table


def unmask(text: str) -> str:
    """``text`` as it reads, case kept: entities and percent-encoding decoded, NFKC,
    format characters removed. What a policy reads besides the value."""
    if "&" in text:
        text = html.unescape(text)
    if "%" in text:
        text = unquote(text)
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).translate(_invisible())


def canon(text: str) -> str:
    """``text`` as both sides of a flow check compare it (the module's docstring): decoded,
    NFKC, format characters removed, look-alike letters mapped, case folded."""
    if text.isascii() and "&" not in text and "%" not in text:
        return text.casefold()
    if "&" in text:
        text = html.unescape(text)
    if "%" in text:
        text = unquote(text)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        table = _skeleton()
        # only the characters the text holds: translating with the whole table costs
        # about 120 ns a character, this about 20
        mapped = {code: table[code] for char in set(text) if (code := ord(char)) in table}
        if mapped:
            text = text.translate(mapped)
    return text.casefold()


def joined(text: str) -> str | None:
    """``text`` (canonical) with its line breaks, and the blanks around them, removed: a
    value a page broke across lines reads whole in it. None when it has none."""
    lines = text.splitlines()
    if len(lines) < 2:
        return None
    return "".join([line.strip(" \t") for line in lines])  # 2 ms a MB; a regex takes 70


def resolved(path: str) -> str | None:
    """``path`` with ``.``, ``..`` and repeated ``/`` resolved as a file system does (no
    symlinks: the tool's root is not known here); None when that changes nothing."""
    if "/" not in path and "\\" not in path:
        return None
    path = path.replace("\\", "/")
    normal = posixpath.normpath(path)
    if path.startswith("//"):  # normpath keeps a leading "//" (POSIX allows it to differ)
        normal = "/" + normal.lstrip("/")
    return normal if normal != path.rstrip("/") or path.endswith("/.") else None


def _addresses(text: str) -> list[str]:
    """The addresses of an address list: ``,`` ``;`` and blanks split it, a display name
    gives the address between its angle brackets, ``mailto:`` is dropped."""
    text = _DISPLAY_NAME.sub(lambda m: " " + m.group(1) + " ", text)
    found = []
    for raw in _ADDRESS_SPLIT.split(text):
        part = raw.strip("\"'`()[]<>")
        if part[:7].lower() == "mailto:":
            part = part[7:].split("?", 1)[0]
        if part:
            found.append(part)
    return found


def _url(token: str) -> tuple[str, list[str], list[str]] | None:
    """A URL's host, path segments and query and fragment values; None when ``token`` is
    no URL with a host."""
    try:
        split = urlsplit(token)
        host = split.hostname
    except ValueError:
        return None
    if not host:
        return None
    segments = [s for s in split.path.split("/") if s]
    values = [v for v in _QUERY_SPLIT.split(split.query) if v]
    values += [v for v in _QUERY_SPLIT.split(split.fragment) if v]
    if split.username:
        values.append(split.username)
    return host, segments, values


def pieces(token: str, kind: str | None = None) -> list[str]:
    """What a sink token (canonical, no blanks) is made of, beside itself: the addresses of
    a list or a ``mailto:``; a URL's path segments and query values (each part of a URL
    that may carry data out; its host and path prefix are ``url_prefix_in``'s); a path
    resolved. Empty for a token of none of these shapes (most). ``kind`` (``url``,
    ``address``, ``path``): what the tool declares the value is, read that way only; None
    (undeclared) tries each way."""
    found: list[str] = []
    if "://" in token and kind in (None, "url"):
        parts = _url(token)
        if parts is not None:
            _, segments, values = parts  # the host alone is read by url_prefix_in
            found += segments
            found += values
            for value in values:  # an address or list in a query: ?to=a@x,b@y
                if "@" in value or "," in value:
                    found += _addresses(value)
    elif kind in (None, "address") and (
        "@" in token or "," in token or ";" in token or token.startswith("mailto:")
    ):
        found += _addresses(token)
    path = resolved(token) if "://" not in token and kind in (None, "path") else None
    if path is not None:
        found.append(path)
    return [piece for piece in dict.fromkeys(found) if piece != token]


_HOST_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")
_URL_END: Final = frozenset(" \t\n\r\"'`<>()[]{}")


def url_prefix_in(token: str, text: str) -> bool:
    """Whether ``text`` names ``token``'s host (a URL, canonical) with a path that is a
    prefix of the token's, by segments: ``https://drop.evil.example/c`` in a page taints
    ``https://drop.evil.example/c?d=4417`` and ``.../c/4417``, whatever is appended. A
    URL of the page with a query of its own, or another path, does not."""
    parts = _url(token)
    if parts is None:
        return False
    host, segments, _ = parts
    if "." not in host:
        return False
    start = text.find(host)
    while start != -1:
        before = text[start - 1] if start else " "
        end = start + len(host)
        if before not in _HOST_CHARS and (end == len(text) or text[end] not in _HOST_CHARS):
            stop = end
            while stop < len(text) and text[stop] not in _URL_END:
                stop += 1
            rest = text[end:stop].rstrip(".,;:!?")
            if not rest or rest[0] in "/?#":
                path, _, query = rest.partition("?")
                named = [s for s in path.split("#", 1)[0].split("/") if s]
                if named == segments[: len(named)] and (not query or not named):
                    return True
        start = text.find(host, start + 1)
    return False


_SHAPED: Final = re.compile(r"[&%@/\\\n\r\v\f]")
"""A character one of ``policy_forms``'s readings starts from: an entity, an escape, an
address, a path or URL, a line break (or, outside this pattern, any non-ASCII one)."""


def plain(value: Any) -> bool:
    """Whether ``value`` is a string ``policy_forms`` reads nothing more of, decided
    quickly (most queries, titles, names)."""
    return type(value) is str and value.isascii() and _SHAPED.search(value) is None


def policy_forms(value: Any, kind: str | None = None) -> list[Any]:
    """What a ``[policies]`` rule reads of ``value`` besides the value itself: each address
    of an address list, a URL rebuilt from its parts (its real host: not the user name of
    ``https://api.example@evil.example/``), a path resolved; for a list of strings, one
    list of them all. Empty when the value is none of these (a number, plain text).
    ``kind``: what the tool declares the value is (``url``, ``address``, ``path``), which
    reads it that way only; None (undeclared) tries each way."""
    if type(value) is str:
        return _string_forms(value, kind)
    if type(value) is list and value and all(type(item) is str for item in value):
        flat: list[str] = []
        changed = False
        for item in value:
            forms = _string_forms(item, kind)
            changed = changed or bool(forms)
            flat += forms or [item]
        return [flat] if changed else []
    return []


def _string_forms(value: str, kind: str | None) -> list[str]:
    plain = unmask(value)
    glued = _LINE_BREAK.sub("\n", plain).strip()
    if kind in (None, "url") and "://" in glued and not any(c.isspace() for c in glued):
        host: str | None = None
        try:
            split = urlsplit(glued)
            host = split.hostname
        except ValueError:
            pass
        if host:
            port = f":{split.port}" if split.port else ""
            where = posixpath.normpath(split.path) if split.path else ""
            query = f"?{split.query}" if split.query else ""
            rebuilt = f"{split.scheme}://{host}{port}{'' if where == '.' else where}{query}"
            return [rebuilt] if rebuilt != value else []
    if kind in (None, "address") and ("@" in glued or "mailto:" in glued.lower()):
        found = _addresses(glued)
        return found if found != [value] else []
    normal = resolved(glued) if kind in (None, "path") else None
    if normal is not None:
        return [normal]
    return [glued] if glued != value else []
