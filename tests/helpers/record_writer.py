"""A process that records calls into ``[record]``: run by tests/state/test_record.py as a
script (``python record_writer.py STORE COUNT NAME MODE``), to be killed or to race another.

MODE ``ack``: make COUNT calls, wait for the record to acknowledge them, print ``acked``
and sleep until killed. MODE ``race``: make COUNT calls, each batch flushed, and exit.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import toolplug
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult


class Note(Tool):
    metadata = ToolMetadata(
        name="note",
        description="Keep a note.",
        category="utility",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success(f"note {arguments.get('n')}")


class Plugin:
    @toolplug.hookimpl
    def register_tools(self, register: Any) -> None:
        register(Note)


async def main(store: str, count: int, name: str, mode: str) -> None:
    registry = toolplug.load(
        {"record": {"enabled": True, "store": store, "replica": name, "flush_seconds": 0.05}},
        env={"TOOLPLUG_PLUGINS": ""},
        plugins=[("note", Plugin())],
    )
    record = registry.record
    assert record is not None
    for n in range(count):
        await registry.acall("note", {"n": n}, context={"client": name})
        if mode == "race" and n % 50 == 49:
            assert await record.aflush()
    assert await record.aflush()
    if mode == "ack":
        print("acked", flush=True)
        time.sleep(3600)  # killed here: nothing after the acknowledgement may be needed
    registry.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]))
