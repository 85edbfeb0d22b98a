"""Bounded replies to careless and hostile callers: output budgets and input limits.

Each case here is one that failed before the limits existed: errors that repeated a 20 MB
argument, megabytes of output handed to the model, deep documents that crashed the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolplug
from tests.conftest import Run
from toolplug import ConfigError, ErrorType, Tool, ToolFailure, ToolMetadata, ToolResult
from toolplug.calls._limits import (
    DEFAULT_OUTPUT_CHARS,
    MAX_ARGUMENT_CHARS,
    MAX_ARGUMENT_DEPTH,
)

OPEN = {"type": "object", "properties": {}, "additionalProperties": True}


class Echo(Tool):
    """Fails with a message that repeats its argument, as careless tools do."""

    metadata = ToolMetadata(
        name="echo_fail", description="Fail, quoting the text.", category="utility",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        raise ToolFailure("NotFoundError", f"no such entry: {arguments['text']}")


class Flood(Tool):
    metadata = ToolMetadata(
        name="flood", description="Return as much as asked.", category="utility",
        parameters={
            "type": "object",
            "properties": {"chars": {"type": "integer"}, "items": {"type": "integer"}},
        },
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        items = arguments.get("items", 0)
        data = {"rows": [{"n": i, "text": "y" * 50} for i in range(items)], "note": "z" * 5000}
        return ToolResult.success("x" * arguments.get("chars", 0), data if items else None)


class Pager(Flood):
    metadata = ToolMetadata(
        name="pager", description="Return text in parts.", category="utility",
        parameters={"type": "object", "properties": {"offset": {"type": "integer"},
                                                     "chars": {"type": "integer"}}},
        max_output_chars=2_000,
    )


class Anything(Tool):
    metadata = ToolMetadata(
        name="anything", description="Take any document.", category="utility", parameters=OPEN
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success("took it")


class Plugin:
    @toolplug.hookimpl
    def register_tools(self, register: Any) -> None:
        for tool in (Echo, Flood, Pager, Anything):
            register(tool)


def registry(config: dict[str, Any] | None = None) -> toolplug.Registry:
    return toolplug.load(config or {}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("t", Plugin())])


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# -- out -------------------------------------------------------------------------------


def test_an_error_quotes_only_a_prefix_of_a_long_argument() -> None:
    long_text = "A" * 300_000
    result = registry().call("echo_fail", {"text": long_text})
    assert result.error is not None
    assert result.error.type == "NotFoundError"
    assert len(result.error.message) < 300
    prefix = "no such entry: " + "A" * 80 + "... (300,000 characters)"
    assert result.error.message.startswith(prefix)
    assert len(json.dumps(result.to_dict())) < 500


def test_a_huge_argument_is_a_validation_error_naming_the_limit() -> None:
    result = registry().call("echo_fail", {"text": "A" * 20_000_000})
    assert result.error is not None
    assert result.error.type == ErrorType.VALIDATION
    assert f"{MAX_ARGUMENT_CHARS:,} characters (the limit)" in result.error.message
    assert len(result.error.message) < 300


def test_output_over_the_budget_is_cut_and_says_so() -> None:
    result = registry().call("flood", {"chars": 200_000})
    assert result.ok
    kept, _, notice = result.output.partition("\n[output cut by toolplug: ")
    assert kept == "x" * DEFAULT_OUTPUT_CHARS
    limit = f"(the limit is {DEFAULT_OUTPUT_CHARS:,})"
    assert notice.startswith(f"150,000 of 200,000 characters dropped {limit}")
    assert "ask for less" in notice


def test_a_paging_tool_is_told_how_to_read_on_and_its_own_budget_holds() -> None:
    result = registry().call("pager", {"chars": 5_000})
    assert result.output.startswith("x" * 2_000 + "\n[output cut by toolplug: 3,000 of 5,000")
    assert "call the tool again with a larger offset" in result.output


def test_the_budget_can_be_set_per_tool_and_for_all_calls() -> None:
    tools = registry({"calls": {"max_output_chars": 10_000},
                      "tools": {"pager": {"max_output_chars": 4_000}}})
    assert len(tools.call("flood", {"chars": 20_000}).output.split("\n[")[0]) == 10_000
    # Configuration wins over the tool's own metadata (2,000).
    assert len(tools.call("pager", {"chars": 20_000}).output.split("\n[")[0]) == 4_000
    with pytest.raises(ConfigError, match="max_output_chars"):
        registry({"calls": {"max_output_chars": 10}})
    with pytest.raises(ConfigError, match="max_output_chars"):
        registry({"tools": {"flood": {"max_output_chars": "lots"}}})


def test_structured_data_is_cut_to_valid_json_with_a_warning() -> None:
    result = registry({"calls": {"max_output_chars": 5_000}}).call("flood", {"items": 2_000})
    assert result.ok
    text = json.dumps(result.data)
    assert len(text) <= 5_000
    assert result.data["rows"][0] == {"n": 0, "text": "y" * 50}
    assert result.data["note"].endswith("...")
    [warning] = result.warnings
    assert "the structured data was cut to fit 5,000 characters" in warning
    assert "trailing array items were left out" in warning


def test_small_results_pass_untouched() -> None:
    result = registry().call("flood", {"chars": 10})
    assert result.output == "x" * 10
    assert result.warnings == ()


# -- in --------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["dict", "json text"])
def test_deep_arguments_are_refused_before_the_tool_runs(how: str) -> None:
    document = {"a": nested(200)}
    arguments: Any = document if how == "dict" else json.dumps(document)
    result = registry().call("anything", arguments)
    assert result.error is not None
    assert result.error.type == ErrorType.VALIDATION
    assert f"deeper than {MAX_ARGUMENT_DEPTH} levels" in result.error.message


def test_json_text_deeper_than_python_can_parse_is_a_validation_error() -> None:
    text = '{"a": ' + "[" * 60_000 + "]" * 60_000 + "}"
    result = asyncio.run(registry().acall("anything", text))
    assert result.error is not None
    assert result.error.type == ErrorType.VALIDATION
    assert "(the limit)" in result.error.message


def test_arguments_at_the_limits_are_accepted() -> None:
    assert registry().call("anything", {"a": nested(MAX_ARGUMENT_DEPTH - 2)}).ok


def test_plans_are_bounded_too() -> None:
    tools = registry()
    plan = [{"id": 1, "action": "anything", "parameters": {"a": nested(100)}}]
    outcome = asyncio.run(toolplug.run_plan(tools, plan))
    [step] = outcome.steps
    assert step.status == "failed"
    assert step.result is not None
    assert step.result.error is not None
    assert "levels" in step.result.error.message


# -- the command line ------------------------------------------------------------------


def test_cli_deep_json_is_a_one_line_usage_error(cli: Any) -> None:
    deep = "[" * 60_000 + "]" * 60_000
    for args in (
        ("call", "static_links", "--json", deep),
        ("call", "static_links", f"action={deep}"),
    ):
        done: Run = cli(*args)
        assert done.code == 2, done.err
        assert done.err.count("\n") == 1
        assert "over the limits" in done.err
        assert "Traceback" not in done.err
        assert "internal error" not in done.err


def test_cli_long_malformed_pair_is_quoted_briefly(cli: Any) -> None:
    done: Run = cli("call", "static_links", "x" * 120_000)
    assert done.code == 2
    assert len(done.err) < 300


@pytest.mark.parametrize("path", ["a" * 300, "d/" * 2_500 + "f.txt", "x" * 5_000])
def test_a_path_over_the_platform_limits_is_a_validation_error(path: str, tmp_path: Any) -> None:
    tools = toolplug.load(
        {"cache_dir": str(tmp_path / "c"), "state_dir": str(tmp_path / "s")},
        env={"TOOLPLUG_PLUGINS": "toolplug-files"},
    )
    result = tools.call("read_file", {"path": path})
    assert result.error is not None
    assert result.error.type == ErrorType.VALIDATION, result.error
    assert "use a shorter path" in result.error.message
    assert len(result.error.message) < 300


# -- fuzzing the command line -------------------------------------------------------------

SECRET_ENV = "CLI_FUZZ_SECRET_7c41e9"
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=30,
)
_WORDS = st.text(max_size=40).filter(lambda t: "\x00" not in t)
_DEEP = st.integers(1_000, 80_000).map(lambda n: "[" * n + "]" * n)
_ARGUMENTS = st.one_of(
    st.tuples(st.just("call"), st.sampled_from(["static_links", "readability", "nope", ""]),
              st.lists(_WORDS, max_size=4)).map(lambda t: [t[0], t[1], *t[2]]),
    st.tuples(st.just("call"), st.just("static_links"), st.just("--json"),
              _JSON.map(json.dumps) | _WORDS | _DEEP).map(list),
    st.tuples(st.just("call"), st.just("static_links"), _DEEP.map("action=".__add__))
    .map(list),
    st.tuples(st.just("search"), _WORDS, st.sampled_from(["--json", "--limit", "3", ""]))
    .map(lambda t: [w for w in t if w]),
    st.tuples(st.sampled_from(["info", "prompt", "list", "schema"]),
              st.lists(_WORDS, max_size=3)).map(lambda t: [t[0], *t[1]]),
    st.lists(_WORDS, max_size=5),
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(_ARGUMENTS)
def test_fuzzed_command_lines_answer_in_one_of_three_ways(arguments: list[str]) -> None:
    from toolplug.cli import main

    buffer = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLPLUG_PLUGINS", "toolplug-static-links,toolplug-readability")
        patch.setenv("TOOLPLUG_NO_CACHE", "1")
        patch.setenv("SECRET_FOR_FUZZ", SECRET_ENV)
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            try:
                code = main(arguments)
            except SystemExit as stop:  # argparse's --help and usage errors
                code = stop.code if isinstance(stop.code, int) else 0
    output = buffer.getvalue()
    assert code in (0, 1, 2), (arguments, output[-500:])
    assert "Traceback" not in output
    assert "internal error" not in output
    assert SECRET_ENV not in output
    assert len(output) < 200_000
