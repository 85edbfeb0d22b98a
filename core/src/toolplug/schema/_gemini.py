"""The OpenAPI subset that Gemini function declarations read (``parameters``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolplug.schema._losses import Report, SchemaLoss
from toolplug.schema._simplify import (
    _ANY_BRANCHES,
    _NOTES,
    _PATH,
    _annotate,
    _described,
    _flat,
    _fold,
    _numbers,
    _shown,
    _simplify_root,
    _split,
    _types_of,
)

__all__ = ["gemini_losses", "gemini_schema"]

# Gemini: the formats its Schema reference documents, per type.
_GEMINI_FORMATS: Final[Mapping[str, frozenset[str]]] = {
    "string": frozenset({"date-time", "enum"}),
    "number": frozenset({"float", "double"}),
    "integer": frozenset({"int32", "int64"}),
}


# -- Gemini ---------------------------------------------------------------------------


def _gemini(node: Mapping[str, Any], report: Report) -> dict[str, Any]:  # noqa: C901, PLR0912, PLR0915 - one branch per keyword mapped to Gemini's subset
    path = node.get(_PATH, "")
    notes = list(node.get(_NOTES, []))
    description = node.get("description")
    title = node.get("title")
    annotations = _annotate(node, report, keep_title=True)
    if "anyOf" in node:
        branches = [_gemini(b, report) for b in node["anyOf"]]
        nullable = any(b.get("nullable") is True for b in branches) or any(
            _types_of(b) == ["null"] for b in node["anyOf"]
        )
        kept = [
            b for b, raw in zip(branches, node["anyOf"], strict=True) if _types_of(raw) != ["null"]
        ]
        for branch in kept:
            branch.pop("nullable", None)
        kept = _flat(kept)
        if len(kept) != len(node["anyOf"]):
            report.add(path, "anyOf", "rewritten", f"{len(kept)} alternative(s)")
        if not kept:
            out: dict[str, Any] = {"type": "string"}
            notes.append("always null")
        elif len(kept) == 1:
            out = kept[0]
            report.add(path, "anyOf", "rewritten", "a single alternative, written as itself")
            inner = out.pop("description", None)
            description = " ".join(
                t.strip() for t in (description, inner) if isinstance(t, str) and t.strip()
            )
        else:
            out = {"anyOf": kept}
        if nullable:
            out["nullable"] = True
            report.add(path, "anyOf", "rewritten", "the null alternative as nullable: true")
        return _gemini_finish(out, title, description, notes + annotations)
    types = _types_of(node)
    if types is None:
        out = {"anyOf": [{"type": t} for t in _ANY_BRANCHES], "nullable": True}
        notes.append("any value")
        report.add(path, "type", "rewritten", "any value: a string, number or boolean, or null")
        return _gemini_finish(out, title, description, notes + annotations)
    nullable = "null" in types
    real = [t for t in types if t != "null"]
    if nullable or len(real) > 1 or not isinstance(node.get("type"), str):
        report.add(path, "type", "rewritten", "one type per node: anyOf, and nullable for null")
    if len(real) != 1:
        branches = [_gemini(b, report) for b in _split(node, real)]
        if not branches:
            out = {"type": "string"}
            notes.append("always null")
        elif len(branches) == 1:
            out = branches[0]
        else:
            out = {"anyOf": branches}
        if nullable or not branches:
            out["nullable"] = True
        return _gemini_finish(out, title, description, notes + annotations)
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
            report.add(path, "enum", "described", "Gemini takes enums of strings only")
    folded: list[str] = []
    if type_ == "object":
        properties = node.get("properties", {})
        if properties:
            out["properties"] = {name: _gemini(sub, report) for name, sub in properties.items()}
            required = [r for r in node.get("required", []) if r in properties]
            if required:
                out["required"] = required
        missing = [r for r in node.get("required", []) if r not in properties]
        if missing:
            report.add(
                path, "required", "dropped", f"names without a property: {', '.join(missing)}"
            )
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping) or (extra is True and not properties):
            notes.append("other keys are accepted too" if properties else "any keys")
            report.add(path, "additionalProperties", "described", "Gemini cannot say which")
        elif extra is not None:
            report.add(path, "additionalProperties", "dropped", "Gemini cannot limit the keys")
        for key in ("minProperties", "maxProperties"):
            if _count(node.get(key)):
                out[key] = node[key]
    elif type_ == "array":
        out["items"] = _gemini(node.get("items", {_PATH: f"{path}/items"}), report)
        if "items" not in node:
            report.add(path, "items", "rewritten", "written out: any value")
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
    notes += _fold(node, folded, report)
    if nullable:
        out["nullable"] = True
    return _gemini_finish(out, title, description, notes + annotations)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _gemini_finish(
    out: dict[str, Any], title: Any, description: Any, notes: list[str]
) -> dict[str, Any]:
    if isinstance(title, str):
        out["title"] = title
    return _described(out, description, notes)


def _rewrite(schema: Mapping[str, Any]) -> tuple[dict[str, Any], Report]:
    report = Report()
    return _gemini(_simplify_root(schema, report), report), report


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema rewritten to the OpenAPI subset Gemini's ``parameters`` accept.

    For ``--format gemini-openapi`` (older SDKs); current Gemini function declarations take
    the schema as it is in ``parametersJsonSchema``.
    """
    return _rewrite(schema)[0]


def gemini_losses(schema: Mapping[str, Any]) -> list[SchemaLoss]:
    """Every keyword ``gemini_schema`` does not pass through unchanged, with where and why."""
    return _rewrite(schema)[1].losses()
