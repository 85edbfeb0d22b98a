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
request's expected functions found in the top k), MRR and ms per query. Then the timings,
each the median of ``--rounds``: index build and ``Index.search`` at 1,000, 2,000 and 10,000
tools (and the first build in a fresh process, before any word is stemmed), and ms per query
through the calls users make on a registry of 2,000 tools loaded from code
(``registry.search``, ``optional_tools_section``) with the parts the time goes to.

    uv run --with bm25s --with scikit-learn python bench/tool_search.py
    uv run --with bm25s --with scikit-learn python bench/tool_search.py --tune
    uv run python bench/tool_search.py --timings-only
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import re
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolplug import Tool, ToolContext, ToolMetadata, ToolResult
from toolplug.search._index import FIELD_WEIGHTS, Index, index_of

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


def scaled(corpus: Corpus, size: int) -> list[ToolMetadata]:
    """``size`` tools: the corpus's functions, then renamed copies of them."""
    tools: list[ToolMetadata] = []
    for copy in itertools.count():
        for m in corpus.tools.values():
            if len(tools) == size:
                return tools
            name = m.name if not copy else f"{m.name[:56]}_c{copy}"
            tools.append(m.model_copy(update={"name": name}))
    return tools


def per_query_ms(rank: Callable[[str], object], queries: Sequence[str]) -> tuple[float, float]:
    """Milliseconds per query: wall-clock time, and the CPU time of this process (which
    other processes on the same cores inflate less)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for query in queries:
        rank(query)
    count = len(queries)
    return (1000 * (time.perf_counter() - wall) / count,
            1000 * (time.process_time() - cpu) / count)


def timed_build(tools: Sequence[ToolMetadata]) -> tuple[Index, float, float]:
    """An index of ``tools`` and the seconds it took: wall-clock and CPU."""
    wall, cpu = time.perf_counter(), time.process_time()
    index = Index(tools)
    return index, time.perf_counter() - wall, time.process_time() - cpu


def scaling(corpus: Corpus, queries: list[str], rounds: int) -> None:
    """Index build and ``Index.search`` time at 1k / 2k / 10k tools: medians of ``rounds``,
    the sizes interleaved within each round."""
    sizes = (1_000, 2_000, 10_000)
    catalogs = {size: scaled(corpus, size) for size in sizes}
    cold = {size: [first_build(size) for _ in range(3)] for size in (2_000, 10_000)}
    Index(list(corpus.tools.values()))  # the corpus's words met once, as in a running host
    builds: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
    queried: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
    for _round in range(rounds):
        for size in sizes:
            index, wall, cpu = timed_build(catalogs[size])
            builds[size].append((wall, cpu))
            queried[size].append(per_query_ms(functools.partial(index.search, limit=10),
                                              queries))
    print(f"\nIndex build and query time by number of tools (toolplug; medians of {rounds} "
          "rounds)\n")
    print("| tools | build s | fastest build s | build s, CPU | ms per query "
          "| ms per query, CPU |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        walls = [w for w, _ in builds[size]]
        print(f"| {size:,} | {statistics.median(walls):.3f} | {min(walls):.3f} "
              f"| {statistics.median(c for _, c in builds[size]):.3f} "
              f"| {statistics.median(w for w, _ in queried[size]):.3f} "
              f"| {statistics.median(c for _, c in queried[size]):.3f} |")
    print("\nThe first build in a fresh process, every word stemmed for the first time "
          "(median of 3 processes, wall / CPU): " + ", ".join(
              f"{size:,} tools {statistics.median(w for w, _ in runs):.3f} / "
              f"{statistics.median(c for _, c in runs):.3f} s" for size, runs in cold.items()))


def first_build(size: int) -> tuple[float, float]:
    """Seconds of the first index build in a new process (every word stemmed for the first
    time) at ``size`` tools: wall-clock and CPU."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import tool_search as t; "
            "c = t.scaled(t.Corpus(t.data_dir()), int(sys.argv[2])); "
            "print(*t.timed_build(c)[1:])")
    run = subprocess.run([sys.executable, "-c", code, str(ROOT / "bench"), str(size)],
                         check=True, capture_output=True, text=True)
    wall, cpu = run.stdout.split()
    return float(wall), float(cpu)


def _run(self: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult.success("")


def callers_path(corpus: Corpus, queries: list[str], rounds: int, size: int = 2_000) -> None:
    """Ms per query through the calls users make, on a registry of ``size`` tools loaded
    from code; and the parts of ``optional_tools_section``, to show where the time goes."""
    import toolplug
    from toolplug.render._prompt import render_optional_tools
    from toolplug.render._select import rank, select_tools

    classes = [type(m.name, (Tool,), {"metadata": m, "run": _run}) for m in scaled(corpus, size)]
    plugin = types.SimpleNamespace(register_tools=toolplug.provides(*classes))
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", plugin)])
    assert len(registry.tools) == size
    chosen = [t.metadata for t in registry.select(optional_only=True)]
    top = rank(chosen, queries[0], 5)
    index = index_of([t.metadata for t in registry.select()])
    ways: dict[str, Callable[[str], object]] = {
        "Index.search(task, 10)": lambda q: index.search(q, 10),
        "registry.search(task, limit=5)": lambda q: registry.search(q, limit=5),
        "optional_tools_section(registry, task=..., max_tools=5)": (
            lambda q: toolplug.optional_tools_section(registry, task=q, max_tools=5)
        ),
        "  of which registry.select(optional_only=True)": (
            lambda q: registry.select(optional_only=True)
        ),
        "  of which select_tools(registry, task=..., max_tools=5)": (
            lambda q: select_tools(registry, optional_only=True, task=q, max_tools=5)
        ),
        "  of which ranking the selected tools (rank(tools, task, 5))": (
            lambda q: rank(chosen, q, 5)
        ),
        "  of which listing the unavailable tools": (
            lambda q: sorted(n for n in registry.tools if not registry.availability(n).available)
        ),
        "  of which rendering five tools": lambda q: render_optional_tools(top),
    }
    times: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
    for _round in range(rounds):
        for way, call in ways.items():
            times[way].append(per_query_ms(call, queries))
    print(f"\nThe callers' path at {size:,} tools (a registry loaded from code; medians of "
          f"{rounds} rounds)\n")
    print("| call | ms per query | fastest round | ms per query, CPU |")
    print("|---|---:|---:|---:|")
    for way, measured in times.items():
        walls = [w for w, _ in measured]
        print(f"| {way} | {statistics.median(walls):.3f} | {min(walls):.3f} "
              f"| {statistics.median(c for _, c in measured):.3f} |")


def recall(
    corpus: Corpus, dev: list[tuple[str, set[str]]], held: list[tuple[str, set[str]]],
    weights: dict[str, float], *, tuned: bool,
) -> None:
    if tuned:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true", help="search the field weights first")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the timings")
    parser.add_argument("--timings-only", action="store_true",
                        help="skip the recall tables: build and query times only")
    options = parser.parse_args()
    corpus = Corpus(data_dir())
    dev = [r for c in DEV for r in corpus.requests[c]]
    held = [r for c in HELD_OUT for r in corpus.requests[c]]
    print(f"{len(corpus.tools):,} distinct functions; {len(dev):,} development requests, "
          f"{len(held):,} held-out live requests")
    queries = [text for text, _ in held[:300]]
    if not options.timings_only:
        recall(corpus, dev, held, tune(corpus, dev) if options.tune else dict(FIELD_WEIGHTS),
               tuned=options.tune)
    scaling(corpus, queries, options.rounds)
    callers_path(corpus, queries, options.rounds)
    print(f"\nmedian query length: {statistics.median(len(t.split()) for t, _ in held)} words")


if __name__ == "__main__":
    main()
