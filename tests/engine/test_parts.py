"""The engine's guarantees hold for parts: every part is checked when the tool returns (a
malformed one fails the call with an error naming it), and the output budget counts
parts: text parts as text, binary parts by their own byte budget, cuts named in a warning
and the cut parts kept whole as spills."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolplug
from tests.helpers.parts import Returns, ReturnsPlugin, gif, png, wav
from toolplug import Audio, EmbeddedResource, File, Image, ResourceLink, Text, ToolResult

Make = Callable[..., toolplug.Registry]


@pytest.fixture
def make() -> Iterator[Make]:
    made: list[toolplug.Registry] = []

    def load(result: ToolResult, **calls: Any) -> toolplug.Registry:
        Returns.RESULT = result
        Returns.CALLS.clear()
        registry = toolplug.load(
            {"calls": calls} if calls else {},
            env={"TOOLPLUG_PLUGINS": ""},
            plugins=[("returns", ReturnsPlugin())],
        )
        made.append(registry)
        return registry

    yield load
    for registry in made:
        registry.close()


# -- a malformed part is refused --------------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "named", "problem"),
    [
        # a GIF sent as image/png: the bytes say what they are
        ((Text("a"), Image(gif(), "image/png")), "parts[1] (image/png)",
         "its bytes are not image/png: they look like image/gif"),
        # an image with no bytes at all
        ((Image(b"", "image/png"),), "parts[0] (image/png)", "it has no bytes"),
        # a WAV's bytes in a part that says MP3
        ((Audio(wav(), "audio/mpeg"),), "parts[0] (audio/mpeg)",
         "its bytes are not audio/mpeg: they look like audio/wav"),
        # an embedded resource whose bytes are not the PDF it claims
        ((EmbeddedResource("file:///a.pdf", data=png(), mime_type="application/pdf"),),
         "parts[0] (application/pdf)", "its bytes are not application/pdf"),
        # something that is not a part at all, put there without ToolResult.success
        ((Text("a"), {"kind": "image"}), "parts[1] (dict)", "a dict is not a part"),
    ],
)
def test_a_malformed_part_fails_the_call_naming_it(
    make: Make, parts: tuple[Any, ...], named: str, problem: str
) -> None:
    registry = make(ToolResult(output="here", parts=parts))
    result = registry.call("returns", {})
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    said = f"returns returned a part that cannot be passed on: {named}: {problem}"
    assert result.error.message.startswith(said)
    assert not result.error.retry_possible  # the tool's fault: again gives the same
    index = int(named[6])
    assert result.error.details["part"] == index
    assert problem in result.error.details["problem"]


def test_parts_that_are_not_a_list_are_refused(make: Make) -> None:
    registry = make(ToolResult(output="x", parts="image.png"))  # type: ignore[arg-type]
    result = registry.call("returns", {})
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert "parts is a str, not a list of parts" in result.error.message


class _WrongFamily(Returns):
    """Makes an Image whose MIME type is a recording's: the part refuses to be made."""

    async def run(self, arguments: dict[str, Any], context: toolplug.ToolContext) -> ToolResult:
        return ToolResult.success("a picture", parts=[Image(png(), "audio/wav")])


class _WrongFamilyPlugin:
    @toolplug.hookimpl
    def register_tools(self, register: Any) -> None:
        register(_WrongFamily)


def test_a_part_of_the_wrong_mime_family_fails_the_call_saying_which_kind() -> None:
    # the type is checked when the part is made, inside the tool: the host still gets a
    # structured error, not a part it cannot show
    registry = toolplug.load(
        {}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("wrong", _WrongFamilyPlugin())]
    )
    try:
        result = registry.call("returns", {})
    finally:
        registry.close()
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert "Image: 'audio/wav' is not an image/* type; use File for other content" in (
        result.error.message
    )
    assert not result.error.retry_possible
    assert result.parts == ()


def test_a_list_of_good_parts_passes_as_a_tuple(make: Make) -> None:
    image = Image(png())
    registry = make(ToolResult(output="x", parts=[image]))  # type: ignore[arg-type]
    result = registry.call("returns", {})
    assert result.ok
    assert result.parts == (image,)


def test_a_part_over_the_bound_is_refused_without_a_copy(make: Make) -> None:
    # 500 MB of zeros (the allocator's pages, never written) in a File part: refused by its
    # length, and nothing in the call copies it (nor writes it as base64)
    huge = File(bytes(500_000_000), "application/octet-stream", name="dump.bin")
    registry = make(ToolResult.success("the dump", parts=[huge]))
    tracemalloc.start()
    try:
        result = registry.call("returns", {})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert result.error.message == (
        "returns returned a part that cannot be passed on: parts[0] "
        "(application/octet-stream): it holds 500,000,000 bytes, over the 20,000,000 one part "
        "may hold ([calls] max_part_bytes)"
    )
    assert peak < 5_000_000


def test_the_bound_is_configuration(make: Make) -> None:
    image = Image(png(40, 40))
    registry = make(ToolResult.success("", parts=[image]), max_part_bytes=100)
    result = registry.call("returns", {})
    assert result.error is not None
    assert f"it holds {image.size:,} bytes, over the 100" in result.error.message
    assert make(ToolResult.success("", parts=[image])).call("returns", {}).ok


def test_a_bad_bound_is_a_config_error() -> None:
    with pytest.raises(toolplug.ConfigError) as caught:
        toolplug.load({"calls": {"max_part_bytes": 0}}, env={"TOOLPLUG_PLUGINS": ""})
    assert caught.value.key == "calls.max_part_bytes"


def test_a_malformed_part_is_not_cached(make: Make) -> None:
    registry = toolplug.load(
        {"tools": {"returns": {"cache_ttl_seconds": 60}}},
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("returns", ReturnsPlugin())],
    )
    Returns.RESULT, Returns.CALLS[:] = ToolResult.success("", parts=[Image(gif(), "image/png")]), []
    try:
        assert not registry.call("returns", {}).ok
        assert not registry.call("returns", {}).ok
        assert len(Returns.CALLS) == 2
    finally:
        registry.close()


# -- the budget counts parts ------------------------------------------------------------


def test_parts_within_the_budget_come_back_untouched(make: Make) -> None:
    parts = (Image(png()), Text("t" * 500), Audio(wav()),
             ResourceLink("https://a.example/r", "r"))
    registry = make(ToolResult.success("o" * 500, parts=parts), max_output_chars=2_000)
    result = registry.call("returns", {})
    assert result.parts == parts
    assert not result.warnings
    assert result.spill is None


def test_binary_bytes_are_not_counted_as_characters(make: Make) -> None:
    # 3 MB of PNG is four million characters of base64: far over 1,000 characters, and
    # within the byte budget, so nothing is cut
    image = Image(png(1000, 1000))
    assert image.size > 1_000
    registry = make(ToolResult.success("a chart", parts=[image]), max_output_chars=1_000)
    result = registry.call("returns", {})
    assert result.parts == (image,)
    assert not result.warnings


def test_text_parts_count_in_the_text_budget_and_are_cut_with_a_warning(make: Make) -> None:
    image = Image(png())
    parts = (Text("a" * 3_000), image, Text("b" * 3_000))
    registry = make(ToolResult.success("o" * 400, parts=parts), max_output_chars=2_000)
    result = registry.call("returns", {})
    assert result.ok
    assert len(result.for_model()) <= 2_000
    assert result.output == "o" * 400  # the output comes first and fits
    first = result.parts[0]
    assert isinstance(first, Text)
    assert first.text.startswith("a" * 100)
    assert "[part cut by toolplug: " in first.text
    assert result.parts[1] is image  # binary parts are not cut for characters
    assert len(result.parts) == 2  # the second text part had no room left
    [note] = [w for w in result.warnings if w.startswith("to fit the result's budget")]
    assert "cut parts[0] (text, 3,000 characters)" in note
    assert "left out parts[2] (text, 3,000 characters)" in note
    assert result.spill is not None
    assert f"kept whole at {result.spill}/parts/N" in note


def test_binary_parts_past_the_byte_budget_are_left_out_and_named(make: Make) -> None:
    small, big = Image(png(10, 10)), Audio(wav(200_000))
    parts = (small, big, Text("after"))
    registry = make(
        ToolResult.success("o", parts=parts), max_result_bytes=small.size + 1_000
    )
    result = registry.call("returns", {})
    assert result.parts == (small, Text("after"))
    [note] = [w for w in result.warnings if w.startswith("to fit the result's budget")]
    assert "left out parts[1] (audio/wav, 0.4 MB)" in note
    assert f"{small.size + 1_000:,} bytes of parts" in note


def test_the_cut_parts_are_kept_whole_as_spills(make: Make) -> None:
    small, big = Image(png(10, 10)), Audio(wav(200_000))
    text = "c" * 5_000
    parts = (small, big, Text(text))
    registry = make(
        ToolResult.success("o", parts=parts), max_result_bytes=small.size + 10,
        max_output_chars=2_000,
    )
    result = registry.call("returns", {})
    assert result.spill is not None
    audio = registry.read(f"{result.spill}/parts/1")
    assert audio is not None
    assert audio.data == big.data
    assert audio.mime_type == "audio/wav"
    assert audio.text == ""
    assert audio.total == big.size
    assert audio.next_offset is None
    ranged = registry.read(f"{result.spill}/parts/1", offset=4, length=8)
    assert ranged is not None
    assert ranged.data == big.data[4:12]
    assert ranged.next_offset == 12
    whole = registry.read(f"{result.spill}/parts/2")
    assert whole is not None
    assert whole.text == text
    assert whole.mime_type == "text/plain"
    assert registry.read(f"{result.spill}/parts/0") is None  # it was not cut: not kept


def test_a_part_left_out_is_named_with_where_it_is_kept(make: Make) -> None:
    registry = make(ToolResult.success("o", parts=(Audio(wav(200_000)),)), max_result_bytes=10)
    result = registry.call("returns", {})
    # the warning says where the part is kept whole
    assert result.parts == ()
    assert result.spill is not None
    assert any("kept whole at" in w for w in result.warnings)


def test_a_labelled_and_delimited_result_keeps_its_parts() -> None:
    # the engine rebuilds an untrusted result to put its text between markers: its parts
    # go with it
    image = Image(png())
    Returns.RESULT = ToolResult.success("a page", parts=[image, Text("its text")])
    registry = toolplug.load(
        {"guard": {"delimit_untrusted": True}},
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("returns", ReturnsPlugin())],
    )
    try:
        with registry.conversation("look at the page"):
            result = registry.call("returns", {})
        assert result.output.startswith('<untrusted source="returns">')
        assert result.parts == (image, Text("its text"))
        assert result.trust is not None
        assert result.trust.untrusted
    finally:
        registry.close()


class AddsAPicture:
    """A ``tool_call`` link that puts a part of its own on the tool's result."""

    def __init__(self, part: Any) -> None:
        self.part = part

    @toolplug.hookimpl(tryfirst=True)
    async def tool_call(self, call: Any) -> ToolResult:
        result: ToolResult = await call.aexecute()
        return ToolResult(output=result.output, parts=(*result.parts, self.part))


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_a_part_an_interceptor_adds_is_checked_as_a_tools_is(mode: str) -> None:
    """The tool's own parts are checked before any cache; a part a ``tool_call`` link adds
    after it is checked too, so no path lets a malformed part reach a host."""
    import asyncio

    Returns.RESULT = ToolResult.success("here", parts=[Image(png())])
    bad = toolplug.load(
        {}, env={"TOOLPLUG_PLUGINS": ""},
        plugins=[("returns", ReturnsPlugin()), ("adds", AddsAPicture(Image(gif(), "image/png")))],
    )
    good = toolplug.load(
        {}, env={"TOOLPLUG_PLUGINS": ""},
        plugins=[("returns", ReturnsPlugin()), ("adds", AddsAPicture(Audio(wav())))],
    )
    try:
        def run(registry: toolplug.Registry) -> ToolResult:
            if mode == "call":
                return registry.call("returns", {})
            return asyncio.run(registry.acall("returns", {}))

        refused = run(bad)
        assert refused.error is not None
        assert refused.error.message.startswith(
            "returns returned a part that cannot be passed on: parts[1] (image/png): "
            "its bytes are not image/png: they look like image/gif"
        )
        passed = run(good)
        assert passed.error is None
        assert [p.kind for p in passed.parts] == ["image", "audio"]
    finally:
        bad.close()
        good.close()
