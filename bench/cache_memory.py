"""Does the result cache stay bounded on a long-running server with varied calls?

Run from the workspace root: ``uv run python bench/cache_memory.py``.

100,000 distinct cacheable calls (a read-only, idempotent tool with ``cache_ttl_seconds``
of an hour, each call with other arguments, each result about 1 kB), awaited one after the
other, in a fresh process per setting; resident memory (RSS) is sampled every 10,000
calls. Two settings side by side:

* the default bound (``[calls] cache_entries = 10000``): memory should stop growing once
  the cache is full;
* ``cache_entries = 1000000``, a bound the run never reaches: what the cache costs when it
  keeps everything (how the old unbounded cache behaved).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
from typing import Any

CALLS = 100_000
STEP = 10_000


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(entries: int | None) -> None:
    import toolplug
    from toolplug import Tool, ToolMetadata, ToolResult, hookimpl
    from toolplug.contract._metadata import Annotations

    class Lookup(Tool):
        metadata = ToolMetadata(
            name="lookup",
            description="Look a number up.",
            category="reference",
            parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
            annotations=Annotations(read_only=True, idempotent=True),
        )

        async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
            n = arguments["n"]
            return ToolResult.success(f"{n}: " + "x" * 1000, {"n": n})

    class Plugin:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(Lookup)

    calls: dict[str, Any] = {} if entries is None else {"cache_entries": entries}
    config = {"calls": calls, "tools": {"lookup": {"cache_ttl_seconds": 3600}}}
    registry = toolplug.load(config, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("b", Plugin())])
    samples = [("start", rss_mib())]

    async def run() -> None:
        for n in range(CALLS):
            result = await registry.acall("lookup", {"n": n})
            assert result.ok
            if (n + 1) % STEP == 0:
                samples.append((str(n + 1), rss_mib()))

    asyncio.run(run())
    print(json.dumps(samples))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", default=None)
    options = parser.parse_args()
    if options.child is not None:
        child(None if options.child == "default" else int(options.child))
        return
    runs = {}
    for label, arg in (("default bound (10,000)", "default"), ("bound never reached", "1000000")):
        out = subprocess.run(
            [sys.executable, __file__, "--child", arg], capture_output=True, text=True, check=True
        ).stdout
        runs[label] = json.loads(out)
    labels = list(runs)
    print("| calls | " + " | ".join(f"RSS MiB, {label}" for label in labels) + " |")
    print("|---:|" + "---:|" * len(labels))
    for i, (point, _) in enumerate(runs[labels[0]]):
        print(f"| {point} | " + " | ".join(f"{runs[name][i][1]:.1f}" for name in labels) + " |")
    default = runs[labels[0]]
    full = dict(default)[str(STEP * 2)]
    end = default[-1][1]
    print()
    print(f"default bound: {full:.1f} MiB at {STEP * 2:,} calls, {end:.1f} MiB at {CALLS:,}")


if __name__ == "__main__":
    main()
