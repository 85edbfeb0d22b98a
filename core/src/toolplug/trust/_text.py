"""Text as the flow guard compares it: folded, split into words and tokens, walked in
slices a worker thread can hand the GIL back between (``hand_over``).

``_conversation`` folds what a result holds when it is recorded; ``_guard`` folds a sink
value the same way before searching for it. Both read through these functions, so a value
and the text it came from are always compared in one form.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from typing import Any, Final

from toolplug.trust._values import canon

__all__ = [
    "BREAK", "ITEM_CHARS", "MOST_NAMES", "NAME_CHARS", "NOT_WORD", "NO_NAMES", "SEARCH_CHARS",
    "SHOWN", "SLICE_CHARS", "SLICE_VALUES", "STRIP", "WORD", "fewer_words", "fold",
    "fold_joined", "hand_over", "leaves", "left_after", "letters", "name_of", "names_of",
    "numbers", "quoted", "sliced_fold", "sliced_leaves", "sliced_words", "spaced_words",
    "strings_in", "strings_of", "whole_token",
]

WORD: Final = re.compile(r"\w+")


STRIP: Final = "\"'`.,;:!?()[]{}<>*"


SHOWN: Final = 60


NAME_CHARS: Final = 256
"""The longest string of a result's data a ref may name (a name, an id; not a page)."""


MOST_NAMES: Final = 10_000
"""The most strings of one result's data kept as names (the first ones): bounded work."""


NO_NAMES: Final[frozenset[str]] = frozenset()


ITEM_CHARS: Final = 20
"""What each value of a result's data counts for besides its text, in ``off_loop``'s
characters: reading one (a string, a number, a list) costs about what 20 characters of
text do (0.15 us against 0.008)."""


SLICE_CHARS: Final = 64 * 1024
"""How much text a worker thread folds or lists the words of before it hands the GIL back
(``hand_over``): what the event loop may wait for, about 0.35 ms."""


SLICE_VALUES: Final = SLICE_CHARS // ITEM_CHARS
"""How many values of a result's data a worker thread reads before it hands the GIL back:
as long as a slice of text takes (``ITEM_CHARS``)."""


SEARCH_CHARS: Final = 2 * 1024 * 1024
"""How many characters a check's substring searches go through (each token and run of words
of a sink value, through the words of every untrusted or private source) in about the time
a slice (``SLICE_CHARS``) takes to fold or list: a search goes through about 6 characters
a ns, so 0.35 ms. A check that would search more is made in a worker thread
(``FlowGuard.long``), and there hands the GIL over after each such slice of searching."""


BREAK: Final = re.compile(r"\W")


NOT_WORD: Final = {
    code: " " for code in range(128) if not (chr(code).isalnum() or chr(code) == "_")
}
"""Every ASCII character ``\\w`` does not match, to a space."""


def spaced_words(text: str) -> str:
    """The words of ``text`` (``\\w+``) joined by one space, a space at each end: a run of
    words is then found with one substring search. ASCII text (most pages) takes a path
    about twice as fast as the regular expression, with the same words."""
    if text.isascii():
        return " " + " ".join(text.translate(NOT_WORD).split()) + " "
    return " " + " ".join(WORD.findall(text)) + " "


def fewer_words(parts: list[str], size: int) -> bool:
    r"""Whether the space-separated ``parts`` surely hold fewer than ``size`` words of
    ``\w+``: a part of letters and digits is one word, and any part of n characters holds
    at most (n + 1) // 2 (a word needs a character, and two words a character between
    them). False when unsure: then count them."""
    if len(parts) >= size:
        return False
    most = 0
    for part in parts:
        most += 1 if part.isalnum() else (len(part) + 1) // 2
    return most < size


def whole_token(token: str, text: str) -> bool:
    """Whether ``token`` is one of the tokens of ``text``: a run between spaces or line
    ends, its surrounding punctuation (``STRIP``) stripped, as the guard reads a value."""
    start = text.find(token)
    while start != -1:
        begin = start
        while begin > 0 and not text[begin - 1].isspace():
            begin -= 1
        end = start + len(token)
        while end < len(text) and not text[end].isspace():
            end += 1
        if text[begin:end].strip(STRIP) == token:
            return True
        start = text.find(token, start + 1)
    return False


def letters(token: str) -> bool:
    """Whether ``token`` is a word: letters only, apostrophes allowed (``grandma's`` and
    ``don't`` are words, not an address or a number)."""
    return token.isalpha() or (
        ("'" in token or "\u2019" in token)
        and token.replace("'", "").replace("\u2019", "").isalpha()
    )


def fold(text: str) -> str:
    """``text`` in the form both sides of a flow check take (``_values.canon``): decoded,
    NFKC, invisible characters removed, look-alike letters mapped, case folded."""
    return canon(text)


def fold_joined(strings: list[str]) -> str:
    """The strings folded (``fold``), one per line (``Record.text``)."""
    return "\n".join(fold(s) for s in strings)


def sliced_fold(strings: list[str], size: int | None = None) -> str:
    """``fold_joined(strings)``, ``size`` (``SLICE_CHARS``) characters at a time, the GIL
    handed over between slices (folding is per character, but for an entity, a percent
    escape or a combining sequence cut at a slice's end: those fold as two halves), and
    the text copied once, at the end."""
    size = size or SLICE_CHARS
    folded: list[str] = []
    since = 0
    for index, text in enumerate(strings):
        if index:
            folded.append("\n")
        for start in range(0, len(text), size):
            piece = text[start : start + size] if len(text) > size else text
            folded.append(canon(piece))
            since += len(piece)
            if since >= size:
                hand_over()
                since = 0
    return "".join(folded)


def sliced_words(text: str, size: int | None = None) -> str:
    """``spaced_words(text)``, about ``size`` (``SLICE_CHARS``) characters at a time, the
    GIL handed over between slices. Each slice ends before a character no word holds
    (``\\W``), so no word is cut: the slices' words, in order, are the text's."""
    size = size or SLICE_CHARS
    found: list[str] = []
    start, end = 0, len(text)
    while start < end:
        cut = BREAK.search(text, start + size) if start + size < end else None
        stop = end if cut is None else cut.start()
        words = spaced_words(text[start:stop])
        if len(words) > 2:
            found.append(words[1:-1])
        start = stop
        hand_over()
    if not found:
        return "  "  # as spaced_words has it
    return " ".join(["", *found, ""])  # one copy of the words, not three


def hand_over() -> None:
    """Let a thread waiting for the GIL take it: the event loop's, when it has something to
    run. A worker that keeps the GIL through a long string operation (``str.casefold`` of a
    MB) holds the loop as long as doing the work on it would, and even between operations
    the loop waits for the interpreter's switch interval (5 ms) before it may run."""
    time.sleep(0)


def left_after(value: Any, left: int, depth: int) -> int:
    """``left`` less the characters of ``value``'s strings and ``ITEM_CHARS`` for each of
    its values, down to 0 or below at most (then the count stops)."""
    left -= ITEM_CHARS
    if isinstance(value, str):
        return left - len(value)
    if isinstance(value, Mapping):
        items: Any = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return left
    if depth > 64:
        return left
    for item in items:
        left = left_after(item, left, depth + 1)
        if left <= 0:
            break
    return left


def strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_in(item)


def numbers(value: Any) -> Iterator[int | float]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from numbers(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from numbers(item)


def leaves(value: Any, strings: list[str], values: set[Any], depth: int = 0) -> None:
    if depth > 64:
        return
    if isinstance(value, str):
        strings.append(value)
        if len(value.strip()) >= 2:
            values.add(value.strip())
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        values.add(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            leaves(item, strings, values, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            leaves(item, strings, values, depth + 1)


def sliced_leaves(
    value: Any, strings: list[str], values: set[Any], size: int | None = None
) -> None:
    """``leaves(value, strings, values)`` in a worker thread: the same strings in the same
    order, the GIL handed over every ``size`` (``SLICE_VALUES``) values read, so that data
    of a million values holds the event loop no longer than a slice of text does."""
    size = size or SLICE_VALUES
    read = 0

    def walk(container: Mapping[Any, Any] | list[Any] | tuple[Any, ...], depth: int) -> None:
        nonlocal read
        for item in container.values() if isinstance(container, Mapping) else container:
            if depth < 64 and isinstance(item, Mapping | list | tuple):
                walk(item, depth + 1)
            else:
                leaves(item, strings, values, depth + 1)
            read += 1
            if read >= size:
                hand_over()
                read = 0

    if isinstance(value, Mapping | list | tuple):
        walk(value, 0)
    else:
        leaves(value, strings, values)


def name_of(text: str) -> str | None:
    """``text`` as a listed name is compared: stripped, case folded; None when empty or
    longer than a name (``NAME_CHARS``)."""
    stripped = text.strip()
    if not stripped or len(stripped) > NAME_CHARS:
        return None
    return stripped.casefold()


def names_of(strings: frozenset[str]) -> frozenset[str]:
    """The names among ``strings``: each as ``name_of`` gives it (inline: no call per string)."""
    return frozenset(
        name.casefold() for text in strings if 0 < len(name := text.strip()) <= NAME_CHARS
    )


def strings_of(value: Any, strings: list[str], depth: int = 0) -> None:
    """The strings of ``value`` (JSON data) into ``strings``: 64 levels deep and
    ``MOST_NAMES`` strings at most."""
    kind = type(value)
    if kind is str:
        strings.append(value)
        return
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        items: Any = value.values()
    elif kind is list or kind is tuple or isinstance(value, list | tuple):
        items = value
    elif isinstance(value, str):
        strings.append(value)
        return
    else:
        return
    if depth > 64 or len(strings) >= MOST_NAMES:
        return
    for item in items:
        kind = type(item)
        if kind is str:  # most items: no call for them
            strings.append(item)
            if len(strings) >= MOST_NAMES:
                return
        elif kind is not int and kind is not float and kind is not bool and item is not None:
            strings_of(item, strings, depth + 1)


def quoted(text: str) -> str:
    return repr(text if len(text) <= SHOWN else text[: SHOWN - 3] + "...")
