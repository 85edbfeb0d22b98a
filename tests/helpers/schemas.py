"""Tool metadata around a schema, and Hypothesis strategies for JSON Schemas of arguments.

``parameter_schemas()`` generates valid 2020-12 schemas with nested objects, arrays, mixed
enums, optional and nullable properties, const, oneOf/allOf, ``$ref``/``$defs`` (one
definition refers to itself), defaults and constraints.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from toolplug import ToolMetadata


def meta(parameters: dict[str, Any], **extra: Any) -> ToolMetadata:
    return ToolMetadata(
        name=extra.pop("name", "probe"),
        description="Probe the schema.",
        category="utility",
        parameters=parameters,
        **extra,
    )


def obj(
    properties: dict[str, Any], required: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **extra}
    if required is not None:
        schema["required"] = required
    return schema


names = st.from_regex(r"[a-z][a-z0-9_]{0,9}", fullmatch=True)
words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-1000, 1000)
    | st.floats(-1e6, 1e6, allow_nan=False, width=32)
    | st.text(max_size=6)
)
DEF_NAMES = ("color", "point", "tags")


def _with(
    base: dict[str, st.SearchStrategy[Any]], optional: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(base, optional=optional)


labels: dict[str, st.SearchStrategy[Any]] = {"description": words, "title": words}

strings = _with(
    {"type": st.just("string")},
    {
        "minLength": st.integers(0, 5),
        "maxLength": st.integers(5, 40),
        "pattern": st.sampled_from(["^a", "^https?://", "[0-9]+$"]),
        "format": st.sampled_from(["date-time", "email", "uri", "uuid", "date", "int32"]),
        "default": st.text(max_size=5),
        "examples": st.lists(st.text(max_size=5), max_size=2),
        **labels,
    },
)
numbers = _with(
    {"type": st.sampled_from(["integer", "number"])},
    {
        "minimum": st.integers(-10, 0),
        "maximum": st.integers(1, 100),
        "exclusiveMinimum": st.integers(-20, -11),
        "multipleOf": st.integers(1, 5),
        "format": st.sampled_from(["int32", "int64", "float", "double", "percent"]),
        "default": st.integers(1, 5),
        **labels,
    },
)
booleans = _with({"type": st.just("boolean")}, {"default": st.booleans(), **labels})
type_lists = _with(
    {
        "type": st.lists(
            st.sampled_from(["string", "integer", "number", "boolean", "null"]),
            min_size=1,
            max_size=3,
            unique=True,
        )
    },
    {"minimum": st.integers(0, 3), "maxLength": st.integers(1, 9), **labels},
)
enums = _with(
    {"enum": st.lists(scalars, min_size=1, max_size=4, unique_by=json.dumps)},
    labels,
)
string_enums = _with(
    {
        "type": st.just("string"),
        "enum": st.lists(st.text(max_size=6), min_size=1, max_size=4, unique=True),
    },
    {"default": st.text(max_size=3), **labels},
)
consts = _with({"const": scalars}, labels)
anything = _with({}, labels)
refs = _with({"$ref": st.sampled_from([f"#/$defs/{n}" for n in DEF_NAMES])}, labels)
leaves = strings | numbers | booleans | type_lists | enums | string_enums | consts | anything | refs


@st.composite
def objects(draw: st.DrawFn, children: st.SearchStrategy[Any]) -> dict[str, Any]:
    properties = draw(st.dictionaries(names, children, max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties:
        schema["required"] = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
    extra = draw(st.sampled_from(["absent", "false", "true", "schema"]))
    if extra == "false":
        schema["additionalProperties"] = False
    elif extra == "true":
        schema["additionalProperties"] = True
    elif extra == "schema":
        schema["additionalProperties"] = draw(children)
    alternatives: bool = draw(st.booleans())
    if properties and alternatives:  # "give one of these"
        keys = sorted(properties)
        schema["oneOf"] = [{"required": [k]} for k in keys[:2]]
    schema.update(draw(st.fixed_dictionaries({}, optional=labels)))
    return schema


def composites(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        objects(children)
        | _with(
            {"type": st.just("array"), "items": children},
            {"minItems": st.integers(0, 2), "maxItems": st.integers(3, 9), **labels},
        )
        | _with({"type": st.just("array")}, {"uniqueItems": st.booleans()})
        | _with({"anyOf": st.lists(children, min_size=1, max_size=3)}, labels)
        | _with({"oneOf": st.lists(children, min_size=1, max_size=3)}, labels)
        | _with({"allOf": st.lists(children, min_size=1, max_size=2)}, labels)
        | _with({"anyOf": st.tuples(children, st.just({"type": "null"})).map(list)}, {})
    )


schemas = st.recursive(leaves, composites, max_leaves=10)


@st.composite
def parameter_schemas(draw: st.DrawFn) -> dict[str, Any]:
    root = draw(objects(schemas))
    root["$defs"] = {
        "color": draw(string_enums),
        "point": draw(objects(leaves)),
        # A definition that refers to itself: cut where it recurses.
        "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"$ref": "#"}]}},
    }
    if draw(st.booleans()):
        root["allOf"] = [draw(objects(leaves))]
    return root
