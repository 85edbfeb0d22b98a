"""toolplug.integrations.llm: the ``Toolplug`` toolbox in real chains of llm's own test model
(``echo``, from llm-echo: a prompt of JSON names the tool calls, and its reply shows the
system prompt and the tool results it was given), and the real ``llm`` command line.

What the model is offered (schemas, the section), what it reads back (text; errors as text),
the data the host keeps, approvals through ``before_call`` and through ``PauseChain``, and
cancellation.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import llm
import pytest

import toolplug
import toolplug.integrations.llm as integration
from tests.helpers.agent_tools import NOTE_PARAMETERS, Watch
from tests.helpers.integrations import Chart
from toolplug import Approval, ApprovalRequest, optional_tools_section
from toolplug.integrations.llm import (
    Toolplug,
    approve_calls,
    pause_until_decided,
    system_prompt,
    toolbox,
)

LLM = [sys.executable, "-m", "llm"]


@pytest.fixture(autouse=True)
def _llm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """llm keeps its logs and keys here, not in the developer's home."""
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))


def calls(*calls: tuple[str, dict[str, Any]]) -> str:
    """The echo model's prompt that makes it call these tools."""
    return json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in calls]})


def tool_results(chain: Any) -> list[dict[str, Any]]:
    """The tool results the echo model was given on the chain's last turn."""
    *_, last = chain.responses()
    results: list[dict[str, Any]] = json.loads(last.text())["tool_results"]
    return results


def test_the_toolbox_offers_every_tool_with_its_schema_intact(
    registry: toolplug.Registry,
) -> None:
    tools = {t.name: t for t in toolbox(registry).tools()}
    assert sorted(tools) == ["erase", "notes", "send", "wait"]
    assert tools["notes"].input_schema == NOTE_PARAMETERS
    assert tools["notes"].description == (
        "Look up short notes about a topic.\n\nUse when the user asks about tides."
    )
    assert [t.name for t in toolbox(registry, task="look up tides", max_tools=1).tools()] == [
        "notes"
    ]


def test_a_call_gives_the_model_text_and_the_host_data(
    registry: toolplug.Registry, watch: Watch
) -> None:
    box = toolbox(registry)
    chain = llm.get_model("echo").chain(calls(("notes", {"topic": "tides"})), tools=[box])
    [result] = tool_results(chain)
    assert result["output"] == (
        "High tide at 06:10.\nLow tide at 12:25.\n\n"
        "Warning: 1 more; call notes again with a higher limit"
    )
    assert box.results[result["tool_call_id"]].data == {
        "topic": "tides", "notes": ["High tide at 06:10.", "Low tide at 12:25."]
    }
    assert watch.runs == [("notes", {"topic": "tides", "limit": 2})]


def test_a_tool_error_is_text_the_model_acts_on(registry: toolplug.Registry) -> None:
    chain = llm.get_model("echo").chain(
        calls(
            ("notes", {"topic": "moon"}),  # the tool's error
            ("notes", {"topic": ""}),  # the schema's error
            ("notes", {"topic": "tides"}),
        ),
        tools=[toolbox(registry)],
    )
    missing, invalid, found = tool_results(chain)
    assert missing["output"] == (
        'Error: {"error": true, "error_type": "NotFoundError", "error_message": "no notes '
        "about 'moon'; known topics: tides\", \"retry_possible\": false}"
    )
    assert invalid["output"].startswith('Error: {"error": true, "error_type": "ValidationError"')
    assert "Traceback" not in invalid["output"]
    assert "ToolResult(" not in invalid["output"]
    assert found["output"].startswith("High tide")  # the chain went on


def test_the_section_reaches_the_system_prompt(registry: toolplug.Registry) -> None:
    section = system_prompt(registry)
    assert section == optional_tools_section(registry)
    chain = llm.get_model("echo").chain(
        calls(("notes", {"topic": "tides"})), tools=[toolbox(registry)], system=section
    )
    first, *_ = chain.responses()
    assert json.loads(first.text())["system"] == section.strip()
    assert "### notes" in section
    assert "**Needs approval:**" in section


# -- approvals -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decision", "ran", "output"),
    [
        # the person says yes: the call runs, and toolplug does not ask a second time
        (True, [("erase", {"name": "old"})], "erased old"),
        # the person says no: llm cancels the call and the model reads why
        (
            Approval.deny("keep it"),
            [],
            "Cancelled: the person approving it denied the call of erase: keep it. Do not "
            "retry it; tell the user.",
        ),
    ],
)
def test_before_call_is_the_one_gate(
    registry: toolplug.Registry, watch: Watch, decision: Any, ran: Any, output: str
) -> None:
    asked: list[ApprovalRequest] = []

    def ask(request: ApprovalRequest) -> Any:
        asked.append(request)
        return decision

    chain = llm.get_model("echo").chain(
        calls(("notes", {"topic": "tides"}), ("erase", {"name": "old"})),
        tools=[toolbox(registry)],
        before_call=approve_calls(ask),
    )
    notes, erase = tool_results(chain)
    assert [r.tool for r in asked] == ["erase"]  # notes is read-only: nobody was asked
    assert asked[0].call_id == erase["tool_call_id"]
    assert "annotated destructive" in asked[0].reason
    assert erase["output"] == output
    assert [r for r in watch.runs if r[0] == "erase"] == ran
    assert notes["output"].startswith("High tide")


def test_before_call_asks_per_call(registry: toolplug.Registry, watch: Watch) -> None:
    asked: list[dict[str, Any]] = []

    def ask(request: ApprovalRequest) -> bool:
        asked.append(dict(request.arguments))
        return True

    chain = llm.get_model("echo").chain(
        calls(("send", {"method": "GET"}), ("send", {"method": "POST", "body": "hi"})),
        tools=[toolbox(registry)],
        before_call=approve_calls(ask),
    )
    assert [r["output"] for r in tool_results(chain)] == ["GET done", "POST done"]
    assert asked == [{"method": "POST", "body": "hi"}]  # a GET is read-only: not asked


def test_the_person_asked_never_sees_a_secret(registry: toolplug.Registry, watch: Watch) -> None:
    registry.redactor.add("s3cret-name-value")  # as a configured secret would be
    asked: list[dict[str, Any]] = []

    def ask(request: ApprovalRequest) -> bool:
        asked.append(dict(request.arguments))
        return True

    chain = llm.get_model("echo").chain(
        calls(("erase", {"name": "old s3cret-name-value"})),
        tools=[toolbox(registry)],
        before_call=approve_calls(ask),
    )
    [erase] = tool_results(chain)
    assert asked == [{"name": "old ***"}]
    assert erase["output"] != ""
    ran = [arguments for name, arguments in watch.runs if name == "erase"]
    assert ran == [{"name": "old s3cret-name-value"}]  # the tool itself got the real value


def test_before_call_may_ask_asynchronously(registry: toolplug.Registry, watch: Watch) -> None:
    async def ask(request: ApprovalRequest) -> Approval:
        await asyncio.sleep(0)
        return Approval.approve()

    async def main() -> str:
        chain = llm.get_async_model("echo").chain(
            calls(("erase", {"name": "old"})),
            tools=[toolbox(registry)],
            before_call=approve_calls(ask),
        )
        replies = [await response.text() async for response in chain.responses()]
        return replies[-1]

    [erase] = json.loads(asyncio.run(main()))["tool_results"]
    assert erase["output"] == "erased old"
    assert watch.runs == [("erase", {"name": "old"})]


@pytest.mark.parametrize(
    ("decision", "ran", "output"),
    [
        (True, [("erase", {"name": "old"})], "erased old"),
        (False, [], "denied by the person approving it"),
    ],
)
def test_pause_chain_stops_for_a_person_and_resumes(
    registry: toolplug.Registry, watch: Watch, decision: bool, ran: Any, output: str
) -> None:
    model = llm.get_model("echo")
    decisions: dict[str, bool] = {}
    box = toolbox(registry, approver=pause_until_decided(decisions))
    chain = model.chain(calls(("erase", {"name": "old"})), tools=[box])
    seen: list[Any] = []
    with pytest.raises(llm.PauseChain) as stop:  # crossed toolplug unchanged
        seen.extend(chain.responses())
    [paused] = seen
    call = stop.value.tool_call
    assert call is not None
    assert call.name == "erase"
    assert "annotated destructive" in str(stop.value)
    assert watch.runs == []
    assert call.tool_call_id is not None
    decisions[call.tool_call_id] = decision
    history = [*paused.prompt.messages, *paused.messages()]
    resumed = model.chain(messages=history, tools=[box])
    [erase] = tool_results(resumed)
    assert output in erase["output"]
    assert watch.runs == ran


# -- cancellation --------------------------------------------------------------------


def test_cancelling_the_chain_stops_the_tool(registry: toolplug.Registry, watch: Watch) -> None:
    async def main() -> None:
        watch.started = asyncio.Event()
        chain = llm.get_async_model("echo").chain(
            calls(("wait", {})), tools=[toolbox(registry)]
        )
        task = asyncio.create_task(chain.text())
        await asyncio.wait_for(watch.started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert watch.cancelled == ["wait"]


# -- the plugin, through llm's command line --------------------------------------------


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, str]:
    """An environment where toolplug loads only toolplug-files, sandboxed in tmp_path."""
    cache = tmp_path / "cache"
    state = tmp_path / "state"
    config = tmp_path / "toolplug.toml"
    config.write_text(
        "".join(
            f'[tools.{name}]\ncache_dir = "{cache}"\nstate_dir = "{state}"\n'
            for name in ("read_file", "write_file")
        )
        + 'approval = "never"\n',  # write_file runs unasked: the CLI has no one to ask here
        encoding="utf-8",
    )
    return {
        **os.environ,
        "TOOLPLUG_PLUGINS": "toolplug-files",
        "TOOLPLUG_CONFIG": str(config),
        "LLM_USER_PATH": str(tmp_path / "llm-home"),
    }


def llm_command(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [*LLM, *args], capture_output=True, text=True, env=env, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_llm_tools_list_shows_the_toolbox_and_its_tools(sandbox: dict[str, str]) -> None:
    shown = llm_command("tools", "list", env=sandbox)
    assert "Toolplug(toolset: " in shown
    assert "(plugin: toolplug)" in shown
    assert "read_file(*, path: str, offset: int = 0, max_chars: int = 20000" in shown
    assert "write_file(*, path: str, content: str, mode: str = 'overwrite'" in shown
    listed = json.loads(llm_command("tools", "list", "--json", env=sandbox))
    [box] = [b for b in listed["toolboxes"] if b["name"] == "Toolplug"]
    files = toolplug.load(env=sandbox)
    try:
        for tool in box["tools"]:
            assert tool["arguments"] == files.get(tool["name"]).metadata.parameters
    finally:
        files.close()
    assert sorted(t["name"] for t in box["tools"]) == ["read_file", "write_file"]


def test_llm_runs_the_tools_with_the_section_as_system_prompt(
    sandbox: dict[str, str], tmp_path: Path
) -> None:
    prompt = calls(
        ("write_file", {"path": "notes/a.md", "content": "hello"}),
        ("read_file", {"path": "notes/a.md"}),
        ("read_file", {"path": "notes/missing.md"}),
    )
    out = llm_command("-m", "echo", "-T", "Toolplug", "--sf", "toolplug:", prompt, env=sandbox)
    last = json.loads(out[out.rindex('{\n  "prompt"') :])
    assert last["system"].startswith("# Optional Tools")
    assert "### write_file" in last["system"]
    wrote, read, missing = last["tool_results"]
    assert "notes/a.md" in wrote["output"]
    assert read["output"].startswith("hello")
    assert missing["output"].startswith('Error: {"error": true, "error_type": "NotFoundError"')
    assert (tmp_path / "cache" / "notes" / "a.md").read_text(encoding="utf-8") == "hello"


def on_a_terminal(env: dict[str, str], answer: bytes, *args: str) -> tuple[int, str, str]:
    """Run ``llm ARGS`` with a pseudo-terminal as stdin and stderr; answer its prompt."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*LLM, *args], stdin=follower, stdout=subprocess.PIPE, stderr=follower, env=env
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"[y/N]" not in seen:
            assert time.monotonic() < deadline, seen
            ready, _, _ = select.select([leader], [], [], 1)
            if ready:
                seen += os.read(leader, 4096)
        os.write(leader, answer)
        out, _ = process.communicate(timeout=60)
    finally:
        process.kill()
        os.close(leader)
    return process.returncode, seen.decode(), out.decode()


@pytest.mark.parametrize(
    ("answer", "written", "output"),
    [
        (b"y\n", True, "Created file_cache_dir/a.md (5 bytes)."),
        (b"n\n", False, "denied by the person approving it"),
    ],
)
def test_on_a_terminal_the_command_line_asks_the_person(
    sandbox: dict[str, str], tmp_path: Path, answer: bytes, written: bool, output: str
) -> None:
    config = Path(sandbox["TOOLPLUG_CONFIG"])
    config.write_text(  # write_file needs approval again
        config.read_text(encoding="utf-8").replace('approval = "never"\n', ""), encoding="utf-8"
    )
    prompt = calls(("write_file", {"path": "a.md", "content": "hello"}))
    code, asked, out = on_a_terminal(sandbox, answer, "-m", "echo", "-T", "Toolplug", prompt)
    assert code == 0, asked + out
    assert "write_file (Write or append text to a file" in asked
    assert "approval is needed because it may destroy or overwrite data" in asked
    last = json.loads(out[out.rindex('{\n  "prompt"') :])
    [result] = last["tool_results"]
    assert output in result["output"]
    assert (tmp_path / "cache" / "a.md").exists() is written


def test_the_fragment_takes_the_selection_options(
    sandbox: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("TOOLPLUG_PLUGINS", "TOOLPLUG_CONFIG"):
        monkeypatch.setenv(name, sandbox[name])
    monkeypatch.setattr(integration, "_DEFAULT", {})  # the command line's registry, anew
    load = llm.get_fragment_loaders()["toolplug"]
    section = load("task=read+a+file&max_tools=1")
    assert isinstance(section, llm.Fragment)
    assert "### read_file" in section
    assert "### write_file" not in section
    assert section.source == "toolplug:task=read+a+file&max_tools=1"
    assert "### write_file" in str(load(""))
    with pytest.raises(ValueError, match="unknown option 'colour'; use toolset, task or max_tools"):
        load("colour=red")
    with pytest.raises(ValueError, match="max_tools=many: max_tools takes a whole number"):
        load("max_tools=many")


# -- installing ----------------------------------------------------------------------


def test_without_llm_the_import_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "toolplug.integrations.llm")
    monkeypatch.setitem(sys.modules, "llm", None)  # as if not installed
    with pytest.raises(ImportError, match=r'pip install "toolplug\[llm\]"'):
        importlib.import_module("toolplug.integrations.llm")


def test_the_toolbox_class_is_what_llm_registers() -> None:
    assert llm.get_tools()["Toolplug"] is Toolplug


def test_llm_starts_without_loading_toolplugs_engine() -> None:
    """llm imports every plugin for every command; toolplug's costs it next to nothing."""
    script = (
        "import json, sys, llm\n"
        "tools = llm.get_tools()\n"
        "plugins = {p['name']: sorted(p['hooks']) for p in llm.get_plugins()}\n"
        "print(json.dumps([plugins.get('toolplug'), 'Toolplug' in tools,"
        " sorted(m for m in sys.modules"
        " if m.startswith(('toolplug.engine', 'toolplug.state')))]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    hooks, registered, engine = json.loads(done.stdout)
    assert hooks == ["register_fragment_loaders", "register_tools"]
    assert registered
    assert engine == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_result_s_parts_reach_the_model_as_attachments(chart: Chart, mode: str) -> None:
    prompt = calls(("chart", {}))
    if mode == "async":

        async def chained() -> Any:
            chain = llm.get_async_model("echo").chain(prompt, tools=[toolbox(chart.registry)])
            return [response async for response in chain.responses()][-1]

        last = asyncio.run(chained())
        reply = json.loads(asyncio.run(last.text()))
    else:
        chain = llm.get_model("echo").chain(prompt, tools=[toolbox(chart.registry)])
        *_, last = chain.responses()
        reply = json.loads(last.text())
    [result] = reply["tool_results"]
    assert result["output"] == (
        "The chart of March.\n\nSales rose 4%.\n\n"
        "[resource: march.csv at file:///reports/march.csv, text/csv]"
    )
    # what the echo model was given with the results: the three files, as attachments
    given = [(a.type, a.content) for a in last.prompt.attachments]
    assert given == [
        ("image/png", chart.png), ("audio/wav", chart.wav), ("application/pdf", chart.pdf)
    ]
    assert [a["id"] for a in reply["attachments"]] == [
        hashlib.sha256(data).hexdigest() for data in (chart.png, chart.wav, chart.pdf)
    ]
