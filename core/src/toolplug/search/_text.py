"""Words for ranking: Unicode segmentation, request filler dropped, English stemming.

Any script: a run of letters and digits is a word. Text in a script written without
spaces (Chinese, Japanese, Korean) becomes overlapping character pairs, so a request in
Japanese matches a description in Japanese. Words of one letter, and the filler a request
wraps around its point ("can you", "please", "I want to"), are dropped. Latin-script words
are stemmed with the Snowball English stemmer ("renting" and "rent" meet; "Angeles" stays
itself).

Identifiers (a tool's name, its parameter names) split at ``_``, ``.`` and ``-``, and a
camelCase word there counts both whole and as its humps: ``maxResults`` holds
``maxresult``, ``max`` and ``result``. Prose, and every request, is never split at humps,
so "GitHub" in a request meets "GitHub" in a description, not "git" and "hub".
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Final

__all__ = ["terms", "words"]

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

_KNOWN_WORDS: Final = 131_072
"""How many distinct words a vocabulary keeps before it starts afresh (a bound on memory)."""

_ALNUM: Final = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ASCII_WORDS: Final = bytes(c if c in _ALNUM else 32 for c in range(256))
"""For ``bytes.translate``: letters and digits kept, anything else a space. Split at the
spaces, ASCII text gives the words ``_WORD`` finds, in a tenth of the time."""


class _Vocabulary:
    """The terms of each word of one kind of text, worked out once per word.

    Building an index turns tens of thousands of texts into terms, so a text whose words
    are all known is turned into terms in C: split by ``bytes.translate`` when it is ASCII,
    then one dictionary lookup per word.
    """

    def __init__(self, terms_of: Callable[[str], tuple[str, ...]], *, lower: bool) -> None:
        self.terms_of = terms_of
        self.ascii_words = _ASCII_WORDS.lower() if lower else _ASCII_WORDS
        self.one: dict[str | bytes, str] = {}
        """Each known word that is one term: that term, or "" when it is none (filler)."""
        self.several: dict[str | bytes, tuple[str, ...]] = {}
        """Each known word that is several terms (a CJK run, a camelCase identifier)."""

    def __call__(self, text: str) -> tuple[str, ...]:
        found: list[Any] = (
            text.encode().translate(self.ascii_words).split()
            if text.isascii()
            else _WORD.findall(text)
        )
        try:
            return tuple(filter(None, map(self.one.__getitem__, found)))
        except KeyError:  # a word of several terms, or one not met yet
            return tuple(itertools.chain.from_iterable(map(self._learn, found)))

    def _learn(self, word: str | bytes) -> tuple[str, ...]:
        one = self.one.get(word)
        if one is not None:
            return (one,) if one else ()
        several = self.several.get(word)
        if several is not None:
            return several
        if len(self.one) + len(self.several) >= _KNOWN_WORDS:
            self.one.clear()
            self.several.clear()
        found = self.terms_of(word if isinstance(word, str) else word.decode())
        if len(found) > 1:
            self.several[word] = found
        else:
            self.one[word] = found[0] if found else ""
        return found


def words(text: str) -> list[str]:
    """The ranking terms of ``text``, in order (repeats kept)."""
    return list(_PROSE(text))


def terms(text: str, *, identifiers: bool = False) -> tuple[str, ...]:
    """The ranking terms of ``text`` as the index keeps them, in order (repeats kept).

    ``identifiers``: the text is names (a tool's, its parameters'), where a camelCase word
    also counts as its humps.
    """
    return _IDENTIFIER(text) if identifiers else _PROSE(text)


def _prose_terms(raw: str) -> tuple[str, ...]:
    """The terms of one word: its stem, its CJK character pairs, or none (filler)."""
    word = raw.lower()
    if word.isascii():
        return (_stem(word),) if len(word) > 1 and word not in _STOP else ()
    if any(_cjk(c) for c in raw):
        return tuple(_pairs(raw))
    return (word,) if len(word) > 1 and word not in _STOP else ()


def _identifier_terms(raw: str) -> tuple[str, ...]:
    """The terms of one word of an identifier: the whole word's, then its humps'."""
    whole = _prose_terms(raw)
    humps = _HUMP.split(raw)
    if len(humps) == 1:
        return whole
    return whole + tuple(term for hump in humps for term in _prose_terms(hump))


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


def _pairs(run: str) -> list[str]:
    """Character pairs of a run of CJK text (the run itself when it is one character)."""
    chars = [c.lower() for c in run]
    if len(chars) == 1:
        return chars
    return [a + b for a, b in itertools.pairwise(chars)]


_PROSE: Final = _Vocabulary(_prose_terms, lower=True)
"""Prose and requests: each word lower-cased and stemmed."""
_IDENTIFIER: Final = _Vocabulary(_identifier_terms, lower=False)
"""Identifiers: a camelCase word counts whole and as its humps, so its case is kept."""
