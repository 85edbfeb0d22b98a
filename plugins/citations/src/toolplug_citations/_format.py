"""Citation lists as a Markdown list, APA-style references, or BibTeX entries."""

from __future__ import annotations

import re
from datetime import date
from typing import Final

from toolplug_citations._store import Entry

__all__ = ["STYLES", "render"]

STYLES: Final = ("markdown", "apa", "bibtex")
_MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_BIBTEX_SPECIAL: Final = re.compile(r"([{}%&#_$\\])")


def render(entries: list[Entry], style: str) -> str:
    """The entries in ``style`` (one of ``STYLES``), in the order given."""
    if style == "markdown":
        return "\n".join(_markdown(i, e) for i, e in enumerate(entries, 1))
    if style == "apa":
        return "\n\n".join(_apa(e) for e in sorted(entries, key=_apa_order))
    keys: set[str] = set()
    return "\n\n".join(_bibtex(e, keys) for e in entries)


def _markdown(number: int, entry: Entry) -> str:
    line = f"{number}. [{entry.title or entry.url}]({entry.url})"
    if entry.authors:
        line += f", {_names(entry.authors)}"
    if entry.published:
        line += f" ({entry.published})"
    if entry.accessed:
        line += f", accessed {entry.accessed}"
    return line


def _apa_order(entry: Entry) -> tuple[str, str]:
    return ((entry.authors[0] if entry.authors else entry.title).lower(), entry.published)


def _apa(entry: Entry) -> str:
    who = _names(entry.authors, last="&") if entry.authors else entry.title
    when = _apa_date(entry.published)
    title = f"*{entry.title}*" if entry.authors else ""
    parts = [f"{who} ({when}).", f"{title}." if title else ""]
    retrieved = f"Retrieved {_long_date(entry.accessed)}, from " if entry.accessed else ""
    parts.append(f"{retrieved}{entry.url}")
    return " ".join(p for p in parts if p)


def _bibtex(entry: Entry, keys: set[str]) -> str:
    year = entry.published[:4] if entry.published[:4].isdigit() else ""
    names = entry.authors[0].split() if entry.authors else []  # a blank name kept earlier
    first = re.sub(r"[^a-z0-9]", "", (names[-1] if names else "").lower())
    word = next((w for w in re.findall(r"[a-z0-9]+", entry.title.lower()) if len(w) > 3), "")
    base = f"{first or 'source'}{year}{word}" or "source"
    key, suffix = base, 0
    while key in keys:
        suffix += 1
        key = f"{base}{chr(ord('a') + suffix - 1) if suffix <= 26 else suffix}"
    keys.add(key)
    fields = [("title", entry.title or entry.url)]
    if entry.authors:
        fields.append(("author", " and ".join(entry.authors)))
    if year:
        fields.append(("year", year))
    fields.append(("url", entry.url))
    if entry.accessed:
        fields.append(("urldate", entry.accessed))
    body = ",\n".join(
        f"  {name} = {{{value if name == 'url' else _bibtex_text(value)}}}"
        for name, value in fields
    )
    return f"@misc{{{key},\n{body}\n}}"


def _bibtex_text(text: str) -> str:
    return _BIBTEX_SPECIAL.sub(r"\\\1", text)


def _names(authors: list[str], last: str = "and") -> str:
    if len(authors) == 1:
        return authors[0]
    return ", ".join(authors[:-1]) + f", {last} {authors[-1]}"


def _apa_date(text: str) -> str:
    found = _parse(text)
    if found is None:
        return text[:4] if text[:4].isdigit() else "n.d."
    return f"{found.year}, {_MONTHS[found.month - 1]} {found.day}"


def _long_date(text: str) -> str:
    found = _parse(text)
    return f"{_MONTHS[found.month - 1]} {found.day}, {found.year}" if found else text


def _parse(text: str) -> date | None:
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None
