"""Provider schema exports, checked against the providers' own SDK request types.

Three layers: worked examples with exact expected output; every installed catalog tool in
every format, strict and not; and Hypothesis over generated JSON Schemas (nested objects,
arrays, mixed enums, optional and nullable properties, const, oneOf/allOf, $ref/$defs,
defaults and constraints) for the invariants each format promises.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from typing import Any

import anthropic.types
import pytest
from google.genai import types as gemini_types
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator
from mcp import types as mcp_types
from openai.types.chat import ChatCompletionToolParam
from openai.types.chat.chat_completion_function_tool_param import (
    ChatCompletionFunctionToolParam,
)
from openai.types.responses import FunctionToolParam
from openai.types.shared_params import FunctionDefinition
from pydantic import TypeAdapter

import toolplug
from tests.helpers.schemas import meta, obj, parameter_schemas
from toolplug import Annotations, Example, ToolMetadata, Trust
from toolplug.render._export import FORMATS, dumps, export_tool, export_tools
from toolplug.render._mcp import RESULT_EXTRAS, mcp_output_schema, structured_content
from toolplug.schema import (
    drop_strict_nulls,
    gemini_schema,
    restore_strict_arguments,
    strict_arguments,
    strict_schema,
)
from toolplug.schema._strict import Dialect

OPENAI_TOOL: TypeAdapter[Any] = TypeAdapter(ChatCompletionToolParam)
RESPONSES_TOOL: TypeAdapter[Any] = TypeAdapter(FunctionToolParam)
ANTHROPIC_TOOL: TypeAdapter[Any] = TypeAdapter(anthropic.types.ToolParam)

# What strict mode keeps (see docs/schemas.md); anything else must have been folded away.
STRICT_KEYWORDS = {
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "format",
}
STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6"}
STRICT_FORMATS |= {"uuid"}
# What Anthropic's strict tool use keeps: no numeric bounds, no maxItems, minItems 0 or 1.
ANTHROPIC_STRICT_KEYWORDS = (STRICT_KEYWORDS - {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "maxItems"
}) | {"title"}
ANTHROPIC_FORMATS = STRICT_FORMATS | {"uri"}
GEMINI_FORBIDDEN = {
    "$ref",
    "$defs",
    "definitions",
    "$schema",
    "$id",
    "$comment",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "const",
    "additionalProperties",
    "patternProperties",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
    "prefixItems",
    "examples",
    "default",
}
GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object"}
GEMINI_FORMATS = {"date-time", "enum", "float", "double", "int32", "int64"}


# -- SDK checks -----------------------------------------------------------------------

JSON_TEXT_OBJECT = {
    "type": "object",
    "properties": {
        "json_text": {"type": "string", "description": "An array or object, as JSON text"}
    },
    "required": ["json_text"],
    "additionalProperties": False,
}
# What strict mode asks for where any value is accepted.
ANY = [
    {"type": "string"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
    JSON_TEXT_OBJECT,
]


def check_openai(tool: dict[str, Any]) -> None:
    OPENAI_TOOL.validate_python(tool)
    assert set(tool) <= set(ChatCompletionFunctionToolParam.__annotations__)
    assert set(tool["function"]) <= set(FunctionDefinition.__annotations__)
    Draft202012Validator.check_schema(tool["function"]["parameters"])
    if tool["function"].get("strict"):
        check_strict_invariants(tool["function"]["parameters"])


def check_openai_responses(tool: dict[str, Any]) -> None:
    RESPONSES_TOOL.validate_python(tool)
    assert set(tool) <= set(FunctionToolParam.__annotations__)
    assert tool["type"] == "function"
    assert isinstance(tool["strict"], bool)
    Draft202012Validator.check_schema(tool["parameters"])
    if tool["strict"]:
        check_strict_invariants(tool["parameters"])


def check_anthropic(tool: dict[str, Any]) -> None:
    ANTHROPIC_TOOL.validate_python(tool)
    assert set(tool) <= set(anthropic.types.ToolParam.__annotations__)
    assert tool["input_schema"]["type"] == "object"
    Draft202012Validator.check_schema(tool["input_schema"])
    # Anthropic checks every example against the input schema: so do we.
    validator = Draft202012Validator(tool["input_schema"])
    for example in tool.get("input_examples", []):
        assert not list(validator.iter_errors(example)), (tool["name"], example)
    if tool.get("strict"):
        check_anthropic_strict_invariants(tool["input_schema"])


def check_gemini(declaration: dict[str, Any]) -> None:
    # Unknown fields anywhere are rejected (extra="forbid").
    gemini_types.FunctionDeclaration.model_validate(declaration)
    assert "parameters" not in declaration
    Draft202012Validator.check_schema(declaration["parametersJsonSchema"])
    if "responseJsonSchema" in declaration:
        Draft202012Validator.check_schema(declaration["responseJsonSchema"])


def check_gemini_openapi(declaration: dict[str, Any]) -> None:
    # Unknown fields anywhere are rejected (extra="forbid"); an unknown type is a warning,
    # which the test configuration turns into an error.
    gemini_types.FunctionDeclaration.model_validate(declaration)
    if "parameters" in declaration:
        check_gemini_invariants(declaration["parameters"])


def check_mcp(tool: dict[str, Any]) -> None:
    parsed = mcp_types.Tool.model_validate(tool)
    # Nothing was silently dropped: the model gives back exactly what we wrote.
    assert parsed.model_dump(by_alias=True, exclude_none=True, mode="json") == tool
    assert tool["inputSchema"]["type"] == "object"
    if "outputSchema" in tool:
        assert tool["outputSchema"]["type"] == "object"
        Draft202012Validator.check_schema(tool["outputSchema"])


CHECKS = {
    "openai": check_openai,
    "openai-responses": check_openai_responses,
    "anthropic": check_anthropic,
    "gemini": check_gemini,
    "gemini-openapi": check_gemini_openapi,
    "mcp": check_mcp,
}
STRICT_FORMATS_NAMES = ("openai", "openai-responses", "anthropic")


def nodes(schema: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every schema node of a converted schema (not property names)."""
    yield schema
    for sub in (schema.get("properties") or {}).values():
        yield from nodes(sub)
    if isinstance(schema.get("items"), Mapping):
        yield from nodes(schema["items"])
    for sub in schema.get("anyOf") or ():
        yield from nodes(sub)


def check_strict_invariants(schema: Mapping[str, Any]) -> None:
    assert schema["type"] == "object"
    assert "anyOf" not in schema
    for node in nodes(schema):
        assert set(node) <= STRICT_KEYWORDS, sorted(set(node) - STRICT_KEYWORDS)
        assert "type" in node or "anyOf" in node, node
        types = node.get("type")
        if types == "object" or (isinstance(types, list) and "object" in types):
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
        if "format" in node:
            assert node["format"] in STRICT_FORMATS
        if "enum" in node:
            assert node["enum"], node
            assert all(Draft202012Validator({"type": types}).is_valid(v) for v in node["enum"])
        if types == "array" or (isinstance(types, list) and "array" in types):
            assert "items" in node
    Draft202012Validator.check_schema(schema)


def check_anthropic_strict_invariants(schema: Mapping[str, Any]) -> None:
    assert schema["type"] == "object"
    for node in nodes(schema):
        assert set(node) <= ANTHROPIC_STRICT_KEYWORDS, sorted(set(node) - ANTHROPIC_STRICT_KEYWORDS)
        assert "type" in node or "anyOf" in node, node
        types = node.get("type")
        if types == "object" or (isinstance(types, list) and "object" in types):
            assert node["additionalProperties"] is False
            assert set(node["required"]) <= set(node["properties"])
        if "format" in node:
            assert node["format"] in ANTHROPIC_FORMATS
        if "minItems" in node:
            assert node["minItems"] in (0, 1)
        if "enum" in node:
            assert all(isinstance(v, str | int | float | bool | type(None)) for v in node["enum"])
    Draft202012Validator.check_schema(schema)


def check_gemini_invariants(schema: Mapping[str, Any]) -> None:
    for node in nodes(schema):
        assert not (set(node) & GEMINI_FORBIDDEN), sorted(set(node) & GEMINI_FORBIDDEN)
        if "type" in node:
            assert isinstance(node["type"], str)
            assert node["type"] in GEMINI_TYPES
        if "enum" in node:
            assert node["type"] == "string"
            assert all(isinstance(v, str) for v in node["enum"])
        if "format" in node:
            assert node["format"] in GEMINI_FORMATS
        if node.get("type") == "array":
            assert "items" in node
        if "required" in node:
            assert set(node["required"]) <= set(node["properties"])
        if "nullable" in node:
            assert node["nullable"] is True


# -- the API --------------------------------------------------------------------------


def test_formats() -> None:
    assert FORMATS == ("openai", "openai-responses", "anthropic", "gemini", "gemini-openapi", "mcp")


def test_unknown_format_names_the_formats() -> None:
    with pytest.raises(ValueError, match="openai, openai-responses, anthropic, gemini, "):
        export_tool(meta(obj({})), "langchain")
    with pytest.raises(ValueError, match="unknown schema format 'xml'"):
        export_tools([], "xml")


@pytest.mark.parametrize("fmt", ["gemini", "gemini-openapi", "mcp"])
def test_strict_is_only_for_formats_that_have_it(fmt: str) -> None:
    with pytest.raises(ValueError, match="strict mode applies to openai, openai-responses, "):
        export_tool(meta(obj({})), fmt, strict=True)
    assert export_tool(meta(obj({})), fmt, strict=False) == export_tool(meta(obj({})), fmt)


@pytest.mark.parametrize("fmt", ["openai", "gemini", "mcp"])
def test_defer_loading_is_only_for_formats_with_native_search(fmt: str) -> None:
    with pytest.raises(ValueError, match="defer_loading applies to anthropic and openai-responses"):
        export_tool(meta(obj({})), fmt, defer_loading=True)


def test_export_tools_of_metadata_still_works_and_warns() -> None:
    tools = [meta(obj({}), name=n) for n in ("zeta", "alpha", "mid")]
    with pytest.warns(DeprecationWarning, match=r"pass the registry: export_tools\(toolplug.load"):
        exported = export_tools(tools, "anthropic")
    assert [t["name"] for t in exported] == ["alpha", "mid", "zeta"]


def test_export_tools_refuses_what_is_neither_registry_nor_metadata() -> None:
    with pytest.raises(TypeError, match="takes the registry as its first argument"):
        export_tools(42, "openai")  # type: ignore[arg-type]


def test_dumps_is_stable_text() -> None:
    value = {"b": [1, "é"], "a": {"z": None, "y": True}}
    text = dumps(value)
    assert text.endswith("}\n")
    assert text == dumps(json.loads(text))
    assert '"a"' in text.splitlines()[1]  # keys sorted
    assert "é" in text  # not escaped


# -- the formats: worked examples -----------------------------------------------------

SEARCH = obj(
    {
        "query": {"type": "string", "minLength": 1, "description": "What to look for"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
        "since": {"type": "string", "format": "date-time"},
        "site": {"type": "string", "format": "uri", "pattern": "^https://"},
        "mode": {"enum": ["fast", "deep"]},
    },
    ["query"],
    additionalProperties=False,
)


def test_openai_plain_passes_the_schema_through() -> None:
    tool = export_tool(meta(SEARCH), "openai")
    assert tool == {
        "type": "function",
        "function": {
            "name": "probe",
            "description": "Probe the schema.",
            "parameters": SEARCH,
        },
    }
    check_openai(tool)


def test_anthropic_passes_the_schema_through() -> None:
    tool = export_tool(meta(SEARCH), "anthropic")
    assert tool == {"name": "probe", "description": "Probe the schema.", "input_schema": SEARCH}
    check_anthropic(tool)


def test_openai_responses_is_a_flat_function_strict_by_default() -> None:
    tool = export_tool(meta(SEARCH), "openai-responses")
    check_openai_responses(tool)
    chat = export_tool(meta(SEARCH), "openai", strict=True)["function"]
    assert tool == {"type": "function", **chat}
    loose = export_tool(meta(SEARCH), "openai-responses", strict=False)
    check_openai_responses(loose)
    assert loose == {
        "type": "function",
        "name": "probe",
        "description": "Probe the schema.",
        "parameters": SEARCH,
        "strict": False,
    }


EXAMPLES = (
    Example(description="Plain", input={"query": "llm tools"}),
    Example(description="Everything", input={"query": "x", "limit": 3, "mode": "deep"}),
)


def test_anthropic_input_examples_come_from_the_examples() -> None:
    tool = export_tool(meta(SEARCH, examples=EXAMPLES), "anthropic")
    check_anthropic(tool)
    assert tool["input_examples"] == [e.input for e in EXAMPLES]
    assert "strict" not in tool


def test_anthropic_strict_rewrites_for_strict_tool_use() -> None:
    headers = {"type": "object", "additionalProperties": {"type": "string"}}
    schema = obj({**SEARCH["properties"], "headers": headers}, ["query"])
    example = Example(description="Headers", input={"query": "q", "headers": {"Accept": "x"}})
    tool = export_tool(meta(schema, examples=(*EXAMPLES, example)), "anthropic", strict=True)
    check_anthropic(tool)
    assert tool["strict"] is True
    properties = tool["input_schema"]["properties"]
    # Optional properties stay optional: Anthropic does not need every one required.
    assert tool["input_schema"]["required"] == ["query"]
    assert properties["limit"] == {"type": "integer", "description": "1 to 20; default: 5"}
    assert properties["site"]["format"] == "uri"  # a format Anthropic's strict mode keeps
    assert properties["headers"]["type"] == "array"
    # The examples come in the shape the strict schema asks for.
    assert tool["input_examples"][-1] == {
        "query": "q",
        "headers": [{"key": "Accept", "value": "x"}],
    }
    assert restore_strict_arguments(schema, tool["input_examples"][-1]) == example.input


def test_gemini_takes_json_schema_and_the_returns() -> None:
    returns = obj({"hits": {"type": "array", "items": {"type": "string"}}})
    declaration = export_tool(meta(SEARCH, returns=returns), "gemini")
    check_gemini(declaration)
    assert declaration == {
        "name": "probe",
        "description": "Probe the schema.",
        "parametersJsonSchema": SEARCH,
        "responseJsonSchema": returns,
    }
    assert "responseJsonSchema" not in export_tool(meta(SEARCH), "gemini")


def test_openai_strict_rewrites_the_parameters() -> None:
    tool = export_tool(meta(SEARCH), "openai", strict=True)
    check_openai(tool)
    assert tool["function"]["strict"] is True
    assert tool["function"]["parameters"] == {
        "type": "object",
        "properties": {
            # Required: stays non-nullable; unsupported minLength folded into the text.
            "query": {"type": "string", "description": "What to look for (at least 1 character)"},
            # Optional: nullable; a supported range stays, the default is described.
            "limit": {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": 20,
                "description": "default: 5",
            },
            # A documented format stays.
            "since": {"type": ["string", "null"], "format": "date-time"},
            # An undocumented format and a pattern are described instead.
            "site": {
                "type": ["string", "null"],
                "description": "matches the pattern ^https://; format uri",
            },
            # An enum of an optional property admits null too.
            "mode": {"type": ["string", "null"], "enum": ["fast", "deep", None]},
        },
        "required": ["query", "limit", "since", "site", "mode"],
        "additionalProperties": False,
    }


def test_strict_optional_complex_property_becomes_any_of_with_null() -> None:
    schema = obj(
        {
            "point": {"$ref": "#/$defs/point", "description": "Where"},
            "shape": {"oneOf": [{"type": "string"}, obj({"r": {"type": "number"}})]},
        }
    )
    schema["$defs"] = {"point": obj({"x": {"type": "number"}}, ["x"])}
    out = strict_schema(schema)
    check_strict_invariants(out)
    assert out["properties"]["point"] == {
        "type": ["object", "null"],
        "description": "Where",
        "properties": {"x": {"type": "number"}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert out["properties"]["shape"] == {
        "anyOf": [
            {"type": "string"},
            {
                "type": "object",
                "properties": {"r": {"type": ["number", "null"]}},
                "required": ["r"],
                "additionalProperties": False,
            },
            {"type": "null"},
        ]
    }


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # const becomes a one-value enum
        ({"const": "x"}, {"type": "string", "enum": ["x"]}),
        # allOf is merged: properties and required are united
        (
            {"allOf": [obj({"a": {"type": "string"}}, ["a"]), obj({"b": {"type": "integer"}})]},
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        ),
        # a mixed enum is split by type
        (
            {"enum": [1, "one"]},
            {"anyOf": [{"type": "integer", "enum": [1]}, {"type": "string", "enum": ["one"]}]},
        ),
        # several types become alternatives, each with the keywords that apply to it
        (
            {"type": ["string", "integer"], "minimum": 0, "maxLength": 3},
            {
                "anyOf": [
                    {"type": "string", "description": "at most 3 characters"},
                    {"type": "integer", "minimum": 0},
                ]
            },
        ),
        # any value: scalars as they are, arrays and objects as JSON text
        ({"description": "Anything"}, {"anyOf": ANY, "description": "Anything"}),
        # a map becomes a list of key/value items
        (
            {"type": "object", "additionalProperties": {"type": "string"}},
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
                    "required": ["key", "value"],
                    "additionalProperties": False,
                },
            },
        ),
        # a map beside an array alternative is JSON text: a list would be ambiguous
        (
            {"type": ["object", "array"], "items": {"type": "integer"}},
            {"anyOf": [JSON_TEXT_OBJECT, {"type": "array", "items": {"type": "integer"}}]},
        ),
        # array keywords: counts stay, uniqueness is described, missing items become any
        (
            {"type": "array", "minItems": 1, "uniqueItems": True},
            {
                "type": "array",
                "minItems": 1,
                "items": {"anyOf": ANY},
                "description": "no duplicate items",
            },
        ),
        # a recursive reference is cut to "any value" and named
        ({"$ref": "#"}, {"anyOf": ANY, "description": "recursive reference #"}),
    ],
)
def test_strict_cases(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    out = strict_schema(obj({"p": schema}, ["p"]))
    check_strict_invariants(out)
    assert out["properties"]["p"] == expected


def test_every_schema_is_strict_and_the_call_shape_comes_back() -> None:
    # What made a tool non-strict before: maps, any-type values, recursion, other keys.
    schema = obj(
        {
            "url": {"type": "string"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "body": {"type": ["string", "object", "null"]},
            "tree": {"$ref": "#"},
            "rows": {"type": "array", "items": {}},
            "labels": obj({"main": {"type": "string"}}, additionalProperties={"type": "integer"}),
        },
        ["url"],
    )
    tool = export_tool(meta(schema), "openai", strict=True)
    check_openai(tool)
    assert tool["function"]["strict"] is True
    labels = tool["function"]["parameters"]["properties"]["labels"]
    assert list(labels["properties"]) == ["main", "additional_properties"]
    arguments = {
        "url": "https://example.org",
        "headers": {"Accept": "text/html", "X-Trace": "1"},
        "body": {"title": "t", "tags": ["a"]},
        "tree": {"url": "nested", "rows": [[1, {"x": None}]]},
        "rows": [1, "two", [3], {"four": 4}],
        "labels": {"main": "m", "extra": 2},
    }
    shaped = strict_arguments(schema, arguments)
    assert shaped["headers"] == [
        {"key": "Accept", "value": "text/html"},
        {"key": "X-Trace", "value": "1"},
    ]
    # No array is accepted beside the object: a key/value list, whose values may be anything.
    assert shaped["body"] == [
        {"key": "title", "value": "t"},
        {"key": "tags", "value": {"json_text": '["a"]'}},
    ]
    assert shaped["rows"][2] == {"json_text": "[3]"}
    assert shaped["labels"] == {
        "main": "m",
        "additional_properties": [{"key": "extra", "value": 2}],
    }
    assert not list(Draft202012Validator(tool["function"]["parameters"]).iter_errors(shaped))
    assert restore_strict_arguments(schema, shaped) == arguments
    # Arguments already in the declared shape pass through.
    assert restore_strict_arguments(schema, arguments) == arguments


def test_strict_object_alternatives_are_merged_at_the_top() -> None:
    # "Give an id or a url": strict mode has no top-level anyOf, so both are offered.
    schema = obj(
        {"id": {"type": "integer"}, "url": {"type": "string"}},
        oneOf=[{"required": ["id"]}, {"required": ["url"]}],
    )
    out = strict_schema(schema)
    check_strict_invariants(out)
    assert out["description"] == "requires id or url"
    assert out["required"] == ["id", "url"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # an optional null goes; a required one stays for validation to report
        ({"q": "x", "n": None}, {"q": "x"}),
        ({"q": None}, {"q": None}),
        # a property whose own schema admits null keeps it
        ({"q": "x", "maybe": None}, {"q": "x", "maybe": None}),
        # nested objects and arrays of objects
        (
            {"q": "x", "inner": {"deep": None, "keep": 1}, "rows": [{"deep": None}]},
            {"q": "x", "inner": {"keep": 1}, "rows": [{}]},
        ),
        # unknown keys and non-objects pass through
        ({"q": "x", "other": None}, {"q": "x", "other": None}),
        ("not an object", "not an object"),
    ],
)
def test_drop_strict_nulls(arguments: Any, expected: Any) -> None:
    inner = obj({"deep": {"type": "string"}, "keep": {"type": "integer"}})
    schema = obj(
        {
            "q": {"type": "string"},
            "n": {"type": "integer", "default": 3},
            "maybe": {"type": ["string", "null"]},
            "inner": inner,
            "rows": {"type": "array", "items": inner},
        },
        ["q"],
    )
    assert drop_strict_nulls(schema, arguments) == expected


def test_gemini_openapi_uses_the_openapi_subset() -> None:
    schema = obj(
        {
            "q": {"type": "string", "minLength": 1, "format": "uri", "title": "Query"},
            "n": {"type": ["integer", "null"], "exclusiveMinimum": 0, "default": 5},
            "level": {"type": "integer", "enum": [1, 2, 3]},
            "kind": {"const": "news"},
            "at": {"type": "string", "format": "date-time"},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "uniqueItems": True},
            "extra": {"type": "object", "additionalProperties": {"type": "string"}},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        },
        ["q", "zzz"],
        additionalProperties=False,
        **{"$defs": {"tag": {"type": "string", "enum": ["a", "b"]}}},
    )
    declaration = export_tool(meta(schema), "gemini-openapi")
    check_gemini_openapi(declaration)
    assert declaration["parameters"] == {
        "type": "object",
        "required": ["q"],  # a required name without a property is left out
        "properties": {
            "q": {"type": "string", "minLength": 1, "title": "Query", "description": "format uri"},
            "n": {
                "type": "integer",
                "nullable": True,
                "description": "greater than 0; default: 5",
            },
            "level": {"type": "integer", "description": "one of: 1, 2, 3"},
            "kind": {"type": "string", "enum": ["news"]},
            "at": {"type": "string", "format": "date-time"},
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b"]},
                "description": "no duplicate items",
            },
            "extra": {"type": "object", "description": "any keys"},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": True},
        },
    }


def test_gemini_openapi_tool_without_arguments_has_no_parameters() -> None:
    declaration = export_tool(meta(obj({})), "gemini-openapi")
    assert declaration == {"name": "probe", "description": "Probe the schema."}
    check_gemini_openapi(declaration)


def test_gemini_single_alternative_with_null_collapses() -> None:
    out = gemini_schema(
        obj({"p": {"anyOf": [{"type": "string", "description": "inner"}, {"type": "null"}]}})
    )
    assert out["properties"]["p"] == {"type": "string", "nullable": True, "description": "inner"}


def test_mcp_tool_definition() -> None:
    tool = export_tool(
        meta(
            SEARCH,
            title="Search",
            usage_hint="Use for fresh facts.",
            returns=obj({"hits": {"type": "array"}}),
            annotations=Annotations(read_only=True, destructive=False, idempotent=True),
        ),
        "mcp",
    )
    check_mcp(tool)
    assert tool == {
        "name": "probe",
        "title": "Search",
        "description": "Probe the schema.\n\nUse for fresh facts.",
        "inputSchema": SEARCH,
        "outputSchema": obj({"hits": {"type": "array"}, **RESULT_EXTRAS}),
        "annotations": {
            "title": "Search",
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": True,
        },
        # the tool declares no labels: the cautious default, every parameter a sink
        "_meta": {
            "toolplug/trust": {
                "output": "untrusted",
                "private": True,
                "sinks": sorted(SEARCH["properties"]),
                "returnMetadata": {"source": "untrustedPublic", "sensitivity": "user"},
            }
        },
    }


@pytest.mark.parametrize(
    ("labels", "source", "sensitivity"),
    [
        # a page anyone wrote, sent to nobody private
        (Trust(output="untrusted", sinks=("query",)), "untrustedPublic", "none"),
        # the user's calendar, with invitations anyone sends
        (Trust(output="untrusted", private=True), "untrustedPublic", "user"),
        # the author's configured links
        (Trust(output="trusted", private=True), "user", "user"),
        # a score the tool computed
        (Trust(output="trusted"), "system", "none"),
    ],
)
def test_mcp_tool_carries_its_labels_in_meta(labels: Trust, source: str, sensitivity: str) -> None:
    declared = export_tool(meta(SEARCH, trust=labels), "mcp")
    check_mcp(declared)
    assert declared["_meta"]["toolplug/trust"] == {
        "output": labels.output,
        "private": labels.private,
        "sinks": list(labels.sinks),
        "returnMetadata": {"source": source, "sensitivity": sensitivity},
    }
    # the labels in force (an overlay from the configuration) win over the declared ones
    given = export_tool(meta(SEARCH, trust=labels), "mcp", labels=Trust(output="trusted"))
    assert given["_meta"]["toolplug/trust"]["output"] == "trusted"
    assert given["_meta"]["toolplug/trust"]["sinks"] == []


def test_mcp_without_returns_has_no_output_schema() -> None:
    tool = export_tool(meta(obj({})), "mcp")
    check_mcp(tool)
    assert "outputSchema" not in tool
    assert tool["title"] == "probe"  # the name when no title is given
    assert structured_content(meta(obj({})), {"x": 1}) is None


WARNED: dict[str, Any] = {
    "warnings": ["cut"],
    "citations": [{"title": "T", "url": "https://example.com"}],
}
"""A result's warnings and citations, as they go beside its data."""


@pytest.mark.parametrize(
    ("returns", "output", "data", "content"),
    [
        # an object schema gets the warnings and citations beside its properties
        (
            obj({"n": {"type": "integer"}}, additionalProperties=False),
            obj({"n": {"type": "integer"}, **RESULT_EXTRAS}, additionalProperties=False),
            {"n": 1},
            {"n": 1, **WARNED},
        ),
        # alternatives of objects only need the type beside them, and the two in each
        (
            {
                "oneOf": [
                    obj({"a": {"type": "string"}}, ["a"], additionalProperties=False),
                    obj({"b": {"type": "string"}}, ["b"]),
                ]
            },
            {
                "type": "object",
                "oneOf": [
                    obj(
                        {"a": {"type": "string"}, **RESULT_EXTRAS}, ["a"],
                        additionalProperties=False,
                    ),
                    obj({"b": {"type": "string"}, **RESULT_EXTRAS}, ["b"]),
                ],
            },
            {"a": "x"},
            {"a": "x", **WARNED},
        ),
        # anything else is wrapped, and so is the data
        (
            {"type": "array", "items": {"type": "string"}},
            {
                "type": "object",
                "properties": {
                    "result": {"type": "array", "items": {"type": "string"}},
                    **RESULT_EXTRAS,
                },
                "required": ["result"],
                "additionalProperties": False,
            },
            ["x"],
            {"result": ["x"], **WARNED},
        ),
        # an object with a warnings of its own is wrapped: the names do not collide
        (
            obj({"warnings": {"type": "integer"}}),
            {
                "type": "object",
                "properties": {"result": obj({"warnings": {"type": "integer"}}), **RESULT_EXTRAS},
                "required": ["result"],
                "additionalProperties": False,
            },
            {"warnings": 3},
            {"result": {"warnings": 3}, **WARNED},
        ),
        # definitions move to the wrapper's top, where references look for them
        (
            {"$defs": {"n": {"type": "integer"}}, "type": ["object", "null"]},
            {
                "type": "object",
                "properties": {"result": {"type": ["object", "null"]}, **RESULT_EXTRAS},
                "required": ["result"],
                "additionalProperties": False,
                "$defs": {"n": {"type": "integer"}},
            },
            None,
            {"result": None, **WARNED},
        ),
    ],
)
def test_mcp_output_schema(returns: Any, output: Any, data: Any, content: Any) -> None:
    metadata = meta(obj({}), returns=returns)
    assert mcp_output_schema(metadata) == output
    assert structured_content(metadata, data, **WARNED) == content
    assert not list(Draft202012Validator(output).iter_errors(content))
    # without warnings or citations the data goes as it is (wrapped when the schema is)
    bare = structured_content(metadata, data)
    assert bare == ({"result": data} if "result" in content else data)
    assert not list(Draft202012Validator(output).iter_errors(bare))
    check_mcp(export_tool(metadata, "mcp"))


def test_exports_do_not_change_the_metadata() -> None:
    schema = copy.deepcopy(SEARCH)
    metadata = meta(schema, returns={"type": "string"})
    for fmt in FORMATS:
        export_tool(metadata, fmt)
    for fmt in STRICT_FORMATS_NAMES:
        export_tool(metadata, fmt, strict=True)
    assert metadata.parameters == SEARCH
    assert metadata.returns == {"type": "string"}


# -- every installed catalog tool -----------------------------------------------------


@pytest.fixture(scope="module")
def catalog() -> list[ToolMetadata]:
    registry = toolplug.load({})
    tools = [tool.metadata for tool in registry.tools.values()]
    assert len(tools) >= 6  # the catalog is installed in the workspace
    return tools


@pytest.mark.parametrize("fmt", FORMATS)
def test_catalog_exports_validate(catalog: list[ToolMetadata], fmt: str) -> None:
    registry = toolplug.load({})
    exported = export_tools(registry, fmt, include_unavailable=True)
    assert [t.get("name") or t["function"]["name"] for t in exported] == sorted(
        m.name for m in catalog
    )
    for tool in exported:
        CHECKS[fmt](tool)
    assert dumps(exported) == dumps(export_tools(registry, fmt, include_unavailable=True))


@pytest.mark.parametrize("fmt", STRICT_FORMATS_NAMES)
def test_catalog_exports_strict(catalog: list[ToolMetadata], fmt: str) -> None:
    for metadata in catalog:
        tool = export_tool(metadata, fmt, strict=True)
        CHECKS[fmt](tool)
        assert (tool.get("function") or tool)["strict"] is True, metadata.name
        parameters = (tool.get("function") or tool).get("parameters") or tool["input_schema"]
        # Every example, in the strict shape, fits the strict schema, and the call path
        # turns it back into the example (a null the tool's own schema accepts stays: it
        # cannot be told apart from one the model meant).
        validator = Draft202012Validator(parameters)
        dialect: Dialect = "anthropic" if fmt == "anthropic" else "openai"
        for example in metadata.examples:
            shaped = strict_arguments(metadata.parameters, example.input, dialect=dialect)
            assert not list(validator.iter_errors(shaped)), (metadata.name, example.input)
            back = restore_strict_arguments(metadata.parameters, shaped)
            assert {k: v for k, v in back.items() if k in example.input} == example.input
            for name in set(back) - set(example.input):
                assert back[name] is None
                assert Draft202012Validator(metadata.parameters["properties"][name]).is_valid(None)


def test_url_fetch_headers_are_strict_key_value_items(catalog: list[ToolMetadata]) -> None:
    url_fetch = next(m for m in catalog if m.name == "url_fetch")
    tool = export_tool(url_fetch, "openai-responses")
    assert tool["strict"] is True
    headers = tool["parameters"]["properties"]["headers"]
    assert headers["type"] == ["array", "null"]
    assert headers["items"]["required"] == ["key", "value"]


# -- generated schemas ----------------------------------------------------------------

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(parameter_schemas())
def test_generated_schemas_export_to_every_format(schema: dict[str, Any]) -> None:
    Draft202012Validator.check_schema(schema)  # the generator makes valid schemas
    metadata = meta(schema)
    before = copy.deepcopy(schema)
    for fmt in FORMATS:
        tool = export_tool(metadata, fmt)
        CHECKS[fmt](tool)
        # (d) deterministic, and the input is left alone
        assert dumps(tool) == dumps(export_tool(metadata, fmt))
    for fmt in STRICT_FORMATS_NAMES:
        strict = export_tool(metadata, fmt, strict=True)
        CHECKS[fmt](strict)  # strict, always: every schema has a strict form
        assert (strict.get("function") or strict)["strict"] is True
        assert dumps(strict) == dumps(export_tool(metadata, fmt, strict=True))
    assert schema == before


@SETTINGS
@given(parameter_schemas())
def test_generated_anthropic_strict_invariants(schema: dict[str, Any]) -> None:
    out = strict_schema(schema, dialect="anthropic")
    check_anthropic_strict_invariants(out)
    # Anthropic's own SDK helper accepts it, and finds nothing to move into descriptions.
    from anthropic.lib._parse._transform import transform_schema

    assert descriptions(transform_schema(out)) == descriptions(out)


def test_a_format_beside_an_enum_is_described_not_kept() -> None:
    # Found by the property test above: Anthropic's strict grammar reads only the values
    # of an enum, so its SDK moved the format into the description.
    schema = {"type": "object", "properties": {"a": {"allOf": [
        {"enum": [""]}, {"anyOf": [{"type": "string", "format": "date-time"}]}]}}}
    out = strict_schema(schema, dialect="anthropic")
    from anthropic.lib._parse._transform import transform_schema

    assert descriptions(transform_schema(out)) == descriptions(out)
    def keys(node: Any) -> set[str]:
        if isinstance(node, dict):
            return set(node) | {k for v in node.values() for k in keys(v)}
        return {k for v in node for k in keys(v)} if isinstance(node, list) else set()

    assert "format" not in keys(out)
    assert "format date-time" in json.dumps(out)  # described instead


def descriptions(schema: Any) -> list[str]:
    """Every description in a schema, sorted."""
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                found.append(value)
            else:
                found += descriptions(value)
    elif isinstance(schema, list):
        for value in schema:
            found += descriptions(value)
    return sorted(found)


@SETTINGS
@given(parameter_schemas())
def test_generated_strict_invariants(schema: dict[str, Any]) -> None:
    out = strict_schema(schema)
    # (b) every object closed and fully required, recursively; only documented keywords
    check_strict_invariants(out)
    # Optional properties at the top admit null; required ones keep their own null-ness.
    required = set(schema.get("required", []))
    for branch in schema.get("allOf", []):
        required.update(branch.get("required", []))
    for name, sub in out["properties"].items():
        if name not in required:
            assert accepts_null(sub), (name, sub)
    # Rewriting a strict schema again changes nothing.
    assert strict_schema(out) == out


@SETTINGS
@given(parameter_schemas())
def test_generated_gemini_invariants(schema: dict[str, Any]) -> None:
    out = gemini_schema(schema)
    # (c) no forbidden keyword anywhere, string enums only, one type per node
    check_gemini_invariants(out)
    assert out["type"] == "object"
    gemini_types.Schema.model_validate(out)
    assert dumps(out) == dumps(gemini_schema(schema))


def accepts_null(node: Mapping[str, Any]) -> bool:
    if "anyOf" in node:
        return any(accepts_null(b) for b in node["anyOf"])
    types = node["type"]
    if not (types == "null" or (isinstance(types, list) and "null" in types)):
        return False
    return "enum" not in node or None in node["enum"]
