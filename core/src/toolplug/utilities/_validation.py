"""Validation: the model's arguments checked against a tool's schema, defaults filled.

One path for every schema: the arguments are brought to a JSON object (JSON text is parsed
within the argument limits), strict-mode shapes are restored (``toolplug.schema``), the
object is validated, and defaults are filled from the schema, in nested objects and through
local ``$ref`` too. A compiled validator (fastjsonschema) answers "valid?" for schemas whose
keywords it reads as 2020-12 does; jsonschema's 2020-12 validator answers for the others and
writes the report, which names every bad field.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from jsonschema import Draft202012Validator

from toolplug.contract._metadata import ToolMetadata
from toolplug.contract._tool import ErrorType, ToolResult
from toolplug.schema import restore_strict_arguments
from toolplug.utilities._limits import argument_problem, loads_bounded

__all__ = ["Validation", "compile_schema", "shown", "validation_problems"]

# Keywords that fastjsonschema (draft 7) and 2020-12 read the same way. A schema that uses
# anything else ($ref, $defs, prefixItems, unevaluated*, dependent*) is checked by
# jsonschema alone, so that no keyword is silently ignored.
_PORTABLE: Final = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "enum", "const",
        "default", "description", "title", "examples", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
        "pattern", "format", "items", "minItems", "maxItems", "uniqueItems",
        "minProperties", "maxProperties", "anyOf", "oneOf", "allOf", "not", "$schema",
        "$comment", "readOnly", "writeOnly", "deprecated", "propertyNames",
        "patternProperties", "contentMediaType", "contentEncoding",
    }
)  # fmt: skip
_MAX_SHOWN: Final = 60


def _portable(schema: Any) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping):
        return False
    for key, value in schema.items():
        if key not in _PORTABLE:
            return False
        if key in ("properties", "patternProperties"):
            if not all(_portable(v) for v in value.values()):
                return False
        elif key in ("items", "additionalProperties", "not", "propertyNames"):
            if isinstance(value, list) or not _portable(value):  # items as a list is draft 7 only
                return False
        elif key in ("anyOf", "oneOf", "allOf") and not all(_portable(v) for v in value):
            return False
    return True


def shown(value: Any) -> str:
    """A value as a model would read it, cut to a few dozen characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


_BOUNDS: Final = frozenset(
    {
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
        "maxLength", "minItems", "maxItems", "pattern", "multipleOf", "const", "format",
    }
)  # fmt: skip


def validation_problems(validator: Any, arguments: Any) -> list[dict[str, str]]:
    """Every problem jsonschema finds, as ``{"field", "expected", "received"}``, sorted."""
    problems: list[dict[str, str]] = []
    for error in validator.iter_errors(arguments):
        where = _path(error.absolute_path)
        kind = error.validator
        if kind == "required":
            missing = [n for n in error.validator_value if n not in (error.instance or {})]
            problems.extend(
                {
                    "field": f"{where}.{name}" if where else name,
                    "expected": "a value (required)",
                    "received": "nothing",
                }
                for name in missing
            )
            continue
        if kind == "additionalProperties" and isinstance(error.instance, Mapping):
            allowed = sorted(error.schema.get("properties", {}))
            problems.extend(
                {
                    "field": f"{where}.{name}" if where else name,
                    "expected": "only known properties (" + (", ".join(allowed) or "none") + ")",
                    "received": shown(error.instance[name]),
                }
                for name in sorted(set(error.instance) - set(allowed))
            )
            continue
        if kind == "type":
            expected = error.validator_value
            expected = " or ".join(expected) if isinstance(expected, list) else str(expected)
            expected = f"type {expected}"
        elif kind == "enum":
            expected = "one of " + ", ".join(shown(v) for v in error.validator_value)
        elif kind in _BOUNDS:
            expected = f"{kind} {shown(error.validator_value)}"
        else:
            expected = error.message
        problems.append(
            {
                "field": where or "(arguments)",
                "expected": expected,
                "received": shown(error.instance),
            }
        )
    problems.sort(key=lambda p: (p["field"], p["expected"]))
    return problems


@dataclass(frozen=True)
class _Checker:
    """One tool's compiled schema: a fast yes/no, the full report, the defaults."""

    schema: Mapping[str, Any]
    report: Any
    fast: Callable[[Any], Any] | None
    has_defaults: bool


class Validation:
    """Checks the arguments of calls; each tool's schema is compiled on its first call."""

    def __init__(self) -> None:
        self._checkers: dict[str, _Checker] = {}

    def arguments(self, meta: ToolMetadata, arguments: Any) -> dict[str, Any] | ToolResult:
        """The arguments as the tool receives them, or the ``ValidationError`` result."""
        name = meta.name
        if type(arguments) is not dict:
            arguments = _as_object(name, arguments)
            if isinstance(arguments, ToolResult):
                return arguments
        else:  # JSON text was measured while it was parsed; a dict is measured here
            problem = argument_problem(arguments)
            if problem is not None:
                return ToolResult.failure(
                    ErrorType.VALIDATION, f"invalid arguments for {name}: {problem}"
                )
        checker = self._checker(meta)
        # Strict-mode shapes (null placeholders, key/value lists, JSON text) back to the
        # declared ones; arguments in the declared shape pass through untouched.
        arguments = restore_strict_arguments(checker.schema, arguments)
        if checker.fast is not None:
            try:
                checker.fast(arguments)
            except Exception:  # invalid (or too deep for the generated code): report below
                pass
            else:
                return _filled(checker, arguments)
        try:
            problems = validation_problems(checker.report, arguments)
        except RecursionError:
            problems = [
                {
                    "field": "(arguments)",
                    "expected": "a reasonably shallow value",
                    "received": "a value nested too deeply to check",
                }
            ]
        if not problems:
            return _filled(checker, arguments)
        lines = "; ".join(
            f"{p['field']}: expected {p['expected']}, received {p['received']}" for p in problems
        )
        return ToolResult.failure(
            ErrorType.VALIDATION,
            f"invalid arguments for {name}: {lines}",
            details={"problems": problems},
        )

    def _checker(self, meta: ToolMetadata) -> _Checker:
        checker = self._checkers.get(meta.name)
        if checker is None or checker.schema is not meta.parameters:
            schema = meta.parameters
            slow, fast, _invalid = _compiled(schema)
            checker = _Checker(schema, slow, fast, '"default"' in json.dumps(schema))
            self._checkers[meta.name] = checker
        return checker


def compile_schema(schema: Mapping[str, Any]) -> Callable[[Any], bool]:
    """``value -> matches?`` for a schema, compiled the way tool schemas are: fastjsonschema
    where it reads every keyword as 2020-12 does, else jsonschema's 2020-12 validator."""
    slow, fast, invalid = _compiled(schema)
    if fast is None:
        return slow.is_valid  # type: ignore[no-any-return]

    def matches(value: Any) -> bool:
        try:
            fast(value)
        except invalid:
            return False
        except Exception:  # too deep for the generated code: the full validator
            return bool(slow.is_valid(value))
        return True

    return matches


def _compiled(schema: Mapping[str, Any]) -> tuple[Any, Callable[[Any], Any] | None, Any]:
    """jsonschema's 2020-12 validator of a schema, fastjsonschema's compiled check where it
    reads every keyword as 2020-12 does (else None), and the error the check raises.

    The one place fastjsonschema is imported: not at the top, because ``load()`` (and so
    a cold ``toolplug list``, a measured start-up) imports this module, and only the first
    call needs the compiler.
    """
    import fastjsonschema

    slow = Draft202012Validator(dict(schema))
    fast = None
    if _portable(schema):
        try:
            fast = fastjsonschema.compile(dict(schema), use_default=False)
        except Exception:  # an exotic pattern or format: jsonschema still checks
            fast = None
    return slow, fast, fastjsonschema.JsonSchemaValueException


def _as_object(name: str, arguments: Any) -> dict[str, Any] | ToolResult:
    """Arguments that are not a dict: JSON text, None, another mapping, or a mistake."""
    if isinstance(arguments, str | bytes):
        try:
            arguments = loads_bounded(arguments or "{}")
        except ValueError as exc:
            return ToolResult.failure(
                ErrorType.VALIDATION, f"the arguments for {name} are not valid JSON: {exc}"
            )
    elif isinstance(arguments, Mapping):
        problem = argument_problem(arguments)
        if problem is not None:
            return ToolResult.failure(
                ErrorType.VALIDATION, f"invalid arguments for {name}: {problem}"
            )
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        return ToolResult.failure(
            ErrorType.VALIDATION,
            f"the arguments for {name} must be a JSON object, received {shown(arguments)}",
        )
    return dict(arguments)


def _filled(checker: _Checker, arguments: dict[str, Any]) -> dict[str, Any]:
    """Valid arguments with the schema's defaults filled in (a new dict; the caller's stays
    as it was)."""
    if not checker.has_defaults:
        return dict(arguments)
    filled = _fill(checker.schema, arguments, checker.schema, 0)
    assert isinstance(filled, dict)
    return filled


_MAX_REF_HOPS: Final = 32


def _fill(node: Any, value: Any, root: Mapping[str, Any], hops: int) -> Any:
    """``value`` with the defaults of ``node`` filled where a property is missing: in
    objects at any depth, in array items, through ``allOf`` and local ``$ref``."""
    if not isinstance(node, Mapping):
        return value
    ref = node.get("$ref")
    if isinstance(ref, str) and hops < _MAX_REF_HOPS:
        target = _local(root, ref)
        if target is not None:
            value = _fill(target, value, root, hops + 1)
    for branch in node.get("allOf", ()):
        value = _fill(branch, value, root, hops)
    if isinstance(value, dict):
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            out = dict(value)
            for key, sub in properties.items():
                if key in out:
                    out[key] = _fill(sub, out[key], root, hops)
                elif isinstance(sub, Mapping) and "default" in sub:
                    out[key] = copy.deepcopy(sub["default"])
            return out
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        return [_fill(node["items"], item, root, hops) for item in value]
    return value


def _local(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    """The schema a local reference (``#/$defs/Name``) points at, or None."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for raw in ref[1:].split("/"):
        if not raw:
            continue
        part = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None
