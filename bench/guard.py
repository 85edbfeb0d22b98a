"""What does the flow guard add to a call? ``acall`` overhead and 200 concurrent calls,
with the guard off and on, side by side in one run.

Run from the workspace root: ``uv run python bench/guard.py``.

One process, the same async tool with web_search-shaped arguments (its ``query`` a sink),
interleaved batch by batch so machine noise hits every way alike:

* ``guard off``: ``[guard] enabled = false``, no conversation (the anchor);
* ``guard on, no conversation``: what every call pays now (the labels on the result);
* ``guard on, in a conversation``: the call is recorded and its sink checked against an
  untrusted page the conversation read first (a few kB of text) and the user's request;
* ``guard on, [policies] rule``: one JSON Schema rule on the sink, no conversation.

Then 200 concurrent calls of a 0.05 s async tool, guard off against guard on inside a
conversation that read the page (medians of ``--rounds`` rounds, order alternating).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

import toolplug
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult, Trust, hookimpl

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
    },
    "required": ["query"],
    "additionalProperties": False,
}
ARGUMENTS: dict[str, Any] = {"query": "python release notes 3.14", "max_results": 3}
PAGE = " ".join(
    f"Paragraph {i}: the harbour office posts tide tables at https://tides.example/{i}."
    for i in range(60)
)
NAP = 0.05


class Search(Tool):
    metadata = ToolMetadata(
        name="search",
        description="Search.",
        category="research",
        parameters=SCHEMA,
        trust=Trust(output="trusted", sinks=("query",)),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output=arguments["query"])


class Page(Tool):
    metadata = ToolMetadata(
        name="page",
        description="A page.",
        category="research",
        trust=Trust(output="untrusted"),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output=PAGE)


class Nap(Tool):
    metadata = ToolMetadata(
        name="nap",
        description="Nap.",
        category="utility",
        parameters=SCHEMA,
        trust=Trust(output="trusted", sinks=("query",)),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(NAP)
        return ToolResult(output="rested")


class Bench:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        for tool in (Search, Page, Nap):
            register(tool)


def load(config: dict[str, Any]) -> toolplug.Registry:
    return toolplug.load(config, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", Bench())])


async def per_await(func: Callable[[], Any], batch: int) -> float:
    started = time.perf_counter()
    for _ in range(batch):
        await func()
    return (time.perf_counter() - started) / batch


async def overhead(rounds: int, batch: int) -> dict[str, float]:
    off = load({"guard": {"enabled": False}})
    on = load({})
    ruled = load(
        {
            "policies": {
                "search": [
                    {
                        "argument": "query",
                        "action": "deny",
                        "schema": {"type": "string", "pattern": "^rm "},
                    },
                ]
            }
        }
    )
    conversation = on.conversation("find python release notes")
    with conversation:
        assert (await on.acall("page")).ok
    tool, context = Search(), ToolContext(tool="search")
    ways: dict[str, Callable[[], Any]] = {
        "bare await of the tool": lambda: tool.run(ARGUMENTS, context),
        "guard off": lambda: off.acall("search", ARGUMENTS),
        "guard on, no conversation": lambda: on.acall("search", ARGUMENTS),
        "guard on, in a conversation": lambda: _within(conversation, on, ARGUMENTS),
        "guard on, [policies] rule": lambda: ruled.acall("search", ARGUMENTS),
    }
    assert (await _within(conversation, on, ARGUMENTS)).ok
    for func in ways.values():
        await per_await(func, batch // 4)  # warm up
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        for name, func in ways.items():
            samples[name].append(await per_await(func, batch))
    for registry in (off, on, ruled):
        registry.close()
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}


async def _within(
    conversation: toolplug.Conversation, registry: toolplug.Registry, arguments: dict[str, Any]
) -> ToolResult:
    with conversation:
        return await registry.acall("search", arguments)


async def concurrent(calls: int, rounds: int) -> dict[str, float]:
    off = load({"guard": {"enabled": False}})
    on = load({})
    conversation = on.conversation("nap")
    with conversation:
        await on.acall("page")

    async def many(registry: toolplug.Registry) -> float:
        started = time.perf_counter()
        results = await asyncio.gather(
            *(registry.acall("nap", {"query": f"q{i}"}) for i in range(calls))
        )
        assert all(r.ok for r in results)
        return time.perf_counter() - started

    async def many_in_conversation() -> float:
        with conversation:
            return await many(on)

    times: dict[str, list[float]] = {"guard off": [], "guard on, in a conversation": []}
    for round_ in range(rounds):
        order = list(times) if round_ % 2 == 0 else list(reversed(times))
        for name in order:
            times[name].append(await (many(off) if name == "guard off" else many_in_conversation()))
    off.close()
    on.close()
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    median = asyncio.run(overhead(options.rounds, options.batch))
    floor = median["bare await of the tool"]
    anchor = median["guard off"]
    print(f"{options.rounds} interleaved rounds of {options.batch} awaited calls")
    print()
    print("| way | median us per call | overhead us | added by the guard us |")
    print("|---|---:|---:|---:|")
    for name, value in median.items():
        added = "" if name == "bare await of the tool" else f"{value - anchor:.2f}"
        print(f"| {name} | {value:.2f} | {value - floor:.2f} | {added} |")
    print()
    worst = median["guard on, in a conversation"] - anchor
    plain = median["guard on, no conversation"] - anchor
    print(
        f"added outside a conversation: {plain:.2f} us (goal <= 5: "
        f"{'met' if plain <= 5 else 'MISSED'})"
    )
    print(
        f"added in a conversation (record + check): {worst:.2f} us (goal <= 5: "
        f"{'met' if worst <= 5 else 'MISSED'})"
    )
    print()
    spans = asyncio.run(concurrent(options.calls, max(3, options.rounds // 6)))
    ratio = spans["guard on, in a conversation"] / spans["guard off"]
    print(
        f"{options.calls} concurrent {NAP:g} s calls: guard off {spans['guard off']:.3f} s, "
        f"guard on in a conversation {spans['guard on, in a conversation']:.3f} s: "
        f"{ratio:.3f}x (goal <= 1.10: {'met' if ratio <= 1.10 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
