"""Approvals: which calls wait for a person, who is asked, and what each answer does.

The Python API (sync and async approvers, the order they are asked in, the hook, deny, no
approver, plans), the command line (a real pseudo-terminal, --yes, no terminal) and MCP
(a client that answers elicitation, one that declines, one that cannot be asked).
"""

from __future__ import annotations

import asyncio
import logging
import os
import pty
import select
import subprocess
import sys
import time
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import stdio_client

import toolplug
from tests.helpers.cli import Site
from toolplug import Approval, ApprovalRequest, ConfigError, ErrorType, hookimpl

TOKEN = "tok-93c1f0a7e2"

TOOLS = '''
from typing import Any

from toolplug import Annotations, ConfigField, Tool, ToolMetadata, ToolResult, hookimpl

RAN: list[str] = []


class Post(Tool):
    metadata = ToolMetadata(
        name="post",
        description="Publish a short message.",
        category="publish",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        config_fields=(
            ConfigField(
                name="token", type="string", description="Token", secret=True,
                env_var="POST_TOKEN", required=False,
            ),
        ),
        annotations=Annotations(read_only=False, destructive=False, open_world=True),
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        RAN.append(arguments["text"])
        return ToolResult.success(f"posted: {arguments['text']}")


class Wipe(Tool):
    metadata = ToolMetadata(
        name="wipe",
        description="Erase the scratch area.",
        category="utility",
        annotations=Annotations(read_only=False, destructive=True, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        RAN.append("wipe")
        return ToolResult.success("wiped")


class Peek(Tool):
    metadata = ToolMetadata(
        name="peek",
        description="Read the scratch area.",
        category="utility",
        annotations=Annotations(read_only=True, open_world=False),
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        RAN.append("peek")
        return ToolResult.success("nothing there")


@hookimpl
def register_tools(register: Any) -> None:
    for tool in (Post, Wipe, Peek):
        register(tool)
'''


@pytest.fixture
def tools_module(site: Site, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The test tools as an installed distribution (also importable here)."""
    site.add("approval-tools", entry_points={"t": "approval_tools"},
             modules={"approval_tools": TOOLS})
    monkeypatch.syspath_prepend(str(site.path))
    import approval_tools  # type: ignore[import-not-found]

    approval_tools.RAN.clear()
    yield approval_tools
    sys.modules.pop("approval_tools", None)


def load(tools_module: Any, config: dict[str, Any] | None = None, **options: Any) -> Any:
    return toolplug.load(
        config or {},
        env={"TOOLPLUG_PLUGINS": "", "POST_TOKEN": TOKEN},
        plugins=[("approval_tools", tools_module)],
        **options,
    )


# -- the rule ------------------------------------------------------------------------


def test_which_tools_need_approval(tools_module: Any) -> None:
    registry = load(tools_module)
    assert registry.call("peek").ok  # read-only: runs unasked
    for name, arguments in (("post", {"text": "hi"}), ("wipe", {})):
        result = registry.call(name, arguments)
        assert result.error is not None
        assert result.error.type == ErrorType.APPROVAL_REQUIRED
        assert result.error.retry_possible is False
    assert tools_module.RAN == ["peek"]


def test_the_policy_setting_overrides_the_rule(tools_module: Any) -> None:
    registry = load(
        tools_module,
        {"tools": {"post": {"approval": "never"}, "peek": {"approval": "always"}}},
    )
    assert registry.call("post", {"text": "hi"}).ok
    asked = registry.call("peek")
    assert asked.error is not None
    assert asked.error.type == ErrorType.APPROVAL_REQUIRED
    assert asked.error.details["reason"] == '[tools.peek] approval = "always"'
    with pytest.raises(ConfigError, match="approval"):
        load(tools_module, {"tools": {"post": {"approval": "sometimes"}}})


def test_the_required_error_is_short_for_the_model_and_the_log_says_how_to_approve(
    tools_module: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="toolplug"):
        result = load(tools_module).call("post", {"text": f"my token is {TOKEN}"})
    assert result.error is not None
    # the model's: short, and nothing of the configuration
    assert result.error.message == (
        "post needs a person's approval, and nobody here could give it: the call did not "
        "run. Tell the user."
    )
    # the host's: why and how, in the details and the log, secrets replaced
    details = result.error.details
    assert details["arguments"] == {"text": "my token is ***"}
    assert details["reason"].startswith("it changes something outside this session")
    for text in (details["advice"], caplog.text):
        assert "--yes" in text
        assert "approver" in text
        assert '[tools.post] approval = "never"' in text
    assert 'post (Publish a short message) would run with {"text": "my token is ***"}' in (
        caplog.text
    )
    assert TOKEN not in caplog.text


# -- approvers -----------------------------------------------------------------------


def test_an_approver_on_the_call_decides(tools_module: Any) -> None:
    registry = load(tools_module)
    seen: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        seen.append(request)
        return True

    result = registry.call("post", {"text": "hello"}, approver=approve,
                           context={"call_id": "c-1"})
    assert result.ok
    assert result.output == "posted: hello"
    [request] = seen
    assert (request.tool, dict(request.arguments), request.call_id) == (
        "post", {"text": "hello"}, "c-1"
    )
    assert "not read-only, open-world" in request.reason

    denied = registry.call("wipe", {}, approver=lambda r: Approval.deny("not today"))
    assert denied.error is not None
    assert denied.error.type == ErrorType.PERMISSION
    assert "not today" in denied.error.message
    assert tools_module.RAN == ["hello"]


def test_async_approvers_on_sync_and_async_calls(tools_module: Any) -> None:
    registry = load(tools_module)

    async def slow_yes(request: ApprovalRequest) -> Approval:
        await asyncio.sleep(0.01)
        return Approval.approve()

    assert registry.call("wipe", {}, approver=slow_yes).ok
    assert asyncio.run(registry.acall("post", {"text": "a"}, approver=slow_yes)).ok
    assert tools_module.RAN == ["wipe", "a"]


def test_approvers_are_asked_call_then_load_then_hook(tools_module: Any) -> None:
    order: list[str] = []

    def passing(label: str) -> Any:
        def decide(request: ApprovalRequest) -> None:
            order.append(label)

        return decide

    class Hook:
        @hookimpl
        async def approve_call(self, request: ApprovalRequest) -> Approval:
            order.append("hook")
            return Approval.deny("the hook says no")

    registry = toolplug.load(
        {},
        env={"TOOLPLUG_PLUGINS": ""},
        plugins=[("approval_tools", tools_module), ("hook", Hook())],
        approver=passing("load"),
    )
    result = registry.call("wipe", {}, approver=passing("call"))
    assert order == ["call", "load", "hook"]
    assert result.error is not None
    assert "the hook says no" in result.error.message

    order.clear()
    assert registry.call("wipe", {}, approver=lambda r: True).ok
    assert order == []  # the first decision wins


def test_a_failing_approver_stops_the_call_not_the_host(tools_module: Any) -> None:
    def broken(request: ApprovalRequest) -> bool:
        raise RuntimeError("approval service down")

    result = load(tools_module).call("wipe", {}, approver=broken)
    assert result.error is not None
    assert result.error.type == ErrorType.EXECUTION
    assert "approval service down" in result.error.message
    strange = load(tools_module).call("wipe", {}, approver=lambda r: "yes")
    assert strange.error is not None
    assert "expected an Approval" in strange.error.message
    assert tools_module.RAN == []


def test_a_denied_plan_step_fails_and_its_dependents_are_skipped(tools_module: Any) -> None:
    plan = [
        {"id": 1, "action": "peek", "parameters": {}},
        {"id": 2, "action": "wipe", "parameters": {}, "dependencies": [1]},
        {"id": 3, "action": "post", "parameters": {"text": "done"}, "dependencies": [2]},
    ]
    registry = load(tools_module)
    outcome = asyncio.run(
        toolplug.run_plan(registry, plan, approver=lambda r: Approval.deny("no wiping"))
    )
    statuses = [step.status for step in outcome.steps]
    assert statuses[0] == "ok"
    assert statuses[1] == "failed"
    assert statuses[2] == "skipped"
    assert tools_module.RAN == ["peek"]


def test_the_prompt_and_reference_docs_say_which_tools_need_approval(tools_module: Any) -> None:
    registry = load(tools_module)
    section = toolplug.optional_tools_section(registry)
    post = section[section.index("### post"):]
    post = post[: post.find("###", 4)] if "###" in post[4:] else post
    assert "**Needs approval:**" in post
    peek = section[section.index("### peek"):]
    assert "**Needs approval:**" not in peek[: peek.find("###", 4)]


# -- the command line ----------------------------------------------------------------


def cli_env(site: Site) -> dict[str, str]:
    return site.env(TOOLPLUG_PLUGINS="approval-tools", POST_TOKEN=TOKEN)


def test_cli_without_a_terminal_refuses_and_yes_approves(
    tools_module: Any, site: Site, cli: Any
) -> None:
    refused = cli("call", "post", "text=hi", env=cli_env(site))
    assert refused.code == 1
    assert "ApprovalRequiredError" in refused.err
    assert "--yes" in refused.err
    approved = cli("call", "post", "text=hi", "--yes", env=cli_env(site))
    assert approved.code == 0, approved.err
    assert approved.out.strip() == "posted: hi"


def on_a_terminal(site: Site, answer: bytes, *args: str) -> tuple[int, str]:
    """Run ``toolplug ARGS`` with a pseudo-terminal as stdin and stderr; answer the prompt."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "toolplug", *args],
        stdin=follower, stdout=subprocess.PIPE, stderr=follower, env=cli_env(site),
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"[y/N" not in seen:
            assert time.monotonic() < deadline, seen
            ready, _, _ = select.select([leader], [], [], 1)
            if ready:
                seen += os.read(leader, 4096)
        os.write(leader, answer)
        out, _ = process.communicate(timeout=60)
    finally:
        process.kill()
        os.close(leader)
    return process.returncode, seen.decode() + out.decode()


def test_cli_asks_on_a_terminal(tools_module: Any, site: Site) -> None:
    code, text = on_a_terminal(site, b"y\n", "call", "post", "text=hello")
    assert code == 0, text
    assert "post (Publish a short message) would run with" in text
    assert TOKEN not in text
    assert "posted: hello" in text
    code, text = on_a_terminal(site, b"n\n", "call", "wipe")
    assert code == 1


# -- MCP -------------------------------------------------------------------------------


def mcp_session(site: Site, elicit: Any) -> dict[str, types.CallToolResult]:
    from mcp import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolplug", "serve"], env=cli_env(site)
    )

    async def session() -> dict[str, types.CallToolResult]:
        with anyio.fail_after(60):
            async with (
                stdio_client(params, errlog=sys.stderr) as (read, write),
                ClientSession(read, write, elicitation_callback=elicit) as client,
            ):
                await client.initialize()
                return {
                    "post": await client.call_tool("post", {"text": "over mcp"}),
                    "peek": await client.call_tool("peek", {}),
                }

    return anyio.run(session)


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    """The error's fields, which an MCP error result carries in its ``_meta``."""
    assert result.is_error
    assert result.meta is not None
    found: dict[str, Any] = result.meta["toolplug/error"]
    return found


@pytest.mark.parametrize(("answer", "expected"), [
    (types.ElicitResult(action="accept", content={"approve": True}), None),
    (types.ElicitResult(action="accept", content={"approve": False}), "PermissionError"),
    (types.ElicitResult(action="decline"), "PermissionError"),
])
def test_mcp_asks_a_client_that_supports_elicitation(
    tools_module: Any, site: Site, answer: types.ElicitResult, expected: str | None
) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return answer

    results = mcp_session(site, elicit)
    [message] = asked  # peek needed no approval
    assert message.startswith("post (Publish a short message) would run with")
    if expected is None:
        assert not results["post"].is_error
    else:
        assert error_of(results["post"])["error_type"] == expected
    assert not results["peek"].is_error


def test_mcp_without_elicitation_returns_the_error(tools_module: Any, site: Site) -> None:
    results = mcp_session(site, None)
    error = error_of(results["post"])
    assert error["error_type"] == "ApprovalRequiredError"
    assert error["retry_possible"] is False
    assert not results["peek"].is_error

