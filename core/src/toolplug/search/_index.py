"""The search index of a set of tools: fielded BM25 over everything a tool says.

Each tool is split into fields (name, description, usage hint, DO / DO NOT items,
category, parameter names, parameter descriptions and enum values, example inputs). A
term's weight in a tool is BM25F: its count in each field, normalised by that field's
length, times the field's weight, summed, then saturated (``k1``) and multiplied by the
term's inverse document frequency. All of that is computed once, when the index is built;
a query only adds up the precomputed weights of its terms (an inverted index), so it
costs a few postings lookups, not a pass over every tool. Ranking with a limit puts only
the best in order, not every tool.

The field weights were found by measurement (``bench/tool_search.py``: coordinate ascent
on recall@5 + MRR over BFCL's non-live categories; the live categories held out).

With an embedder (``toolplug.contract._hooks.embed_texts``) the lexical ranking is fused
with cosine similarity of embeddings by reciprocal rank; tool embeddings are computed once
per index.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from toolplug.search._text import terms, words

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata

__all__ = ["FIELD_WEIGHTS", "Embedder", "Hit", "Index", "index_of", "ranked"]

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]
"""Texts in, one vector per text out (``embed_texts``)."""

FIELD_WEIGHTS: Final[Mapping[str, float]] = {
    "name": 4.0,
    "description": 2.0,
    "usage": 1.0,
    "do": 1.0,
    "do_not": 0.0,
    "category": 0.5,
    "parameters": 0.5,
    "parameter_text": 1.0,
    "examples": 0.5,
}
"""How much a term counts in each field; see the module docstring for how they were found."""

_K1: Final = 1.2
_B: Final = 0.75
_RRF_K: Final = 60
_CACHE_SIZE: Final = 16


@dataclass(frozen=True)
class Hit:
    """One ranked tool: its score and, per field, the query terms it matched."""

    name: str
    score: float
    matched: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "name": self.name,
            "score": round(self.score, 4),
            "matched": {k: list(v) for k, v in self.matched.items()},
        }


def fields_of(meta: ToolMetadata) -> dict[str, str]:
    """The text of each field of one tool."""
    properties = meta.parameters.get("properties") or {}
    texts: list[str] = []
    for schema in properties.values():
        if type(schema) is dict or isinstance(schema, Mapping):  # the first test is cheaper
            description = schema.get("description")
            if description:
                texts.append(str(description))
            enum = schema.get("enum")
            if enum:
                texts.extend(v for v in enum if isinstance(v, str))
    examples: list[str] = []
    for example in meta.examples:
        examples.append(example.description)
        examples.extend(v for v in example.input.values() if isinstance(v, str))
    guidelines = meta.guidelines
    return {
        "name": meta.name,
        "description": meta.description,
        "usage": meta.usage_hint,
        "do": " ".join(guidelines.do),
        "do_not": " ".join(guidelines.do_not),
        "category": meta.category,
        "parameters": " ".join(map(str, properties)),
        "parameter_text": " ".join(texts),
        "examples": " ".join(examples),
    }


_IDENTIFIERS: Final = frozenset({"name", "parameters"})
"""The fields that hold identifiers, where a camelCase word also counts as its humps."""


class Index:
    """An inverted index of tools, built once; ``search`` is all a query costs."""

    def __init__(
        self, tools: Sequence[ToolMetadata], weights: Mapping[str, float] = FIELD_WEIGHTS
    ) -> None:
        self.tools = list(tools)
        self.names = [m.name for m in self.tools]
        self._by_name = sorted(range(len(self.names)), key=self.names.__getitem__)
        # The build is pure Python and touches every word of every tool, so it is written
        # for speed, and to leave the garbage collector little to track: a tool's fields and
        # their terms are tuples of strings (which the collector stops tracking), postings
        # are dicts of numbers (never tracked), and there is no tuple per (term, tool). A
        # large build then seldom sets off a full collection (tens of ms in a large host).
        field_names: list[tuple[str, ...]] = []  # per tool, its fields that hold terms
        field_terms: list[tuple[tuple[str, ...], ...]] = []  # and their terms, in order
        totals = dict.fromkeys(weights, 0)
        for meta in self.tools:
            fields: list[str] = []
            found: list[tuple[str, ...]] = []
            for f, text in fields_of(meta).items():
                if text and weights.get(f):
                    these = terms(text, identifiers=f in _IDENTIFIERS)
                    if these:
                        fields.append(f)
                        found.append(these)
                        totals[f] += len(these)
            field_names.append(tuple(fields))
            field_terms.append(tuple(found))
        many = len(self.tools) or 1
        averages = {f: totals[f] / many or 1.0 for f in weights}
        postings: defaultdict[str, dict[int, float]] = defaultdict(dict)
        for position, held in enumerate(zip(field_names, field_terms, strict=True)):
            blended: dict[str, float] = {}  # a term's count in each field, scaled, summed
            get = blended.get
            for f, these in zip(*held, strict=True):
                scale = weights[f] / (1 - _B + _B * len(these) / averages[f])
                for term in these:
                    blended[term] = get(term, 0.0) + scale
            for term, tf in blended.items():
                postings[term][position] = tf / (_K1 + tf)
        self.postings: dict[str, dict[int, float]] = dict(postings)
        """Each term's tools (by position) and its saturated weight in each."""
        self.idf = {  # how rare a term is, known once every tool is read
            term: math.log(1 + (many - len(found) + 0.5) / (len(found) + 0.5))
            for term, found in postings.items()
        }
        self._field_names = field_names
        self._field_terms = field_terms
        self._vectors: list[list[float]] | None = None
        self._embedded_by: Embedder | None = None
        self._lock = threading.Lock()

    def scores(self, query: str) -> dict[int, float]:
        """Lexical score of each matching tool (by position)."""
        return self._lexical(set(words(query)))

    def search(
        self, query: str, limit: int | None = None, *, embed: Embedder | None = None,
        keep_all: bool = False,
    ) -> list[Hit]:
        """The best tools for ``query``, best first, ties by name, at most ``limit``.

        ``keep_all``: tools that match nothing follow, by name (a ranking of every tool).
        """
        asked = set(words(query))
        scored = self._scored(query, asked, embed)
        return [
            Hit(self.names[p], scored.get(p, 0.0), self._matched(p, asked))
            for p in self._order(scored, limit, keep_all)
        ]

    def ranking(
        self, query: str, limit: int | None = None, *, embed: Embedder | None = None,
        keep_all: bool = True,
    ) -> list[ToolMetadata]:
        """The tools in the order of ``search``, without scores or matched terms.

        What renderers rank by. With a ``limit`` only the best are put in order, then as many
        of the tools no term matched as fill it (by name, in an order kept since the build):
        a query does not sort every tool.
        """
        scored = self._scored(query, set(words(query)), embed)
        return [self.tools[p] for p in self._order(scored, limit, keep_all)]

    def _lexical(self, asked: set[str]) -> dict[int, float]:
        totals: dict[int, float] = {}
        get = totals.get
        for term in sorted(asked):  # sorted: the same sums, to the last bit, in every process
            found = self.postings.get(term)
            if found is not None:
                idf = self.idf[term]
                for position, weight in found.items():
                    totals[position] = get(position, 0.0) + idf * weight
        return totals

    def _scored(self, query: str, asked: set[str], embed: Embedder | None) -> dict[int, float]:
        lexical = self._lexical(asked)
        return lexical if embed is None else self._fused(query, lexical, embed)

    def _order(self, scored: dict[int, float], limit: int | None, keep_all: bool) -> list[int]:
        """Positions: the scored best first, ties by name; then, with ``keep_all``, the
        others by name; at most ``limit``."""
        names = self.names

        def key(p: int) -> tuple[float, str]:
            return (-scored[p], names[p])

        if limit is None:
            order = sorted(scored, key=key)
            if keep_all:
                order += [p for p in self._by_name if p not in scored]
            return order
        limit = max(limit, 0)
        if limit == 0:
            return []
        best: Iterable[int] = scored
        if len(scored) > limit:
            # Only the tools scored at least the limit-th best score are put in order: found
            # by comparing bare numbers, which costs a fraction of a sort key per tool.
            cut = heapq.nlargest(limit, scored.values())[-1]
            best = [p for p, score in scored.items() if score >= cut]
        order = sorted(best, key=key)[:limit]
        if keep_all and len(order) < limit:
            unscored = (p for p in self._by_name if p not in scored)
            order += itertools.islice(unscored, limit - len(order))
        return order

    def _matched(self, position: int, asked: set[str]) -> dict[str, tuple[str, ...]]:
        found = {}
        held = zip(self._field_names[position], self._field_terms[position], strict=True)
        for f, these in held:
            hits = tuple(sorted(asked.intersection(these)))
            if hits:
                found[f] = hits
        return found

    def _fused(self, query: str, lexical: dict[int, float], embed: Embedder) -> dict[int, float]:
        """Reciprocal-rank fusion of the lexical ranking with embedding similarity."""
        vectors = self._tool_vectors(embed)
        [asked] = [list(v) for v in embed([query])]
        similarity = {p: _cosine(asked, v) for p, v in enumerate(vectors)}
        fused: dict[int, float] = {}
        for ranking in (lexical, similarity):
            ordered = sorted(ranking, key=lambda p: (-ranking[p], self.names[p]))
            for rank, position in enumerate(ordered, 1):
                fused[position] = fused.get(position, 0.0) + 1 / (_RRF_K + rank)
        return fused

    def _tool_vectors(self, embed: Embedder) -> list[list[float]]:
        with self._lock:
            if self._vectors is None or self._embedded_by is not embed:
                texts = [f"{m.name}: {m.description} {m.usage_hint}" for m in self.tools]
                self._vectors = [list(v) for v in embed(texts)] if texts else []
                self._embedded_by = embed
            return self._vectors


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    size = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / size if size else 0.0


_CACHE: OrderedDict[tuple[int, ...], tuple[list[Any], Index]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def index_of(tools: Sequence[ToolMetadata]) -> Index:
    """The index of exactly these tools, built on first use and kept while they are used.

    Keyed by the metadata objects themselves (held, so the key cannot be reused): a
    different set of tools, or a tool whose metadata changed, gets an index of its own.
    """
    key = tuple(map(id, tools))
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            return found[1]
    built = Index(tools)
    with _CACHE_LOCK:
        _CACHE[key] = (list(tools), built)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return built


def ranked(
    tools: Sequence[ToolMetadata], task: str, limit: int | None = None,
    embed: Embedder | None = None,
) -> list[ToolMetadata]:
    """Every tool, the most relevant to ``task`` first (by name among equals), at most
    ``limit``; by name alone for an empty task."""
    if not task.strip() and embed is None:
        ordered = sorted(tools, key=lambda m: m.name)
        return ordered if limit is None else ordered[: max(limit, 0)]
    return index_of(tools).ranking(task, limit, embed=embed)
