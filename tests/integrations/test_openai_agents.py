"""toolplug.integrations.openai_agents: real agent runs with the SDK's own ScriptedModel.

``agents.testing.ScriptedModel`` plays the model: each test scripts the calls it makes,
in the strict shapes a Responses model sends (every property, null for the ones left out,
maps as key/value lists), and reads what it was given (tools, instructions, outputs).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner, RunResult, RunState
from agents.testing import ScriptedModel, assistant_message, function_call

import toolplug
from tests.helpers.integrations import Chart, Seen, load
from toolplug import Registry
from toolplug.integrations.openai_agents import function_tools, instructions
from toolplug.schema import strict_arguments

NO_TRACES = RunConfig(tracing_disabled=True)  # the SDK would try to upload its traces


def agent_with(registry: Registry, *steps: Any, **options: Any) -> tuple[Agent[Any], ScriptedModel]:
    """An agent with the registry's tools and section, and the model that plays ``steps``."""
    model = ScriptedModel([*steps, [assistant_message("done")]])
    agent = Agent(
        name="assistant",
        model=model,
        tools=function_tools(registry, **options),
        instructions=instructions(registry, **options),
    )
    return agent, model


def call(name: str, arguments: Any, call_id: str = "call-1") -> list[Any]:
    """One model turn that calls ``name`` (arguments as a mapping, or raw JSON text)."""
    return [function_call(name, arguments, call_id=call_id)]


def strict(registry: Registry, name: str, arguments: dict[str, Any]) -> Any:
    """The arguments as a strict-mode model sends them."""
    return strict_arguments(registry.get(name).metadata.parameters, arguments)


def run(agent: Agent[Any], given: Any) -> RunResult:
    return asyncio.run(Runner.run(agent, given, run_config=NO_TRACES))


def outputs(model: ScriptedModel) -> dict[str, str]:
    """Every tool output the model was given, by call id."""
    found: dict[str, str] = {}
    for recorded in model.calls:
        if isinstance(recorded.input, list):
            for item in recorded.input:
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    found[item["call_id"]] = item["output"]
    return found


def test_the_tools_are_the_strict_responses_export(registry: Registry) -> None:
    agent, model = agent_with(registry)
    run(agent, "hello")
    assert model.first_call is not None
    given = {t.name: t for t in model.first_call.tools if isinstance(t, FunctionTool)}
    exported = {t["name"]: t for t in toolplug.export_tools(registry, "openai-responses")}
    assert (
        sorted(given)
        == sorted(exported)
        == ["flaky", "hang", "note", "read_file", "send", "write_file"]
    )
    for name, tool in given.items():
        assert tool.params_json_schema == exported[name]["parameters"]
        assert tool.description == exported[name]["description"]
        assert tool.strict_json_schema is True
    # the map of note is a key/value list for the model: toolplug maps it back on call
    assert given["note"].params_json_schema["properties"]["labels"]["type"] == ["array", "null"]


def test_the_options_of_every_renderer_choose_the_tools(registry: Registry) -> None:
    tools = function_tools(registry, task="read a saved file", max_tools=1)
    assert [t.name for t in tools] == ["read_file"]
    assert instructions(registry, task="read a saved file", max_tools=1) == (
        toolplug.optional_tools_section(registry, task="read a saved file", max_tools=1).strip()
    )


def test_the_optional_tools_section_is_in_the_instructions(registry: Registry) -> None:
    agent, model = agent_with(registry)
    run(agent, "hello")
    assert model.first_call is not None
    section = toolplug.optional_tools_section(registry).strip()
    assert model.first_call.system_instructions == section
    assert "### write_file" in section


def test_a_call_gives_the_model_its_text_data_citations_and_warnings(
    registry: Registry, seen: Seen
) -> None:
    arguments = strict(registry, "note", {"text": "milk", "labels": {"shop": "corner"}})
    assert arguments["labels"] == [{"key": "shop", "value": "corner"}]
    agent, model = agent_with(registry, call("note", arguments))
    assert run(agent, "note it").final_output == "done"
    assert seen.notes == [{"text": "milk", "labels": {"shop": "corner"}}]  # restored
    assert json.loads(outputs(model)["call-1"]) == {
        "output": "noted: milk",
        "data": {"text": "milk", "labels": {"shop": "corner"}},
        "citations": [{"title": "The notebook", "url": "https://notes.test/1"}],
        "warnings": ["the notebook keeps 10 notes; call note again to replace the oldest"],
    }


def test_a_strict_null_means_left_out(registry: Registry, sandbox: Path) -> None:
    (sandbox / "a.md").write_text("hello")
    arguments = strict(registry, "read_file", {"path": "a.md"})
    assert arguments == {"path": "a.md", "offset": None, "max_chars": None}
    agent, model = agent_with(registry, call("read_file", arguments))
    run(agent, "read")
    assert json.loads(outputs(model)["call-1"])["output"] == "hello"


@pytest.mark.parametrize(
    ("arguments", "error_type", "says"),
    [
        # the tool's own error, which no retry fixes
        (
            {"path": "nowhere.md", "offset": None, "max_chars": None},
            "NotFoundError",
            "there is no file at file_cache_dir/nowhere.md",
        ),
        # a required property left out: toolplug names it
        ({"offset": None, "max_chars": None}, "ValidationError", "path"),
        # arguments that are not JSON at all
        ("{not json", "ValidationError", "not valid JSON"),
    ],
)
def test_an_error_is_text_the_model_can_act_on(
    registry: Registry, arguments: Any, error_type: str, says: str
) -> None:
    agent, model = agent_with(registry, call("read_file", arguments))
    assert run(agent, "read").final_output == "done"
    output = outputs(model)["call-1"]
    assert "An error occurred" not in output
    error = json.loads(output)
    assert error["error"] is True
    assert error["error_type"] == error_type
    assert error["retry_possible"] is False
    assert says in error["error_message"]


def test_the_tools_time_limit_holds(seen: Seen, sandbox: Path) -> None:
    registry = load(seen, sandbox, hang={"timeout_seconds": 0.2})
    try:
        [tool] = [t for t in function_tools(registry) if t.name == "hang"]
        assert isinstance(tool, FunctionTool)
        assert tool.timeout_seconds == pytest.approx(1.2)  # the SDK's backstop, after toolplug

        async def main() -> None:
            seen.hang_started = asyncio.Event()
            agent, model = agent_with(registry, call("hang", {}))
            await Runner.run(agent, "wait", run_config=NO_TRACES)
            error = json.loads(outputs(model)["call-1"])
            assert error["error_type"] == "TimeoutError"
            assert "0.2 s" in error["error_message"]
            assert error["retry_possible"] is True

        asyncio.run(main())
        assert seen.hang_cancelled
    finally:
        registry.close()


def _paused(registry: Registry) -> tuple[Agent[Any], ScriptedModel, RunResult]:
    arguments = strict(registry, "write_file", {"path": "todo.md", "content": "buy milk"})
    agent, model = agent_with(registry, call("write_file", arguments))
    result = run(agent, "save my todo")
    return agent, model, result


def test_a_destructive_call_waits_for_the_person_and_runs_once_approved(
    registry: Registry, sandbox: Path
) -> None:
    agent, model, paused = _paused(registry)
    [waiting] = paused.interruptions
    assert waiting.tool_name == "write_file"
    assert not (sandbox / "todo.md").exists()  # nothing ran before the person answered
    # The person answers later: the run's state is kept as text meanwhile.
    kept = paused.to_state().to_string()
    state = asyncio.run(RunState.from_string(agent, kept))
    [waiting] = state.get_interruptions()
    state.approve(waiting)
    resumed = run(agent, state)
    assert resumed.final_output == "done"
    assert (sandbox / "todo.md").read_text() == "buy milk"
    output = json.loads(outputs(model)["call-1"])
    assert output["output"].startswith("Created")  # toolplug did not ask again


def test_a_rejected_call_never_runs_and_the_model_reads_why(
    registry: Registry, sandbox: Path
) -> None:
    agent, model, paused = _paused(registry)
    [waiting] = paused.interruptions
    state = paused.to_state()
    state.reject(waiting, rejection_message="not today, the list is fine")
    assert run(agent, state).final_output == "done"
    assert not (sandbox / "todo.md").exists()
    assert outputs(model)["call-1"] == "not today, the list is fine"


def test_a_call_that_needs_no_approval_is_not_paused(registry: Registry) -> None:
    agent, _ = agent_with(registry, call("note", strict(registry, "note", {"text": "x"})))
    result = run(agent, "note")
    assert result.interruptions == []
    assert result.final_output == "done"


def test_toolplug_still_gates_a_tool_whose_approval_the_host_turned_off(
    registry: Registry, sandbox: Path
) -> None:
    # A host that sets needs_approval=False has not asked anyone: toolplug's own gate holds.
    tools = function_tools(registry)
    for tool in tools:
        assert isinstance(tool, FunctionTool)
        tool.needs_approval = False
    arguments = strict(registry, "write_file", {"path": "todo.md", "content": "buy milk"})
    model = ScriptedModel([call("write_file", arguments), [assistant_message("done")]])
    agent = Agent(name="assistant", model=model, tools=tools)
    run(agent, "save")
    assert json.loads(outputs(model)["call-1"])["error_type"] == "ApprovalRequiredError"
    assert not (sandbox / "todo.md").exists()


def test_approval_is_decided_per_call_on_the_restored_arguments(
    registry: Registry, seen: Seen
) -> None:
    # send's GET only reads: it runs unasked, also when a strict model sends method: null
    # (left out, so the default GET). Its POST changes something: the run stops for it.
    [tool] = [t for t in function_tools(registry) if t.name == "send"]
    assert isinstance(tool, FunctionTool)
    assert callable(tool.needs_approval)  # asked per call, not once per tool
    get = strict(registry, "send", {"path": "/status"})
    assert get == {"path": "/status", "method": None}
    post = strict(registry, "send", {"path": "/deploy", "method": "POST"})
    agent, _ = agent_with(registry, call("send", get), call("send", post, "call-2"))
    paused = run(agent, "check, then deploy")
    assert seen.sent == [{"path": "/status", "method": "GET"}]
    [waiting] = paused.interruptions
    assert waiting.tool_name == "send"
    assert json.loads(waiting.arguments or "{}") == post


def test_cancelling_the_run_cancels_the_tool(registry: Registry, seen: Seen) -> None:
    agent, _ = agent_with(registry, call("hang", {}))

    async def main() -> None:
        seen.hang_started = asyncio.Event()
        task = asyncio.create_task(Runner.run(agent, "wait", run_config=NO_TRACES))
        await seen.hang_started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen.hang_cancelled


def test_a_result_s_parts_reach_the_model_in_the_sdk_s_own_types(
    chart: Chart, caplog: pytest.LogCaptureFixture
) -> None:
    agent, model = agent_with(chart.registry, call("chart", {}))
    with caplog.at_level(logging.WARNING, logger="toolplug.integrations"):
        assert run(agent, "draw it").final_output == "done"
    # what the model was sent on its next turn: the Responses items of the tool's output
    [output] = [
        item["output"] for recorded in model.calls if isinstance(recorded.input, list)
        for item in recorded.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    body, picture, recording, report, text, link = output
    assert body["type"] == "input_text"
    assert json.loads(body["text"]) == {"output": "The chart of March.", "data": {"month": "March"}}
    assert picture["type"] == "input_image"
    head, encoded = picture["image_url"].split(",", 1)
    assert head == "data:image/png;base64"
    assert base64.b64decode(encoded) == chart.png
    assert report["type"] == "input_file"
    assert report["filename"] == "march.pdf"
    assert base64.b64decode(report["file_data"].split(",", 1)[1]) == chart.pdf
    assert text == {"type": "input_text", "text": "Sales rose 4%."}
    assert link["text"] == "[resource: march.csv at file:///reports/march.csv, text/csv]"
    # the SDK has no audio type: the model reads what the recording was, and the host is told
    assert recording == {"type": "input_text", "text": "[audio: audio/wav, 1.6 KB]"}
    [warned] = caplog.records
    assert "cannot carry the audio part 1 of chart's result" in warned.getMessage()
