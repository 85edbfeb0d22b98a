"""Simplification shared by the strict and Gemini rewrites.

``simplify_root`` inlines ``$ref``, merges ``allOf``, reads ``oneOf`` as ``anyOf`` and
``const`` as a one-value ``enum``, and keeps notes on what a target cannot express, to be
folded into the node's description ("(default: 5; at most 20 characters)").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import unquote

from toolplug.schema._losses import Report, pointer

_NOTES: Final = "$toolplug:notes"
"""Key under which the simplified schema carries notes for the description."""
_PATH: Final = "$toolplug:path"
"""Key under which each simplified node carries its JSON Pointer in the original schema."""
_CUT: Final = "$toolplug:cut"
"""Marks where a recursive (or unresolved) ``$ref`` was cut: any value here, as far as the
simplified schema can tell, but not a ``null`` the call path should keep."""

_MAX_REF_DEPTH: Final = 16

# Keywords that describe a value without constraining it; they stay on the outer node
# when a node is split into alternatives.
_ANNOTATIONS: Final = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        _NOTES,
        _PATH,
        _CUT,
    }
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
# Restructured by the simplification itself (and reported there).
_RESTRUCTURED: Final = frozenset({"const", "oneOf", "$ref", "allOf", "$defs", "definitions"})
_CHECKED_ON_CALL: Final = "toolplug still checks it when the call arrives"

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
        for raw in pointer[1:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node


def _simplify_root(schema: Mapping[str, Any], report: Report | None = None) -> dict[str, Any]:
    """The simplified schema; what the simplification changes goes into ``report``."""
    simplifier = _Simplifier(_Resolver(schema), report or Report())
    return simplifier.simplify(schema, ("#",), "")  # the top is being expanded already


class _Simplifier:
    def __init__(self, resolver: _Resolver, report: Report) -> None:
        self.resolver = resolver
        self.report = report

    def simplify(self, schema: Any, stack: tuple[str, ...], path: str) -> dict[str, Any]:  # noqa: C901, PLR0912 - one branch per keyword the simplification rewrites
        """The schema with refs inlined, allOf merged, oneOf as anyOf and const as enum.

        The result keeps only the keywords in ``_UNDERSTOOD``, and an ``anyOf`` never sits
        beside type constraints: those are distributed into its branches, or, on an object
        with properties, the branches' properties are merged into it. Every node carries
        its path in the original schema (``_PATH``).
        """
        report = self.report
        if not isinstance(schema, Mapping):
            return {_PATH: path}  # true (or a non-schema): any value
        node: dict[str, Any] = {}
        notes: list[str] = []
        for key, value in schema.items():
            if key in _UNDERSTOOD and key not in (_NOTES, _PATH, _CUT):
                node[key] = value
            elif key in ("$schema", "$id", "$comment", "$anchor", "$dynamicAnchor"):
                report.add(path, key, "dropped", "an identifier or comment; nothing to check")
            elif key not in _RESTRUCTURED:
                report.add(path, key, "dropped", f"not expressible here; {_CHECKED_ON_CALL}")
        node[_PATH] = path
        for key in ("$defs", "definitions"):
            if isinstance(schema.get(key), Mapping) and schema[key]:
                report.add(path, key, "rewritten", "each definition inlined where it is used")
        if "const" in schema:
            const = schema["const"]
            node["enum"] = [v for v in node.get("enum", [const]) if _same(v, const)]
            report.add(path, "const", "rewritten", "a one-value enum")
        one_of = schema.get("oneOf")
        if isinstance(one_of, list) and one_of:
            if "anyOf" in node:
                notes.append("must also match one of several further shapes")
                report.add(path, "oneOf", "described", "beside anyOf: only mentioned")
            else:
                node["anyOf"] = one_of
                report.add(path, "oneOf", "rewritten", 'anyOf: "exactly one" read as "any"')
        if notes:
            node[_NOTES] = notes

        # Children first, so that merging below works on simplified parts.
        if isinstance(node.get("properties"), Mapping):
            properties = {}
            for name, sub in node["properties"].items():
                where = pointer(path, "properties", name)
                if sub is False:  # a property that must be absent is simply not offered
                    report.add(where, "false", "dropped", "a property that must be absent")
                    continue
                properties[name] = self.simplify(sub, stack, where)
            node["properties"] = properties
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
            report.add(path, "items", "rewritten", "a list of item schemas read as prefixItems")
        elif items is False:
            node["maxItems"] = min(node.get("maxItems", 0), 0)
            node.pop("items")
            report.add(path, "items", "rewritten", "false: maxItems 0")
        elif "items" in node:
            node["items"] = self.simplify(items, stack, pointer(path, "items"))
        if isinstance(node.get("additionalProperties"), Mapping):
            node["additionalProperties"] = self.simplify(
                node["additionalProperties"], stack, pointer(path, "additionalProperties")
            )
        if "anyOf" in node:
            key = "anyOf" if "anyOf" in schema else "oneOf"
            branches = node["anyOf"] if isinstance(node["anyOf"], list) else []
            node["anyOf"] = [
                self.simplify(b, stack, pointer(path, key, i))
                for i, b in enumerate(branches)
                if b is not False
            ]
            if not node["anyOf"]:
                node.pop("anyOf")

        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self.resolver.lookup(ref)
            if target is None or ref in stack or len(stack) >= _MAX_REF_DEPTH:
                what = "recursive" if ref in stack else "unresolved"
                base: dict[str, Any] = {
                    _NOTES: [f"{what} reference {ref}"],
                    _PATH: path,
                    _CUT: True,
                }
                report.add(path, "$ref", "rewritten", f"{what} {ref}: cut here, any value")
            else:
                base = self.simplify(target, (*stack, ref), path)
                report.add(path, "$ref", "rewritten", f"{ref} inlined")
            node = self.merge(node, base)
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            report.add(path, "allOf", "rewritten", "merged into one schema")
            for i, branch in enumerate(all_of):
                if branch is not False:
                    node = self.merge(node, self.simplify(branch, stack, pointer(path, "allOf", i)))
        return self.settle_any_of(node)

    def settle_any_of(self, node: dict[str, Any]) -> dict[str, Any]:
        """Keep ``anyOf`` only on a node without type constraints of its own."""
        branches = node.get("anyOf")
        if not branches:
            return node
        flat: list[dict[str, Any]] = []
        for branch in branches:  # a bare anyOf inside an anyOf: one level
            inner = branch.get("anyOf")
            if inner and set(branch) <= {"anyOf", _PATH}:
                flat.extend(inner)
                where = branch.get(_PATH, node.get(_PATH, ""))
                self.report.add(where, "anyOf", "rewritten", "lifted into the enclosing anyOf")
                self.report.add(
                    node.get(_PATH, ""), "anyOf", "rewritten", "nested alternatives lifted"
                )
            else:
                flat.append(branch)
        node["anyOf"] = flat
        own = {k: v for k, v in node.items() if k not in _ANNOTATIONS and k != "anyOf"}
        if not own:
            return node
        path = node.get(_PATH, "")
        if _types_of(own) == ["object"] and ("properties" in own or own.get("type") == "object"):
            # An object with alternatives ("give a or b"): offer every property of every branch.
            merged = {k: v for k, v in node.items() if k != "anyOf"}
            properties = dict(merged.get("properties", {}))
            needs: list[str] = []
            for branch in flat:
                for name, sub in (branch.get("properties") or {}).items():
                    properties[name] = (
                        self.merge(properties[name], sub) if name in properties else sub
                    )
                required = [
                    r for r in branch.get("required", []) if r not in merged.get("required", [])
                ]
                if required:
                    needs.append(" and ".join(required))
                for key in set(branch) - {"properties", "required", "type", *_ANNOTATIONS}:
                    self.report.add(
                        branch.get(_PATH, path), key, "dropped", "inside merged alternatives"
                    )
            merged["properties"] = properties
            if needs:
                _note(merged, "requires " + " or ".join(needs))
            self.report.add(
                path, "anyOf", "rewritten", "alternatives of one object: every property offered"
            )
            return merged
        # Distribute the node's own constraints into every branch: A and (B or C).
        outer = {k: v for k, v in node.items() if k in _ANNOTATIONS}
        outer["anyOf"] = [self.merge(own, branch) for branch in flat]
        self.report.add(path, "anyOf", "rewritten", "the node's constraints copied into each")
        return outer

    def merge(self, first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:  # noqa: C901 - one branch per keyword that allOf merges
        """Both schemas at once (allOf); where they disagree and cannot combine, ``first`` wins."""
        out = dict(first)
        lost = second.get(_PATH, first.get(_PATH, ""))
        for key, value in second.items():
            if key not in out:
                out[key] = value
                continue
            mine = out[key]
            if key == "properties":
                combined = dict(mine)
                for name, sub in value.items():
                    combined[name] = self.merge(combined[name], sub) if name in combined else sub
                out[key] = combined
            elif key == "required":
                out[key] = [*mine, *(r for r in value if r not in mine)]
            elif key == "type":
                out[key] = _intersect_types(mine, value)
                if not _overlap(mine, value):
                    self.report.add(lost, "type", "dropped", "contradicts an earlier type")
            elif key == "enum" and isinstance(mine, list) and isinstance(value, list):
                both = [v for v in mine if any(_same(v, w) for w in value)]
                out[key] = both or mine
                if not both:
                    self.report.add(lost, "enum", "dropped", "no value in common with another")
            elif key in ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"):
                out[key] = max(mine, value) if _numbers(mine, value) else mine
            elif key in ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"):
                out[key] = min(mine, value) if _numbers(mine, value) else mine
            elif key in ("items", "additionalProperties"):
                if isinstance(mine, dict) and isinstance(value, dict):
                    out[key] = self.merge(mine, value)
                elif value is False:
                    out[key] = False
            elif key == _NOTES:
                out[key] = [*mine, *(n for n in value if n not in mine)]
            elif key == "anyOf":
                _note(out, "must also match one of several further shapes")
                self.report.add(lost, "anyOf", "described", "a second set of alternatives")
            elif key in (_PATH, "description", "title"):
                continue  # the first one's place and words stand for both
            elif _key(mine) != _key(value):
                self.report.add(lost, key, "dropped", f"an earlier {key} takes precedence")
        return out


def _overlap(first: Any, second: Any) -> bool:
    a = {first} if isinstance(first, str) else set(first or [])
    b = {second} if isinstance(second, str) else set(second or [])
    return bool(a & b) or ("number" in a | b and "integer" in a | b)


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
        if _PATH in node:
            branch[_PATH] = node[_PATH]
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


_ANY_BRANCHES: Final = ("string", "number", "boolean")


def _flat(branches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Alternatives with bare ``anyOf`` branches lifted into the list."""
    flat: list[dict[str, Any]] = []
    for branch in branches:
        if set(branch) == {"anyOf"}:
            flat.extend(branch["anyOf"])
        else:
            flat.append(branch)
    return flat


def _fold(node: Mapping[str, Any], keys: Iterable[str], report: Report) -> list[str]:
    """``_folded`` for the keywords in ``keys`` the node has, each reported as described."""
    path = node.get(_PATH, "")
    present = [key for key in keys if key in node]
    for key in present:
        if key == "uniqueItems" and node[key] is not True:
            report.add(path, key, "dropped", "false: no constraint")
        else:
            report.add(path, key, "described", f"in the description; {_CHECKED_ON_CALL}")
    return _folded(node, present)


def _annotate(node: Mapping[str, Any], report: Report, *, keep_title: bool) -> list[str]:
    """``_annotation_notes`` with each annotation reported (described, or dropped)."""
    path = node.get(_PATH, "")
    for key in ("default", "examples", "deprecated"):
        if key in node:
            report.add(path, key, "described", "in the description")
    dropped = ("readOnly", "writeOnly") if keep_title else ("title", "readOnly", "writeOnly")
    for key in dropped:
        if key in node:
            report.add(path, key, "dropped", "an annotation the target does not take")
    return _annotation_notes(node)
