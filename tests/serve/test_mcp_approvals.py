"""Approvals over MCP, with real clients against ``toolplug serve`` over stdio and HTTP.

A modern (2026-07-28) client has no back-channel: it is asked with an input request (the
``input_required`` result) and retries with the answer. The official SDK's ``Client`` at that
revision and pydantic-ai's ``MCPToolset`` (a FastMCP client, driven by a ``FunctionModel``
agent) each answer yes and no. ``[serve] approvals = "client"`` makes the host's own approval
the only gate: the OpenAI Agents SDK's ``require_approval`` pauses its run, the person
approves, and the call runs once; without it toolplug refuses the approved call again.
(Elicitation on handshake sessions: tests/engine/test_approvals.py.)
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from tests.helpers.serve import (
    CONFIG,
    TIMEOUT,
    child_env,
    error_of,
    free_port,
    http_server,
    text_of,
)
from toolplug.serve._approvals import INPUT_KEY

POST_TOOL = r'''
import os
from typing import Any

from toolplug import Annotations, Tool, ToolMetadata, ToolResult, hookimpl


class Post(Tool):
    metadata = ToolMetadata(
        name="post",
        description="Publish a short message.",
        category="publish",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1}},
            "required": ["text"],
            "additionalProperties": False,
        },
        annotations=Annotations(destructive=True, open_world=True),
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        with open(os.environ["POSTED_LOG"], "a", encoding="utf-8") as log:
            log.write(arguments["text"] + "\n")
        return ToolResult.success(f"posted: {arguments['text']}")


@hookimpl
def register_tools(register: Any) -> None:
    register(Post)
'''

CLIENT_MODE = CONFIG + '\n[serve]\napprovals = "client"\n'
YES = types.ElicitResult(action="accept", content={"approve": True})
NO = types.ElicitResult(action="accept", content={"approve": False})
DECLINE = types.ElicitResult(action="decline")


def server_env(tmp_path: Path, config: str = CONFIG) -> dict[str, str]:
    """The server's environment: the test tools, ``post``, and where ``post`` records runs."""
    env = child_env(tmp_path, ("mcp_approval_tools", POST_TOOL), config=config)
    return {**env, "POSTED_LOG": str(tmp_path / "posted.txt")}


def posted(tmp_path: Path) -> list[str]:
    """What ``post`` published, one line a run."""
    log = tmp_path / "posted.txt"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


@asynccontextmanager
async def served(tmp_path: Path, transport: str, config: str = CONFIG) -> AsyncIterator[Any]:
    """The server on ``transport``: stdio parameters, or the URL of a running HTTP server."""
    from mcp import StdioServerParameters

    if transport == "stdio":
        env = server_env(tmp_path, config)
        yield StdioServerParameters(
            command=sys.executable, args=["-m", "toolplug", "serve"], env=env, cwd=str(tmp_path)
        )
        return
    import os

    port = free_port()
    env = {**os.environ, **server_env(tmp_path, config)}
    with http_server(tmp_path, port, env=env):
        yield url(port)


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


# -- the official SDK's client at 2026-07-28 ---------------------------------------------


def sdk_call(
    tmp_path: Path, transport: str, answer: types.ElicitResult | None, mode: str = "2026-07-28"
) -> tuple[str, list[str], types.CallToolResult]:
    """``post`` called by ``mcp.Client`` (pinned to 2026-07-28 unless ``mode`` says else): the
    protocol version, the questions its user was shown, and the result."""
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        assert answer is not None
        return answer

    async def session() -> tuple[str, list[str], types.CallToolResult]:
        with anyio.fail_after(TIMEOUT):
            async with served(tmp_path, transport) as server:
                callback = elicit if answer is not None else None
                async with Client(server, mode=mode, elicitation_callback=callback) as c:
                    result = await c.call_tool("post", {"text": "hello"})
                    return c.protocol_version, asked, result

    return anyio.run(session)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_modern_client_is_asked_and_the_call_runs_once_approved(
    tmp_path: Path, transport: str
) -> None:
    version, asked, result = sdk_call(tmp_path, transport, YES)
    assert version == "2026-07-28"
    [question] = asked
    assert question.startswith('post (Publish a short message) would run with {"text": "hello"}')
    assert "annotated destructive" in question
    assert not result.is_error
    assert text_of(result) == "posted: hello"
    assert posted(tmp_path) == ["hello"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_handshake_session_is_still_asked_by_elicitation(tmp_path: Path, transport: str) -> None:
    version, asked, result = sdk_call(tmp_path, transport, YES, mode="legacy")
    assert version == "2025-11-25"
    assert len(asked) == 1
    assert text_of(result) == "posted: hello"
    assert posted(tmp_path) == ["hello"]


@pytest.mark.parametrize(
    ("transport", "answer", "why"),
    [
        ("stdio", NO, "the client's user said no"),  # the form answered with approve: false
        ("http", DECLINE, "the client's user answered decline"),  # the form turned down
    ],
)
def test_a_modern_client_that_says_no_gets_a_denial_and_nothing_runs(
    tmp_path: Path, transport: str, answer: types.ElicitResult, why: str
) -> None:
    _version, asked, result = sdk_call(tmp_path, transport, answer)
    assert len(asked) == 1
    error = error_of(result)
    assert error["error_type"] == "PermissionError"
    assert why in error["error_message"]
    assert posted(tmp_path) == []


ADVICE = (
    "Nobody could be asked: the MCP client declared no (form) elicitation capability. To "
    "approve calls like this one, use an MCP client that supports elicitation or input "
    'requests (the 2026-07-28 input_required result); or, in toolplug\'s configuration on the '
    'server, set [tools.post] approval = "never" to run it unasked, or [serve] approvals = '
    '"client" when the MCP host asks its user before each call itself'
)


def unasked_call(tmp_path: Path, transport: str) -> tuple[types.CallToolResult, str]:
    """``post`` called by the SDK's ``ClientSession``, which declares no elicitation: the
    result, and what the server wrote to its standard error meanwhile."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    errors = tmp_path / "stdio-stderr.txt"

    async def session(errlog: Any) -> types.CallToolResult:
        with anyio.fail_after(TIMEOUT):
            async with served(tmp_path, transport) as server:
                if transport == "stdio":
                    opened: Any = stdio_client(server, errlog=errlog)
                else:
                    opened = streamable_http_client(server)
                async with opened as streams, ClientSession(streams[0], streams[1]) as client:
                    await client.initialize()
                    return await client.call_tool("post", {"text": "hello"})

    with errors.open("w", encoding="utf-8") as errlog:
        result = anyio.run(session, errlog)
    log = tmp_path / ("stdio-stderr.txt" if transport == "stdio" else "http-stderr.txt")
    return result, log.read_text(encoding="utf-8")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_client_that_cannot_be_asked_reads_a_short_answer_and_the_log_says_how(
    tmp_path: Path, transport: str
) -> None:
    result, log = unasked_call(tmp_path, transport)
    error = error_of(result)
    assert error["error_type"] == "ApprovalRequiredError"
    text = text_of(result)
    # what the model reads: short, what to do, and nothing of the server's configuration
    assert text == (
        "ApprovalRequiredError: post needs a person's approval, and nobody here could give "
        "it: the call did not run. Tell the user.\n"
        "retry_possible: false (not until a person approves it)"
    )
    assert len(text) < 200
    for key in ("[", "approval =", "approvals"):
        assert key not in text
    # what the operator reads, in the server's log (its stderr): what would have run, why
    # nobody was asked, and how to approve
    assert 'post (Publish a short message) would run with {"text": "hello"}' in log
    assert "approval is needed because it may destroy or overwrite data" in log
    assert ADVICE in log
    assert posted(tmp_path) == []


def test_an_answer_counts_only_with_the_state_of_its_own_question(tmp_path: Path) -> None:
    # The loop the SDK's client drives, by hand: what a client can and cannot make count.
    async def session() -> list[Any]:
        seen: list[Any] = []
        with anyio.fail_after(TIMEOUT):
            async with (
                served(tmp_path, "stdio") as server,
                Client(server, mode="2026-07-28", elicitation_callback=_never) as client,
            ):
                call = client.session.call_tool
                first = await call("post", {"text": "one"}, allow_input_required=True)
                other = await call("post", {"text": "two"}, allow_input_required=True)
                seen += [first, other]
                assert isinstance(first, types.InputRequiredResult)
                assert isinstance(other, types.InputRequiredResult)
                answers: dict[str, Any] = {INPUT_KEY: YES}
                # An answer without the state: asked again, nothing runs.
                seen.append(await call(
                    "post", {"text": "one"}, input_responses=answers, allow_input_required=True
                ))
                # The state of another call's question, or a state altered: refused.
                for state in (other.request_state, (first.request_state or "") + "x"):
                    try:
                        await call(
                            "post", {"text": "one"}, input_responses=answers,
                            request_state=state, allow_input_required=True,
                        )
                    except MCPError as exc:
                        seen.append(exc)
                # The answer with its own state: the call runs.
                seen.append(await call(
                    "post", {"text": "one"}, input_responses=answers,
                    request_state=first.request_state, allow_input_required=True,
                ))
        return seen

    first, other, unanswered, foreign, altered, done = anyio.run(session)
    assert first.input_requests is not None
    ask = first.input_requests[INPUT_KEY]
    assert isinstance(ask, types.ElicitRequest)
    assert isinstance(ask.params, types.ElicitRequestFormParams)
    assert ask.params.requested_schema["required"] == ["approve"]
    assert first.request_state
    assert first.request_state != other.request_state
    assert "approval" not in first.request_state  # sealed: the client cannot read or forge it
    assert isinstance(unanswered, types.InputRequiredResult)
    for refused in (foreign, altered):
        assert isinstance(refused, MCPError)
        assert refused.error.code == types.INVALID_PARAMS
    assert isinstance(done, types.CallToolResult)
    assert not done.is_error
    assert posted(tmp_path) == ["one"]


def test_an_answer_may_reach_another_replica_sharing_the_redis_store(tmp_path: Path) -> None:
    # Stateless clients behind a load balancer: asked by one replica, answered to another.
    import os

    from tests.helpers.redis import redis_server

    with redis_server(tmp_path) as store:
        config = CONFIG + f'\n[calls]\nstore = "{store}"\n'
        env = {**os.environ, **server_env(tmp_path, config)}
        one, two = free_port(), free_port()

        async def session() -> types.CallToolResult | types.InputRequiredResult:
            with anyio.fail_after(TIMEOUT):
                async with (
                    Client(url(one), mode="2026-07-28", elicitation_callback=_never) as first,
                    Client(url(two), mode="2026-07-28", elicitation_callback=_never) as second,
                ):
                    asked = await first.session.call_tool(
                        "post", {"text": "hi"}, allow_input_required=True
                    )
                    assert isinstance(asked, types.InputRequiredResult)
                    return await second.session.call_tool(
                        "post", {"text": "hi"}, input_responses={INPUT_KEY: YES},
                        request_state=asked.request_state, allow_input_required=True,
                    )

        with http_server(tmp_path, one, env=env), http_server(tmp_path, two, env=env):
            done = anyio.run(session)
    assert isinstance(done, types.CallToolResult)
    assert text_of(done) == "posted: hi"
    assert posted(tmp_path) == ["hi"]


@pytest.mark.parametrize(
    ("config", "questions"),
    [
        (CONFIG, 1),  # not made a task: a plain call, which asks
        (CLIENT_MODE, 0),  # the host approved: a task, run as approved
    ],
)
def test_a_client_of_the_tasks_extension_is_asked_too(
    tmp_path: Path, config: str, questions: int
) -> None:
    from tests.helpers.tasks import TasksClient

    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return YES

    async def session() -> types.CallToolResult:
        with anyio.fail_after(TIMEOUT):
            async with (
                served(tmp_path, "stdio", config) as server,
                Client(
                    server, mode="2026-07-28", extensions=[TasksClient()],
                    elicitation_callback=elicit,
                ) as client,
            ):
                return await client.call_tool("post", {"text": "hello"})

    result = anyio.run(session)
    assert text_of(result) == "posted: hello"
    assert len(asked) == questions
    assert posted(tmp_path) == ["hello"]


async def _never(context: Any, params: Any) -> types.ElicitResult:
    raise AssertionError("this test answers by hand")


# -- pydantic-ai's MCP client, in its own agent loop ---------------------------------------


def pydantic_ai_run(tmp_path: Path, transport: str, approve: bool) -> tuple[list[str], str, Any]:
    """A pydantic-ai agent whose FunctionModel calls ``post`` through ``MCPToolset``; its
    user answers the approval question with ``approve``. The questions asked, the answer the
    model read, and the protocol version the toolset spoke."""
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    asked: list[str] = []
    versions: list[str | None] = []
    toolset: Any = None

    async def elicit(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return {"approve": approve}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            assert [t.name for t in info.function_tools if t.name == "post"] == ["post"]
            return ModelResponse(parts=[ToolCallPart("post", {"text": "hello"}, tool_call_id="c1")])
        versions.append(toolset.client.protocol_version)
        last = messages[-1].parts[-1]
        text = last.model_response_str()  # type: ignore[union-attr]
        return ModelResponse(parts=[TextPart(f"{type(last).__name__}: {text}")])

    async def run() -> str:
        with anyio.fail_after(TIMEOUT):
            async with served(tmp_path, transport) as server:
                nonlocal toolset
                if transport == "stdio":
                    source: Any = StdioTransport(
                        server.command, server.args, env=server.env, cwd=server.cwd
                    )
                else:
                    source = server
                toolset = MCPToolset(
                    source, elicitation_handler=elicit, tool_error_behavior="failed"
                )
                agent = Agent(FunctionModel(respond), toolsets=[toolset])
                result = await agent.run("post hello")
                return str(result.output)

    output = anyio.run(run)
    return asked, output, versions[0]


# pydantic-ai 2.68 warns that a modern session never calls the elicitation handler; FastMCP's
# client calls it for each input request (what these tests prove), so the warning is wrong.
NEVER_CALLED = "ignore:`elicitation_handler` will never be called:UserWarning"


@pytest.mark.filterwarnings(NEVER_CALLED)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_pydantic_ai_asks_its_user_and_the_approved_call_runs(
    tmp_path: Path, transport: str
) -> None:
    asked, output, version = pydantic_ai_run(tmp_path, transport, approve=True)
    assert version == "2026-07-28"  # a modern session: the question came as an input request
    assert len(asked) == 1
    assert asked[0].startswith("post (Publish a short message)")
    assert output == "ToolReturnPart: posted: hello"
    assert posted(tmp_path) == ["hello"]


@pytest.mark.filterwarnings(NEVER_CALLED)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_pydantic_ai_denied_the_model_reads_why_and_nothing_runs(
    tmp_path: Path, transport: str
) -> None:
    asked, output, _version = pydantic_ai_run(tmp_path, transport, approve=False)
    assert len(asked) == 1
    assert "PermissionError" in output
    assert "the client's user said no" in output
    assert posted(tmp_path) == []


# -- the Agents SDK's own approval as the only gate: [serve] approvals = "client" ----------


def agents_run(tmp_path: Path, transport: str, config: str) -> tuple[list[str], str]:
    """An Agents SDK run whose MCP server requires approval for destructive tools: it pauses
    at ``post``, the person approves, and it resumes. The tools that paused, and the output
    the model was given."""
    from agents import Agent, RunConfig, Runner
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
    from agents.testing import ScriptedModel, assistant_message, function_call

    def destructive(context: Any, agent: Any, tool: types.Tool) -> bool:
        return bool(tool.annotations and tool.annotations.destructive_hint)

    model = ScriptedModel(
        [[function_call("post", {"text": "hello"}, call_id="c1")], [assistant_message("done")]]
    )

    async def run() -> list[str]:
        with anyio.fail_after(TIMEOUT):
            async with served(tmp_path, transport, config) as server:
                mcp_server: Any
                if transport == "stdio":
                    params: Any = {
                        "command": server.command, "args": server.args,
                        "env": server.env, "cwd": server.cwd,
                    }
                    mcp_server = MCPServerStdio(params, require_approval=destructive)
                else:
                    mcp_server = MCPServerStreamableHttp(
                        {"url": server}, require_approval=destructive
                    )
                async with mcp_server:
                    agent = Agent(name="assistant", model=model, mcp_servers=[mcp_server])
                    no_traces = RunConfig(tracing_disabled=True)
                    paused = await Runner.run(agent, "post hello", run_config=no_traces)
                    waiting = [item.tool_name for item in paused.interruptions]
                    assert posted(tmp_path) == []  # nothing ran before the person answered
                    state = paused.to_state()
                    for item in paused.interruptions:
                        state.approve(item)
                    resumed = await Runner.run(agent, state, run_config=no_traces)
                    assert resumed.final_output == "done"
                    return [str(w) for w in waiting]

    waiting = anyio.run(run)
    return waiting, _output_of(model, "c1")


def _output_of(model: Any, call_id: str) -> str:
    for recorded in model.calls:
        if isinstance(recorded.input, list):
            for item in recorded.input:
                if isinstance(item, dict) and item.get("call_id") == call_id and "output" in item:
                    output = item["output"]  # text, or a list of content parts
                    if isinstance(output, list):
                        return "".join(part.get("text", "") for part in output)
                    return str(output)
    raise AssertionError(f"the model was given no output for {call_id}")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_in_client_mode_the_hosts_approval_is_the_only_gate(
    tmp_path: Path, transport: str
) -> None:
    waiting, output = agents_run(tmp_path, transport, CLIENT_MODE)
    assert waiting == ["post"]
    assert output == "posted: hello"
    assert posted(tmp_path) == ["hello"]  # once


def test_without_client_mode_toolplug_refuses_the_host_approved_call_again(
    tmp_path: Path,
) -> None:
    waiting, output = agents_run(tmp_path, "stdio", CONFIG)
    assert waiting == ["post"]
    assert output.startswith("ApprovalRequiredError: ")  # the error's prose, read once
    assert "nobody here could give it" in output
    assert "[serve]" not in output  # the operator's advice is in the server's log
    assert posted(tmp_path) == []


def test_client_mode_per_tool_leaves_the_other_tools_to_toolplug(tmp_path: Path) -> None:
    config = CLIENT_MODE + '[serve.approvals_by_tool]\npost = "toolplug"\n'
    waiting, output = agents_run(tmp_path, "stdio", config)
    assert waiting == ["post"]
    assert output.startswith("ApprovalRequiredError: ")
    assert posted(tmp_path) == []



# -- the calls of a run_code program -----------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "runs"),
    [
        ("legacy", True),  # elicitation mid-program: asked, and the call runs
        ("2026-07-28", False),  # an input request would run the program again: not asked
    ],
)
def test_the_calls_of_a_program_are_asked_only_mid_call(mode: str, runs: bool) -> None:
    import toolplug
    from toolplug import Annotations, Tool, ToolMetadata, ToolResult, hookimpl
    from toolplug.serve import build_server

    published: list[str] = []

    class Publish(Tool):
        metadata = ToolMetadata(
            name="publish",
            description="Publish a post.",
            category="publish",
            parameters={"type": "object", "properties": {"text": {"type": "string"}}},
            annotations=Annotations(destructive=True),
        )

        async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
            published.append(arguments["text"])
            return ToolResult.success("published")

    class Plugin:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(Publish)

    registry = toolplug.load({"code": {"enabled": True}}, plugins=[("publish", Plugin())])
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return YES

    async def session() -> types.CallToolResult:
        with anyio.fail_after(TIMEOUT):
            server = build_server(registry)
            async with Client(server, mode=mode, elicitation_callback=elicit) as client:
                return await client.call_tool("run_code", {"code": 'await publish(text="x")'})

    try:
        result = anyio.run(session)
    finally:
        registry.close()
    assert published == (["x"] if runs else [])
    assert len(asked) == (1 if runs else 0)
    if not runs:
        assert "PermissionError: publish needs a person's approval, and nobody here" in (
            text_of(result)
        )


def test_the_form_offers_to_remember_for_the_conversation(tmp_path: Path) -> None:
    # The client's user answers "yes, for this conversation": the session's next call of the
    # same tool runs unasked; the decision is the session owner's, in the approvals' store.
    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.requested_schema)
        return types.ElicitResult(
            action="accept", content={"approve": True, "remember": "conversation"}
        )

    async def session() -> list[types.CallToolResult]:
        with anyio.fail_after(TIMEOUT):
            async with (
                served(tmp_path, "stdio") as server,
                Client(server, mode="legacy", elicitation_callback=elicit) as c,
            ):
                return [await c.call_tool("post", {"text": t}) for t in ("a", "b")]

    results = anyio.run(session)
    assert [r.is_error for r in results] == [False, False]
    (schema,) = asked  # asked once: the second call was decided by the remembered answer
    choices = [c["const"] for c in schema["properties"]["remember"]["oneOf"]]
    assert choices == ["once", "conversation", "always"]
    assert posted(tmp_path) == ["a", "b"]
