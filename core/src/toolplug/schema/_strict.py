"""Strict mode (OpenAI Structured Outputs, Anthropic strict tool use): the rewrite and its inverse.

Strict mode constrains the model's output to a subset of JSON Schema. Every object must be
closed, so a value whose keys are not known in advance has no direct form there. The
rewrite gives every schema a strict form all the same, by asking the model for a different
shape where it must, and the call path turns that shape back into what the tool declared
(``restore_strict_arguments``, applied by the call engine before validation):

===========================================  ===============================================
declared                                     asked of the model in strict mode
===========================================  ===============================================
a map: an object without properties whose    a list of ``{"key": ..., "value": ...}`` items
keys are free (``additionalProperties``
absent, ``true`` or a schema)
an object with properties *and* other keys   its properties, plus one more, a list of
(``additionalProperties`` ``true`` or a      ``{"key", "value"}`` items for the other keys
schema)                                      (named ``additional_properties``, or with
                                             underscores added until the name is free)
a value of any type (also a recursive        a string, number, boolean or null as it is; an
``$ref``, cut where it recurses)             array or object as JSON text in
                                             ``{"json_text": "..."}``
a map where an array is also accepted        the object as JSON text in
                                             ``{"json_text": "..."}``
an optional property (OpenAI only)           required, and nullable: ``null`` means "not
                                             given" (``drop_strict_nulls``)
===========================================  ===============================================

Anthropic's strict mode keeps optional properties optional; OpenAI's lists every property
in ``required``. What each dialect cannot enforce (string lengths and patterns, some
bounds, most formats) is folded into the description, and toolplug still validates it
when the call arrives. Every change is reported (``strict_losses``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from jsonschema import Draft202012Validator

from toolplug.schema._losses import Report, SchemaLoss, pointer
from toolplug.schema._simplify import (
    _ANY_BRANCHES,
    _CUT,
    _NOTES,
    _PATH,
    _annotate,
    _described,
    _flat,
    _fold,
    _matches_type,
    _numbers,
    _simplify_root,
    _split,
    _types_of,
)

__all__ = [
    "JSON_TEXT",
    "Dialect",
    "drop_strict_nulls",
    "restore_strict_arguments",
    "strict_arguments",
    "strict_losses",
    "strict_schema",
]

Dialect = Literal["openai", "anthropic"]

JSON_TEXT: Final = "json_text"
"""The one key of the object that carries an array or object as JSON text in strict mode."""
_EXTRAS: Final = "additional_properties"
"""The property that carries an object's other keys in strict mode (underscores added when
the object has a property of that name already)."""
_KEY_VALUE: Final = frozenset({"key", "value"})
_PRIMITIVE: Final = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class _Rules:
    """What one provider's strict mode accepts."""

    all_required: bool
    """Every property must be listed in ``required`` (optional ones become nullable)."""
    formats: frozenset[str]
    """The string formats it enforces; others are described."""
    numeric_bounds: bool
    """It enforces minimum, maximum, exclusive bounds and multipleOf."""
    item_counts: bool
    """It enforces any minItems and maxItems (else only a minItems of 0 or 1)."""
    keeps_title: bool
    type_lists: bool
    """It takes ``"type": ["string", "null"]`` (else ``anyOf`` with ``{"type": "null"}``)."""


_RULES: Final[Mapping[str, _Rules]] = {
    # OpenAI Structured Outputs: the keywords and formats its guide documents as supported.
    "openai": _Rules(
        all_required=True,
        formats=frozenset(
            {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
        ),
        numeric_bounds=True,
        item_counts=True,
        keeps_title=False,
        type_lists=True,
    ),
    # Anthropic strict tool use: the JSON Schema subset of its structured outputs (the
    # formats are those its SDK's own transform_schema keeps).
    "anthropic": _Rules(
        all_required=False,
        formats=frozenset(
            {
                "date-time",
                "time",
                "date",
                "duration",
                "email",
                "hostname",
                "uri",
                "ipv4",
                "ipv6",
                "uuid",
            }
        ),
        numeric_bounds=False,
        item_counts=False,
        keeps_title=True,
        # Its SDK's own schema helper takes one type per node.
        type_lists=False,
    ),
}


# -- the shapes: decided once, used by the rewrite and by both directions of the call ---

_Form = Literal["closed", "key_value", "json_text", "extras"]


def _object_form(node: Mapping[str, Any], *, root: bool, arrays_nearby: bool) -> _Form:
    """How an object node is asked for in strict mode.

    ``closed``: its properties only; ``key_value``: a list of key/value items (a map);
    ``json_text``: JSON text (a map beside an array alternative, where a list would be
    ambiguous); ``extras``: its properties plus a list of key/value items for other keys.
    """
    properties = node.get("properties") or {}
    extra = node.get("additionalProperties")
    if extra is False or (extra is None and (properties or root)):
        return "closed"
    if properties or root:
        return "extras"
    return "json_text" if arrays_nearby else "key_value"


def _extras_name(properties: Mapping[str, Any]) -> str:
    name = _EXTRAS
    while name in properties:
        name += "_"
    return name


def _native_arrays(node: Mapping[str, Any]) -> bool:
    """Whether the node's strict form takes a JSON array as it is."""
    if "anyOf" in node:
        return any(_native_arrays(b) for b in node["anyOf"])
    types = _types_of(node)
    return types is not None and "array" in types


def _value_schema(node: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of a map's values (any value when the map does not say)."""
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        return dict(extra)
    return {_PATH: pointer(node.get(_PATH, ""), "additionalProperties")}


# -- the rewrite ------------------------------------------------------------------------


class _Rewrite:
    def __init__(self, rules: _Rules, report: Report) -> None:
        self.rules = rules
        self.report = report

    def node(  # noqa: C901, PLR0912 - one branch per keyword strict mode rewrites
        self,
        node: Mapping[str, Any],
        *,
        nullable: bool,
        arrays_nearby: bool = False,
        root: bool = False,
    ) -> dict[str, Any]:
        path = node.get(_PATH, "")
        notes = list(node.get(_NOTES, []))
        description = node.get("description")
        title = node.get("title") if self.rules.keeps_title else None
        notes_after = _annotate(node, self.report, keep_title=self.rules.keeps_title)
        if "anyOf" in node:
            nearby = arrays_nearby or any(_native_arrays(b) for b in node["anyOf"])
            branches = _flat(
                [self.node(b, nullable=False, arrays_nearby=nearby) for b in node["anyOf"]]
            )
            if nullable and not any(_allows_null(b) for b in branches):
                branches.append({"type": "null"})
            if len(branches) != len(node["anyOf"]) or len(branches) == 1:
                self.report.add(path, "anyOf", "rewritten", f"{len(branches)} alternative(s)")
            return _titled(_either(branches, description, notes + notes_after), title)
        types = _types_of(node)
        if types is None:  # any value
            self.report.add(
                path,
                "type",
                "rewritten",
                f'any value: arrays and objects as JSON text in {{"{JSON_TEXT}": ...}}',
            )
            branches = [{"type": t} for t in _ANY_BRANCHES]
            branches += [{"type": "null"}, _json_text()]
            return _titled(
                _described({"anyOf": branches}, description, notes + notes_after), title
            )
        null = nullable or "null" in types
        real = [t for t in types if t != "null"]
        declared = node.get("type")
        if declared is None:
            inferred = "/".join(types)
            self.report.add(path, "type", "rewritten", f"{inferred}, from the other keywords")
        if len(real) != 1:
            if len(real) > 1:
                self.report.add(path, "type", "rewritten", "anyOf, one alternative per type")
            nearby = arrays_nearby or "array" in real
            branches = _flat(
                [self.node(b, nullable=False, arrays_nearby=nearby) for b in _split(node, real)]
            )
            if null or not branches:
                branches.append({"type": "null"})
            return _titled(_either(branches, description, notes + notes_after), title)
        type_ = real[0]
        out: dict[str, Any] = {"type": [type_, "null"] if null else type_}
        if isinstance(declared, list) and declared != out["type"]:
            self.report.add(path, "type", "rewritten", f"{out['type']}")
        self._enum(node, type_, null, out, notes)
        folded: list[str] = []
        if type_ == "object":
            form = _object_form(node, root=root, arrays_nearby=arrays_nearby)
            if form in ("key_value", "json_text"):
                out = self._map(node, form, null)
            else:
                self._object(node, form, out)
            folded = ["minProperties", "maxProperties"]
        elif type_ == "array":
            items = node.get("items", {_PATH: pointer(path, "items")})
            if "items" not in node:
                self.report.add(path, "items", "rewritten", "written out: any value")
            out["items"] = self.node(items, nullable=False)
            folded = ["uniqueItems", "prefixItems"]
            for key in ("minItems", "maxItems"):
                count = node.get(key)
                if not isinstance(count, int) or isinstance(count, bool):
                    continue
                if self.rules.item_counts or (key == "minItems" and count in (0, 1)):
                    out[key] = count
                else:
                    folded.append(key)
        elif type_ == "string":
            fmt = node.get("format")
            folded = ["minLength", "maxLength", "pattern"]
            # Beside an enum the format adds nothing the values do not already say, and
            # Anthropic's strict grammar takes no keyword but the values there.
            if fmt in self.rules.formats and "enum" not in out and "const" not in out:
                out["format"] = fmt
            else:
                folded.append("format")
        elif type_ in ("number", "integer"):
            bounds = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
            for key in bounds:
                if not _numbers(node.get(key)):
                    continue
                if self.rules.numeric_bounds:
                    out[key] = node[key]
                else:
                    folded.append(key)
            folded.append("format")
        notes += _fold(node, folded, self.report)
        if not self.rules.type_lists and isinstance(out.get("type"), list):
            if declared == out["type"]:  # else a line above says how the type changed
                self.report.add(path, "type", "rewritten", 'anyOf: the type or {"type": "null"}')
            out = _null_as_alternative(out)
        return _titled(_described(out, description, notes + notes_after), title)

    def _enum(
        self, node: Mapping[str, Any], type_: str, null: bool, out: dict[str, Any], notes: list[str]
    ) -> None:
        enum = node.get("enum")
        if not isinstance(enum, list):
            return
        path = node.get(_PATH, "")
        values = [v for v in enum if _matches_type(v, type_)]
        if any(not isinstance(v, _PRIMITIVE) for v in values):
            # Strict mode takes enums of primitive values only.
            notes.append("one of: " + ", ".join(json.dumps(v, sort_keys=True) for v in values))
            self.report.add(path, "enum", "described", "values that are arrays or objects")
            return
        if len(values) < len([v for v in enum if v is not None]):
            self.report.add(path, "enum", "dropped", f"the values that are not of type {type_}")
        if values:
            out["enum"] = [*values, None] if null and None not in values else values

    def _object(self, node: Mapping[str, Any], form: _Form, out: dict[str, Any]) -> None:
        path = node.get(_PATH, "")
        properties: Mapping[str, Any] = node.get("properties") or {}
        required = [r for r in node.get("required", []) if r in properties]
        missing = [r for r in node.get("required", []) if r not in properties]
        if missing and form != "extras":
            self.report.add(
                path, "required", "dropped", f"names without a property: {', '.join(missing)}"
            )
        optional = [name for name in properties if name not in required]
        everything = self.rules.all_required
        out["properties"] = {
            name: self.node(sub, nullable=everything and name not in required)
            for name, sub in properties.items()
        }
        if everything:
            out["required"] = list(properties)
            if optional:
                self.report.add(
                    path,
                    "required",
                    "rewritten",
                    f"lists every property; optional ones ({', '.join(optional)}) may be null, "
                    "which means not given",
                )
        else:
            out["required"] = required
        extra = node.get("additionalProperties")
        if form == "extras":
            name = _extras_name(properties)
            values = self.node(_value_schema(node), nullable=False)
            entries = _key_value_list(values, nullable=everything)
            entries["description"] = "Other keys, as key/value items"
            out["properties"][name] = entries
            if everything:
                out["required"] = [*out["required"], name]
            self.report.add(
                path,
                "additionalProperties",
                "rewritten",
                f'other keys as a list of {{"key", "value"}} items in "{name}"; '
                "the call turns it back",
            )
            if missing:  # required other keys: the list must hold them
                self.report.add(
                    path, "required", "described", f"{', '.join(missing)} among the other keys"
                )
        elif extra is None:
            self.report.add(path, "additionalProperties", "rewritten", "false: objects are closed")
        out["additionalProperties"] = False

    def _map(self, node: Mapping[str, Any], form: _Form, null: bool) -> dict[str, Any]:
        path = node.get(_PATH, "")
        if node.get("required"):
            self.report.add(path, "required", "described", "keys the map must have")
        if form == "json_text":
            self.report.add(
                path,
                "additionalProperties",
                "rewritten",
                f'the object as JSON text in {{"{JSON_TEXT}": ...}}; the call decodes it',
            )
            out = _json_text()
            if null:
                return {"anyOf": [out, {"type": "null"}]}
            return out
        self.report.add(
            path,
            "additionalProperties",
            "rewritten",
            'a list of {"key", "value"} items; the call turns it back into an object',
        )
        values = self.node(_value_schema(node), nullable=False)
        return _key_value_list(values, nullable=null)


def _null_as_alternative(out: dict[str, Any]) -> dict[str, Any]:
    """``{"type": [T, "null"], ...}`` as ``{"anyOf": [{"type": T, ...}, {"type": "null"}]}``."""
    inner = dict(out)
    inner["type"] = next(t for t in out["type"] if t != "null")
    if isinstance(inner.get("enum"), list):
        inner["enum"] = [v for v in inner["enum"] if v is not None]
    return {"anyOf": [inner, {"type": "null"}]}


def _key_value_list(values: dict[str, Any], *, nullable: bool) -> dict[str, Any]:
    item = {
        "type": "object",
        "properties": {"key": {"type": "string"}, "value": values},
        "required": ["key", "value"],
        "additionalProperties": False,
    }
    return {"type": ["array", "null"] if nullable else "array", "items": item}


def _json_text() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            JSON_TEXT: {"type": "string", "description": "An array or object, as JSON text"}
        },
        "required": [JSON_TEXT],
        "additionalProperties": False,
    }


def _titled(out: dict[str, Any], title: Any) -> dict[str, Any]:
    if isinstance(title, str):
        out["title"] = title
    return out


def _either(branches: list[dict[str, Any]], description: Any, notes: list[str]) -> dict[str, Any]:
    """``anyOf`` of the branches, or the one branch itself (descriptions joined)."""
    if len(branches) != 1:
        return _described({"anyOf": branches}, description, notes)
    out = dict(branches[0])
    inner = out.pop("description", None)
    text = " ".join(t.strip() for t in (description, inner) if isinstance(t, str) and t.strip())
    return _described(out, text, notes)


def _allows_null(node: Mapping[str, Any]) -> bool:
    if "anyOf" in node:
        return any(_allows_null(b) for b in node["anyOf"])
    types = _types_of(node)
    if types is None:
        # Where a reference was cut, the schema is not known: a null there is more likely
        # strict mode's "not given" than a value the tool accepts.
        return not node.get(_CUT)
    if "null" not in types:
        return False
    enum = node.get("enum")
    return not isinstance(enum, list) or any(v is None for v in enum)


def _rewrite(schema: Mapping[str, Any], dialect: Dialect) -> tuple[dict[str, Any], Report]:
    if dialect not in _RULES:
        raise ValueError(f"unknown strict dialect {dialect!r}; use openai or anthropic")
    report = Report()
    simplified = _simplify_root(schema, report)
    out = _Rewrite(_RULES[dialect], report).node(simplified, nullable=False, root=True)
    return out, report


def strict_schema(schema: Mapping[str, Any], *, dialect: Dialect = "openai") -> dict[str, Any]:
    """An object schema rewritten for a provider's strict mode.

    Every object gets ``additionalProperties: false``; for OpenAI every property is listed
    in ``required`` and an optional one becomes nullable (``["string", "null"]``, or
    ``anyOf`` with ``{"type": "null"}``), so the model sends ``null`` where it would have
    left the property out. Maps, other keys and values of any type are asked for in the
    shapes the module docstring lists; ``restore_strict_arguments`` turns a call's
    arguments back. Keywords the dialect does not enforce are folded into the description.

    Args:
        schema: The tool's ``parameters``.
        dialect: ``openai`` (Structured Outputs) or ``anthropic`` (strict tool use).
    """
    return _rewrite(schema, dialect)[0]


def strict_losses(schema: Mapping[str, Any], *, dialect: Dialect = "openai") -> list[SchemaLoss]:
    """Every keyword ``strict_schema`` does not pass through unchanged, with where and why."""
    return _rewrite(schema, dialect)[1].losses()


# -- the call path: strict-mode arguments back to the declared shape --------------------


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


def drop_strict_nulls(schema: Mapping[str, Any], arguments: Any) -> Any:
    """Arguments from a strict-mode call with the ``null`` placeholders removed.

    OpenAI's strict mode makes the model send every property, ``null`` for the ones it
    would have left out. This removes a ``null`` wherever the original ``schema`` does not
    accept one for an optional property, in nested objects and arrays too, so that
    validation and defaults work as for a non-strict call. Other values are returned
    unchanged. (``restore_strict_arguments`` does this and undoes the other shapes too.)
    """
    # The simplified schema of the call path's cached plan: simplifying it again on every
    # call of a strict-mode model cost more than the rest of the call together.
    return _drop_nulls(_plan(schema).root, arguments)


class _Plan:
    """A simplified schema, kept for the calls of one tool."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self.root = _simplify_root(schema)
        # A closed object of scalars (and arrays of scalars) has the same strict form,
        # except for nulls: arguments without a null need no restoring.
        root = self.root
        self.plain = (
            _types_of(root) == ["object"]
            and "anyOf" not in root
            and _object_form(root, root=True, arrays_nearby=False) == "closed"
            and all(_scalar_only(sub) for sub in (root.get("properties") or {}).values())
        )


def _scalar_only(node: Any) -> bool:
    """Whether the node takes one type of scalar, or an array of such."""
    if not isinstance(node, Mapping) or "anyOf" in node:
        return False
    real = [t for t in _types_of(node) or ["any"] if t != "null"]
    if len(real) != 1 or real[0] in ("object", "any"):
        return False
    return real[0] != "array" or _scalar_only(node.get("items"))


_PLANS: dict[int, _Plan] = {}
_PLANS_MAX: Final = 1024


def _plan(schema: Mapping[str, Any]) -> _Plan:
    # A tool's parameters are one object for the life of its metadata; keyed by identity
    # (the plan keeps the schema alive, so the id cannot be reused while it is cached).
    plan = _PLANS.get(id(schema))
    if plan is None or plan.schema is not schema:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[id(schema)] = _Plan(schema)
    return plan


def restore_strict_arguments(schema: Mapping[str, Any], arguments: Any) -> Any:
    """A strict-mode call's arguments in the shape ``schema`` declares.

    Undoes what ``strict_schema`` asks of the model: drops the ``null`` placeholders of
    optional properties (as ``drop_strict_nulls``), turns lists of ``{"key", "value"}``
    items back into objects, merges the list of other keys into its object, and decodes
    ``{"json_text": "..."}``. Arguments that are not in a strict shape pass through as
    they are (a list where the schema wants an object only ever comes from strict mode),
    so the call engine applies this to every call, strict or not. One case is ambiguous:
    where any value is accepted, an object whose only key is ``json_text`` with a string
    is read as JSON text.
    """
    plan = _plan(schema)
    if plan.plain and isinstance(arguments, dict) and None not in arguments.values():
        return arguments
    return _Back().value(plan.root, arguments, root=True)


def strict_arguments(
    schema: Mapping[str, Any], arguments: Any, *, dialect: Dialect = "openai"
) -> Any:
    """Arguments valid for ``schema`` in the shape ``strict_schema`` asks of the model.

    The inverse of ``restore_strict_arguments``: maps become key/value lists, other keys
    move into their list, arrays and objects where any value is accepted become JSON text,
    and (OpenAI) absent optional properties become ``null``. Used for Anthropic's
    ``input_examples`` in strict mode, and by the tests that prove the round trip.
    """
    return _Forward(_RULES[dialect]).value(_plan(schema).root, arguments, root=True)


def _is_key_value_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, dict) and set(item) == _KEY_VALUE and isinstance(item["key"], str)
        for item in value
    )


def _is_json_text(value: Any) -> bool:
    if not isinstance(value, dict) or set(value) != {JSON_TEXT}:
        return False
    return isinstance(value[JSON_TEXT], str)


def _decode(value: dict[str, Any]) -> Any:
    try:
        return json.loads(value[JSON_TEXT])
    except ValueError:
        return value  # not JSON after all: validation will say what is wrong


def _valid(node: Mapping[str, Any], value: Any) -> bool:
    try:
        return bool(Draft202012Validator(node).is_valid(value))
    except Exception:  # a schema the validator cannot use: do not prefer this branch
        return False


def _branches(node: Mapping[str, Any], arrays_nearby: bool) -> tuple[list[dict[str, Any]], bool]:
    """The alternatives of an ``anyOf`` or multi-type node, and whether arrays are nearby."""
    if "anyOf" in node:
        branches = list(node["anyOf"])
    else:
        types = _types_of(node) or []
        branches = _split(node, [t for t in types if t != "null"])
    return branches, arrays_nearby or any(_native_arrays(b) for b in branches)


def _takes(node: Mapping[str, Any], value: Any, arrays_nearby: bool) -> bool:
    """Whether the strict form of the node could hold ``value``."""
    if "anyOf" in node:
        nearby = arrays_nearby or any(_native_arrays(b) for b in node["anyOf"])
        return any(_takes(b, value, nearby) for b in node["anyOf"])
    types = _types_of(node)
    if types is None:  # scalars as they are, arrays and objects as JSON text
        return not isinstance(value, list | dict) or _is_json_text(value)
    if value is None:
        return "null" in types
    real = [t for t in types if t != "null"]
    if len(real) > 1:
        nearby = arrays_nearby or "array" in real
        return any(_takes(b, value, nearby) for b in _split(node, real))
    if real == ["object"]:
        form = _object_form(node, root=False, arrays_nearby=arrays_nearby)
        if form == "key_value":
            return isinstance(value, list)
        if form == "json_text":
            return _is_json_text(value)
        return isinstance(value, dict)
    return bool(real) and _matches_type(value, real[0])


class _Back:
    """Strict-mode arguments back to the declared shape."""

    def value(
        self, node: Mapping[str, Any], value: Any, *, root: bool = False, nearby: bool = False
    ) -> Any:
        types = _types_of(node) if "anyOf" not in node else None
        if "anyOf" in node or (types is not None and len([t for t in types if t != "null"]) > 1):
            return self._either(node, value, nearby)
        if types is None:  # any value
            return _decode(value) if _is_json_text(value) else value
        if "object" in types:
            return self._object(node, value, root=root, nearby=nearby)
        if "array" in types and isinstance(value, list) and isinstance(node.get("items"), Mapping):
            return [self.value(node["items"], item) for item in value]
        return value

    def _either(self, node: Mapping[str, Any], value: Any, nearby: bool) -> Any:
        branches, nearby = _branches(node, nearby)
        fits = [b for b in branches if _takes(b, value, nearby)]
        if not fits:
            return value
        if len(fits) == 1 or not isinstance(value, dict | list):
            return self.value(fits[0], value, nearby=nearby)
        for branch in fits:
            restored = self.value(branch, value, nearby=nearby)
            if _valid(branch, restored):
                return restored
        return self.value(fits[0], value, nearby=nearby)

    def _object(self, node: Mapping[str, Any], value: Any, *, root: bool, nearby: bool) -> Any:
        form = _object_form(node, root=root, arrays_nearby=nearby)
        if form == "key_value":
            if not _is_key_value_list(value):
                return value
            values = _value_schema(node)
            return {item["key"]: self.value(values, item["value"]) for item in value}
        if form == "json_text":
            return _decode(value) if _is_json_text(value) else value
        if not isinstance(value, dict):
            return value
        properties: Mapping[str, Any] = node.get("properties") or {}
        required = set(node.get("required", []))
        extras = _extras_name(properties) if form == "extras" else None
        out: dict[str, Any] = {}
        others: dict[str, Any] = {}
        for name, item in value.items():
            sub = properties.get(name)
            if sub is not None:
                if item is None and name not in required and not _allows_null(sub):
                    continue  # strict mode's "not given"
                out[name] = self.value(sub, item)
            elif name == extras and (item is None or _is_key_value_list(item)):
                values = _value_schema(node)
                for entry in item or ():
                    others[entry["key"]] = self.value(values, entry["value"])
            else:
                out[name] = item
        for key, item in others.items():
            out.setdefault(key, item)
        return out


class _Forward:
    """Declared arguments in the shape strict mode asks for (the inverse of ``_Back``)."""

    def __init__(self, rules: _Rules) -> None:
        self.rules = rules

    def value(
        self, node: Mapping[str, Any], value: Any, *, root: bool = False, nearby: bool = False
    ) -> Any:
        types = _types_of(node) if "anyOf" not in node else None
        if "anyOf" in node or (types is not None and len([t for t in types if t != "null"]) > 1):
            outer = nearby
            branches, nearby = _branches(node, nearby)
            shapes = [self.value(b, value, nearby=nearby) for b in branches if _valid(b, value)]
            # Where several branches take the value, the one whose shape comes back whole: an
            # open object also takes a map's keys, but its strict form is closed and drops them.
            for shaped in shapes:
                if _Back().value(node, shaped, nearby=outer) == value:
                    return shaped
            return shapes[0] if shapes else value
        if types is None:  # any value
            return {JSON_TEXT: _dumps(value)} if isinstance(value, dict | list) else value
        if "object" in types and isinstance(value, dict):
            return self._object(node, value, root=root, nearby=nearby)
        if "array" in types and isinstance(value, list):
            items = node.get("items", {})
            return [self.value(items, item) for item in value]
        return value

    def _object(
        self, node: Mapping[str, Any], value: dict[str, Any], *, root: bool, nearby: bool
    ) -> Any:
        form = _object_form(node, root=root, arrays_nearby=nearby)
        values = _value_schema(node)
        if form == "key_value":
            return [{"key": k, "value": self.value(values, v)} for k, v in value.items()]
        if form == "json_text":
            return {JSON_TEXT: _dumps(value)}
        properties: Mapping[str, Any] = node.get("properties") or {}
        out: dict[str, Any] = {}
        for name, sub in properties.items():
            if name in value:
                out[name] = self.value(sub, value[name])
            elif self.rules.all_required:
                out[name] = None
        if form == "extras":
            others = [
                {"key": k, "value": self.value(values, v)}
                for k, v in value.items()
                if k not in properties
            ]
            name = _extras_name(properties)
            if others:
                out[name] = others
            elif self.rules.all_required:
                out[name] = None
        return out


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
