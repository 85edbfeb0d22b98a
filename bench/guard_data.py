"""How long does the flow guard hold the event loop for an untrusted result with a lot of
data (many short values, little text)? The longest stall while it is recorded, with the data
read on the loop, in a worker thread whole, and in a worker thread a slice at a time, side
by side in one run.

Run from the workspace root: ``uv run python bench/guard_data.py``.

One process, one registry, inside a conversation: ``rows`` returns ``--rows`` records of
three values each (an id, a short name, a flag) as its data and one line of output: long by
its values (``off_loop`` counts each as ``_ITEM_CHARS`` characters), short in text. A probe
task on the same loop ticks (``await asyncio.sleep(0)``) all the while; its longest gap
between two ticks is the longest stall another task saw. Three ways, interleaved round by
round:

* ``on the loop``: the thresholds (the guard's ``OFF_LOOP_CHARS``, the budget's
  ``_HEAVY_VALUES``) set out of reach, so the result is recorded, measured and cut inline
  (the anchor);
* ``worker thread, whole``: recorded in the guard's worker thread, its data read in one
  go (``_SLICE_VALUES`` out of reach), and with ``--with-budget`` the budget's JSON written
  and read back whole (``in_slices`` doing nothing): the thread keeps the GIL until the
  interpreter's switch interval takes it, or through a whole C encode;
* ``worker thread, sliced``: what the engine does: the GIL handed over every
  ``_SLICE_VALUES`` values read, and the budget's JSON a batch of items at a time.

With ``--with-secret`` a secret is configured, as a tool's API key is, so every string of
the result is searched for it (redaction: inline, or in the worker for large data). The
output budget's work is left out unless ``--with-budget``: the engine's ``fits`` and
``bounded`` are replaced by ones that hand the result back as it is. Its measuring and
cutting of these records (in the same worker thread, for data this long) takes far longer
than the guard's reading and would hide it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from stall_probe import Probe

import toolplug
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult, Trust, hookimpl
from toolplug.engine import _engine
from toolplug.trust import _guard
from toolplug.utilities import _limits

DATA: dict[str, Any] = {"rows": []}
"""The data ``rows`` returns, made before the rounds (not on the loop while measured)."""


class Rows(Tool):
    metadata = ToolMetadata(
        name="rows",
        description="Many records.",
        category="research",
        trust=Trust(output="untrusted"),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output=f"{len(DATA['rows'])} rows", data=DATA)


class Bench:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(Rows)


WAYS = ("on the loop", "worker thread, whole", "worker thread, sliced")


@contextlib.contextmanager
def way(name: str) -> Iterator[None]:
    """The guard's module set for one way (its constants read at call time)."""
    values, engine, limits = vars(_guard), vars(_engine), vars(_limits)
    saved = values["OFF_LOOP_CHARS"], values["_SLICE_VALUES"], engine["in_slices"]
    heavy = limits["_HEAVY_VALUES"]
    if name == "on the loop":
        values["OFF_LOOP_CHARS"] = sys.maxsize
        limits["_HEAVY_VALUES"] = sys.maxsize
    elif name == "worker thread, whole":
        values["_SLICE_VALUES"] = sys.maxsize
        engine["in_slices"] = _whole
    try:
        yield
    finally:
        values["OFF_LOOP_CHARS"], values["_SLICE_VALUES"], engine["in_slices"] = saved
        limits["_HEAVY_VALUES"] = heavy


def _whole(work: Callable[..., Any], *arguments: Any) -> Any:
    """``in_slices`` doing nothing: the budget's JSON written and read whole."""
    return work(*arguments)


async def one_round(registry: toolplug.Registry) -> tuple[float, float]:
    """The longest gap between the probe's ticks while the rows are read, and the call's
    time; in seconds."""
    with registry.conversation("List the rows for me"):
        async with Probe() as probe:
            started = time.perf_counter()
            result = await registry.acall("rows")
            took = time.perf_counter() - started
            longest = await probe.take()
    assert result.ok, result.error
    return longest, took


async def measure(rows: int, rounds: int, secret: bool) -> dict[str, dict[str, float]]:
    """Per way, the median stall and call time over ``rounds``, in ms."""
    DATA["rows"] = [{"id": n, "name": f"row {n}", "ok": n % 2 == 0} for n in range(rows)]
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", Bench())])
    if secret:  # as a tool's configured API key does: every result is searched for it
        registry.redactor.add("sk-bench-0123456789")
    samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in WAYS}
    for name in WAYS:  # warm up: the pool's threads started, the code paths run once
        with way(name):
            await one_round(registry)
    for round_ in range(rounds):
        for name in WAYS if round_ % 2 == 0 else tuple(reversed(WAYS)):
            with way(name):
                stall, took = await one_round(registry)
            samples[name][0].append(stall * 1e3)
            samples[name][1].append(took * 1e3)
    registry.close()
    return {
        name: {"stall": statistics.median(stalls), "call": statistics.median(calls)}
        for name, (stalls, calls) in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--with-budget", action="store_true", help="keep the output budget")
    parser.add_argument("--with-secret", action="store_true", help="configure a secret")
    options = parser.parse_args()
    if not options.with_budget:
        engine = vars(_engine)  # the names the engine calls, replaced for this run
        engine["fits"] = lambda result, budget: True
        engine["bounded"] = lambda result, *args, **kwargs: result
    medians = asyncio.run(measure(options.rows, options.rounds, options.with_secret))
    budget = "with" if options.with_budget else "without"
    secret = "a secret" if options.with_secret else "no secret"
    print(
        f"{options.rows} records ({options.rows * 3} values), {options.rounds} interleaved "
        f"rounds, {budget} the output budget, {secret} configured; switch interval "
        f"{sys.getswitchinterval() * 1e3:.0f} ms"
    )
    print()
    print("| way | longest stall ms | the call ms |")
    print("|---|---:|---:|")
    for name, figures in medians.items():
        print(f"| {name} | {figures['stall']:.2f} | {figures['call']:.2f} |")


if __name__ == "__main__":
    main()
