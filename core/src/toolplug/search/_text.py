"""Words for ranking: Unicode segmentation, request filler dropped, English stemming.

Any script: a run of letters and digits is a word. Text in a script written without
spaces (Chinese, Japanese, Korean) becomes overlapping character pairs, so a request in
Japanese matches a description in Japanese. Words of one letter, and the filler a request
wraps around its point ("can you", "please", "I want to"), are dropped. Latin-script words
are stemmed with the Snowball English stemmer ("renting" and "rent" meet; "Angeles" stays
itself). Identifiers split at ``_``, ``.``, ``-`` and camelCase humps.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections import Counter
from typing import Any, Final

__all__ = ["term_counts", "words"]

_WORD: Final = re.compile(r"[^\W_]+", re.UNICODE)
_HUMP: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_FILLER: Final = (
    "a about above after again against all am an and any are as at be because been before "
    "being below between both but by can could did do does doing down during each few for "
    "from further had has have having he her here hers herself him himself his how i if in "
    "into is it its itself just let like me more most my myself need needs no nor not now of "
    "off on once only or other our ours ourselves out over own please same she should so some "
    "such than thank thanks that the their theirs them themselves then there these they this "
    "those through to too under until up very want wants was we were what when where which "
    "while who whom why will with would you your yours yourself yourselves hi hello hey "
    "kindly help tell show give get find may might must shall also really"
)
_STOP: Final = frozenset(_FILLER.split())
"""Words that say nothing about which tool fits: function words and request filler."""


def _cjk(char: str) -> bool:
    """Written without spaces between words: Han, kana, Hangul."""
    name = unicodedata.name(char, "")
    return name.startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL"))


@functools.lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer  # type: ignore[import-untyped]

    return snowballstemmer.stemmer("english")


def words(text: str) -> list[str]:
    """The ranking terms of ``text``, in order (repeats kept)."""
    return [term for raw in _WORD.findall(_HUMP.sub(" ", text)) for term in _terms(raw)]


def term_counts(text: str, *, identifiers: bool = False) -> dict[str, int]:
    """How often each term occurs in ``text``: what the index stores.

    Words are counted first (at C speed) and each distinct word is turned into terms
    once; camelCase is split only in ``identifiers`` (names), where it means something.
    """
    if identifiers:
        text = _HUMP.sub(" ", text)
    counts: dict[str, int] = {}
    terms = _terms
    for raw, n in Counter(_WORD.findall(text)).items():
        for term in terms(raw):
            counts[term] = counts.get(term, 0) + n
    return counts


@functools.lru_cache(maxsize=131_072)
def _terms(raw: str) -> tuple[str, ...]:
    """The terms of one word: its stem, its CJK character pairs, or none (filler)."""
    word = raw.lower()
    if word.isascii():
        return (_stem(word),) if len(word) > 1 and word not in _STOP else ()
    if any(_cjk(c) for c in raw):
        return tuple(_pairs(raw))
    return (word,) if len(word) > 1 and word not in _STOP else ()


def _pairs(run: str) -> list[str]:
    """Character pairs of a run of CJK text (the run itself when it is one character)."""
    chars = [c.lower() for c in run]
    if len(chars) == 1:
        return chars
    return [a + b for a, b in itertools.pairwise(chars)]
