"""toolplug.integrations.pydantic_ai: real agent runs with pydantic-ai's own test models.

``FunctionModel`` plays the model: each test scripts the calls it makes and reads what it
was given (the tools, the instructions, the tool results), as a provider's model would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import (
    Agent,
    BinaryContent,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolDenied,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import toolplug
from tests.helpers.integrations import Chart, Seen, load
from toolplug import Registry, ToolCall, ToolResult, hookimpl
from toolplug.integrations.pydantic_ai import ToolplugToolset

Script = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


def scripted(*calls: tuple[str, dict[str, Any]]) -> tuple[Script, list[AgentInfo]]:
    """A model that makes these calls, one a turn, then answers with the last tool result."""
    seen: list[AgentInfo] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        turn = len(seen) - 1
        if turn < len(calls):
            name, arguments = calls[turn]
            return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=f"call-{turn}")])
        return ModelResponse(parts=[TextPart(f"done: {_last_result(messages)}")])

    return respond, seen


def run(agent: Agent[None, Any], *args: Any, **options: Any) -> Any:
    """``agent.run`` on a loop of its own, closed after (``run_sync`` leaves its loop open)."""
    return asyncio.run(agent.run(*args, **options))


def _last_result(messages: list[ModelMessage]) -> str:
    for part in messages[-1].parts:
        if isinstance(part, ToolReturnPart):
            return part.model_response_str()
    return ""


def _parts(messages: list[ModelMessage], kind: type[Any]) -> list[Any]:
    return [
        p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, kind)
    ]


def test_the_selected_tools_are_listed_with_their_schemas_intact(registry: Registry) -> None:
    respond, infos = scripted()
    agent = Agent(FunctionModel(respond), toolsets=[ToolplugToolset(registry)])
    run(agent, "hello")
    listed = {t.name: t for t in infos[0].function_tools}
    assert sorted(listed) == ["flaky", "hang", "note", "read_file", "send", "write_file"]
    for name, definition in listed.items():
        metadata = registry.get(name).metadata
        assert definition.parameters_json_schema == metadata.parameters
        assert definition.description == metadata.description


def test_the_options_of_every_renderer_choose_the_tools(registry: Registry) -> None:
    respond, infos = scripted()
    toolset = ToolplugToolset(registry, task="read a saved file", max_tools=1)
    assert [m.name for m in toolset.offer.tools] == ["read_file"]
    run(Agent(FunctionModel(respond), toolsets=[toolset]), "hello")
    # the others wait for pydantic-ai's own tool search, withheld until it finds them
    assert [t.name for t in infos[0].function_tools] == ["read_file"]
    assert infos[0].model_request_parameters.tool_visibility == {
        "read_file": "visible",
        "flaky": "withheld",
        "hang": "withheld",
        "note": "withheld",
        "send": "withheld",
        "write_file": "withheld",
    }


def test_the_optional_tools_section_is_in_the_instructions(registry: Registry) -> None:
    respond, infos = scripted()
    run(Agent(FunctionModel(respond), toolsets=[ToolplugToolset(registry)]), "hello")
    section = toolplug.optional_tools_section(registry).strip()
    assert infos[0].instructions is not None
    assert section in infos[0].instructions
    assert "### write_file" in section
    assert "**Needs approval:**" in section
    [part] = infos[0].model_request_parameters.instruction_parts or []
    assert part.dynamic is False  # fixed for the toolset's life: a prompt cache may keep it
    infos.clear()
    run(
        Agent(FunctionModel(respond), toolsets=[ToolplugToolset(registry, instructions=False)]),
        "hello",
    )
    assert not infos[0].instructions


def test_a_call_gives_the_model_its_text_data_citations_and_warnings(
    registry: Registry, seen: Seen
) -> None:
    respond, _ = scripted(("note", {"text": "milk", "labels": {"shop": "corner"}}))
    result = run(Agent(FunctionModel(respond), toolsets=[ToolplugToolset(registry)]), "note")
    assert seen.notes == [{"text": "milk", "labels": {"shop": "corner"}}]
    [returned] = _parts(result.all_messages(), ToolReturnPart)
    assert returned.content == {
        "output": "noted: milk",
        "data": {"text": "milk", "labels": {"shop": "corner"}},
        "citations": [{"title": "The notebook", "url": "https://notes.test/1"}],
        "warnings": ["the notebook keeps 10 notes; call note again to replace the oldest"],
    }
    assert isinstance(returned.metadata, ToolResult)  # the whole result, for the host
    assert result.output.startswith("done: ")
    assert "replace the oldest" in result.output  # the model read the warning


def test_an_error_without_retry_is_read_by_the_model_not_retried(registry: Registry) -> None:
    # Three failing calls in a row, with one retry allowed: were a failure a ModelRetry, the
    # second would end the run with "exceeded max retries".
    missing = ("read_file", {"path": "nowhere.md"})
    respond, _ = scripted(missing, missing, missing)
    agent = Agent(FunctionModel(respond), toolsets=[ToolplugToolset(registry)], retries=1)
    result = run(agent, "read it")
    failures = _parts(result.all_messages(), ToolReturnPart)
    assert [f.outcome for f in failures] == ["failed", "failed", "failed"]  # none "retried"
    # one encoding: pydantic-ai's own {"error": TEXT}, with no JSON inside the text
    error = json.loads(failures[0].model_response_str())
    assert error == {
        "error": "NotFoundError: there is no file at file_cache_dir/nowhere.md; check the path "
        "or write it first"
    }
    assert "NotFoundError" in result.output


def test_a_bad_argument_is_named_for_the_model(registry: Registry) -> None:
    respond, _ = scripted(("read_file", {"path": 7}))
    result = run(Agent(FunctionModel(respond), toolsets=[ToolplugToolset(registry)]), "read")
    error = json.loads(_parts(result.all_messages(), ToolReturnPart)[0].model_response_str())
    assert error["error"].startswith("ValidationError: invalid arguments for read_file: path:")


def test_an_error_that_allows_a_retry_is_a_model_retry(registry: Registry, seen: Seen) -> None:
    respond, _ = scripted(("flaky", {}), ("flaky", {}))
    result = run(Agent(FunctionModel(respond), toolsets=[ToolplugToolset(registry)]), "weather")
    retried, answered = _parts(result.all_messages(), ToolReturnPart)
    assert retried.outcome == "retried"  # pydantic-ai's own retry, counted against its budget
    assert retried.retry is not None
    assert retried.retry.cause == "model_retry"
    assert retried.content == "RateLimitError: the weather service is busy"
    assert answered.content == {"output": "sunny"}
    assert seen.flaky_calls == 2


def _approval_run(registry: Registry) -> tuple[Agent[None, Any], Any]:
    respond, _ = scripted(("write_file", {"path": "todo.md", "content": "buy milk"}))
    agent: Agent[None, Any] = Agent(
        FunctionModel(respond),
        toolsets=[ToolplugToolset(registry)],
        output_type=[str, DeferredToolRequests],
    )
    return agent, run(agent, "save my todo")


def test_a_destructive_call_waits_for_the_person_and_runs_once_approved(
    registry: Registry, sandbox: Path
) -> None:
    agent, paused = _approval_run(registry)
    requests = paused.output
    assert isinstance(requests, DeferredToolRequests)
    [call] = requests.approvals
    assert call.tool_name == "write_file"
    about = requests.metadata[call.tool_call_id]
    assert "destructive" in about["reason"]
    assert about["description"].startswith("write_file (Write or append text")
    assert not (sandbox / "todo.md").exists()  # nothing ran before the person answered

    # The person answers later: the history is kept as JSON meanwhile.
    kept = paused.all_messages_json()
    resumed = run(
        agent,
        message_history=ModelMessagesTypeAdapter.validate_json(kept),
        deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
    )
    assert (sandbox / "todo.md").read_text() == "buy milk"
    [returned] = _parts(resumed.all_messages(), ToolReturnPart)
    assert returned.content["output"].startswith("Created")  # toolplug did not ask again
    assert resumed.output.startswith("done: ")


def test_a_denied_call_never_runs_and_the_model_reads_why(
    registry: Registry, sandbox: Path
) -> None:
    agent, paused = _approval_run(registry)
    [call] = paused.output.approvals
    resumed = run(
        agent,
        message_history=paused.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={call.tool_call_id: ToolDenied("not today, the list is fine")}
        ),
    )
    assert not (sandbox / "todo.md").exists()
    assert resumed.output == "done: not today, the list is fine"


def test_a_tool_that_needs_no_approval_is_not_deferred(registry: Registry) -> None:
    respond, _ = scripted(("note", {"text": "x"}))
    agent = Agent(
        FunctionModel(respond),
        toolsets=[ToolplugToolset(registry)],
        output_type=[str, DeferredToolRequests],
    )
    assert run(agent, "note").output == "done: " + json.dumps(
        {
            "output": "noted: x",
            "data": {"text": "x", "labels": {}},
            "citations": [{"title": "The notebook", "url": "https://notes.test/1"}],
            "warnings": ["the notebook keeps 10 notes; call note again to replace the oldest"],
        },
        separators=(",", ":"),
    )


def test_approval_is_decided_per_call(registry: Registry, seen: Seen) -> None:
    # send's GET only reads: it runs unasked. Its POST changes something: it waits.
    respond, _ = scripted(
        ("send", {"path": "/status"}), ("send", {"path": "/deploy", "method": "POST"})
    )
    agent = Agent(
        FunctionModel(respond),
        toolsets=[ToolplugToolset(registry)],
        output_type=[str, DeferredToolRequests],
    )
    paused = run(agent, "check, then deploy")
    assert seen.sent == [{"path": "/status", "method": "GET"}]
    [waiting] = paused.output.approvals
    assert waiting.args == {"path": "/deploy", "method": "POST"}
    assert "open-world" in paused.output.metadata[waiting.tool_call_id]["reason"]


def test_a_hook_that_defers_a_call_pauses_the_run_through_toolplug(
    seen: Seen, sandbox: Path
) -> None:
    # A host answers note calls elsewhere (a queue, another service): its tool_call hook
    # raises pydantic-ai's CallDeferred, which leaves toolplug unchanged, not as an error.
    class Elsewhere:
        @hookimpl
        def tool_call(self, call: ToolCall) -> None:
            if call.tool == "note":
                raise CallDeferred(metadata={"queue": "notes"})

    registry = load(seen, sandbox)
    registry.plugin_manager.register(Elsewhere(), name="elsewhere")
    try:
        respond, _ = scripted(("note", {"text": "milk"}))
        agent = Agent(
            FunctionModel(respond),
            toolsets=[ToolplugToolset(registry)],
            output_type=[str, DeferredToolRequests],
        )
        paused = run(agent, "note it")
        [deferred] = paused.output.calls
        assert paused.output.metadata[deferred.tool_call_id] == {"queue": "notes"}
        assert seen.notes == []
        resumed = run(
            agent,
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(calls={deferred.tool_call_id: "queued"}),
        )
        assert resumed.output == "done: queued"
    finally:
        registry.close()


def test_cancelling_the_run_cancels_the_tool(registry: Registry, seen: Seen) -> None:
    respond, _ = scripted(("hang", {}))
    agent = Agent(FunctionModel(respond), toolsets=[ToolplugToolset(registry)])

    async def main() -> None:
        seen.hang_started = asyncio.Event()
        task = asyncio.create_task(agent.run("wait for it"))
        await seen.hang_started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen.hang_cancelled


def test_the_framework_test_model_calls_every_tool(seen: Seen, sandbox: Path) -> None:
    # pydantic-ai's TestModel makes up arguments from each schema and calls every tool once:
    # the schemas as given are ones a model can fill, and every outcome reaches it.
    registry = load(seen, sandbox, write_file={"approval": "never"})
    try:
        model = TestModel(call_tools=["note", "read_file", "write_file"])
        result = run(Agent(model, toolsets=[ToolplugToolset(registry)]), "go")
        returned = {p.tool_name for p in _parts(result.all_messages(), ToolReturnPart)}
        assert returned == {"note", "read_file", "write_file"}
        assert seen.notes
    finally:
        registry.close()


def test_a_result_s_parts_reach_the_model_in_pydantic_ai_s_own_types(chart: Chart) -> None:
    given: list[list[ModelMessage]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        given.append(list(messages))
        if len(given) == 1:
            return ModelResponse(parts=[ToolCallPart("chart", {}, tool_call_id="call-0")])
        return ModelResponse(parts=[TextPart("a red square")])

    result = run(Agent(FunctionModel(respond), toolsets=[ToolplugToolset(chart.registry)]), "go")
    assert result.output == "a red square"
    # what the model was sent on its next turn: the tool's return, the files in it as is
    [returned] = _parts(given[1], ToolReturnPart)
    picture, recording, report = returned.files
    assert isinstance(picture, BinaryContent)
    assert picture.is_image
    assert (picture.data, picture.media_type) == (chart.png, "image/png")
    assert (recording.data, recording.media_type) == (chart.wav, "audio/wav")
    assert (report.data, report.media_type, report.identifier) == (
        chart.pdf, "application/pdf", "march.pdf"
    )
    body, *_, text, link = returned.content
    assert body == {"output": "The chart of March.", "data": {"month": "March"}}
    assert text == "Sales rose 4%."
    # a file:// link is nothing a provider can fetch: the model reads where it is
    assert link == "[resource: march.csv at file:///reports/march.csv, text/csv]"
    # a history kept as JSON brings the picture back, byte for byte
    saved = ModelMessagesTypeAdapter.dump_json(result.all_messages())
    [reloaded] = _parts(ModelMessagesTypeAdapter.validate_json(saved), ToolReturnPart)
    assert reloaded.files[0].data == chart.png
