"""The trust labels' registration checks (``validate_tool_metadata``): sinks and refs name
top-level parameters, and every ref is a sink; a plugin that breaks them is reported."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import toolplug
from toolplug import MetadataError, Tool, ToolContext, ToolMetadata, ToolResult, Trust
from toolplug.contract._metadata import BUILTIN_CATEGORIES, validate_tool_metadata

PARAMETERS = {
    "type": "object",
    "properties": {"channel": {"type": "string"}, "body": {"type": "string"}},
}


def _metadata(trust: Trust) -> ToolMetadata:
    return ToolMetadata(
        name="send_to_channel",
        description="Post a message to a channel.",
        category="publish",
        parameters=PARAMETERS,
        trust=trust,
    )


def _check(trust: Trust) -> None:
    validate_tool_metadata(
        _metadata(trust), known_categories={c.name for c in BUILTIN_CATEGORIES}, plugin="chat"
    )


def test_refs_among_the_sinks_pass() -> None:
    _check(Trust(output="trusted", sinks=("channel", "body"), refs=("channel",)))
    _check(Trust(output="trusted", sinks=("channel",)))  # no refs: as before


@pytest.mark.parametrize(
    ("trust", "field", "message"),
    [
        # a ref is a sink whose value names something: one that is no sink is a mistake
        (
            Trust(output="trusted", sinks=("body",), refs=("channel",)),
            "trust.refs",
            "trust.refs names channel, not among trust.sinks ['body']; a ref is a sink whose "
            "value names something the service holds: add it to sinks too",
        ),
        # a ref that is no parameter at all, even when listed among the sinks
        (
            Trust(output="trusted", sinks=("channel", "room"), refs=("room",)),
            "trust.sinks",
            "trust.sinks names room, not a top-level parameter",
        ),
        (
            Trust(output="trusted", sinks=("channel",), refs=("room",)),
            "trust.refs",
            "trust.refs names room, not a top-level parameter; refs must be among "
            "['body', 'channel']",
        ),
    ],
)
def test_bad_refs_name_the_field(trust: Trust, field: str, message: str) -> None:
    with pytest.raises(MetadataError) as caught:
        _check(trust)
    assert message in str(caught.value)
    assert caught.value.tool == "send_to_channel"
    assert caught.value.plugin == "chat"
    assert caught.value.field == field


def test_a_plugin_whose_ref_is_no_sink_is_reported_not_loaded() -> None:
    class Send(Tool):
        metadata = _metadata(Trust(output="trusted", sinks=("body",), refs=("channel",)))

        async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            return ToolResult.success("sent")

    registry = toolplug.load(
        {},
        env={"TOOLPLUG_PLUGINS": ""},
        plugins=[("chat", SimpleNamespace(register_tools=toolplug.provides(Send)))],
    )
    assert "send_to_channel" not in registry.tools
    [problem] = [p for p in registry.problems if p.kind == "metadata"]
    assert problem.message.endswith("(field trust.refs)")
    assert "not among trust.sinks" in problem.message


@pytest.mark.parametrize(
    ("trust", "field", "message"),
    [
        (
            Trust(output="trusted", sinks=("body",), destinations=("channel",)),
            "trust.destinations",
            "trust.destinations names channel, not among trust.sinks ['body']; a destination "
            "is a sink whose value says where the call goes: add it to sinks too",
        ),
        (
            Trust(output="trusted", sinks=("channel",), destinations=("to",)),
            "trust.destinations",
            "trust.destinations names to, not a top-level parameter; destinations must be "
            "among ['body', 'channel']",
        ),
    ],
)
def test_bad_destinations_name_the_field(trust: Trust, field: str, message: str) -> None:
    _check(Trust(output="trusted", sinks=("channel", "body"), destinations=("channel",)))
    with pytest.raises(MetadataError) as caught:
        _check(trust)
    assert message in str(caught.value)
    assert caught.value.field == field
