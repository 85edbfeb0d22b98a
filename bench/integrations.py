"""What does going through toolplug add to a tool call in pydantic-ai and the OpenAI Agents SDK?

Run from the workspace root: ``uv run python bench/integrations.py``.

One process, one async function with web_search-shaped arguments that returns at once,
offered to each framework twice: as the framework's own native function tool (pydantic-ai
``Agent(tools=[func])``, the SDK's ``function_tool(func)``), and as a toolplug tool through
the integration (``ToolplugToolset``, ``function_tools``). Two levels, interleaved batch by
batch so machine noise hits every way alike:

* **the call layer**: what each framework does per call once the model has asked for it.
  pydantic-ai: validate the arguments with the tool's validator, then the toolset's
  ``call_tool``. The SDK: the tool's ``on_invoke_tool`` with the JSON arguments (which
  parses and validates them). For toolplug, validation is inside ``registry.acall``.
* **a whole run**: one agent run in which the framework's test model asks for 20 calls in
  one turn and then answers; the time per call is the run's time over 20.

Reported: medians per call, the integration's overhead over the native tool, the ratio,
and the goal: at most 1.2x or +20 us per call, whichever is larger. The call layer also
shows ``await registry.acall`` alone, as the integrations call it: toolplug's engine
(validation, policy, the host's context), the part of the overhead that is not the
integration's own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from agents import Agent as SdkAgent
from agents import RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext as SdkToolContext
from pydantic_ai import Agent, ModelResponse, RunContext, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.usage import RunUsage

import toolplug
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult, hookimpl
from toolplug.integrations.openai_agents import function_tools
from toolplug.integrations.pydantic_ai import ToolplugToolset

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
STRICT_ARGUMENTS: dict[str, Any] = {**ARGUMENTS, "recency": None}
CALLS_PER_RUN = 20
NO_TRACES = RunConfig(tracing_disabled=True)


async def search(
    query: str,
    max_results: int = 5,
    recency: Literal["day", "week", "month", "year", "any"] = "any",
) -> str:
    """Search.

    Args:
        query: What to search for.
        max_results: How many results.
        recency: How recent.
    """
    return query


class SearchTool(Tool):
    metadata = ToolMetadata(
        name="search", description="Search.", category="research", parameters=SCHEMA
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output=await search(**arguments))


class Bench:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(SearchTool)


# -- the call layer ----------------------------------------------------------------------


async def pydantic_ai_layer(toolset: AbstractToolset[None]) -> Callable[[], Awaitable[Any]]:
    """One call as pydantic-ai's tool manager makes it: validate, then ``call_tool``."""
    ctx = RunContext[None](deps=None, model=TestModel(), usage=RunUsage(), tool_call_id="c1")
    tool = (await toolset.get_tools(ctx))["search"]

    async def once() -> Any:
        validated = tool.args_validator.validate_python(ARGUMENTS)
        return await toolset.call_tool("search", validated, ctx, tool)

    return once


def sdk_layer(tool: Any, arguments: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
    """One call as the SDK makes it: ``on_invoke_tool`` with the model's JSON text."""
    text = json.dumps(arguments)
    ctx = SdkToolContext(context=None, tool_name="search", tool_call_id="c1", tool_arguments=text)
    return lambda: tool.on_invoke_tool(ctx, text)


# -- whole runs --------------------------------------------------------------------------


def calls_then_answer(messages: list[Any], info: AgentInfo) -> ModelResponse:
    """pydantic-ai's FunctionModel: CALLS_PER_RUN calls in one turn, then an answer."""
    if len(messages) > 1:
        return ModelResponse(parts=[TextPart("done")])
    calls = [ToolCallPart("search", ARGUMENTS, tool_call_id=f"c{i}") for i in range(CALLS_PER_RUN)]
    return ModelResponse(parts=list(calls))


def pydantic_ai_run(agent: Agent[None, str]) -> Callable[[], Awaitable[Any]]:
    async def once() -> Any:
        return (await agent.run("search")).output

    return once


def sdk_run(tools: list[Any], arguments: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
    turn = [function_call("search", arguments, call_id=f"c{i}") for i in range(CALLS_PER_RUN)]

    async def once() -> Any:
        model = ScriptedModel([turn, [assistant_message("done")]])
        agent = SdkAgent(name="bench", model=model, tools=tools)
        return (await Runner.run(agent, "search", run_config=NO_TRACES)).final_output

    return once


def per_await(loop: asyncio.AbstractEventLoop, func: Callable[[], Awaitable[Any]], n: int) -> float:
    async def run() -> float:
        started = time.perf_counter()
        for _ in range(n):
            await func()
        return (time.perf_counter() - started) / n

    return loop.run_until_complete(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--runs", type=int, default=10, help="whole runs per batch")
    options = parser.parse_args()

    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", Bench())])
    loop = asyncio.new_event_loop()
    native_set = FunctionToolset([search])
    ours_set = ToolplugToolset(registry)
    [sdk_ours] = function_tools(registry)
    sdk_native = function_tool(search)
    layer = {
        "pydantic-ai: native function tool": loop.run_until_complete(pydantic_ai_layer(native_set)),
        "pydantic-ai: ToolplugToolset": loop.run_until_complete(pydantic_ai_layer(ours_set)),
        "Agents SDK: native function_tool": sdk_layer(sdk_native, ARGUMENTS),
        "Agents SDK: toolplug function_tools": sdk_layer(sdk_ours, STRICT_ARGUMENTS),
        # the engine's own share of both: the call as the integrations make it
        "toolplug: await registry.acall": lambda: registry.acall(
            "search", ARGUMENTS, context={"call_id": "c1"}
        ),
    }
    runs = {
        "pydantic-ai: native function tool": pydantic_ai_run(
            Agent(FunctionModel(calls_then_answer), tools=[search])
        ),
        "pydantic-ai: ToolplugToolset": pydantic_ai_run(
            Agent(FunctionModel(calls_then_answer), toolsets=[ours_set])
        ),
        "Agents SDK: native function_tool": sdk_run([sdk_native], ARGUMENTS),
        "Agents SDK: toolplug function_tools": sdk_run([sdk_ours], STRICT_ARGUMENTS),
    }
    for func in [*layer.values(), *runs.values()]:  # warm up, and check each answers
        assert loop.run_until_complete(func()) is not None
        per_await(loop, func, 5)

    layer_samples: dict[str, list[float]] = {name: [] for name in layer}
    run_samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(options.rounds):
        for name, func in layer.items():
            layer_samples[name].append(per_await(loop, func, options.batch))
        for name, func in runs.items():
            run_samples[name].append(per_await(loop, func, options.runs) / CALLS_PER_RUN)

    print(f"{options.rounds} interleaved rounds; {CALLS_PER_RUN} calls per whole run")
    for title, samples in (("the call layer", layer_samples), ("a whole run", run_samples)):
        median = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
        print()
        print(f"{title}:")
        print()
        print("| way | median us per call | over native, us | x native | goal |")
        print("|---|---:|---:|---:|---|")
        for name, value in median.items():
            framework = name.split(":")[0]
            native = next(v for n, v in median.items() if n.startswith(framework + ":"))
            if framework == "toolplug":
                print(f"| {name} (the engine alone) | {value:.1f} | | | |")
                continue
            if value == native:
                print(f"| {name} | {value:.1f} | | 1.00 | |")
                continue
            allowed = max(native * 1.2, native + 20)
            verdict = "met" if value <= allowed else "MISSED"
            print(
                f"| {name} | {value:.1f} | {value - native:.1f} | {value / native:.2f} | "
                f"<= {allowed:.1f} us: {verdict} |"
            )
    registry.close()
    loop.close()


if __name__ == "__main__":
    main()
