"""Tool search on a public corpus: toolplug's index against plain BM25 and TF-IDF.

The corpus is the Berkeley Function Calling Leaderboard's data, read from the ``bfcl-eval``
package (installed by this script, without its dependencies, into bench/.venvs/bfcl: only
its data files are used). Every distinct function of eight categories becomes one tool; each
request is ranked against all of them. The non-live categories (simple_python, multiple,
parallel, parallel_multiple) are the development set the field weights were tuned on; the
live categories (requests real users sent) are held out and reported once, at the end.

Anchors, over the same tool text (name, description, parameter names, descriptions and enum
values) in the same run: plain BM25 (``bm25s``, its default English stop words, no stemmer)
and scikit-learn's TF-IDF with cosine similarity. Reported: recall@1/5/10 (the share of a
request's expected functions found in the top k), MRR and ms per query; then index build
and query time at 1,000 and 10,000 tools.

    uv run --with bm25s --with scikit-learn python bench/tool_search.py
    uv run --with bm25s --with scikit-learn python bench/tool_search.py --tune
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolplug import ToolMetadata
from toolplug.search._index import FIELD_WEIGHTS, Index

ROOT = Path(__file__).resolve().parent.parent
BFCL = ROOT / "bench" / ".venvs" / "bfcl"
DEV = ["simple_python", "multiple", "parallel", "parallel_multiple"]
HELD_OUT = ["live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"]
_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def data_dir() -> Path:
    """The installed package's data folder (installed here on first use)."""
    found = list(BFCL.glob("bfcl_eval/data"))
    if not found:
        subprocess.run(
            ["uv", "pip", "install", "--quiet", "--no-deps", "--target", str(BFCL), "bfcl-eval"],
            check=True,
        )
        found = list(BFCL.glob("bfcl_eval/data"))
    return found[0]


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


class Corpus:
    """Distinct functions as tools, and each category's requests with their answers."""

    def __init__(self, folder: Path) -> None:
        self.tools: dict[str, ToolMetadata] = {}
        self.text: dict[str, str] = {}
        self.requests: dict[str, list[tuple[str, set[str]]]] = {}
        by_key: dict[tuple[str, str], str] = {}
        for category in DEV + HELD_OUT:
            questions = read_lines(folder / f"BFCL_v4_{category}.json")
            answers = {a["id"]: a for a in read_lines(folder / "possible_answer" /
                                                      f"BFCL_v4_{category}.json")}
            requests = []
            for question in questions:
                names = {}
                for function in question["function"]:
                    key = (function["name"], function.get("description", ""))
                    if key not in by_key:
                        by_key[key] = self._add(function)
                    names[function["name"]] = by_key[key]
                wanted = {names[n] for call in answers[question["id"]]["ground_truth"]
                          for n in call if n in names}
                turn = question["question"][0]
                text = " ".join(m["content"] for m in turn if m["role"] == "user")
                if wanted and text.strip():
                    requests.append((text, wanted))
            self.requests[category] = requests

    def _add(self, function: dict[str, Any]) -> str:
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", function["name"]).lower()
        base = _NAME.sub("_", snake).replace("-", "_").strip("_")[:60]
        base = base if base[:1].isalpha() else f"f_{base}"[:60]
        name, n = base, 1
        while name in self.tools:
            n += 1
            name = f"{base[:56]}_{n}"
        properties: dict[str, Any] = {}
        texts = []
        for key, schema in (function.get("parameters", {}).get("properties") or {}).items():
            entry: dict[str, Any] = {}
            if isinstance(schema, dict):
                if isinstance(schema.get("description"), str):
                    entry["description"] = schema["description"]
                enum = [v for v in schema.get("enum", []) if isinstance(v, str)]
                if enum:
                    entry["enum"] = enum
                texts += [entry.get("description", ""), *enum]
            properties[str(key)] = entry
        description = (function.get("description") or function["name"]).strip()
        self.tools[name] = ToolMetadata(
            name=name,
            description=" ".join(description.split()) or name,
            category="utility",
            parameters={"type": "object", "properties": properties},
        )
        self.text[name] = " ".join([function["name"].replace("_", " ").replace(".", " "),
                                    description, *properties, *texts])
        return name


Ranker = Callable[[str], list[str]]


def toolplug_ranker(corpus: Corpus, weights: dict[str, float] | None = None) -> Ranker:
    index = Index(list(corpus.tools.values()), weights or FIELD_WEIGHTS)
    return lambda query: [hit.name for hit in index.search(query, 10)]


def bm25s_ranker(corpus: Corpus) -> Ranker:
    import bm25s

    names = list(corpus.text)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([corpus.text[n] for n in names], stopwords="en",
                                   show_progress=False), show_progress=False)

    def rank(query: str) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        found, _ = retriever.retrieve(tokens, k=min(10, len(names)), show_progress=False)
        return [names[i] for i in found[0]]

    return rank


def tfidf_ranker(corpus: Corpus) -> Ranker:
    from sklearn.feature_extraction.text import TfidfVectorizer

    names = list(corpus.text)
    vectorizer = TfidfVectorizer(sublinear_tf=True)
    matrix = vectorizer.fit_transform([corpus.text[n] for n in names])

    def rank(query: str) -> list[str]:
        scores = (matrix @ vectorizer.transform([query]).T).toarray().ravel()
        top = scores.argsort()[::-1][:10]
        return [names[i] for i in top if scores[i] > 0]

    return rank


def measure(rank: Ranker, requests: Sequence[tuple[str, set[str]]]) -> dict[str, float]:
    recall = {1: 0.0, 5: 0.0, 10: 0.0}
    reciprocal = 0.0
    started = time.perf_counter()
    results = [rank(text) for text, _ in requests]
    elapsed = time.perf_counter() - started
    for found, (_, wanted) in zip(results, requests, strict=True):
        for k in recall:
            recall[k] += len(wanted & set(found[:k])) / len(wanted)
        first = next((i for i, name in enumerate(found, 1) if name in wanted), None)
        reciprocal += 1 / first if first else 0.0
    count = max(len(requests), 1)
    return {"r@1": recall[1] / count, "r@5": recall[5] / count, "r@10": recall[10] / count,
            "mrr": reciprocal / count, "ms": 1000 * elapsed / count}


def table(rows: dict[str, dict[str, float]], title: str) -> None:
    print(f"\n{title}\n")
    print("| method | recall@1 | recall@5 | recall@10 | MRR | ms per query |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, m in rows.items():
        print(f"| {name} | {m['r@1']:.3f} | {m['r@5']:.3f} | {m['r@10']:.3f} | {m['mrr']:.3f} "
              f"| {m['ms']:.3f} |")


def tune(corpus: Corpus, dev: list[tuple[str, set[str]]]) -> dict[str, float]:
    """Coordinate ascent on recall@5 + MRR over the development requests."""
    weights = dict(FIELD_WEIGHTS)
    tuned = ["name", "description", "parameters", "parameter_text"]

    def objective(w: dict[str, float]) -> float:
        m = measure(toolplug_ranker(corpus, w), dev)
        return m["r@5"] + m["mrr"]

    best = objective(weights)
    for _round in range(2):
        for f in tuned:
            for value in (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0):
                trial = {**weights, f: value}
                score = objective(trial)
                if score > best + 1e-9:
                    best, weights = score, trial
                    print(f"  {f} = {value}: {score:.4f}", file=sys.stderr)
    return weights


def scaling(corpus: Corpus, queries: list[str]) -> None:
    print("\nIndex build and query time by number of tools (toolplug)\n")
    print("| tools | build s | ms per query |")
    print("|---:|---:|---:|")
    base = list(corpus.tools.values())
    for size in (1_000, 2_000, 10_000):
        tools: list[ToolMetadata] = []
        for copy in itertools.count():
            for m in base:
                if len(tools) == size:
                    break
                name = m.name if not copy else f"{m.name[:56]}_c{copy}"
                tools.append(m.model_copy(update={"name": name}))
            if len(tools) == size:
                break
        started = time.perf_counter()
        index = Index(tools)
        build = time.perf_counter() - started
        started = time.perf_counter()
        for query in queries:
            index.search(query, 10)
        per_query = 1000 * (time.perf_counter() - started) / len(queries)
        print(f"| {size:,} | {build:.3f} | {per_query:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true", help="search the field weights first")
    options = parser.parse_args()
    corpus = Corpus(data_dir())
    dev = [r for c in DEV for r in corpus.requests[c]]
    held = [r for c in HELD_OUT for r in corpus.requests[c]]
    print(f"{len(corpus.tools):,} distinct functions; {len(dev):,} development requests, "
          f"{len(held):,} held-out live requests")
    weights = tune(corpus, dev) if options.tune else dict(FIELD_WEIGHTS)
    if options.tune:
        print(f"\ntuned weights: {json.dumps(weights)}")
    rankers = {
        "toolplug": toolplug_ranker(corpus, weights),
        "bm25s (plain BM25)": bm25s_ranker(corpus),
        "scikit-learn TF-IDF": tfidf_ranker(corpus),
    }
    for category in DEV:
        table({n: measure(r, corpus.requests[category]) for n, r in rankers.items()},
              f"Development: {category} ({len(corpus.requests[category])} requests)")
    table({n: measure(r, dev) for n, r in rankers.items()}, "Development, all")
    for category in HELD_OUT:
        table({n: measure(r, corpus.requests[category]) for n, r in rankers.items()},
              f"Held out: {category} ({len(corpus.requests[category])} requests)")
    held_rows = {n: measure(r, held) for n, r in rankers.items()}
    table(held_rows, "Held out, all live requests")
    best_baseline = max(held_rows["bm25s (plain BM25)"]["r@5"],
                        held_rows["scikit-learn TF-IDF"]["r@5"])
    print(f"\nheld-out recall@5: toolplug {held_rows['toolplug']['r@5']:.3f}, better baseline "
          f"{best_baseline:.3f}, margin {held_rows['toolplug']['r@5'] - best_baseline:+.3f} "
          "(goal +0.05)")
    scaling(corpus, [text for text, _ in held[:300]])
    print(f"\nmedian query length: {statistics.median(len(t.split()) for t, _ in held)} words")


if __name__ == "__main__":
    main()
