"""A mounted server that talks back: its questions, sampling requests, progress and log
lines reach the calling host's ``Channel``, and what the host answers reaches the server.

The server is the SDK's own (``mcp.server.mcpserver``), in a child process over stdio and
over streamable HTTP on 127.0.0.1; its tools ask through the 2026-07-28 way (an
``InputRequiredResult`` the client answers and retries) and return what they were told.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.mcp_servers import http_server, stdio_table
from toolplug import Answer, Channel, Question, Sampled, SamplingRequest

SERVER = r'''
import argparse
import asyncio
import json
import warnings

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel
from mcp_types import (
    CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestFormParams,
    ElicitRequestURLParams,
    InputRequiredResult, ModelHint, ModelPreferences, SamplingMessage, TextContent,
)

warnings.simplefilter("ignore")  # the SDK marks logging and sampling deprecated (SEP-2577)
parser = argparse.ArgumentParser()
parser.add_argument("--http", type=int)
parser.add_argument("--legacy", action="store_true")
options = parser.parse_args()
app = MCPServer("talker")

if options.legacy:  # a handshake-era server: it asks by requests of its own, mid-call
    from mcp.shared.exceptions import MCPError
    from mcp_types import RequestParams

    async def discover(ctx, params):
        raise MCPError(code=-32601, message="Method not found")

    app._lowlevel_server.add_request_handler("server/discover", RequestParams, discover)


FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "seats": {"type": "integer", "minimum": 1, "default": 2},
    },
    "required": ["name"],
}
NESTED = {
    "type": "object",
    "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


def told(answer):
    return json.dumps(answer.model_dump(mode="json", by_alias=True, exclude_none=True))


@app.tool()
async def book(city: str, ctx: Context) -> str | InputRequiredResult:
    """Books a table: asks who for, reporting and logging as it goes."""
    if not ctx.input_responses:
        await ctx.report_progress(1, 2, f"looking in {city}")
        await ctx.log("info", {"city": city}, logger_name="booker")
        form = ElicitRequestFormParams(message=f"A table in {city}: for whom?",
                                       requested_schema=FORM)
        return InputRequiredResult(input_requests={"who": ElicitRequest(params=form)})
    return told(ctx.input_responses["who"])


@app.tool()
async def muse(topic: str, ctx: Context) -> str | InputRequiredResult:
    """Asks the client's model for a line about a topic."""
    if not ctx.input_responses:
        ask = CreateMessageRequestParams(
            messages=[SamplingMessage(
                role="user", content=TextContent(type="text", text=f"a line on {topic}"))],
            max_tokens=40, system_prompt="Be brief.", stop_sequences=["\n"],
            model_preferences=ModelPreferences(hints=[ModelHint(name="small")]),
        )
        return InputRequiredResult(input_requests={"line": CreateMessageRequest(params=ask)})
    return told(ctx.input_responses["line"])


@app.tool()
async def odd(ctx: Context) -> str | InputRequiredResult:
    """Asks with a nested form, which MCP elicitation does not allow."""
    if not ctx.input_responses:
        form = ElicitRequestFormParams(message="Where?", requested_schema=NESTED)
        return InputRequiredResult(input_requests={"where": ElicitRequest(params=form)})
    return told(ctx.input_responses["where"])


@app.tool()
async def visit(ctx: Context) -> str | InputRequiredResult:
    """Asks the user to visit a page (URL-mode elicitation)."""
    if not ctx.input_responses:
        page = ElicitRequestURLParams(
            message="Sign in", url="https://127.0.0.1/sign-in", elicitation_id="e1"
        )
        return InputRequiredResult(input_requests={"page": ElicitRequest(params=page)})
    return told(ctx.input_responses["page"])


@app.tool()
async def chatty(ctx: Context) -> str:
    """Logs at every level it knows."""
    for level in ("debug", "warning", "error"):
        await ctx.log(level, f"a {level} line", logger_name="chatter")
    return "done"


class Party(BaseModel):
    name: str
    seats: int = 2


@app.tool()
async def greet(wait: float, ctx: Context) -> str:
    """Asks a name the older way (a request of its own during the call)."""
    await ctx.report_progress(1, 2, "greeting")
    await ctx.log("notice", "about to ask", logger_name="greeter")
    await asyncio.sleep(wait)
    asked = await ctx.elicit("Whom do I greet?", Party)
    data = asked.data.model_dump() if asked.action == "accept" else None
    return json.dumps({"action": asked.action, "data": data, "protocol": ctx.protocol_version})


@app.tool()
async def later(ctx: Context) -> str:
    """Answers at once, and logs a line once the call is over."""
    session = ctx.session

    async def after() -> None:
        await asyncio.sleep(0.3)
        await session.send_log_message(level="warning", data="after the call", logger="late")

    keep.append(asyncio.get_running_loop().create_task(after()))
    return "soon"


keep = []


@app.tool()
async def caps(ctx: Context) -> str:
    """What the client declared it can do."""
    declared = ctx.client_capabilities
    return json.dumps(declared.model_dump(mode="json", by_alias=True, exclude_none=True))


async def handshake_only():
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    low = app._lowlevel_server
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        await serve_loop(low, read, write, lifespan_state=state,
                         init_options=low.create_initialization_options())


if options.http is None and options.legacy:
    asyncio.run(handshake_only())
elif options.http is None:
    app.run()
else:
    import uvicorn

    uvicorn.run(app.streamable_http_app(), host="127.0.0.1", port=options.http, log_level="warning")
'''


class Scripted(Channel):
    """A host that answers from a script and records all it was told."""

    can_ask = True
    can_sample = True

    def __init__(self, answer: Answer | None = None, completion: str = "roses are red") -> None:
        self.answer = answer or Answer("accept", {"name": "Ann"})
        self.completion = completion
        self.questions: list[Question] = []
        self.requests: list[SamplingRequest] = []
        self.progressed: list[tuple[float, float | None, str | None]] = []
        self.logged: list[tuple[str, str, Mapping[str, Any] | None]] = []

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        self.progressed.append((done, total, message))

    def log(self, level: Any, message: str, data: Mapping[str, Any] | None) -> None:
        self.logged.append((level, message, data))

    async def ask(self, question: Question) -> Answer:
        self.questions.append(question)
        return self.answer

    async def sample(self, request: SamplingRequest) -> Sampled:
        self.requests.append(request)
        return Sampled(self.completion, model="test-model", stop_reason="endTurn")


RUN = 'approval = "never"'  # these calls are about talking back, not about approvals


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "talker.py"
    path.write_text(SERVER, encoding="utf-8")
    return path


@pytest.fixture(params=["stdio", "http"])
def table(request: pytest.FixtureRequest, script: Path) -> Iterator[Any]:
    """A function of the extra settings giving the ``[mcp_servers.talker]`` table, over
    stdio and over streamable HTTP."""
    if request.param == "stdio":
        yield lambda extra="": stdio_table("talker", script, extra=f"{RUN}\n{extra}")
        return
    with http_server(script) as url:
        yield lambda extra="": f'[mcp_servers.talker]\nurl = "{url}"\n{RUN}\n{extra}\n'


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Any]:
    made: list[toolplug.Registry] = []

    def loaded(tables: str) -> toolplug.Registry:
        config = tmp_path / "toolplug.toml"
        config.write_text(f'cache_dir = "{tmp_path / "cache"}"\n' + tables, encoding="utf-8")
        registry = toolplug.load(config)
        made.append(registry)
        return registry

    yield loaded
    for registry in made:
        registry.close()


def _told(result: toolplug.ToolResult) -> dict[str, Any]:
    assert result.ok, result.error
    return dict(json.loads(result.output))


def test_a_question_reaches_the_host_and_its_answer_the_server(table: Any, load: Any) -> None:
    registry = load(table())
    channel = Scripted()
    result = asyncio.run(registry.acall("talker_book", {"city": "Oslo"}, channel=channel))
    told = _told(result)
    assert told == {"action": "accept", "content": {"name": "Ann", "seats": 2}}  # default filled
    [question] = channel.questions
    assert question.message == "A table in Oslo: for whom?"
    assert question.schema["required"] == ["name"]
    assert question.tool == "talker_book"
    assert (1.0, 2.0, "looking in Oslo") in channel.progressed
    [(level, message, data)] = [entry for entry in channel.logged if "Oslo" in entry[1]]
    assert level == "info"
    assert message == 'booker: {"city": "Oslo"}'
    assert data == {"server": "talker", "logger": "booker", "data": {"city": "Oslo"}}


def test_a_declined_question_is_declined_to_the_server(table: Any, load: Any) -> None:
    registry = load(table())
    channel = Scripted(Answer("decline"))
    told = _told(asyncio.run(registry.acall("talker_book", {"city": "Rome"}, channel=channel)))
    assert told == {"action": "decline"}


def test_a_host_that_cannot_ask_cancels_and_the_call_answers(
    table: Any, load: Any, caplog: pytest.LogCaptureFixture
) -> None:
    registry = load(table())
    with caplog.at_level(logging.INFO, "toolplug.mount"):
        told = _told(asyncio.run(registry.acall("talker_book", {"city": "Bern"})))
    assert told["action"] == "cancel"
    assert "cannot ask the user" in told["_meta"]["dev.toolplug/reason"]
    assert "answered cancel" in caplog.text
    assert "cannot ask the user" in caplog.text


def test_a_form_mcp_does_not_allow_is_declined_with_the_reason(table: Any, load: Any) -> None:
    registry = load(table())
    channel = Scripted()
    told = _told(asyncio.run(registry.acall("talker_odd", {}, channel=channel)))
    assert told["action"] == "decline"
    assert "field 'address'" in told["_meta"]["dev.toolplug/reason"]
    assert channel.questions == []  # nobody was asked a form they could not fill


def test_sampling_is_refused_by_default_naming_the_setting(table: Any, load: Any) -> None:
    registry = load(table())
    channel = Scripted()
    result = asyncio.run(registry.acall("talker_muse", {"topic": "tea"}, channel=channel))
    assert not result.ok
    assert "sampling = true in [mcp_servers.talker]" in result.error.message
    assert channel.requests == []


def test_sampling_when_allowed_reaches_the_host_model_redacted(
    table: Any, load: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = load(table("sampling = true"))
    channel = Scripted(completion="a calm cup")
    told = _told(asyncio.run(registry.acall("talker_muse", {"topic": "tea"}, channel=channel)))
    assert told["content"] == {"type": "text", "text": "a calm cup"}
    assert told["model"] == "test-model"
    assert told["role"] == "assistant"
    [request] = channel.requests
    assert [(m.role, m.content) for m in request.messages] == [("user", "a line on tea")]
    assert request.system == "Be brief."
    assert request.max_tokens == 40
    assert request.stop == ("\n",)
    assert request.model_hints == ("small",)
    assert request.tool == "talker_muse"


def test_log_lines_keep_the_servers_level_and_logger(
    table: Any, load: Any, caplog: pytest.LogCaptureFixture
) -> None:
    registry = load(table())
    channel = Scripted()
    result = asyncio.run(registry.acall("talker_chatty", {}, channel=channel))
    assert result.ok
    levels = [(level, message) for level, message, _data in channel.logged]
    assert ("debug", "chatter: a debug line") in levels
    assert ("warning", "chatter: a warning line") in levels
    assert ("error", "chatter: a error line") in levels


@pytest.mark.parametrize("sampling", [False, True])
def test_the_mount_declares_form_elicitation_and_sampling_only_when_allowed(
    table: Any, load: Any, sampling: bool
) -> None:
    registry = load(table(f"sampling = {str(sampling).lower()}"))
    declared = _told(registry.call("talker_caps", {}))
    assert declared["elicitation"] == {"form": {}}  # no URL mode: the mount declines it
    assert ("sampling" in declared) is sampling


@pytest.fixture(params=["stdio", "http"])
def legacy(request: pytest.FixtureRequest, script: Path) -> Iterator[str]:
    """The ``[mcp_servers.talker]`` table of the server speaking the handshake era."""
    if request.param == "stdio":
        yield stdio_table("talker", script, "--legacy", extra=RUN)
        return
    with http_server(script, "--legacy") as url:
        yield f'[mcp_servers.talker]\nurl = "{url}"\n{RUN}\n'


def _two_hosts(registry: toolplug.Registry) -> tuple[Scripted, Scripted, list[dict[str, Any]]]:
    """Two calls at once from two hosts (channels), the first accepting, the second
    declining: what each host was asked and what each call's server heard."""
    first, second = Scripted(Answer("accept", {"name": "A"})), Scripted(Answer("decline"))

    async def both() -> list[toolplug.ToolResult]:
        return list(await asyncio.gather(
            registry.acall("talker_greet", {"wait": 0.5}, channel=first),
            registry.acall("talker_greet", {"wait": 0.5}, channel=second),
        ))

    return first, second, [_told(result) for result in asyncio.run(both())]


def test_an_older_servers_own_requests_reach_the_call_in_flight(legacy: str, load: Any) -> None:
    registry = load(legacy)
    channel = Scripted(Answer("accept", {"name": "Bo"}))
    told = _told(asyncio.run(registry.acall("talker_greet", {"wait": 0}, channel=channel)))
    assert told == {
        "action": "accept", "data": {"name": "Bo", "seats": 2}, "protocol": "2025-11-25"
    }
    [question] = channel.questions
    assert question.message == "Whom do I greet?"
    assert (1.0, 2.0, "greeting") in channel.progressed
    assert ("notice", "greeter: about to ask") in [(lv, m) for lv, m, _d in channel.logged]


def test_over_stdio_calls_from_two_hosts_at_once_ask_neither_for_the_other(
    script: Path, load: Any
) -> None:
    # a request of its own over stdio names no call: with two hosts' calls in flight,
    # nobody is asked on another's behalf
    registry = load(stdio_table("talker", script, "--legacy", extra=RUN))
    first, second, answers = _two_hosts(registry)
    assert [a["action"] for a in answers] == ["cancel", "cancel"]
    assert first.questions == second.questions == []


def test_over_http_each_request_reaches_the_host_of_its_own_call(
    script: Path, load: Any
) -> None:
    # over streamable HTTP a server's request comes on its call's own response stream
    with http_server(script, "--legacy") as url:
        registry = load(f'[mcp_servers.talker]\nurl = "{url}"\n{RUN}\n')
        first, second, answers = _two_hosts(registry)
    assert [a["action"] for a in answers] == ["accept", "decline"]
    assert answers[0]["data"] == {"name": "A", "seats": 2}
    assert len(first.questions) == len(second.questions) == 1
    assert [m for _l, m, _d in first.logged] == ["greeter: about to ask"]
    assert [m for _l, m, _d in second.logged] == ["greeter: about to ask"]


def test_calls_from_one_host_at_once_are_each_answered(legacy: str, load: Any) -> None:
    registry = load(legacy)
    channel = Scripted(Answer("accept", {"name": "Cy"}))

    async def both() -> list[toolplug.ToolResult]:
        return list(await asyncio.gather(
            registry.acall("talker_greet", {"wait": 0.3}, channel=channel),
            registry.acall("talker_greet", {"wait": 0.3}, channel=channel),
        ))

    answers = [_told(result) for result in asyncio.run(both())]
    assert [a["data"] for a in answers] == [{"name": "Cy", "seats": 2}] * 2
    assert len(channel.questions) == 2


class Silent(Scripted):
    """A host whose user never answers."""

    async def ask(self, question: Question) -> Answer:
        self.questions.append(question)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_a_url_mode_question_is_declined_with_the_reason(table: Any, load: Any) -> None:
    registry = load(table())
    channel = Scripted()
    told = _told(asyncio.run(registry.acall("talker_visit", {}, channel=channel)))
    assert told["action"] == "decline"
    assert "URL-mode" in told["_meta"]["dev.toolplug/reason"]
    assert channel.questions == []


def test_nobody_answering_in_time_is_cancel_and_the_call_answers(table: Any, load: Any) -> None:
    registry = load("[calls]\nask_timeout_seconds = 0.5\n" + table())
    channel = Silent()
    told = _told(asyncio.run(registry.acall("talker_book", {"city": "Lima"}, channel=channel)))
    assert told["action"] == "cancel"
    assert "ask_timeout_seconds" in told["_meta"]["dev.toolplug/reason"]
    assert len(channel.questions) == 1


def test_sampling_allowed_with_no_model_to_ask_is_refused_to_the_server(
    table: Any, load: Any
) -> None:
    registry = load(table("sampling = true"))
    result = asyncio.run(registry.acall("talker_muse", {"topic": "tea"}))
    assert not result.ok
    assert "cannot ask the host's model" in result.error.message


def test_the_answer_is_the_users_words_and_the_completion_the_models(
    table: Any, load: Any
) -> None:
    registry = load(table("sampling = true"))
    with registry.conversation("book a table") as conversation:
        asyncio.run(registry.acall(
            "talker_book", {"city": "Oslo"}, channel=Scripted(Answer("accept", {"name": "Zed"}))
        ))
        asyncio.run(registry.acall("talker_muse", {"topic": "tea"}, channel=Scripted()))
    assert "zed" in conversation.request.lower()  # the user's answer: trusted
    sampled = [s for s in conversation.sources if s.tool == "talker_muse (sampled)"]
    assert [s.trust.output for s in sampled] == ["untrusted"]


def test_what_goes_to_the_host_is_redacted(script: Path, tmp_path: Path) -> None:
    # the server's configured secret ({ env = }) is kept out of what the host is shown
    secret = "tok-9f8e7d6c5b4a3210"
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        + stdio_table(
            "talker", script, extra=f'{RUN}\nsampling = true\nenv = {{ TOKEN = {{ env = "TT" }} }}'
        ),
        encoding="utf-8",
    )
    registry = toolplug.load(config, env={**os.environ, "TT": secret})
    try:
        asking, sampling = Scripted(), Scripted()
        asyncio.run(registry.acall("talker_book", {"city": secret}, channel=asking))
        asyncio.run(registry.acall("talker_muse", {"topic": secret}, channel=sampling))
    finally:
        registry.close()
    [question] = asking.questions
    assert secret not in question.message
    assert "***" in question.message
    [request] = sampling.requests
    assert [m.content for m in request.messages] == ["a line on ***"]
    assert not any(secret in message or secret in repr(data) for _l, message, data in asking.logged)
    assert not any(secret in (message or "") for _d, _t, message in asking.progressed)


def test_a_log_line_outside_any_call_goes_to_the_mount_logger(
    script: Path, load: Any, caplog: pytest.LogCaptureFixture
) -> None:
    registry = load(stdio_table("talker", script, "--legacy", extra=RUN))
    channel = Scripted()
    with caplog.at_level(logging.DEBUG, "toolplug.mount"):
        assert asyncio.run(registry.acall("talker_later", {}, channel=channel)).ok
        for _ in range(100):
            if "after the call" in caplog.text:
                break
            time.sleep(0.05)
    [record] = [r for r in caplog.records if "after the call" in r.getMessage()]
    assert record.name == "toolplug.mount"
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "MCP server talker: late: after the call"
    assert not any("after the call" in message for _l, message, _d in channel.logged)


class _Pause(BaseException):
    """A host's pause (a framework stopping its run, a modern serve's ``input_required``)."""


class Pausing(Scripted):
    """A host that answers no question now: it raises its pause instead."""

    async def ask(self, question: Question) -> Answer:
        self.questions.append(question)
        raise _Pause(question.message)


def test_a_hosts_pause_leaves_the_call_and_the_session_goes_on(legacy: str, load: Any) -> None:
    # raised inside the SDK's handler of the server's request, it would end the session
    registry = load(legacy)
    paused = Pausing()
    with pytest.raises(_Pause, match="Whom do I greet"):
        asyncio.run(registry.acall(
            "talker_greet", {"wait": 0}, channel=paused, passthrough=(_Pause,)
        ))
    assert len(paused.questions) == 1
    channel = Scripted(Answer("accept", {"name": "Cy"}))
    told = _told(asyncio.run(registry.acall("talker_greet", {"wait": 0}, channel=channel)))
    assert told["data"] == {"name": "Cy", "seats": 2}  # the same session answers the retry
