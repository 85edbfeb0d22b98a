"""Task relevance: rank tools for a task with BM25 over their own words.

No network and no model: each tool is a small document made of its name, description,
category, usage hint, guidance and output kinds, with the name and description weighted
up. Ties keep name order, so the ranking is deterministic.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Final

from toolplug.contract._metadata import ToolMetadata

__all__ = ["rank_tools", "score_tools"]

_K1: Final = 1.2
_B: Final = 0.75
_WORD: Final = re.compile(r"[a-z0-9]+")
_STOP_WORDS: Final = (
    "a an and are as at be but by for from has have i if in into is it its me my of on or "
    "our so that the their them then there these this to use used using was we were what "
    "when which who will with you your"
)
_STOP: Final = frozenset(_STOP_WORDS.split())
_SUFFIXES: Final = ("ations", "ation", "ings", "ing", "ies", "es", "ed", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            base = word[: -len(suffix)]
            return base + "y" if suffix == "ies" else base
    return word


def tokens(text: str) -> list[str]:
    """Lower-case word stems of the text, without stop words."""
    words = _WORD.findall(text.lower().replace("_", " "))
    return [_stem(w) for w in words if w not in _STOP]


def _document(meta: ToolMetadata) -> list[str]:
    parts = [
        (meta.name, 3),
        (meta.description, 2),
        (meta.category, 1),
        (meta.usage_hint, 1),
        (" ".join(meta.guidelines.do), 1),
        (" ".join(meta.produces), 1),
    ]
    words: list[str] = []
    for text, weight in parts:
        words.extend(tokens(text) * weight)
    return words


def score_tools(tools: Sequence[ToolMetadata], task: str) -> dict[str, float]:
    """BM25 score of each tool for the task."""
    docs = {meta.name: Counter(_document(meta)) for meta in tools}
    if not docs:
        return {}
    lengths = {name: sum(c.values()) for name, c in docs.items()}
    average = sum(lengths.values()) / len(docs) or 1.0
    query = set(tokens(task))
    scores: dict[str, float] = {}
    for name, counts in docs.items():
        score = 0.0
        for term in query:
            frequency = counts.get(term, 0)
            if not frequency:
                continue
            having = sum(1 for c in docs.values() if term in c)
            idf = math.log(1 + (len(docs) - having + 0.5) / (having + 0.5))
            norm = frequency + _K1 * (1 - _B + _B * lengths[name] / average)
            score += idf * frequency * (_K1 + 1) / norm
        scores[name] = score
    return scores


def rank_tools(
    tools: Sequence[ToolMetadata], task: str, *, limit: int | None = None
) -> list[ToolMetadata]:
    """The tools most relevant to the task first (name order among equals), at most ``limit``.

    With an empty task the order is by name. Tools that share no word with a non-empty task
    are dropped only when ``limit`` leaves no room for them.
    """
    scores = score_tools(tools, task)
    ranked = sorted(tools, key=lambda m: (-scores.get(m.name, 0.0), m.name))
    return ranked if limit is None else ranked[: max(limit, 0)]
