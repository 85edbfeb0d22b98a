"""Tools that talk back, with the official SDK's ``mcp.Client`` against a real ``toolplug
serve`` over stdio and streamable HTTP: progress with its messages, log lines at the level
the session set, questions answered by elicitation (or by ``input_required`` and a retry on
the 2026-07-28 revision), and the client's model asked by sampling.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.helpers.serve import (
    CONFIG,
    TIMEOUT,
    child_env,
    error_of,
    free_port,
    http_server,
    text_of,
)

TOKEN = "talk-token-5f0c2a9e71"

TALK_TOOLS = r'''
import asyncio
import os
import struct
import zlib
from typing import Any

from toolplug import (
    Annotations, ConfigField, Image, SamplingMessage, Tool, ToolContext, ToolMetadata,
    ToolResult, hookimpl,
)

NAME_FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 1},
        "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
    },
    "required": ["name"],
}
NONE = {"type": "object", "properties": {}}


def png() -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(
        b"IDAT", zlib.compress(b"\x00\xff\x00\x00")
    ) + chunk(b"IEND", b"")


def ran(name: str) -> None:
    with open(os.environ["TALK_RUNS"], "a", encoding="utf-8") as runs:
        runs.write(name + "\n")


class Steps(Tool):
    metadata = ToolMetadata(
        name="steps", description="Work in three steps, reporting and logging.",
        category="utility", parameters=NONE,
        config_fields=(ConfigField(name="token", type="string", description="A secret.",
                                   env_var="TALK_TOKEN", secret=True),),
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        # a sync tool: it reports from toolplug's worker thread
        token = context.config["token"]
        for done, word in enumerate(("one", "two", "three"), 1):
            context.report_progress(done, 3, f"step {word}")
        for level in ("debug", "info", "warning", "error"):
            context.log(level, f"{level} line, token {token}", {"token": token, "level": level})
        return ToolResult.success("three steps")


class Paced(Tool):
    metadata = ToolMetadata(
        name="paced", description="Work in six steps of 60 ms, reporting each.",
        category="utility", parameters=NONE,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        for done in range(1, 7):
            await asyncio.sleep(0.06)
            context.report_progress(done, 6)
        return ToolResult.success("six steps")


class AskName(Tool):
    metadata = ToolMetadata(
        name="ask_name", description="Ask the user their name.", category="utility",
        parameters=NONE,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        ran("ask_name")
        answer = await context.ask("What is your name?", NAME_FORM)
        if not answer.accepted:
            return ToolResult.success(f"not answered: {answer.action}")
        return ToolResult.success(f"hello {answer.content['name']} ({answer.content['size']})")


class AskTwice(Tool):
    metadata = ToolMetadata(
        name="ask_twice", description="Ask a name, then a yes or no.", category="utility",
        parameters=NONE,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        ran("ask_twice")
        name = await context.ask("What is your name?", NAME_FORM)
        sure = await context.ask(f"Greet {name.content.get('name')}?", None)
        return ToolResult.success(f"{name.action} {name.content.get('name')}, {sure.action}")


class Summarise(Tool):
    metadata = ToolMetadata(
        name="summarise", description="Ask the client's model about a picture.",
        category="utility", parameters=NONE,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        ran("summarise")
        done = await context.sample(
            [SamplingMessage("user", "Describe this picture."),
             SamplingMessage("user", Image(png(), "image/png"))],
            system="Be short.", max_tokens=50, model_hints=["small-model"],
        )
        return ToolResult.success(f"{done.text} [{done.model}, {done.stop_reason}]")


class Publish(Tool):
    metadata = ToolMetadata(
        name="publish", description="Publish a greeting to the user, by their name.",
        category="publish", parameters=NONE,
        annotations=Annotations(destructive=True, open_world=True),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        ran("publish")
        name = await context.ask("What is your name?", NAME_FORM)
        return ToolResult.success(f"published: hello {name.content.get('name')}")


@hookimpl
def register_tools(register: Any) -> None:
    for tool in (Steps, Paced, AskName, AskTwice, Summarise, Publish):
        register(tool)
'''

NAME_FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 1},
        "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
    },
    "required": ["name"],
}
ADA = types.ElicitResult(action="accept", content={"name": "Ada"})


def runs(tmp_path: Path) -> list[str]:
    """Each run of a tool, by name, in order."""
    path = tmp_path / "runs.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@asynccontextmanager
async def served(tmp_path: Path, transport: str, config: str = CONFIG) -> AsyncIterator[Any]:
    """The server on ``transport``: stdio parameters, or the URL of a running HTTP server."""
    env = {
        **child_env(tmp_path, ("mcp_talk_tools", TALK_TOOLS), config=config),
        "TALK_TOKEN": TOKEN, "TALK_RUNS": str(tmp_path / "runs.txt"),
    }
    if transport == "stdio":
        yield StdioServerParameters(
            command=sys.executable, args=["-m", "toolplug", "serve"], env=env, cwd=str(tmp_path)
        )
        return
    port = free_port()
    with http_server(tmp_path, port, env={**os.environ, **env}):
        yield f"http://127.0.0.1:{port}/mcp"


def session(
    tmp_path: Path, transport: str, work: Callable[[Client], Awaitable[Any]],
    config: str = CONFIG, **client: Any,
) -> Any:
    """``work(client)`` with an ``mcp.Client`` (handshake revision unless ``mode`` says)."""
    async def main() -> Any:
        with anyio.fail_after(TIMEOUT):
            async with served(tmp_path, transport, config) as server, Client(
                server, **{"mode": "legacy", **client}
            ) as c:
                return await work(c)

    return anyio.run(main)


# -- progress and log lines -----------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_progress_comes_with_its_messages_and_log_lines_at_the_sessions_level(
    tmp_path: Path, transport: str
) -> None:
    reported: list[tuple[float, float | None, str | None]] = []
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def work(c: Client) -> list[list[str]]:
        levels: list[list[str]] = []
        first = await c.call_tool("steps", {}, progress_callback=on_progress)
        assert text_of(first) == "three steps"
        levels.append([entry.level for entry in logs])  # no level set: every line
        logs.clear()
        with warnings.catch_warnings():  # logging/setLevel is deprecated at 2026-07-28
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            assert await c.set_logging_level("warning") is not None
        await c.call_tool("steps", {})
        levels.append([entry.level for entry in logs])
        return levels

    before, after = session(tmp_path, transport, work, logging_callback=on_log)
    # Reported at once: the first goes out, the second waits the progress interval
    # ([serve] progress_interval_seconds), the third replaces it, and the result that comes
    # next supersedes what still waits.
    assert reported == [(1, 3, "step one")]
    assert before == ["debug", "info", "warning", "error"]
    assert after == ["warning", "error"]
    assert {entry.logger for entry in logs} == {"steps"}
    assert logs[0].data["message"].startswith("warning line, token ")
    assert logs[0].data["data"]["level"] == "warning"
    assert TOKEN not in json.dumps([entry.model_dump() for entry in logs])  # redacted


def test_with_no_progress_interval_every_report_is_sent(tmp_path: Path) -> None:
    reported: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    async def work(c: Client) -> None:
        await c.call_tool("steps", {}, progress_callback=on_progress)

    config = CONFIG + "\n[serve]\nprogress_interval_seconds = 0\n"
    session(tmp_path, "stdio", work, config=config)
    assert reported == [1, 2, 3]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_calls_at_once_share_their_sessions_pace_and_each_has_its_turn(
    tmp_path: Path, transport: str
) -> None:
    heard: dict[int, list[float]] = {}

    async def work(c: Client) -> float:
        async def one(call: int) -> None:
            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                heard.setdefault(call, []).append(progress)

            result = await c.call_tool("paced", {}, progress_callback=on_progress)
            assert text_of(result) == "six steps"

        started = time.monotonic()
        async with anyio.create_task_group() as group:
            for call in range(4):
                group.start_soon(one, call)
        return time.monotonic() - started

    elapsed = session(tmp_path, transport, work)
    sent = sum(len(steps) for steps in heard.values())
    # 24 reports; the session sends at most one per 50 ms (the default [serve]
    # progress_interval_seconds) however many calls are in flight
    assert 0 < sent <= elapsed / 0.05 + 1, (sent, elapsed, heard)
    # first come, first served: each of the four calls is heard before it ends
    assert sorted(heard) == [0, 1, 2, 3], heard
    assert all(steps == sorted(steps) for steps in heard.values()), heard


def test_a_modern_client_hears_log_lines_only_from_the_level_its_call_opted_in_to(
    tmp_path: Path,
) -> None:
    logs: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.level)

    async def work(c: Client) -> None:
        await c.call_tool("steps", {})

    session(tmp_path, "http", work, mode="2026-07-28", logging_callback=on_log, log_level="info")
    assert logs == ["info", "warning", "error"]


# -- questions --------------------------------------------------------------------


def asked(
    tmp_path: Path, transport: str, answer: Any, tool: str = "ask_name", config: str = CONFIG,
    **client: Any,
) -> tuple[list[types.ElicitRequestFormParams], types.CallToolResult]:
    """``tool`` called by a client whose user answers ``answer`` (a result, or a function of
    the question): the questions shown, and the call's result."""
    questions: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        questions.append(params)
        given: types.ElicitResult = await answer(params) if callable(answer) else answer
        return given

    async def work(c: Client) -> types.CallToolResult:
        return await c.call_tool(tool, {})

    result = session(tmp_path, transport, work, config, elicitation_callback=elicit, **client)
    return questions, result


@pytest.mark.parametrize(
    ("transport", "answer", "said"),
    [
        ("stdio", ADA, "hello Ada (small)"),  # the default filled in
        ("http", ADA, "hello Ada (small)"),
        ("http", types.ElicitResult(action="accept", content={"name": "Bo", "size": "large"}),
         "hello Bo (large)"),
        ("stdio", types.ElicitResult(action="decline"), "not answered: decline"),
        ("http", types.ElicitResult(action="cancel"), "not answered: cancel"),
    ],
)
def test_a_question_goes_to_the_user_by_elicitation(
    tmp_path: Path, transport: str, answer: types.ElicitResult, said: str
) -> None:
    [question], result = asked(tmp_path, transport, answer)
    assert question.message == "What is your name?"
    assert question.requested_schema == NAME_FORM
    assert text_of(result) == said


def test_an_answer_that_breaks_the_form_is_a_structured_error(tmp_path: Path) -> None:
    wrong = types.ElicitResult(action="accept", content={"name": "", "size": "huge"})
    _, result = asked(tmp_path, "stdio", wrong)
    error = error_of(result)
    assert error["error_type"] == "ValidationError"
    assert error["details"]["reason"] == "invalid_answer"
    assert "does not fit the question's form" in error["error_message"]


def test_a_client_without_elicitation_gets_the_tools_unavailable_error(tmp_path: Path) -> None:
    async def work(c: Client) -> types.CallToolResult:
        return await c.call_tool("ask_name", {})

    error = error_of(session(tmp_path, "http", work))
    assert error["error_type"] == "UnavailableError"
    assert error["details"]["reason"] == "unavailable"
    assert "declared no form elicitation" in error["error_message"]


def test_a_client_that_never_answers_times_out_and_its_request_is_cancelled(
    tmp_path: Path,
) -> None:
    config = CONFIG + "\n[calls]\nask_timeout_seconds = 1\n"
    cancelled: list[bool] = []

    async def never(params: Any) -> types.ElicitResult:
        try:
            await anyio.sleep(TIMEOUT)
        except BaseException:  # the server gave up on it: notifications/cancelled
            cancelled.append(True)
            raise
        raise AssertionError("the server waited for ever")

    began = time.monotonic()
    [_], result = asked(tmp_path, "stdio", never, config=config)
    assert time.monotonic() - began < TIMEOUT / 2
    error = error_of(result)
    assert error["error_type"] == "TimeoutError"
    assert error["details"]["reason"] == "timeout"
    assert "ask_timeout_seconds" in error["error_message"]
    assert cancelled == [True]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_modern_client_answers_each_question_on_a_retry_and_the_tool_runs_again(
    tmp_path: Path, transport: str
) -> None:
    async def answer(params: Any) -> types.ElicitResult:
        if params.message == "What is your name?":
            return ADA
        return types.ElicitResult(action="accept", content={})

    questions, result = asked(tmp_path, transport, answer, "ask_twice", mode="2026-07-28")
    assert [q.message for q in questions] == ["What is your name?", "Greet Ada?"]
    assert text_of(result) == "accept Ada, accept"
    assert runs(tmp_path) == ["ask_twice"] * 3  # from its start on each retry


def test_an_approval_and_a_question_are_both_answered_on_a_modern_clients_retries(
    tmp_path: Path,
) -> None:
    async def answer(params: Any) -> types.ElicitResult:
        if params.message == "What is your name?":
            return ADA
        return types.ElicitResult(action="accept", content={"approve": True})

    questions, result = asked(tmp_path, "http", answer, "publish", mode="2026-07-28")
    approval, name = (q.message for q in questions)
    assert approval.startswith("publish (Publish a greeting")
    assert name == "What is your name?"
    assert text_of(result) == "published: hello Ada"
    # approved on the first retry, it ran and asked; the second carried both answers
    assert runs(tmp_path) == ["publish", "publish"]


# -- sampling ------------------------------------------------------------------------


def sampled(
    tmp_path: Path, transport: str, **client: Any
) -> tuple[list[types.CreateMessageRequestParams], types.CallToolResult]:
    requests: list[types.CreateMessageRequestParams] = []

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        requests.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="A red dot."),
            model="test-model", stop_reason="endTurn",
        )

    async def work(c: Client) -> types.CallToolResult:
        return await c.call_tool("summarise", {})

    return requests, session(tmp_path, transport, work, sampling_callback=sample, **client)


@pytest.mark.parametrize(("transport", "mode"), [("http", "legacy"), ("stdio", "2026-07-28")])
def test_the_clients_model_answers_a_sampling_request(
    tmp_path: Path, transport: str, mode: str
) -> None:
    [request], result = sampled(tmp_path, transport, mode=mode)
    assert text_of(result) == "A red dot. [test-model, endTurn]"
    text, picture = request.messages
    assert text.content == types.TextContent(type="text", text="Describe this picture.")
    assert isinstance(picture.content, types.ImageContent)
    assert base64.b64decode(picture.content.data).startswith(b"\x89PNG\r\n\x1a\n")
    assert request.system_prompt == "Be short."
    assert request.max_tokens == 50
    assert request.model_preferences is not None
    assert [h.name for h in request.model_preferences.hints or []] == ["small-model"]


def test_a_client_without_sampling_refuses_and_the_tool_says_so(tmp_path: Path) -> None:
    async def work(c: Client) -> types.CallToolResult:
        return await c.call_tool("summarise", {})

    error = error_of(session(tmp_path, "stdio", work))
    assert error["error_type"] == "UnavailableError"
    assert "declared no form elicitation and no sampling" in error["error_message"]
