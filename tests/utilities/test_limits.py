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
from tests.helpers.cli import Run
from tests.helpers.echo import echo_headers
from toolplug import ConfigError, ErrorType, Tool, ToolFailure, ToolMetadata, ToolResult
from toolplug.utilities import _limits
from toolplug.utilities._limits import (
    DATA_CUT,
    DEFAULT_OUTPUT_CHARS,
    MAX_ARGUMENT_CHARS,
    MAX_ARGUMENT_DEPTH,
    SMALLEST_BUDGET,
    bounded,
    data_cut,
    reply_chars,
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
    # The text with its notice fills the budget: the notice is counted too.
    assert DEFAULT_OUTPUT_CHARS - 10 < len(result.for_model()) <= DEFAULT_OUTPUT_CHARS
    kept, _, notice = result.output.partition("\n[output cut by toolplug: ")
    assert kept == "x" * len(kept)
    limit = f"(the limit is {DEFAULT_OUTPUT_CHARS:,})"
    assert notice == (
        f"{200_000 - len(kept):,} of 200,000 characters not shown {limit}; the whole output "
        f"is kept at {result.spill}: read it from offset {len(kept)}]"
    )
    # Kept whole by nobody: the notice says how to see the rest instead.
    lost = registry({"calls": {"spill_ttl_seconds": 0}}).call("flood", {"chars": 200_000})
    assert lost.spill is None
    kept, _, notice = lost.output.partition("\n[output cut by toolplug: ")
    assert DEFAULT_OUTPUT_CHARS - 5 < len(lost.for_model()) <= DEFAULT_OUTPUT_CHARS
    assert notice.startswith(f"{200_000 - len(kept):,} of 200,000 characters dropped {limit}")
    assert "ask for less" in notice


def test_a_paging_tool_is_told_how_to_read_on_and_its_own_budget_holds() -> None:
    result = registry().call("pager", {"chars": 5_000})
    assert len(result.for_model()) <= 2_000
    kept, _, notice = result.output.partition("\n[output cut by toolplug: ")
    assert kept == "x" * len(kept)
    assert notice.startswith(f"{5_000 - len(kept):,} of 5,000 characters dropped")
    assert "call the tool again with a larger offset" in notice


def test_the_budget_can_be_set_per_tool_and_for_all_calls() -> None:
    tools = registry({"calls": {"max_output_chars": 10_000},
                      "tools": {"pager": {"max_output_chars": 4_000}}})
    assert 9_800 < len(tools.call("flood", {"chars": 20_000}).for_model()) <= 10_000
    # Configuration wins over the tool's own metadata (2,000).
    assert 3_800 < len(tools.call("pager", {"chars": 20_000}).for_model()) <= 4_000
    with pytest.raises(ConfigError, match="max_output_chars"):
        registry({"calls": {"max_output_chars": 10}})
    with pytest.raises(ConfigError, match="max_output_chars"):
        registry({"tools": {"flood": {"max_output_chars": "lots"}}})


def test_structured_data_is_cut_to_valid_json_with_a_warning() -> None:
    result = registry({"calls": {"max_output_chars": 5_000}}).call("flood", {"items": 2_000})
    assert result.ok
    assert reply_chars(result) <= 5_000
    assert json.loads(json.dumps(result.data, allow_nan=False)) == result.data
    assert result.data["rows"][0] == {"n": 0, "text": "y" * 50}
    assert result.data["note"].endswith("...")
    [warning] = result.warnings
    assert warning.startswith(f"{DATA_CUT}5,000 characters: long strings were shortened, and ")
    assert "trailing array items were left out" in warning
    assert "the call itself succeeded" in warning
    assert data_cut(result)


def test_small_results_pass_untouched() -> None:
    result = registry().call("flood", {"chars": 10})
    assert result.output == "x" * 10
    assert result.warnings == ()
    assert not data_cut(result)


class Shaped(Tool):
    """Returns a result of the shape its arguments describe: sizes, counts, failures."""

    metadata = ToolMetadata(
        name="shaped", description="Return a result of the given shape.", category="utility",
        parameters=OPEN,
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        def size(key: str, default: int = 0) -> int:
            return int(arguments.get(key, default))

        if size("fail"):
            raise ToolFailure("E" * size("fail") + "Error", "m\x00" * size("fail"))
        data: Any = None
        if size("items"):
            data = {"rows": [{"n": i, "text": "row"} for i in range(size("items"))]}
        elif size("keys"):
            data = {"counts": {f"word{i}": i for i in range(size("keys"))}}
        elif size("string"):
            data = "s" * size("string")
        title, url = "t" * size("title", 10), "https://example.org/" + "u" * size("url", 5)
        citations = [toolplug.Citation(title, url) for _ in range(size("citations"))]
        warnings = ["w" * length for length in arguments.get("warnings", [])]
        return ToolResult.success("x" * size("output"), data, citations=citations,
                                  warnings=warnings)


# (label, arguments, what the cut reply says); every reply must fit the 5,000-character budget.
SHAPES: list[tuple[str, dict[str, Any], str]] = [
    # The audit's case: a 1 MB warning reached the model whole.
    ("a 1 MB warning", {"warnings": [1_000_000]}, "toolplug left out the end of 1 long warning"),
    ("thousands of warnings", {"warnings": [100] * 5_000}, "of 5,000 warnings"),
    ("thousands of long citations", {"citations": 3_000, "title": 5_000}, "of 3,000 citations"),
    # A cut URL would point nowhere: such citations go whole.
    ("citations with huge URLs", {"citations": 50, "url": 100_000}, "50 of 50 citations"),
    # Text and data each got the whole budget before: now they share it.
    ("text and data both large", {"output": 100_000, "items": 10_000},
     "trailing array items were left out"),
    # A map too wide to fit used to become None; now its tail goes.
    ("a wide object", {"keys": 50_000}, "trailing object members were left out"),
    ("one long string of data", {"string": 300_000}, "long strings were shortened"),
    ("everything at once", {"output": 100_000, "items": 10_000, "warnings": [10_000] * 50,
                            "citations": 500, "title": 1_000}, "of 50 warnings"),
    # An error's JSON, escapes included, fits as well; its type is cut too.
    ("a huge error", {"fail": 200_000}, "characters cut]"),
]


@pytest.mark.parametrize(("label", "arguments", "notice"), SHAPES, ids=[s[0] for s in SHAPES])
def test_the_whole_reply_fits_the_budget(label: str, arguments: dict[str, Any],
                                          notice: str) -> None:
    tools = toolplug.load({"calls": {"max_output_chars": 5_000}}, env={"TOOLPLUG_PLUGINS": ""},
                          plugins=[("t", ShapedPlugin())])
    result = tools.call("shaped", arguments)
    assert reply_chars(result) <= 5_000
    assert notice in result.for_model()
    assert json.loads(json.dumps(result.data, allow_nan=False)) == result.data


class ShapedPlugin:
    @toolplug.hookimpl
    def register_tools(self, register: Any) -> None:
        register(Shaped)


_TEXT = st.text(max_size=30) | st.builds(
    lambda piece, count: piece * count, st.text(min_size=1, max_size=4), st.integers(0, 8_000)
)
_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=30) | st.dictionaries(_TEXT, inner, max_size=30),
    max_leaves=120,
)
_RESULTS = st.one_of(
    st.builds(
        ToolResult.success, _TEXT, _DATA,
        citations=st.lists(st.builds(toolplug.Citation, _TEXT, _TEXT), max_size=15),
        warnings=st.lists(_TEXT, max_size=15),
    ),
    st.builds(ToolResult.failure, _TEXT, _TEXT),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_RESULTS, st.integers(SMALLEST_BUDGET, 20_000))
def test_any_result_is_cut_to_fit_and_says_so(result: ToolResult, budget: int) -> None:
    cut = bounded(result, {}, budget)
    assert reply_chars(cut) <= budget
    if cut.error is not None:  # an error message is also never over 2,000 characters
        assert len(cut.error.message.partition("... [")[0]) <= 2_000
    elif reply_chars(result) <= budget:
        assert cut == result
    else:
        said = "[output cut by toolplug:" in cut.output or any(
            w.startswith(DATA_CUT) or "toolplug left out" in w for w in cut.warnings
        )
        assert said, cut
    json.loads(json.dumps(cut.data, allow_nan=False))  # the cut data is still JSON


_PARTS = st.lists(
    st.one_of(
        st.builds(toolplug.Text, _TEXT),
        st.builds(lambda n: toolplug.File(b"\x00" * n, name="f.bin"), st.integers(1, 3_000)),
        st.builds(
            lambda text: toolplug.EmbeddedResource("file:///r", text=text), _TEXT
        ),
        st.builds(lambda name: toolplug.ResourceLink("https://a.example/", name or "x"), _TEXT),
    ),
    max_size=12,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT, _PARTS, st.integers(SMALLEST_BUDGET, 20_000), st.integers(1, 8_000))
def test_any_result_with_parts_is_cut_to_both_budgets_and_says_so(
    output: str, parts: list[Any], budget: int, max_bytes: int
) -> None:
    result = ToolResult.success(output, parts=parts)
    cut = bounded(result, {}, budget, max_bytes=max_bytes, kept_at="toolplug://results/ab")
    assert reply_chars(cut) <= budget
    assert sum(map(_limits.part_bytes, cut.parts)) <= max_bytes
    if _limits.fits(result, budget, max_bytes):
        assert cut == result
        return
    kept_whole = [p for p in cut.parts if p in result.parts]
    if len(kept_whole) < len(result.parts):  # a part went or was cut: one warning says which
        [note] = [w for w in cut.warnings if w.startswith(_limits.PARTS_CUT)]
        assert "kept whole at toolplug://results/ab/parts/N" in note
        for index, part in enumerate(result.parts):  # each named, cut or left out
            if part not in kept_whole:
                assert f"parts[{index}] (" in note or "more" in note or note.endswith("...")
    # what stays is in its order, binary parts never cut for characters
    binary = [p for p in result.parts if _limits.part_bytes(p)]
    assert [p for p in cut.parts if _limits.part_bytes(p)] == binary[: len(
        [p for p in cut.parts if _limits.part_bytes(p)]
    )]


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

SECRET = "ghp_cli_fuzz_secret_7c41e9d2"
"""github_api's token, set as ``token = { env = "CLI_FUZZ_GITHUB" }``; the API it is sent to
echoes it back, so it reaches every github_api result unless redacted."""
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=30,
)
_WORDS = st.text(max_size=40).filter(lambda t: "\x00" not in t)
_DEEP = st.integers(1_000, 80_000).map(lambda n: "[" * n + "]" * n)
_GITHUB = st.fixed_dictionaries(
    {"action": st.sampled_from(["get_readme", "get_file", "list_releases", "search_code"])},
    optional={"owner": st.sampled_from(["o", "psf"]), "repo": st.sampled_from(["r", "x"]),
              "query": _WORDS, "path": _WORDS},
)
_ARGUMENTS = st.one_of(
    st.tuples(st.just("call"),
              st.sampled_from(["static_links", "readability", "github_api", "nope", ""]),
              st.lists(_WORDS, max_size=4)).map(lambda t: [t[0], t[1], *t[2]]),
    st.tuples(st.just("call"), st.just("static_links"), st.just("--json"),
              _JSON.map(json.dumps) | _WORDS | _DEEP).map(list),
    st.tuples(st.just("call"), st.just("static_links"), _DEEP.map("action=".__add__))
    .map(list),
    _GITHUB.map(lambda arguments: ["call", "github_api", "--json", json.dumps(arguments)]),
    _GITHUB.map(lambda arguments: ["call", "github_api",
                                   *(f"{key}={value}" for key, value in arguments.items())]),
    st.tuples(st.just("search"), _WORDS, st.sampled_from(["--json", "--limit", "3", ""]))
    .map(lambda t: [w for w in t if w]),
    st.tuples(st.sampled_from(["info", "prompt", "list", "schema"]),
              st.lists(_WORDS, max_size=3)).map(lambda t: [t[0], *t[1]]),
    st.lists(_WORDS, max_size=5),
)


@pytest.fixture
def cli_setup(
    tmp_path: Any, httpserver_ipv4: Any, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """The command line's environment: github_api's token from the configuration, sent to
    an API on 127.0.0.1 that echoes it back."""
    echo_headers(httpserver_ipv4)
    config = tmp_path / "toolplug.toml"
    config.write_text(
        '[network]\nallow = ["127.0.0.1/32"]\n\n[tools.github_api]\n'
        f'api_url = "{httpserver_ipv4.url_for("/api/v3").rstrip("/")}"\n'
        'token = { env = "CLI_FUZZ_GITHUB" }\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("TOOLPLUG_CONFIG", str(config))
    monkeypatch.setenv("TOOLPLUG_PLUGINS",
                       "toolplug-static-links,toolplug-readability,toolplug-github")
    monkeypatch.setenv("TOOLPLUG_NO_CACHE", "1")
    monkeypatch.setenv("CLI_FUZZ_GITHUB", SECRET)
    return httpserver_ipv4


def run_main(arguments: list[str]) -> tuple[int, str]:
    """``toolplug ARGUMENTS`` in this process: the exit code, stdout and stderr together."""
    from toolplug.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            code = main(arguments)
        except SystemExit as stop:  # argparse's --help and usage errors
            code = stop.code if isinstance(stop.code, int) else 0
    return code, buffer.getvalue()


def test_the_cli_secret_is_sent_and_comes_back_redacted(cli_setup: Any) -> None:
    code, output = run_main(["call", "github_api", "action=get_readme", "owner=o", "repo=r"])
    assert code == 1, output
    assert "echo Bearer ***" in output
    assert SECRET not in output
    [(request, _)] = cli_setup.log
    assert request.headers["Authorization"] == f"Bearer {SECRET}"


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(arguments=_ARGUMENTS)
def test_fuzzed_command_lines_answer_in_one_of_three_ways(
    arguments: list[str], cli_setup: Any
) -> None:
    code, output = run_main(arguments)
    assert code in (0, 1, 2), (arguments, output[-500:])
    assert "Traceback" not in output
    assert "internal error" not in output
    assert SECRET not in output
    assert len(output) < 200_000


# -- large data in slices (off the loop) -------------------------------------------------

_KEYS = st.text(max_size=3) | st.integers(-3, 3) | st.booleans() | st.none()
_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=6)
    | st.tuples(inner, inner)
    | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=60,
)


class _Odd:
    """Not JSON: written as ``str`` gives it (``default=str``), or refused."""

    def __str__(self) -> str:
        return "odd"


@settings(max_examples=300)
@given(_VALUES | st.lists(_VALUES, min_size=4, max_size=9), st.integers(2, 5))
def test_data_written_in_slices_is_the_text_written_whole(value: Any, size: int) -> None:
    # slices as small as two items, so that every shape is written in parts: the text,
    # its length and the copy are the ones one json.dumps / json.loads gives
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_limits, "_SLICE_ITEMS", size)
        whole_text = json.dumps(value, ensure_ascii=False)
        plain = json.dumps(value, ensure_ascii=False, default=str)
        assert _limits.in_slices(_limits.json_text, value) == whole_text
        assert _limits.in_slices(_limits._json_chars, value) == len(whole_text)
        assert _limits.in_slices(_limits._data_chars, value) == _limits._data_chars(value)
        copy = _limits.in_slices(_limits._plain_copy, value)
        assert json.dumps(copy) == json.dumps(json.loads(plain))


def test_data_in_slices_refuses_and_measures_as_whole_does() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_limits, "_SLICE_ITEMS", 2)
        odd = {"rows": [{"n": n, "at": _Odd()} for n in range(5)]}
        # not JSON: written with str for the budget's measure, refused for the spill's text
        assert _limits.in_slices(_limits._data_chars, odd) == _limits._data_chars(odd)
        assert _limits.in_slices(_limits._plain_copy, odd) == json.loads(
            json.dumps(odd, default=str)
        )
        with pytest.raises(TypeError):
            _limits.in_slices(_limits.json_text, odd)
        # a reference cycle: unmeasurable both ways
        loop: list[Any] = [1, 2, 3]
        loop.append({"back": [loop, loop, loop]})
        assert _limits._data_chars(loop) == _limits._UNMEASURABLE
        assert _limits.in_slices(_limits._data_chars, loop) == _limits._UNMEASURABLE
    # outside in_slices the whole document is written at once
    assert not getattr(_limits._SLICED, "on", False)


def test_a_large_result_is_cut_in_slices_as_it_is_whole() -> None:
    rows = {"rows": [{"id": n, "name": f"row {n}", "tags": ["a", "b"]} for n in range(6_000)]}
    result = ToolResult.success("6000 rows", rows)
    whole = _limits.bounded(result, {}, 20_000)
    sliced = _limits.in_slices(_limits.bounded, result, {}, 20_000)
    assert (sliced.output, sliced.data, sliced.warnings) == (
        whole.output, whole.data, whole.warnings,
    )
    assert any(w.startswith(_limits.DATA_CUT) for w in sliced.warnings)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"results": [{"title": "t", "url": "u"} for _ in range(10)]}, False),  # the usual
        (list(range(_limits._HEAVY_VALUES)), True),
        (list(range(_limits._HEAVY_VALUES - 2)), False),
        ({"rows": list(range(_limits._HEAVY_VALUES))}, True),
        # records: their fields count too
        ({"rows": [{"id": n, "a": 1, "b": 2} for n in range(1_000)]}, True),
        ("x" * 1_000_000, False),  # one string: one value, written by C in one go
        # bulk deeper than three levels is measured inline (the bound is cheap, not exact)
        ({"a": {"b": {"c": list(range(10_000))}}}, False),
    ],
)
def test_what_data_is_measured_off_the_loop(data: Any, expected: bool) -> None:
    assert _limits.heavy(data) is expected
