"""OpenAI Structured Outputs (strict mode): the rewrite, its problems, and its inverse."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolplug.schema._simplify import (
    _ANY_BRANCHES,
    _NOTES,
    _annotation_notes,
    _described,
    _flat,
    _folded,
    _matches_type,
    _numbers,
    _simplify_root,
    _split,
    _types_of,
)

__all__ = ["drop_strict_nulls", "strict_problems", "strict_schema"]

# OpenAI Structured Outputs: the string formats its guide documents as supported.
_OPENAI_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)

# -- OpenAI strict mode ---------------------------------------------------------------



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


def drop_strict_nulls(schema: Mapping[str, Any], arguments: Any) -> Any:
    """Arguments from a strict-mode call with the ``null`` placeholders removed.

    Strict mode makes the model send every property, ``null`` for the ones it would have
    left out. This removes a ``null`` wherever the original ``schema`` does not accept
    one for an optional property, in nested objects and arrays too, so that validation
    and defaults work as for a non-strict call. Other values are returned unchanged.
    """
    return _drop_nulls(_simplify_root(schema), arguments)
