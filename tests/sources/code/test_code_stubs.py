"""Typed stubs (``toolplug stubs``): valid Python that names every parameter, for every
catalog tool and for generated schemas, and the same text on every run."""

from __future__ import annotations

import ast
import keyword
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolplug
from toolplug.schema._python import StubTool, parameter_names, python_stubs

# Property names a schema may use; many are no Python identifier, some are keywords.
names = st.sampled_from(
    ["query", "max_results", "class", "from", "2fa", "content-type", "a b", "_", "café", "self",
     "None", "def", "x", "X", "$ref", "lambda", "print", "match", "type"]
) | st.text(min_size=1, max_size=8)
texts = st.text(max_size=30)  # descriptions: quotes, backslashes, control characters
scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=6) | st.floats(
    allow_nan=False, allow_infinity=False
)
leaves: st.SearchStrategy[Any] = (
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "number", "boolean", "null"])},
        optional={"description": texts, "default": scalars, "minimum": st.integers(),
                  "pattern": st.just('^"""\\d+$'), "format": st.just("uri")},
    )
    | st.builds(lambda values: {"enum": values}, st.lists(scalars, min_size=1, max_size=4))
    | st.builds(lambda value: {"const": value}, scalars)
    | st.just({})
    | st.just({"type": ["string", "null"]})
    | st.just({"$ref": "#/$defs/thing"})
)


def composites(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.builds(
            lambda props, required, description: {
                "type": "object",
                "properties": props,
                "required": [k for k in props if k in required],
                "description": description,
            },
            st.dictionaries(names, children, max_size=4),
            st.sets(names),
            texts,
        )
        | st.builds(lambda items: {"type": "array", "items": items}, children)
        | st.builds(lambda options: {"anyOf": options}, st.lists(children, min_size=1, max_size=3))
        | st.builds(lambda value: {"type": "object", "additionalProperties": value}, children)
        | st.builds(lambda value: {"allOf": [value]}, children)
    )


schemas = st.recursive(leaves, composites, max_leaves=12)
parameters = st.builds(
    lambda props, required: {
        "type": "object",
        "properties": props,
        "required": [k for k in props if k in required],
    },
    st.dictionaries(names, schemas, max_size=6),
    st.sets(names),
)
tool_names = st.from_regex(r"\A[a-z][a-z0-9_]{0,12}\Z") | st.sampled_from(
    ["class", "import", "print", "match", "web_search"]
)


def check(tools: list[StubTool]) -> None:
    """The stubs parse, each tool is an async def with a valid name and every parameter."""
    text = python_stubs(tools)
    module = ast.parse(text)
    functions = [n for n in module.body if isinstance(n, ast.AsyncFunctionDef)]
    assert len(functions) == len(tools)
    for tool, function in zip(tools, functions, strict=True):
        assert function.name.isidentifier()
        assert not keyword.iskeyword(function.name)
        assert function.name.rstrip("_") == tool.name.rstrip("_")
        arguments = function.args
        signature = [a.arg for a in arguments.args + arguments.kwonlyargs]
        expected = parameter_names(tool.parameters)
        assert signature == [p.python for p in expected]
        assert sorted(p.property for p in expected) == sorted(tool.parameters["properties"])
        for name in signature:
            assert name.isidentifier()
            assert not keyword.iskeyword(name)
        # required properties may be given by position, the others only by keyword
        assert [a.arg for a in arguments.args] == [p.python for p in expected if p.required]
        assert ast.get_docstring(function) is not None
    assert python_stubs(tools) == text  # deterministic


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(tool_names, texts, parameters, st.none() | schemas), max_size=3,
                unique_by=lambda t: t[0]))
def test_generated_schemas_give_valid_stubs(tools: list[tuple[Any, ...]]) -> None:
    check([StubTool(name, text, params, returns) for name, text, params, returns in tools])


def test_every_catalog_tool_has_a_valid_stub() -> None:
    registry = toolplug.load()
    tools = [
        StubTool(t.name, t.metadata.description, t.metadata.parameters, t.metadata.returns)
        for t in registry.tools.values()
    ]
    assert len(tools) >= 12
    check(tools)
    text = toolplug.tool_stubs(registry, include_unavailable=True)
    assert "async def web_search(query: str, *, max_results: int = 5" in text
    assert "recency: Literal['day', 'week', 'month', 'year', 'any'] = 'any'" in text
    assert "class WebSearchResult(TypedDict):" in text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parameters, st.data())
def test_a_call_written_against_the_stub_maps_back_to_the_properties(
    params: dict[str, Any], data: st.DataObject
) -> None:
    from toolplug.sources._code import _arguments

    expected = parameter_names(params)
    positional = [p for p in expected if p.required]
    given_by_position = data.draw(st.integers(0, len(positional)))
    args = tuple(f"value of {p.property}" for p in positional[:given_by_position])
    kwargs = {p.python: f"value of {p.property}" for p in expected[given_by_position:]}
    mapped = _arguments("t", tuple(expected), args, kwargs)
    assert mapped == {p.property: f"value of {p.property}" for p in expected}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # an enum of strings is a Literal; a mixed enum of scalars too
        ({"enum": ["a", "b"]}, "Literal['a', 'b']"),
        ({"enum": [1, None]}, "Literal[1, None]"),
        # a float enum cannot be a Literal: its type is enough
        ({"type": "number", "enum": [1.5]}, "float"),
        # nullable types and unions
        ({"type": ["string", "null"]}, "str | None"),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "int | str"),
        # maps and lists
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
        ({"type": "array", "items": {"type": "string"}}, "list[str]"),
        ({"type": "object"}, "dict[str, Any]"),
    ],
)
def test_schema_types(schema: dict[str, Any], expected: str) -> None:
    params = {"type": "object", "properties": {"v": schema}, "required": ["v"]}
    text = python_stubs([StubTool("t", "T.", params)])
    assert f"async def t(v: {expected}) -> Any:" in text


def test_objects_become_typed_dicts_and_odd_names_a_functional_one() -> None:
    params = {
        "type": "object",
        "properties": {
            "point": {"type": "object", "properties": {"x": {"type": "number"}},
                      "required": ["x"]},
            "headers": {"type": "object", "properties": {"content-type": {"type": "string"}}},
            "class": {"type": "string", "default": "a"},
        },
        "required": ["point", "headers"],
    }
    text = python_stubs([StubTool("draw", "Draw.", params)])
    assert "class DrawPoint(TypedDict):\n    x: float\n" in text
    assert "DrawHeaders = TypedDict('DrawHeaders', {'content-type': NotRequired[str]})" in text
    assert "async def draw(point: DrawPoint, headers: DrawHeaders, *, class_: str = 'a')" in text
    assert "class_: (the property 'class')" in text


def test_a_tool_that_returns_parts_returns_a_result_and_the_classes_come_once() -> None:
    empty = {"type": "object", "properties": {}}
    returns = {"type": "object", "properties": {"pages": {"type": "integer"}},
               "description": "How long it is"}
    tools = [
        StubTool("render_page", "Render a page.", empty, returns, parts=("image",)),
        StubTool("scan", "Scan a document.", empty, parts=("file", "text")),
        StubTool("count", "Count.", empty),
    ]
    text = python_stubs(tools)
    check(tools)  # still valid Python, every function documented
    assert text.count("class Part:") == text.count("class Result:") == 1
    assert text.index("class Part:") < text.index("class RenderPageResult(TypedDict):")
    assert "async def render_page() -> Result:" in text
    assert "A Result: its parts (image) and its data (RenderPageResult): How long it is" in text
    assert "async def scan() -> Result:" in text
    assert "its parts (file, text) and its data (Any)" in text
    assert "async def count() -> Any:" in text
    assert "class Part:" not in python_stubs(tools[2:])  # no tool returns parts: as before


def test_the_cli_prints_the_stubs(cli: Any) -> None:
    first = cli("stubs", "--all")
    assert first.code == 0, first.err
    ast.parse(first.out)
    assert "async def url_fetch(url: str, *" in first.out
    assert cli("stubs", "--all").out == first.out
    ranked = cli("stubs", "--task", "check links", "--max-tools", "1")
    assert ranked.code == 0, ranked.err
    assert ranked.out.count("async def ") == 1
    assert "async def link_validator(" in ranked.out
