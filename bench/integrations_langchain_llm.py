"""What does going through toolplug cost a LangChain or llm tool call, against the framework's
own tool wrapping the same Python function?

Run from the workspace root: ``uv run python bench/integrations_langchain_llm.py``.

One process, one function that returns at once (web_search-shaped arguments), interleaved
batch by batch so machine noise hits every way alike. For each framework and each path,
sync and async, the framework's native tool around the function is the anchor, and the
integration's tool around a toolplug tool calling the same function is measured:

* LangChain: ``StructuredTool.from_function`` (a pydantic schema from the signature)
  against ``ToolplugToolkit``'s tool; each invoked with a model's tool call, as LangGraph's
  ``ToolNode`` does, so both answer with a ``ToolMessage``;
* llm: ``llm.Tool.function`` against the ``Toolplug`` toolbox's tool; each run by llm's own
  ``Response.execute_tool_calls`` with one tool call, as a chain does (the async response's
  for the async path).

Reported: the median time per call of each, and toolplug's over the native one as a ratio
and in microseconds; and ``registry.call`` alone, the engine's share (validation, defaults,
policy), which the native tools do not do. The goal (issue 23): at most 1.2x or +20 us,
whichever is larger.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any, Literal

import llm
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

import toolplug
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult, hookimpl
from toolplug.integrations.langchain import ToolplugToolkit
from toolplug.integrations.llm import toolbox

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
GOAL_RATIO, GOAL_MICROSECONDS = 1.2, 20.0


def search(query: str, max_results: int = 5, recency: str = "any") -> str:
    """The work itself: nothing, returned at once."""
    return query


async def asearch(query: str, max_results: int = 5, recency: str = "any") -> str:
    """The same work, as a coroutine."""
    return query


class SearchTool(Tool):
    metadata = ToolMetadata(
        name="search", description="Search.", category="research", parameters=SCHEMA
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output=search(**arguments))


class AsyncSearchTool(Tool):
    metadata = ToolMetadata(
        name="asearch", description="Search.", category="research", parameters=SCHEMA
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output=await asearch(**arguments))


class Bench:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(SearchTool)
        register(AsyncSearchTool)


class SearchArgs(BaseModel):
    query: str = Field(min_length=1, description="What to search for")
    max_results: int = Field(5, ge=1, le=20, description="How many results")
    recency: Literal["day", "week", "month", "year", "any"] = Field(
        "any", description="How recent"
    )


def tool_call(name: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": dict(ARGUMENTS), "id": "call-1"}


def per_call(func: Callable[[], object], batch: int) -> float:
    started = time.perf_counter()
    for _ in range(batch):
        func()
    return (time.perf_counter() - started) / batch


def per_await(loop: asyncio.AbstractEventLoop, func: Callable[[], Any], batch: int) -> float:
    async def run() -> float:
        started = time.perf_counter()
        for _ in range(batch):
            await func()
        return (time.perf_counter() - started) / batch

    return loop.run_until_complete(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=200)
    options = parser.parse_args()

    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", Bench())])
    loop = asyncio.new_event_loop()

    # LangChain: the native tool and the toolkit's, sync and async.
    native_lc = StructuredTool.from_function(
        func=search, coroutine=asearch, name="search", description="Search.",
        args_schema=SearchArgs,
    )
    kit = {t.name: t for t in ToolplugToolkit(registry).get_tools()}
    assert native_lc.invoke(tool_call("search")).content == "python release notes"
    assert kit["search"].invoke(tool_call("search")).content == "python release notes"

    # llm: the native tools and the toolbox's, run by llm's own executor.
    model, amodel = llm.get_model("echo"), llm.get_async_model("echo")
    native_llm = model.prompt(
        "bench", tools=[llm.Tool.function(search)]  # type: ignore[no-untyped-call]
    )
    anative_llm = amodel.prompt(
        "bench", tools=[llm.Tool.function(asearch)]  # type: ignore[no-untyped-call]
    )
    box = toolbox(registry)
    toolplug_llm = model.prompt("bench", tools=[box])
    atoolplug_llm = amodel.prompt("bench", tools=[box])

    def llm_call(name: str) -> list[llm.ToolCall]:
        return [llm.ToolCall(name=name, arguments=dict(ARGUMENTS), tool_call_id="tc-1")]

    [native_result] = native_llm.execute_tool_calls(tool_calls_list=llm_call("search"))
    [toolplug_result] = toolplug_llm.execute_tool_calls(tool_calls_list=llm_call("search"))
    assert native_result.output == toolplug_result.output == "python release notes"

    sync_ways: dict[str, Callable[[], object]] = {
        "toolplug registry.call alone": lambda: registry.call("search", ARGUMENTS),
        "LangChain native tool.invoke": lambda: native_lc.invoke(tool_call("search")),
        "LangChain toolplug tool.invoke": lambda: kit["search"].invoke(tool_call("search")),
        "llm native execute_tool_calls": lambda: native_llm.execute_tool_calls(
            tool_calls_list=llm_call("search")
        ),
        "llm toolplug execute_tool_calls": lambda: toolplug_llm.execute_tool_calls(
            tool_calls_list=llm_call("search")
        ),
    }
    async_ways: dict[str, Callable[[], Any]] = {
        "LangChain native await tool.ainvoke": lambda: native_lc.ainvoke(tool_call("search")),
        "LangChain toolplug await tool.ainvoke": lambda: kit["asearch"].ainvoke(
            tool_call("asearch")
        ),
        "llm native await execute_tool_calls": lambda: anative_llm.execute_tool_calls(
            tool_calls_list=llm_call("asearch")
        ),
        "llm toolplug await execute_tool_calls": lambda: atoolplug_llm.execute_tool_calls(
            tool_calls_list=llm_call("asearch")
        ),
    }
    for func in sync_ways.values():
        per_call(func, options.batch // 4)  # warm up
    for afunc in async_ways.values():
        per_await(loop, afunc, options.batch // 4)
    samples: dict[str, list[float]] = {name: [] for name in [*sync_ways, *async_ways]}
    for _ in range(options.rounds):
        for name, func in sync_ways.items():
            samples[name].append(per_call(func, options.batch))
        for name, afunc in async_ways.items():
            samples[name].append(per_await(loop, afunc, options.batch))
    median = {name: statistics.median(values) * 1e6 for name, values in samples.items()}

    print(f"{options.rounds} interleaved rounds of {options.batch} calls")
    print()
    print("| framework, path | native us per call | toolplug us per call | ratio | difference us "
          "| goal (<= 1.2x or +20 us) |")
    print("|---|---:|---:|---:|---:|---|")
    pairs = [
        ("LangChain, sync", "LangChain native tool.invoke", "LangChain toolplug tool.invoke"),
        ("LangChain, async", "LangChain native await tool.ainvoke",
         "LangChain toolplug await tool.ainvoke"),
        ("llm, sync", "llm native execute_tool_calls", "llm toolplug execute_tool_calls"),
        ("llm, async", "llm native await execute_tool_calls",
         "llm toolplug await execute_tool_calls"),
    ]
    for label, native, ours in pairs:
        ratio = median[ours] / median[native]
        extra = median[ours] - median[native]
        met = ratio <= GOAL_RATIO or extra <= GOAL_MICROSECONDS
        print(f"| {label} | {median[native]:.1f} | {median[ours]:.1f} | {ratio:.2f}x "
              f"| {extra:+.1f} | {'met' if met else 'MISSED'} |")
    print()
    print(f"toolplug registry.call alone (the engine's share of each toolplug call, sync): "
          f"{median['toolplug registry.call alone']:.1f} us")
    registry.close()
    loop.close()


if __name__ == "__main__":
    main()
