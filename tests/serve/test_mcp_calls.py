"""``toolplug serve`` under load and abuse: stray output, hung tools, cancellation, progress.

Same set-up as ``test_mcp.py`` (tests/helpers/serve.py: the real ``python -m toolplug serve``
in a subprocess, the official SDK's client), with one more tool distribution whose tools
misbehave on purpose.
The assertions are about order and content, never about how long something took.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.serve import (
    CONFIG,
    TIMEOUT,
    child_env,
    free_port,
    http_server,
    stdio_params,
    text_of,
)

CALL_TOOLS = r'''
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

MARKS = Path(os.environ["MCP_TEST_MARKS"])


class Noisy(Tool):
    metadata = ToolMetadata(
        name="noisy", description="Write to standard output three ways.", category="utility"
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        print("hello from a careless plugin")  # and no flush
        os.write(1, b"raw bytes written to descriptor 1\n")
        subprocess.run([sys.executable, "-c", "print('a child process talking')"], check=True)
        return ToolResult.success("said it three ways")


class Hang(Tool):
    metadata = ToolMetadata(name="hang", description="Wait until cancelled.", category="utility")

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        (MARKS / "hang-started").touch()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            (MARKS / "hang-cancelled").touch()
            raise
        return ToolResult.success("woke up")


class Sleepy(Hang):
    metadata = ToolMetadata(
        name="sleepy", description="Wait longer than its time limit.", category="utility"
    )


class Stuck(Tool):
    metadata = ToolMetadata(
        name="stuck", description="Hold a worker thread.", category="utility"
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        (MARKS / "stuck-started").touch()
        time.sleep(20)
        return ToolResult.success("unstuck")


class Steps(Tool):
    metadata = ToolMetadata(
        name="steps", description="Report progress over three steps.", category="utility"
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        progress = context.host.get("progress")
        for done in range(4):
            if progress is not None:
                progress(done, 3)
            await asyncio.sleep(0.08)  # past [serve] progress_interval_seconds: each is sent
        return ToolResult.success("three steps" if progress else "three steps, unreported")


ROW = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "text": {"type": "string"}},
    "required": ["n", "text"],
}


class Rows(Tool):
    metadata = ToolMetadata(
        name="rows", description="Return 5,000 rows, as text and as data.", category="utility",
        returns={"type": "object", "properties": {"rows": {"type": "array", "items": ROW}},
                 "required": ["rows"]},
        max_output_chars=5_000,
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        rows = [{"n": n, "text": "row " * 10} for n in range(5_000)]
        text = "\n".join(f"{row['n']}: {row['text']}" for row in rows)
        return ToolResult.success(text, {"rows": rows}, warnings=["w" * 100_000])


class Tally(Tool):
    metadata = ToolMetadata(
        name="tally", description="Count 50,000 words.", category="utility",
        returns={"type": "object", "required": ["counts"], "properties": {
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}}}},
        max_output_chars=5_000,
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success("50,000 words", {"counts": {f"w{n}": n for n in range(50_000)}})


class AllRows(Rows):
    metadata = ToolMetadata(
        name="all_rows", description="Return 5,000 rows, all of them.", category="utility",
        returns={"type": "object", "required": ["rows"], "properties": {
            "rows": {"type": "array", "items": ROW, "minItems": 5_000}}},
        max_output_chars=5_000,
    )


@hookimpl
def register_tools(register: Any) -> None:
    for tool in (Noisy, Hang, Sleepy, Stuck, Steps, Rows, Tally, AllRows):
        register(tool)
'''

CALL_CONFIG = CONFIG + """
[tools.sleepy]
timeout_seconds = 0.5
"""


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the server's tools leave marks; the server inherits the variable."""
    folder = tmp_path / "marks"
    folder.mkdir()
    monkeypatch.setenv("MCP_TEST_MARKS", str(folder))
    return folder


def params(tmp_path: Path) -> Any:
    child_env(tmp_path, ("mcp_call_tools", CALL_TOOLS), CALL_CONFIG)
    found = stdio_params(tmp_path)
    found.env = {**(found.env or {}), "MCP_TEST_MARKS": os.environ["MCP_TEST_MARKS"]}
    return found


async def wait_for(path: Path) -> None:
    """Until the server leaves this mark (bounded by the session's time limit)."""
    while not path.exists():
        await anyio.sleep(0.02)


def test_nothing_a_tool_prints_reaches_the_protocol_stream(tmp_path: Path, marks: Path) -> None:
    errors = tmp_path / "stderr.txt"

    async def session() -> tuple[types.CallToolResult, types.CallToolResult]:
        with anyio.fail_after(TIMEOUT):
            async with (
                stdio_client(params(tmp_path), errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                noisy = await client.call_tool("noisy", {})
                after = await client.call_tool("add", {"a": 1, "b": 2})
                return noisy, after

    with errors.open("w", encoding="utf-8") as errlog:
        noisy, after = anyio.run(session)
    assert not noisy.is_error, text_of(noisy)
    assert text_of(noisy) == "said it three ways"
    assert text_of(after) == "1 + 2 = 3"
    # All three writes went to the server's standard error instead.
    log = errors.read_text(encoding="utf-8")
    for line in (
        "hello from a careless plugin",
        "raw bytes written to descriptor 1",
        "a child process talking",
    ):
        assert line in log


def check_busy_server(client_of: Any, marks: Path) -> None:
    """Hung and blocked calls never hold up the others; a cancelled call stops its tool."""
    order: list[str] = []

    async def session() -> dict[str, types.CallToolResult]:
        results: dict[str, types.CallToolResult] = {}
        with anyio.fail_after(TIMEOUT):
            async with client_of() as (read, write), ClientSession(read, write) as client:
                await client.initialize()

                async def call(label: str, name: str, arguments: dict[str, Any]) -> None:
                    results[label] = await client.call_tool(name, arguments)
                    order.append(label)

                async with anyio.create_task_group() as group:
                    hung = anyio.CancelScope()

                    async def hang() -> None:
                        with hung:
                            await call("hang", "hang", {})

                    group.start_soon(hang)
                    group.start_soon(call, "stuck", "stuck", {})
                    await wait_for(marks / "hang-started")
                    await wait_for(marks / "stuck-started")
                    await call("add", "add", {"a": 2, "b": 2})
                    await call("sleepy", "sleepy", {})
                    # Cancelling the request sends notifications/cancelled to the server.
                    hung.cancel()
                    await wait_for(marks / "hang-cancelled")
                    await call("after-cancel", "add", {"a": 3, "b": 3})
                    group.cancel_scope.cancel()  # stop waiting for the stuck call
        return results

    results = anyio.run(session)
    assert order == ["add", "sleepy", "after-cancel"], {k: text_of(v) for k, v in results.items()}
    assert text_of(results["add"]) == "2 + 2 = 4"
    assert text_of(results["after-cancel"]) == "3 + 3 = 6"
    assert results["sleepy"].is_error
    assert "TimeoutError" in text_of(results["sleepy"])
    assert (marks / "hang-cancelled").exists()


def test_stdio_hung_tools_do_not_hold_up_other_calls(tmp_path: Path, marks: Path) -> None:
    errors = tmp_path / "stderr.txt"
    with errors.open("w", encoding="utf-8") as errlog:
        check_busy_server(lambda: stdio_client(params(tmp_path), errlog=errlog), marks)


def test_http_hung_tools_do_not_hold_up_other_calls(tmp_path: Path, marks: Path) -> None:
    params(tmp_path)  # installs the tools for the server below
    port = free_port()
    with http_server(tmp_path, port):
        url = f"http://127.0.0.1:{port}/mcp"
        check_busy_server(lambda: streamable_http_client(url), marks)


def check_progress(client_of: Any) -> None:
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async def session() -> tuple[types.CallToolResult, types.CallToolResult]:
        with anyio.fail_after(TIMEOUT):
            async with client_of() as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                asked = await client.call_tool("steps", {}, progress_callback=on_progress)
                unasked = await client.call_tool("steps", {})
                return asked, unasked

    asked, unasked = anyio.run(session)
    assert text_of(asked) == "three steps"
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    # Without a progress token the tool is told nobody is listening.
    assert text_of(unasked) == "three steps, unreported"


def test_stdio_progress_reaches_a_client_that_asks_for_it(tmp_path: Path, marks: Path) -> None:
    check_progress(lambda: stdio_client(params(tmp_path), errlog=sys.stderr))


def test_http_progress_reaches_a_client_that_asks_for_it(tmp_path: Path, marks: Path) -> None:
    params(tmp_path)
    port = free_port()
    with http_server(tmp_path, port):
        check_progress(lambda: streamable_http_client(f"http://127.0.0.1:{port}/mcp"))


def test_a_reply_over_the_budget_is_cut_to_fit_and_stays_valid(
    tmp_path: Path, marks: Path
) -> None:
    """The whole reply (text and structuredContent) fits the budget; the official client
    checks the cut structuredContent against the tool's outputSchema on every success."""
    errors = tmp_path / "stderr.txt"

    async def session() -> dict[str, types.CallToolResult]:
        with anyio.fail_after(TIMEOUT):
            async with (
                stdio_client(params(tmp_path), errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                return {name: await client.call_tool(name, {})
                        for name in ("rows", "tally", "all_rows")}

    with errors.open("w", encoding="utf-8") as errlog:
        results = anyio.run(session)
    for name, result in results.items():
        size = len(text_of(result)) + len(json.dumps(result.structured_content or ""))
        assert size <= 5_000, name

    rows, tally = results["rows"], results["tally"]
    assert not rows.is_error, text_of(rows)
    assert rows.structured_content is not None
    assert rows.structured_content["rows"][0] == {"n": 0, "text": "row " * 10}
    assert text_of(rows).startswith("0: row row")
    assert "[output cut by toolplug: " in text_of(rows)
    assert "the structured data was cut to fit 5,000 characters" in text_of(rows)
    assert "toolplug left out the end of 1 long warning" in text_of(rows)
    # Too wide to fit, the map used to be left out and the call reported as the plugin's
    # bug ("None is not of type 'object'"); now its tail goes and the rest still matches.
    assert not tally.is_error, text_of(tally)
    assert tally.structured_content is not None
    assert 0 < len(tally.structured_content["counts"]) < 50_000
    assert "trailing object members were left out" in text_of(tally)

    # Cut to fit, the rows break the schema (minItems): a success would need data that
    # matches, so the cut reply comes as an error result, not blamed on the tool.
    cut = results["all_rows"]
    assert cut.is_error
    assert cut.structured_content is None
    assert text_of(cut).startswith("0: row row")
    assert "the call itself succeeded" in text_of(cut)
    assert "does not match its declared returns schema" not in text_of(cut)
