"""The search index of a set of tools: fielded BM25 over everything a tool says.

Each tool is split into fields (name, description, usage hint, DO / DO NOT items,
category, parameter names, parameter descriptions and enum values, example inputs). A
term's weight in a tool is BM25F: its count in each field, normalised by that field's
length, times the field's weight, summed, then saturated (``k1``) and multiplied by the
term's inverse document frequency. All of that is computed once, when the index is built;
a query only adds up the precomputed weights of its terms (an inverted index), so it
costs a few postings lookups, not a pass over every tool.

The field weights were found by measurement (``bench/tool_search.py``: coordinate ascent
on recall@5 + MRR over BFCL's non-live categories; the live categories held out).

With an embedder (``toolplug.contract._hooks.embed_texts``) the lexical ranking is fused
with cosine similarity of embeddings by reciprocal rank; tool embeddings are computed once
per index.
"""

from __future__ import annotations

import heapq
import math
import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from toolplug.search._text import term_counts, words

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata

__all__ = ["FIELD_WEIGHTS", "Embedder", "Hit", "Index", "embedder_of", "index_of", "ranked"]

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
    properties = meta.parameters.get("properties", {})
    names, texts = [], []
    for name, schema in properties.items():
        names.append(str(name))
        if isinstance(schema, Mapping):
            texts.append(str(schema.get("description", "")))
            texts.extend(str(v) for v in schema.get("enum", ()) if isinstance(v, str))
    examples = []
    for example in meta.examples:
        examples.append(example.description)
        examples.extend(str(v) for v in example.input.values() if isinstance(v, str))
    return {
        "name": meta.name,
        "description": meta.description,
        "usage": meta.usage_hint,
        "do": " ".join(meta.guidelines.do),
        "do_not": " ".join(meta.guidelines.do_not),
        "category": meta.category,
        "parameters": " ".join(names),
        "parameter_text": " ".join(texts),
        "examples": " ".join(examples),
    }


class Index:
    """An inverted index of tools, built once; ``search`` is all a query costs."""

    def __init__(
        self, tools: Sequence[ToolMetadata], weights: Mapping[str, float] = FIELD_WEIGHTS
    ) -> None:
        self.tools = list(tools)
        self.names = [m.name for m in self.tools]
        names = {"name", "parameters"}  # identifiers: camelCase is split there
        per_tool = [
            {
                f: term_counts(t, identifiers=f in names)
                for f, t in fields_of(m).items()
                if t and weights.get(f)
            }
            for m in self.tools
        ]
        averages = {
            f: (sum(sum(d[f].values()) for d in per_tool if f in d) / len(per_tool) or 1.0)
            if per_tool
            else 1.0
            for f in weights
        }
        blended: list[dict[str, float]] = []
        for document in per_tool:
            mixed: dict[str, float] = {}
            for f, counts in document.items():
                if not counts:
                    continue
                scale = weights[f] / (1 - _B + _B * sum(counts.values()) / averages[f])
                for term, count in counts.items():
                    mixed[term] = mixed.get(term, 0.0) + scale * count
            blended.append(mixed)
        having = Counter(term for mixed in blended for term in mixed)
        total = len(blended)
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for position, mixed in enumerate(blended):
            for term, tf in mixed.items():
                idf = math.log(1 + (total - having[term] + 0.5) / (having[term] + 0.5))
                self.postings.setdefault(term, []).append((position, idf * tf / (_K1 + tf)))
        self._fields = per_tool
        self._vectors: list[list[float]] | None = None
        self._embedded_by: Embedder | None = None
        self._lock = threading.Lock()

    def scores(self, query: str) -> dict[int, float]:
        """Lexical score of each matching tool (by position)."""
        totals: dict[int, float] = {}
        for term in set(words(query)):
            for position, weight in self.postings.get(term, ()):
                totals[position] = totals.get(position, 0.0) + weight
        return totals

    def search(
        self, query: str, limit: int | None = None, *, embed: Embedder | None = None,
        keep_all: bool = False,
    ) -> list[Hit]:
        """The best tools for ``query``, best first, ties by name, at most ``limit``.

        ``keep_all``: tools that match nothing follow, by name (a ranking of every tool).
        """
        lexical = self.scores(query)
        if embed is not None:
            lexical = self._fused(query, lexical, embed)
        def key(p: int) -> tuple[float, str]:
            return (-lexical[p], self.names[p])

        if limit is not None and not keep_all:
            order = heapq.nsmallest(max(limit, 0), lexical, key=key)
        else:
            order = sorted(lexical, key=key)
        if keep_all:
            rest = sorted((p for p in range(len(self.names)) if p not in lexical),
                          key=lambda p: self.names[p])
            order += rest
        if limit is not None:
            order = order[: max(limit, 0)]
        terms = set(words(query))
        return [Hit(self.names[p], lexical.get(p, 0.0), self._matched(p, terms)) for p in order]

    def _matched(self, position: int, terms: set[str]) -> dict[str, tuple[str, ...]]:
        found = {}
        for f, counts in self._fields[position].items():
            hits = tuple(sorted(t for t in terms if t in counts))
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
    key = tuple(id(m) for m in tools)
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
    index = index_of(tools)
    by_name = {m.name: m for m in tools}
    return [by_name[h.name] for h in index.search(task, limit, embed=embed, keep_all=True)]



_EMBEDDERS: weakref.WeakKeyDictionary[Any, Embedder | None] = weakref.WeakKeyDictionary()


def embedder_of(registry: Any) -> Embedder | None:
    """The registry's ``embed_texts`` hook as one embedder (the same object each time, so
    tool vectors are computed once per index), or None when no plugin implements it."""
    manager = registry.plugin_manager
    if manager in _EMBEDDERS:
        return _EMBEDDERS[manager]
    hook = manager.hook.embed_texts
    found: Embedder | None = None
    if hook.get_hookimpls():

        def embed(texts: list[str]) -> Sequence[Sequence[float]]:
            vectors = hook(texts=texts)
            if vectors is None or len(vectors) != len(texts):
                raise ValueError("embed_texts must return one vector per text")
            return list(vectors)

        found = embed
    _EMBEDDERS[manager] = found
    return found
