"""The effects a user's request asked for: what bounds a conversation's side effects.

Value flow (``_conversation._carried``) sees an argument that carries outside text; it
cannot see influence without text: a page that tells the agent to list the files and
delete the first one listed. What can is the user's request: it asks for some effects (send
a mail, book a room) and not others. A host opens the conversation with those
(``registry.conversation(request, allow=[...])``: tool names or tool categories), or asks
toolplug to infer them from the request (``allow="inferred"``: ``implied``); once untrusted
content entered the conversation, a call with an effect outside them asks (the effects rule
of ``_guard``). The plan that decides which effects run comes from the trusted request
alone, and what untrusted text says can choose values within it, never widen it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["INFERRED", "budgets_given", "effects_given", "implied", "named_in"]

INFERRED: Final = "inferred"
"""``allow=INFERRED``: the effects the request names (``implied``), not given by the host."""

_WORD: Final = re.compile(r"[^\W_]+")

_STEM_CHARS: Final = 4
"""A word of the request names a tool's verb when they share this many first letters (or
are equal, for a shorter verb): "sending" and "send", "invited" and "invite"."""


def budgets_given(allow: Mapping[str, int | None]) -> dict[str, int]:
    """The counts of ``allow`` given as a mapping (``{"delete_file": 1, "read_page":
    None}``), checked: how many calls of each tool with a count the request asked for
    (None: any number). A count bounds a tool by name only: a category has none."""
    budgets: dict[str, int] = {}
    for name, count in allow.items():
        if count is None:
            continue
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise TypeError(
                f"allow[{name!r}] is {count!r}: give how many calls of {name} the user's "
                "request asked for (an integer, 0 or more), or None for any number"
            )
        budgets[str(name).strip()] = count
    return budgets


def effects_given(allow: Iterable[str]) -> frozenset[str]:
    """The tools and categories of ``allow``, checked: a list of non-empty strings (or a
    mapping's keys: the counts are ``budgets_given``'s)."""
    if isinstance(allow, str):
        raise TypeError(
            f"allow={allow!r}: give a list of tool names or categories (allow=[{allow!r}]), "
            f"or allow={INFERRED!r} to infer them from the request"
        )
    found: list[str] = []
    for item in allow:
        if not isinstance(item, str) or not item.strip():
            raise TypeError(
                f"allow holds {item!r}: each effect is a tool's name or a tool category, a "
                "non-empty string"
            )
        found.append(item.strip())
    return frozenset(found)


def named_in(name: str, text: str) -> bool:
    """Whether ``name`` (folded) occurs in ``text`` (folded) as a whole run: not inside a
    longer word or number ("13" is not named by "2013", "blue bay inn" is by "the blue
    bay inn, 5 stars")."""
    if not name:
        return False
    start = text.find(name)
    size = len(name)
    while start != -1:
        end = start + size
        if (start == 0 or not text[start - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        ):
            return True
        start = text.find(name, start + 1)
    return False


def _stems(text: str) -> frozenset[str]:
    return frozenset(word[:_STEM_CHARS] for word in _WORD.findall(text.casefold()))


def implied(request: str, tools: Mapping[str, Any]) -> frozenset[str]:
    """The tools whose effects ``request`` names, conservatively: a tool's name is read as
    words (``send_email``: send, email), its first word its verb; the request names the
    tool when it holds the verb (its first ``_STEM_CHARS`` letters: "sending" names
    ``send_email``) or the tool's whole name. ``tools`` maps each tool's name to its
    registration (its category is not read: a category such as "publish" says nothing
    the user would write). A request that names no verb of any tool bounds nothing
    reachable: every effect then asks once untrusted content entered."""
    stems = _stems(request)
    folded = request.casefold()
    found = set()
    for name in tools:
        words = _WORD.findall(name.casefold())
        if not words:
            continue
        if words[0][:_STEM_CHARS] in stems or named_in(" ".join(words), folded):
            found.add(name)
    return frozenset(found)
