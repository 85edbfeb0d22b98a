"""Provider tool schemas (OpenAI, Anthropic, Gemini, MCP) from a tool's metadata.

Pure functions of ``ToolMetadata``: no provider SDK is imported, and the same metadata
always gives the same output, byte for byte through ``dumps``. What each format does with
the ``parameters`` schema::

    openai      passed through unchanged
    openai +    rewritten for Structured Outputs (``strict=True``): every object closed and
      strict    fully required, optional properties made nullable, unsupported keywords
                folded into the description; a tool strict mode cannot express without
                refusing valid arguments stays as it is, with ``"strict": false``
    anthropic   passed through unchanged
    gemini      rewritten to the OpenAPI subset Gemini reads: no $ref, oneOf, allOf,
                additionalProperties or const; one type per node with ``nullable``
    mcp         passed through unchanged; ``returns`` becomes the ``outputSchema``

The two rewrites share one simplification step (``$ref`` inlined, ``allOf`` merged,
``oneOf`` read as ``anyOf``, ``const`` as a one-value ``enum``), and both fold what the
target cannot express into the node's description, such as "(default: 5; at most 20
characters)". docs/schemas.md lists exactly what each conversion loses.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from toolplug._metadata import ToolMetadata

__all__ = [
    "FORMATS",
    "drop_strict_nulls",
    "dumps",
    "export_tool",
    "export_tools",
    "gemini_schema",
    "mcp_output_schema",
    "strict_problems",
    "strict_schema",
    "structured_content",
]

FORMATS: Final = ("openai", "anthropic", "gemini", "mcp")
"""The schema formats ``export_tool`` writes, in the order the CLI lists them."""

_NOTES: Final = "$toolplug:notes"
"""Key under which the simplified schema carries notes for the description."""

_MAX_REF_DEPTH: Final = 16

# Keywords that describe a value without constraining it; they stay on the outer node
# when a node is split into alternatives.
_ANNOTATIONS: Final = frozenset(
    {"description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly", _NOTES}
)

# What the simplified schema keeps; everything else is dropped (see docs/schemas.md).
_UNDERSTOOD: Final = _ANNOTATIONS | frozenset(
    {
        "type",
        "enum",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minProperties",
        "maxProperties",
        "anyOf",
    }
)

_NUMERIC: Final = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format"}
)
_APPLIES: Final[Mapping[str, frozenset[str]]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "number": _NUMERIC,
    "integer": _NUMERIC,
    "array": frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems"}),
    "object": frozenset(
        {"properties", "required", "additionalProperties", "minProperties", "maxProperties"}
    ),
    "boolean": frozenset(),
    "null": frozenset(),
}
"""The keywords that constrain each JSON type (used when a node is split by type)."""

_JSON_TYPES: Final = ("string", "number", "integer", "boolean", "array", "object", "null")

# OpenAI Structured Outputs: the string formats its guide documents as supported.
_OPENAI_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Gemini: the formats its Schema reference documents, per type.
_GEMINI_FORMATS: Final[Mapping[str, frozenset[str]]] = {
    "string": frozenset({"date-time", "enum"}),
    "number": frozenset({"float", "double"}),
    "integer": frozenset({"int32", "int64"}),
}


# -- public entry points ------------------------------------------------------------


def export_tool(metadata: ToolMetadata, fmt: str, *, strict: bool = False) -> dict[str, Any]:
    """One tool's definition in a provider's format.

    Args:
        metadata: The tool's metadata.
        fmt: One of ``FORMATS``.
        strict: OpenAI only: mark the function strict and rewrite its parameters for
            Structured Outputs (see ``strict_schema``); when ``strict_problems`` finds
            arguments strict mode could not carry, ``"strict": false`` and the parameters
            unchanged instead.

    Raises:
        ValueError: an unknown format, or ``strict`` with a format other than openai.
    """
    _check_format(fmt, strict)
    if fmt == "openai":
        return _openai_tool(metadata, strict)
    if fmt == "anthropic":
        return {
            "name": metadata.name,
            "description": metadata.description,
            "input_schema": copy.deepcopy(metadata.parameters),
        }
    if fmt == "gemini":
        return _gemini_tool(metadata)
    return _mcp_tool(metadata)


def export_tools(
    metadatas: Iterable[ToolMetadata], fmt: str, *, strict: bool = False
) -> list[dict[str, Any]]:
    """Definitions of several tools, sorted by name (see ``export_tool``).

    Raises:
        ValueError: an unknown format, or ``strict`` with a format other than openai.
    """
    _check_format(fmt, strict)
    return [
        export_tool(meta, fmt, strict=strict) for meta in sorted(metadatas, key=lambda m: m.name)
    ]


def dumps(obj: Any) -> str:
    """JSON text that is byte-identical for equal input: sorted keys, indent 2, final newline."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object schema rewritten for OpenAI Structured Outputs (strict mode).

    Every object gets ``additionalProperties: false`` and lists all its properties in
    ``required``; a property that was optional becomes nullable (``["string", "null"]``,
    or ``anyOf`` with ``{"type": "null"}``), so the model sends ``null`` where it would
    have left the property out: ``drop_strict_nulls`` turns those back into absences.
    Keywords strict mode does not document are removed and folded into the description.
    """
    return _openai(_simplify_root(schema), nullable=False)


def strict_problems(schema: Mapping[str, Any]) -> list[str]:
    """Where strict mode cannot express the schema without refusing arguments it accepts.

    A free-form object (no properties, or extra keys with a schema of their own), a value
    of any type, and a recursive or unresolved ``$ref`` have no strict-mode form. With any
    of these, ``export_tool(..., "openai", strict=True)`` exports the function with
    ``"strict": false`` and its parameters unchanged. Each problem reads ``path: reason``.
    """
    problems: list[str] = []
    _find_strict_problems(_simplify_root(schema), "", problems)
    return list(dict.fromkeys(problems))


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema rewritten to the OpenAPI subset Gemini function declarations accept."""
    return _gemini(_simplify_root(schema))


def drop_strict_nulls(schema: Mapping[str, Any], arguments: Any) -> Any:
    """Arguments from a strict-mode call with the ``null`` placeholders removed.

    Strict mode makes the model send every property, ``null`` for the ones it would have
    left out. This removes a ``null`` wherever the original ``schema`` does not accept
    one for an optional property, in nested objects and arrays too, so that validation
    and defaults work as for a non-strict call. Other values are returned unchanged.
    """
    return _drop_nulls(_simplify_root(schema), arguments)


def mcp_output_schema(metadata: ToolMetadata) -> dict[str, Any] | None:
    """The MCP ``outputSchema`` of the tool, or None when it declares no ``returns``.

    MCP wants an object schema at the top. An object ``returns`` is used as it is; one
    whose top is only ``oneOf``/``anyOf`` of objects gets ``"type": "object"`` beside
    them (the same meaning). Any other ``returns`` is wrapped as
    ``{"type": "object", "properties": {"result": <returns>}, "required": ["result"]}``,
    and ``structured_content`` wraps the data the same way.
    """
    return _mcp_output(metadata)[0]


def structured_content(metadata: ToolMetadata, data: Any) -> Any:
    """The MCP ``structuredContent`` for a successful result's ``data``.

    None when the tool declares no ``returns``; ``{"result": data}`` when its
    ``outputSchema`` is a wrapper (see ``mcp_output_schema``); otherwise ``data``.
    """
    schema, wrapped = _mcp_output(metadata)
    if schema is None:
        return None
    return {"result": data} if wrapped else data


def _check_format(fmt: str, strict: bool) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown schema format {fmt!r}; use one of: {', '.join(FORMATS)}")
    if strict and fmt != "openai":
        raise ValueError(
            f"strict mode applies only to the openai format, not {fmt!r}; "
            "drop strict or use the openai format"
        )


# -- the formats --------------------------------------------------------------------


def _openai_tool(metadata: ToolMetadata, strict: bool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": metadata.name, "description": metadata.description}
    if strict and not strict_problems(metadata.parameters):
        function["parameters"] = strict_schema(metadata.parameters)
        function["strict"] = True
    else:
        function["parameters"] = copy.deepcopy(metadata.parameters)
        if strict:
            # Strict mode would refuse arguments the tool accepts: better unenforced than
            # unusable. The caller can tell from "strict": false (and strict_problems).
            function["strict"] = False
    return {"type": "function", "function": function}


def _gemini_tool(metadata: ToolMetadata) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": metadata.name, "description": metadata.description}
    parameters = gemini_schema(metadata.parameters)
    # Gemini rejects an object without properties; a tool without arguments omits them.
    if parameters.get("properties"):
        declaration["parameters"] = parameters
    return declaration


def _mcp_tool(metadata: ToolMetadata) -> dict[str, Any]:
    title = metadata.title or metadata.name
    description = metadata.description
    if metadata.usage_hint.strip():
        # An MCP host shows the model nothing but this text, so the hint travels with it.
        description = f"{description}\n\n{metadata.usage_hint.strip()}"
    hints = metadata.annotations
    tool: dict[str, Any] = {
        "name": metadata.name,
        "title": title,
        "description": description,
        "inputSchema": copy.deepcopy(metadata.parameters),
        "annotations": {
            "title": title,
            "readOnlyHint": hints.read_only,
            "destructiveHint": hints.destructive,
            "idempotentHint": hints.idempotent,
            "openWorldHint": hints.open_world,
        },
    }
    output = mcp_output_schema(metadata)
    if output is not None:
        tool["outputSchema"] = output
    return tool


def _mcp_output(metadata: ToolMetadata) -> tuple[dict[str, Any] | None, bool]:
    schema = metadata.returns
    if schema is None:
        return None, False
    if schema.get("type") == "object":
        return copy.deepcopy(schema), False
    if "type" not in schema and "const" not in schema and "enum" not in schema:
        branches = [
            b for key in ("oneOf", "anyOf") for b in schema.get(key) or () if isinstance(b, dict)
        ]
        if branches and all(b.get("type") == "object" for b in branches):
            return {"type": "object", **copy.deepcopy(schema)}, False
    inner = copy.deepcopy(schema)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
        "additionalProperties": False,
    }
    # References into $defs keep resolving when the definitions move to the new top.
    for key in ("$defs", "definitions"):
        if key in inner:
            wrapper[key] = inner.pop(key)
    inner.pop("$schema", None)
    return wrapper, True


# -- simplification shared by the strict and Gemini rewrites -----------------------


class _Resolver:
    """Looks up local ``$ref`` pointers (``#``, ``#/$defs/x``, any JSON pointer)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def lookup(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return None
        pointer = ref[1:]
        node: Any = self.root
        if pointer == "":
            return node
        if not pointer.startswith("/"):
            return None  # a named anchor: not followed
        from urllib.parse import unquote

        for raw in pointer[1:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node


def _simplify_root(schema: Mapping[str, Any]) -> dict[str, Any]:
    return _simplify(schema, _Resolver(schema), ("#",))  # the top is being expanded already


def _simplify(schema: Any, resolver: _Resolver, stack: tuple[str, ...]) -> dict[str, Any]:
    """The schema with refs inlined, allOf merged, oneOf as anyOf and const as enum.

    The result keeps only the keywords in ``_UNDERSTOOD``, and an ``anyOf`` never sits
    beside type constraints: those are distributed into its branches, or, on an object
    with properties, the branches' properties are merged into it.
    """
    if not isinstance(schema, Mapping):
        return {}  # true (or a non-schema): any value
    node: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in schema.items():
        if key in _UNDERSTOOD and key != _NOTES:
            node[key] = value
    if "const" in schema:
        const = schema["const"]
        node["enum"] = [v for v in node.get("enum", [const]) if _same(v, const)]
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        if "anyOf" in node:
            notes.append("must also match one of several further shapes")
        else:
            node["anyOf"] = one_of
    if notes:
        node[_NOTES] = notes

    # Children first, so that merging below works on simplified parts.
    if isinstance(node.get("properties"), Mapping):
        node["properties"] = {
            name: _simplify(sub, resolver, stack)
            for name, sub in node["properties"].items()
            if sub is not False  # a property that must be absent is simply not offered
        }
    else:
        node.pop("properties", None)
    if isinstance(node.get("required"), list):
        node["required"] = [r for r in node["required"] if isinstance(r, str)]
    else:
        node.pop("required", None)
    items = node.get("items")
    if isinstance(items, list):  # draft 7 tuple form
        node["prefixItems"] = items
        node.pop("items")
    elif "items" in node:
        node["items"] = _simplify(items, resolver, stack) if items is not False else {}
        if items is False:
            node["maxItems"] = min(node.get("maxItems", 0), 0)
            node.pop("items")
    if isinstance(node.get("additionalProperties"), Mapping):
        node["additionalProperties"] = _simplify(node["additionalProperties"], resolver, stack)
    if "anyOf" in node:
        branches = node["anyOf"] if isinstance(node["anyOf"], list) else []
        node["anyOf"] = [_simplify(b, resolver, stack) for b in branches if b is not False]
        if not node["anyOf"]:
            node.pop("anyOf")

    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = resolver.lookup(ref)
        if target is None or ref in stack or len(stack) >= _MAX_REF_DEPTH:
            what = "recursive" if ref in stack else "unresolved"
            base: dict[str, Any] = {_NOTES: [f"{what} reference {ref}"]}
        else:
            base = _simplify(target, resolver, (*stack, ref))
        node = _merge(node, base)
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for branch in all_of:
            if branch is not False:
                node = _merge(node, _simplify(branch, resolver, stack))
    return _settle_any_of(node)


def _settle_any_of(node: dict[str, Any]) -> dict[str, Any]:
    """Keep ``anyOf`` only on a node without type constraints of its own."""
    branches = node.get("anyOf")
    if not branches:
        return node
    flat: list[dict[str, Any]] = []
    for branch in branches:  # a bare anyOf inside an anyOf: one level
        inner = branch.get("anyOf")
        if inner and set(branch) == {"anyOf"}:
            flat.extend(inner)
        else:
            flat.append(branch)
    node["anyOf"] = flat
    own = {k: v for k, v in node.items() if k not in _ANNOTATIONS and k != "anyOf"}
    if not own:
        return node
    if _types_of(own) == ["object"] and ("properties" in own or own.get("type") == "object"):
        # An object with alternatives ("give a or b"): offer every property of every branch.
        merged = {k: v for k, v in node.items() if k != "anyOf"}
        properties = dict(merged.get("properties", {}))
        needs: list[str] = []
        for branch in flat:
            for name, sub in (branch.get("properties") or {}).items():
                properties[name] = _merge(properties[name], sub) if name in properties else sub
            required = [
                r for r in branch.get("required", []) if r not in merged.get("required", [])
            ]
            if required:
                needs.append(" and ".join(required))
        merged["properties"] = properties
        if needs:
            _note(merged, "requires " + " or ".join(needs))
        return merged
    # Distribute the node's own constraints into every branch: A and (B or C).
    outer = {k: v for k, v in node.items() if k in _ANNOTATIONS}
    outer["anyOf"] = [_merge(own, branch) for branch in flat]
    return outer


def _merge(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Both schemas at once (allOf); where they disagree and cannot combine, ``first`` wins."""
    out = dict(first)
    for key, value in second.items():
        if key not in out:
            out[key] = value
            continue
        mine = out[key]
        if key == "properties":
            combined = dict(mine)
            for name, sub in value.items():
                combined[name] = _merge(combined[name], sub) if name in combined else sub
            out[key] = combined
        elif key == "required":
            out[key] = [*mine, *(r for r in value if r not in mine)]
        elif key == "type":
            out[key] = _intersect_types(mine, value)
        elif key == "enum" and isinstance(mine, list) and isinstance(value, list):
            both = [v for v in mine if any(_same(v, w) for w in value)]
            out[key] = both or mine
        elif key in ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"):
            out[key] = max(mine, value) if _numbers(mine, value) else mine
        elif key in ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"):
            out[key] = min(mine, value) if _numbers(mine, value) else mine
        elif key in ("items", "additionalProperties"):
            if isinstance(mine, dict) and isinstance(value, dict):
                out[key] = _merge(mine, value)
            elif value is False:
                out[key] = False
        elif key == _NOTES:
            out[key] = [*mine, *(n for n in value if n not in mine)]
        elif key == "anyOf":
            _note(out, "must also match one of several further shapes")
    return out


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _intersect_types(first: Any, second: Any) -> Any:
    a = [first] if isinstance(first, str) else list(first or [])
    b = [second] if isinstance(second, str) else list(second or [])
    both = []
    for t in a:
        if t in b:
            both.append(t)
        elif t in ("number", "integer") and {"number", "integer"} & set(b):
            both.append("integer")
    if not both:
        return first  # contradictory: keep the first rather than an empty type
    return both[0] if len(both) == 1 else both


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 and true differ, 1 and 1.0 do not."""
    return _json_type(a) == _json_type(b) and _key(a) == _key(b)


def _key(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"


def _matches_type(value: Any, type_: str) -> bool:
    found = _json_type(value)
    return found == type_ or (type_ == "number" and found == "integer")


def _types_of(node: Mapping[str, Any]) -> list[str] | None:
    """The JSON types the node allows, in its own order; None when it allows any value."""
    declared = node.get("type")
    if isinstance(declared, str) and declared in _JSON_TYPES:
        return [declared]
    if isinstance(declared, list):
        found = [t for t in dict.fromkeys(declared) if t in _JSON_TYPES]
        if found:
            return found
    if isinstance(node.get("enum"), list) and node["enum"]:
        return list(dict.fromkeys(_json_type(v) for v in node["enum"]))
    for type_ in ("object", "array", "string", "number"):
        if any(key in node for key in _APPLIES[type_] - {"format"}):
            return [type_]
    return None


def _split(node: Mapping[str, Any], types: list[str]) -> list[dict[str, Any]]:
    """One branch per type, each with the keywords (and enum values) that apply to it."""
    branches = []
    for type_ in types:
        branch: dict[str, Any] = {"type": type_}
        branch.update({k: node[k] for k in _APPLIES[type_] if k in node})
        if isinstance(node.get("enum"), list):
            values = [v for v in node["enum"] if _matches_type(v, type_)]
            if not values:
                continue
            branch["enum"] = values
        branches.append(branch)
    return branches


def _note(node: dict[str, Any], text: str) -> None:
    node[_NOTES] = [*node.get(_NOTES, []), text]


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)


_SINGULAR: Final = {"characters": "character", "items": "item", "properties": "property"}


def _range(low: Any, high: Any, unit: str) -> str | None:
    def suffix(count: Any) -> str:
        word = _SINGULAR.get(unit, unit) if count == 1 else unit
        return f" {word}" if word else ""

    if low is not None and high is not None:
        return f"{_shown(low)} to {_shown(high)}{suffix(high)}"
    if low is not None:
        return f"at least {_shown(low)}{suffix(low)}"
    if high is not None:
        return f"at most {_shown(high)}{suffix(high)}"
    return None


def _folded(node: Mapping[str, Any], keys: Iterable[str]) -> list[str]:
    """Notes for the dropped keywords in ``keys`` that the node has, in a fixed order."""
    wanted = set(keys)
    notes: list[str] = []

    def get(key: str) -> Any:
        return node.get(key) if key in wanted else None

    lengths = _range(get("minLength"), get("maxLength"), "characters")
    if lengths:
        notes.append(lengths)
    if get("pattern") is not None:
        notes.append(f"matches the pattern {node['pattern']}")
    if get("format") is not None:
        notes.append(f"format {node['format']}")
    numbers = _range(get("minimum"), get("maximum"), "")
    if numbers:
        notes.append(numbers)
    if get("exclusiveMinimum") is not None:
        notes.append(f"greater than {_shown(node['exclusiveMinimum'])}")
    if get("exclusiveMaximum") is not None:
        notes.append(f"less than {_shown(node['exclusiveMaximum'])}")
    if get("multipleOf") is not None:
        notes.append(f"a multiple of {_shown(node['multipleOf'])}")
    items = _range(get("minItems"), get("maxItems"), "items")
    if items:
        notes.append(items)
    if get("uniqueItems") is True:
        notes.append("no duplicate items")
    if get("prefixItems") is not None:
        notes.append("the first items have fixed shapes")
    props = _range(get("minProperties"), get("maxProperties"), "properties")
    if props:
        notes.append(props)
    return notes


def _annotation_notes(node: Mapping[str, Any]) -> list[str]:
    notes = []
    if "default" in node:
        notes.append(f"default: {_shown(node['default'])}")
    examples = node.get("examples")
    if isinstance(examples, list) and examples:
        notes.append("e.g. " + ", ".join(_shown(e) for e in examples[:3]))
    if node.get("deprecated") is True:
        notes.append("deprecated")
    return notes


def _described(out: dict[str, Any], description: Any, notes: list[str]) -> dict[str, Any]:
    text = description.strip() if isinstance(description, str) else ""
    unique = list(dict.fromkeys(n for n in notes if n))
    if unique:
        joined = "; ".join(unique)
        text = f"{text} ({joined})" if text else joined
    if text:
        out["description"] = text
    return out


# -- OpenAI strict mode ---------------------------------------------------------------

_ANY_BRANCHES: Final = ("string", "number", "boolean")


def _openai(node: Mapping[str, Any], *, nullable: bool) -> dict[str, Any]:
    notes = list(node.get(_NOTES, []))
    description = node.get("description")
    if "anyOf" in node:
        branches = _flat([_openai(b, nullable=False) for b in node["anyOf"]])
        if nullable and not any(_allows_null(b) for b in branches):
            branches.append({"type": "null"})
        return _either(branches, description, notes + _annotation_notes(node))
    types = _types_of(node)
    if types is None:  # any value: strict mode has no free-form type
        branches = [{"type": t} for t in _ANY_BRANCHES]
        branches.append({"type": "null"})
        notes.append("any value; arrays and objects cannot be given in strict mode")
        return _described({"anyOf": branches}, description, notes + _annotation_notes(node))
    null = nullable or "null" in types
    real = [t for t in types if t != "null"]
    if len(real) != 1:
        branches = _flat([_openai(b, nullable=False) for b in _split(node, real)])
        if null or not branches:
            branches.append({"type": "null"})
        return _either(branches, description, notes + _annotation_notes(node))
    type_ = real[0]
    out: dict[str, Any] = {"type": [type_, "null"] if null else type_}
    if isinstance(node.get("enum"), list):
        values = [v for v in node["enum"] if _matches_type(v, type_)]
        if values:
            out["enum"] = [*values, None] if null else values
    folded: list[str] = []
    if type_ == "object":
        properties = node.get("properties", {})
        required = set(node.get("required", []))
        out["properties"] = {
            name: _openai(sub, nullable=name not in required) for name, sub in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
        extra = node.get("additionalProperties")
        if extra is not False and extra is not None and not properties:
            notes.append("free-form object: strict mode accepts only an empty one")
        elif isinstance(extra, dict):
            notes.append("other keys are not accepted in strict mode")
        folded = ["minProperties", "maxProperties"]
    elif type_ == "array":
        out["items"] = _openai(node.get("items", {}), nullable=False)
        for key in ("minItems", "maxItems"):
            if isinstance(node.get(key), int) and not isinstance(node[key], bool):
                out[key] = node[key]
        folded = ["uniqueItems", "prefixItems"]
    elif type_ == "string":
        fmt = node.get("format")
        if fmt in _OPENAI_FORMATS:
            out["format"] = fmt
            folded = ["minLength", "maxLength", "pattern"]
        else:
            folded = ["minLength", "maxLength", "pattern", "format"]
    elif type_ in ("number", "integer"):
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            if _numbers(node.get(key)):
                out[key] = node[key]
        folded = ["format"]
    notes += _folded(node, folded)
    return _described(out, description, notes + _annotation_notes(node))


def _flat(branches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Alternatives with bare ``anyOf`` branches lifted into the list."""
    flat: list[dict[str, Any]] = []
    for branch in branches:
        if set(branch) == {"anyOf"}:
            flat.extend(branch["anyOf"])
        else:
            flat.append(branch)
    return flat


def _either(branches: list[dict[str, Any]], description: Any, notes: list[str]) -> dict[str, Any]:
    """``anyOf`` of the branches, or the one branch itself (descriptions joined)."""
    if len(branches) != 1:
        return _described({"anyOf": branches}, description, notes)
    out = dict(branches[0])
    inner = out.pop("description", None)
    text = " ".join(t.strip() for t in (description, inner) if isinstance(t, str) and t.strip())
    return _described(out, text, notes)


def _find_strict_problems(node: Mapping[str, Any], path: str, out: list[str]) -> None:
    where = path or "(arguments)"
    for note in node.get(_NOTES, []):
        if note.startswith(("recursive reference", "unresolved reference")):
            out.append(f"{where}: {note}")
    if "anyOf" in node:
        for branch in node["anyOf"]:
            _find_strict_problems(branch, path, out)
        return
    types = _types_of(node)
    if types is None:
        out.append(f"{where}: accepts a value of any type")
        return
    if "object" in types:
        properties = node.get("properties") or {}
        extra = node.get("additionalProperties")
        if not properties and extra is not False:
            out.append(f"{where}: a free-form object")
        elif isinstance(extra, Mapping):
            out.append(f"{where}: accepts keys beyond its properties")
        for name, sub in properties.items():
            _find_strict_problems(sub, f"{path}.{name}" if path else name, out)
    if "array" in types:
        _find_strict_problems(node.get("items", {}), f"{where}[]", out)


def _allows_null(node: Mapping[str, Any]) -> bool:
    if "anyOf" in node:
        return any(_allows_null(b) for b in node["anyOf"])
    types = _types_of(node)
    if types is None:
        return True
    if "null" not in types:
        return False
    enum = node.get("enum")
    return not isinstance(enum, list) or any(v is None for v in enum)


def _drop_nulls(node: Mapping[str, Any], value: Any) -> Any:
    if isinstance(value, dict):
        properties = node.get("properties")
        if not isinstance(properties, Mapping):
            return value
        required = set(node.get("required", []))
        out = {}
        for name, item in value.items():
            sub = properties.get(name)
            if sub is None:
                out[name] = item
            elif item is None and name not in required and not _allows_null(sub):
                continue
            else:
                out[name] = _drop_nulls(sub, item)
        return out
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        return [_drop_nulls(node["items"], item) for item in value]
    return value


# -- Gemini ---------------------------------------------------------------------------


def _gemini(node: Mapping[str, Any]) -> dict[str, Any]:
    notes = list(node.get(_NOTES, []))
    description = node.get("description")
    title = node.get("title")
    if "anyOf" in node:
        branches = [_gemini(b) for b in node["anyOf"]]
        nullable = any(b.get("nullable") is True for b in branches) or any(
            _types_of(b) == ["null"] for b in node["anyOf"]
        )
        kept = [
            b for b, raw in zip(branches, node["anyOf"], strict=True) if _types_of(raw) != ["null"]
        ]
        for branch in kept:
            branch.pop("nullable", None)
        kept = _flat(kept)
        if not kept:
            out: dict[str, Any] = {"type": "string"}
            notes.append("always null")
        elif len(kept) == 1:
            out = kept[0]
            inner = out.pop("description", None)
            description = " ".join(
                t.strip() for t in (description, inner) if isinstance(t, str) and t.strip()
            )
        else:
            out = {"anyOf": kept}
        if nullable:
            out["nullable"] = True
        return _gemini_finish(out, title, description, notes + _annotation_notes(node))
    types = _types_of(node)
    if types is None:
        out = {"anyOf": [{"type": t} for t in _ANY_BRANCHES], "nullable": True}
        notes.append("any value")
        return _gemini_finish(out, title, description, notes + _annotation_notes(node))
    nullable = "null" in types
    real = [t for t in types if t != "null"]
    if len(real) != 1:
        branches = [_gemini(b) for b in _split(node, real)]
        if not branches:
            out = {"type": "string"}
            notes.append("always null")
        elif len(branches) == 1:
            out = branches[0]
        else:
            out = {"anyOf": branches}
        if nullable or not branches:
            out["nullable"] = True
        return _gemini_finish(out, title, description, notes + _annotation_notes(node))
    type_ = real[0]
    out = {"type": type_}
    enum = node.get("enum")
    if isinstance(enum, list):
        values = [v for v in enum if v is not None]
        if len(values) < len(enum):
            nullable = True
        if type_ == "string" and all(isinstance(v, str) for v in values):
            out["enum"] = values
        elif values:
            notes.append("one of: " + ", ".join(_shown(v) for v in values))
    folded: list[str] = []
    if type_ == "object":
        properties = node.get("properties", {})
        if properties:
            out["properties"] = {name: _gemini(sub) for name, sub in properties.items()}
            required = [r for r in node.get("required", []) if r in properties]
            if required:
                out["required"] = required
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping) or (extra is True and not properties):
            notes.append("other keys are accepted too" if properties else "any keys")
        for key in ("minProperties", "maxProperties"):
            if _count(node.get(key)):
                out[key] = node[key]
    elif type_ == "array":
        out["items"] = _gemini(node.get("items", {}))
        for key in ("minItems", "maxItems"):
            if _count(node.get(key)):
                out[key] = node[key]
        folded = ["uniqueItems", "prefixItems"]
    elif type_ == "string":
        for key in ("minLength", "maxLength"):
            if _count(node.get(key)):
                out[key] = node[key]
        if isinstance(node.get("pattern"), str):
            out["pattern"] = node["pattern"]
        folded = ["format"]
    elif type_ in ("number", "integer"):
        for key in ("minimum", "maximum"):
            if _numbers(node.get(key)):
                out[key] = node[key]
        folded = ["exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format"]
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt in _GEMINI_FORMATS.get(type_, frozenset()):
        out["format"] = fmt
        folded = [k for k in folded if k != "format"]
    notes += _folded(node, folded)
    if nullable:
        out["nullable"] = True
    return _gemini_finish(out, title, description, notes + _annotation_notes(node))


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _gemini_finish(
    out: dict[str, Any], title: Any, description: Any, notes: list[str]
) -> dict[str, Any]:
    if isinstance(title, str) and title:
        out["title"] = title
    return _described(out, description, notes)
