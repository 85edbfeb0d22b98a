"""What does a validated ``registry.call`` add to a tool that returns at once?

Run from the workspace root: ``uv run --group bench python bench/call_overhead.py``.

One process, three ways of calling the same function with web_search-shaped arguments,
interleaved batch by batch so machine noise hits all of them alike:

* a bare Python call of the function (the floor);
* ``registry.call("search", arguments)``: lookup, availability, validation with defaults
  filled, the ``tool_call`` hook chain, the call policy, the result;
* langchain-core's ``tool.invoke(arguments)`` for an equivalent ``StructuredTool``
  (the anchor; a benchmark-only dependency).

Reported: the median time per call of each, toolplug's overhead (its time minus the bare
call's), and how many times less that overhead is than ``tool.invoke``'s.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any, Literal

import toolplug
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult, hookimpl

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "What to search for"},
        "max_results": {
            "type": "integer", "minimum": 1, "maximum": 20, "default": 5,
            "description": "How many results",
        },
        "recency": {
            "type": "string", "enum": ["day", "week", "month", "year", "any"],
            "default": "any", "description": "How recent",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
ARGUMENTS: dict[str, Any] = {"query": "python release notes", "max_results": 3}


def search(query: str, max_results: int = 5, recency: str = "any") -> str:
    """The work itself: nothing, returned at once."""
    return query


class SearchTool(Tool):
    metadata = ToolMetadata(
        name="search", description="Search.", category="research", parameters=SCHEMA
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output=search(**arguments))


class Bench:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(SearchTool)


def langchain_tool() -> Any:
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel, Field

    class SearchArgs(BaseModel):
        query: str = Field(min_length=1, description="What to search for")
        max_results: int = Field(5, ge=1, le=20, description="How many results")
        recency: Literal["day", "week", "month", "year", "any"] = Field(
            "any", description="How recent"
        )

    return StructuredTool.from_function(
        func=search, name="search", description="Search.", args_schema=SearchArgs
    )


def per_call(func: Callable[[], object], batch: int) -> float:
    started = time.perf_counter()
    for _ in range(batch):
        func()
    return (time.perf_counter() - started) / batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=2000)
    options = parser.parse_args()

    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", Bench())])
    lc_tool = langchain_tool()
    assert registry.call("search", ARGUMENTS).output == "python release notes"
    assert lc_tool.invoke(ARGUMENTS) == "python release notes"
    ways: dict[str, Callable[[], object]] = {
        "bare Python call": lambda: search(**ARGUMENTS),
        "toolplug registry.call": lambda: registry.call("search", ARGUMENTS),
        "langchain-core tool.invoke": lambda: lc_tool.invoke(ARGUMENTS),
    }
    for func in ways.values():
        per_call(func, options.batch // 4)  # warm up
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(options.rounds):
        for name, func in ways.items():
            batch = options.batch if name != "langchain-core tool.invoke" else options.batch // 10
            samples[name].append(per_call(func, batch))
    median = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
    bare = median["bare Python call"]
    ours = median["toolplug registry.call"] - bare
    theirs = median["langchain-core tool.invoke"] - bare
    print(f"{options.rounds} interleaved rounds")
    print()
    print("| way | median us per call | overhead us |")
    print("|---|---:|---:|")
    for name, value in median.items():
        print(f"| {name} | {value:.2f} | {value - bare:.2f} |")
    print()
    print(f"toolplug overhead: {ours:.2f} us (goal <= 10: {'met' if ours <= 10 else 'MISSED'})")
    ratio = theirs / ours
    print(f"tool.invoke overhead / toolplug overhead: {ratio:.1f}x "
          f"(goal >= 40: {'met' if ratio >= 40 else 'MISSED'})")


if __name__ == "__main__":
    main()
