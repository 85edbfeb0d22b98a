"""The selection on the callers' path: ``optional_tools_section`` with a toolset and a task.

A registry of 2,000 tools (the BFCL functions of ``bench/tool_search.py``, then renamed
copies) loaded from code, and a toolset of 12 exclude patterns (globs and a category).
Each round asks for the section of the five tools most relevant to each of 300 held-out
requests, with the toolset and without it, interleaved; then the same task again and
again (the registry's selection is kept, so a repeated question is answered from it).

    uv run --group bench python bench/selection.py --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import types
from collections.abc import Callable
from typing import Any

from tool_search import HELD_OUT, Corpus, data_dir, per_query_ms, scaled

import toolplug
from toolplug import Tool, ToolContext, ToolResult, Toolset

EXCLUDE = (
    "get_*", "*_c3", "*_c5_*", "calc*", "*weather*", "find_*_c2", "*stock*", "*_v2",
    "translate*", "*_history", "category:research", "search_*_c4",
)  # fmt: skip


def _run(self: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult.success("")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=2_000)
    options = parser.parse_args()
    corpus = Corpus(data_dir())
    queries = [text for c in HELD_OUT for text, _ in corpus.requests[c]][:300]
    tools = scaled(corpus, options.size)
    classes = [type(m.name, (Tool,), {"metadata": m, "run": _run}) for m in tools]
    plugin = types.SimpleNamespace(register_tools=toolplug.provides(*classes))
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", plugin)])
    toolset = Toolset(name="bench", exclude=EXCLUDE)
    inside = len(registry.select(toolset=toolset))
    print(f"{len(registry.tools):,} tools; the toolset keeps {inside:,} of them")
    section = toolplug.optional_tools_section
    ways: dict[str, Callable[[str], str]] = {
        "with the toolset, a new task each call": (
            lambda q: section(registry, toolset=toolset, task=q, max_tools=5)
        ),
        "without a toolset, a new task each call": (
            lambda q: section(registry, task=q, max_tools=5)
        ),
        "with the toolset, the same task each call": (
            lambda q: section(registry, toolset=toolset, task=queries[0], max_tools=5)
        ),
    }
    for call in ways.values():  # the first call of each builds its index: not timed
        call(queries[0])
    times: dict[str, list[float]] = {way: [] for way in ways}
    for round_ in range(options.rounds):
        # Tasks no round asked before: the registry keeps the selections it made.
        asked = [f"{q} (round {round_})" for q in queries]
        for way, call in ways.items():
            times[way].append(per_query_ms(call, asked)[1])  # CPU ms of this process
    medians = {way: statistics.median(ms) for way, ms in times.items()}
    print(f"\nms per call (CPU time, median of {options.rounds} rounds of {len(queries)})\n")
    for way, ms in medians.items():
        print(f"  {way:45} {ms:8.3f}")
    with_set = medians["with the toolset, a new task each call"]
    without = medians["without a toolset, a new task each call"]
    print(f"\n  with / without the toolset: {with_set / without:.2f}x")


if __name__ == "__main__":
    main()
