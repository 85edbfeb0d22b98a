"""The export option ``code_execution``: tools callable from the provider's own sandbox,
checked against the provider SDKs' request types."""

from __future__ import annotations

import os
from typing import Any

import anthropic
import pytest
from openai.types.beta.beta_function_tool_param import BetaFunctionToolParam
from openai.types.beta.beta_tool_param import BetaToolParam, ProgrammaticToolCalling
from pydantic import TypeAdapter

import toolplug

ANTHROPIC_TOOLS: TypeAdapter[Any] = TypeAdapter(list[anthropic.types.ToolUnionParam])
RESPONSES_TOOLS: TypeAdapter[Any] = TypeAdapter(list[BetaToolParam])


@pytest.fixture
def registry() -> toolplug.Registry:
    return toolplug.load(env={"TOOLPLUG_PLUGINS": "toolplug-citations,toolplug-readability"})


def test_anthropic_tools_are_callable_from_code_execution(registry: toolplug.Registry) -> None:
    exported = toolplug.export_tools(registry, "anthropic", code_execution=True)
    ANTHROPIC_TOOLS.validate_python(exported)
    *tools, code = exported
    assert [t["name"] for t in tools] == ["citations", "readability"]
    for tool in tools:
        assert tool["allowed_callers"] == ["direct", "code_execution_20260521"]
        assert set(tool) <= set(anthropic.types.ToolParam.__annotations__)
    assert code == {"type": "code_execution_20260521", "name": "code_execution"}
    # without the option, nothing changes
    assert "allowed_callers" not in toolplug.export_tools(registry, "anthropic")[0]


def test_openai_responses_functions_are_callable_programmatically(
    registry: toolplug.Registry,
) -> None:
    exported = toolplug.export_tools(registry, "openai-responses", code_execution=True)
    RESPONSES_TOOLS.validate_python(exported)
    *tools, code = exported
    for tool in tools:
        assert tool["allowed_callers"] == ["direct", "programmatic"]
        assert set(tool) <= set(BetaFunctionToolParam.__annotations__) | {"async"}
    assert code == {"type": "programmatic_tool_calling"}
    assert set(code) <= set(ProgrammaticToolCalling.__annotations__)


def test_deferred_tools_are_marked_too(registry: toolplug.Registry) -> None:
    exported = toolplug.export_tools(
        registry, "anthropic", code_execution=True, max_tools=1, task="readability"
    )
    ANTHROPIC_TOOLS.validate_python(exported)
    functions = [t for t in exported if "input_schema" in t]
    assert len(functions) == 2
    assert all(t["allowed_callers"] for t in functions)


@pytest.mark.parametrize("fmt", ["openai", "gemini", "gemini-openapi", "mcp"])
def test_other_formats_refuse_the_option(registry: toolplug.Registry, fmt: str) -> None:
    with pytest.raises(ValueError, match="code_execution applies to anthropic and openai"):
        toolplug.export_tools(registry, fmt, code_execution=True)


def test_explain_lists_the_added_callers(cli: Any) -> None:
    env = {**os.environ, "TOOLPLUG_PLUGINS": "toolplug-readability"}
    done = cli("schema", "--format", "anthropic", "--code-execution", "--explain", env=env)
    assert done.code == 0, done.err
    assert (
        "/  allowed_callers  added: ['direct', 'code_execution_20260521']: callable directly "
        "and from the provider's code_execution_20260521 tool"
    ) in done.out
    refused = cli("schema", "--format", "mcp", "--code-execution", env=env)
    assert refused.code == 2
    assert "code_execution applies to anthropic and openai-responses, not 'mcp'" in refused.err
