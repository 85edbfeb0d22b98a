"""What does a validated call add to a tool that returns at once, sync or async?

Run from the workspace root: ``uv run --group bench python bench/call_overhead.py``.

One process, the same function with web_search-shaped arguments, interleaved batch by
batch so machine noise hits every way alike. Three paths users take, each against its
own floor:

* a sync tool called with ``registry.call``, against a bare Python call of the function;
  langchain-core's ``tool.invoke`` on an equivalent ``StructuredTool`` is the anchor
  (a benchmark-only dependency);
* an async tool awaited with ``await registry.acall`` on the caller's loop, against a bare
  ``await`` of the same coroutine function; the official MCP SDK's ``MCPServer.call_tool``
  for an equivalent async tool, awaited in process, is the anchor;
* an async tool called with the sync ``registry.call`` (from code without a loop), against
  the bare ``await`` too;
* the async tool returning its hits as data too (ten records of four fields, as web_search
  does), awaited with ``registry.acall``, against the bare ``await`` of a coroutine that
  returns the same records: the result's data passes the output budget.

Reported: the median time per call of each, each path's overhead (its time minus its
floor), and the ratios to the anchors.
"""

from __future__ import annotations

import argparse
import asyncio
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


async def asearch(query: str, max_results: int = 5, recency: str = "any") -> str:
    """The same work, as a coroutine."""
    return query


class AsyncSearchTool(Tool):
    metadata = ToolMetadata(
        name="asearch", description="Search.", category="research", parameters=SCHEMA
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output=await asearch(**arguments))


RECORDS: list[dict[str, Any]] = [
    {"title": f"Result {n}", "url": f"https://docs.example/{n}", "snippet": "release notes",
     "rank": n}
    for n in range(10)
]


async def asearch_records(
    query: str, max_results: int = 5, recency: str = "any"
) -> list[dict[str, Any]]:
    """The work with hits to return: nothing, the records at once."""
    return RECORDS


class AsyncRecordsTool(Tool):
    metadata = ToolMetadata(
        name="asearch_records", description="Search.", category="research",
        parameters=SCHEMA,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(
            output=arguments["query"], data={"results": await asearch_records(**arguments)}
        )


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
        register(AsyncSearchTool)
        register(AsyncRecordsTool)


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


def mcp_sdk_server() -> Any:
    """The official MCP SDK's own server with the equivalent async tool."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool(name="asearch", description="Search.")
    async def sdk_search(query: str, max_results: int = 5, recency: str = "any") -> str:
        return await asearch(query, max_results, recency)

    return server


def per_call(func: Callable[[], object], batch: int) -> float:
    started = time.perf_counter()
    for _ in range(batch):
        func()
    return (time.perf_counter() - started) / batch


def per_await(loop: asyncio.AbstractEventLoop, func: Callable[[], Any], batch: int) -> float:
    """Seconds per ``await func()``, awaited ``batch`` times in a row on ``loop``."""

    async def run() -> float:
        started = time.perf_counter()
        for _ in range(batch):
            await func()
        return (time.perf_counter() - started) / batch

    return loop.run_until_complete(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=2000)
    options = parser.parse_args()

    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", Bench())])
    lc_tool = langchain_tool()
    sdk = mcp_sdk_server()
    loop = asyncio.new_event_loop()
    assert registry.call("search", ARGUMENTS).output == "python release notes"
    assert registry.call("asearch", ARGUMENTS).output == "python release notes"
    assert loop.run_until_complete(registry.acall("asearch", ARGUMENTS)).ok
    assert lc_tool.invoke(ARGUMENTS) == "python release notes"
    assert not loop.run_until_complete(sdk.call_tool("asearch", ARGUMENTS)).is_error
    sync_ways: dict[str, Callable[[], object]] = {
        "bare Python call": lambda: search(**ARGUMENTS),
        "toolplug registry.call, sync tool": lambda: registry.call("search", ARGUMENTS),
        "langchain-core tool.invoke": lambda: lc_tool.invoke(ARGUMENTS),
        "toolplug registry.call, async tool": lambda: registry.call("asearch", ARGUMENTS),
    }
    async_ways: dict[str, Callable[[], Any]] = {
        "bare await": lambda: asearch(**ARGUMENTS),
        "toolplug await registry.acall": lambda: registry.acall("asearch", ARGUMENTS),
        "MCP SDK await MCPServer.call_tool": lambda: sdk.call_tool("asearch", ARGUMENTS),
        "bare await, records": lambda: asearch_records(**ARGUMENTS),
        "toolplug await registry.acall, records as data": lambda: registry.acall(
            "asearch_records", ARGUMENTS
        ),
    }
    slow = {"langchain-core tool.invoke", "MCP SDK await MCPServer.call_tool"}
    for func in sync_ways.values():
        per_call(func, options.batch // 4)  # warm up
    for afunc in async_ways.values():
        per_await(loop, afunc, options.batch // 4)
    samples: dict[str, list[float]] = {name: [] for name in [*sync_ways, *async_ways]}
    for _ in range(options.rounds):
        for name, func in sync_ways.items():
            batch = options.batch if name not in slow else options.batch // 10
            samples[name].append(per_call(func, batch))
        for name, afunc in async_ways.items():
            batch = options.batch if name not in slow else options.batch // 10
            samples[name].append(per_await(loop, afunc, batch))
    median = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
    floors = {
        "bare Python call": "bare Python call",
        "toolplug registry.call, sync tool": "bare Python call",
        "langchain-core tool.invoke": "bare Python call",
        "toolplug registry.call, async tool": "bare await",
        "bare await": "bare await",
        "toolplug await registry.acall": "bare await",
        "MCP SDK await MCPServer.call_tool": "bare await",
        "bare await, records": "bare await, records",
        "toolplug await registry.acall, records as data": "bare await, records",
    }
    overhead = {name: median[name] - median[floors[name]] for name in median}
    print(f"{options.rounds} interleaved rounds")
    print()
    print("| way | median us per call | overhead us (over its floor) |")
    print("|---|---:|---:|")
    for name, value in median.items():
        print(f"| {name} | {value:.2f} | {overhead[name]:.2f} |")
    print()
    goals = [
        ("toolplug registry.call, sync tool", 10),
        ("toolplug await registry.acall", 15),
        ("toolplug registry.call, async tool", 50),
    ]
    for name, goal in goals:
        value = overhead[name]
        print(f"{name}: {value:.2f} us (goal <= {goal}: {'met' if value <= goal else 'MISSED'})")
    ratio = overhead["langchain-core tool.invoke"] / overhead["toolplug registry.call, sync tool"]
    print(f"tool.invoke overhead / registry.call overhead: {ratio:.1f}x "
          f"(goal >= 40: {'met' if ratio >= 40 else 'MISSED'})")
    sdk_ratio = (
        overhead["MCP SDK await MCPServer.call_tool"] / overhead["toolplug await registry.acall"]
    )
    print(f"MCPServer.call_tool overhead / registry.acall overhead: {sdk_ratio:.1f}x")
    registry.close()
    loop.close()


if __name__ == "__main__":
    main()
