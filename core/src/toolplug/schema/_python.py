"""Python stubs from JSON Schema: a typed signature with a docstring for each tool.

A tool's ``parameters`` become the function's parameters: the required ones first (in the
schema's order), then ``*`` and the optional ones, keyword-only, with their defaults (or
``None``). Objects with properties become ``TypedDict`` classes, enums and constants
``Literal[...]``, ``returns`` the return type (a tool that returns content parts returns a
``Result`` holding them as ``Part`` objects, both classes written once, before the rest:
``toolplug.sources._code_parts`` makes what a program receives). Names that are not
Python identifiers (or are keywords) get a safe spelling; ``parameter_names`` says which
name stands for which property, so a call written against the stub maps back to the tool's
arguments.

The same input gives the same text, byte for byte. Pure functions of JSON data.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "CODE_TOOL",
    "Parameter",
    "StubTool",
    "parameter_names",
    "python_identifier",
    "python_stubs",
]

CODE_TOOL: Final = "run_code"
"""The code-mode tool's name; stubs never include it (a program cannot start a program)."""

_HEADER: Final = "from typing import Any, Literal, NotRequired, TypedDict\n"
_SCALARS: Final = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
}
_PARTS: Final = '''class Part:
    """A picture, recording, file, link or text a tool returned: what it is, never its
    bytes. Return it (alone, in a list or a dict) and run_code's result carries it; pass it
    to a tool and the tool receives its text, its URI or its bytes as a data: URL."""
    kind: Literal["text", "image", "audio", "file", "resource_link", "resource"]
    mime_type: str | None
    size: int | None
    """Bytes (characters for text)."""
    name: str | None
    uri: str | None
    text: str | None
    id: int
    """How the host finds the part again: leave it as it is."""

class Result:
    """What a tool that returns parts returns."""
    output: str
    """Its text."""
    data: Any
    """Its structured data, as its Returns says."""
    parts: list[Part]
    warnings: list[str]
'''

_CONSTRAINTS: Final = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "format",
)
_MAX_DEPTH: Final = 12
"""Deeper schemas are typed ``Any`` below this depth (a stub is for reading)."""


@dataclass(frozen=True)
class StubTool:
    """What a stub is made from: a tool's name, words and schemas."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    returns: Mapping[str, Any] | None = None
    usage_hint: str = ""
    parts: tuple[str, ...] = ()
    """The kinds of content part it returns (``ToolMetadata.parts``): it returns a
    ``Result`` then."""


@dataclass(frozen=True)
class Parameter:
    """One parameter of a stub: its Python name and the property it stands for."""

    python: str
    """The name in the signature (a valid identifier, not a keyword)."""
    property: str
    """The property of the tool's ``parameters`` it fills."""
    required: bool


def python_identifier(name: str, taken: set[str] | None = None) -> str:
    """``name`` as a valid, non-keyword Python identifier, unique within ``taken``."""
    text = re.sub(r"\W", "_", name, flags=re.ASCII) or "_"
    if text[0].isdigit():
        text = "_" + text
    if keyword.iskeyword(text) or keyword.issoftkeyword(text):
        text += "_"
    if taken is not None:
        base, number = text, 2
        while text in taken:
            text = f"{base}_{number}"
            number += 1
        taken.add(text)
    return text


def parameter_names(parameters: Mapping[str, Any]) -> list[Parameter]:
    """The stub's parameters in signature order: required ones first, then optional ones."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = parameters.get("required")
    needed = set(required) if isinstance(required, list) else set()
    taken: set[str] = set()
    first = [name for name in properties if name in needed]
    rest = [name for name in properties if name not in needed]
    return [Parameter(python_identifier(n, taken), n, n in needed) for n in first + rest]


def python_stubs(tools: Sequence[StubTool]) -> str:
    """The stubs of ``tools`` as one Python module: imports, TypedDicts, then functions."""
    namer = _Types()
    functions = [_function(tool, namer) for tool in tools]
    held = [_PARTS] if any(tool.parts for tool in tools) else []
    parts = [_HEADER, *held, *namer.classes, *functions]
    return "\n".join(part.rstrip("\n") + "\n" for part in parts)


class _Types:
    """The TypedDict classes met so far, named after where they appear, each once."""

    def __init__(self) -> None:
        self.classes: list[str] = []
        self._bodies: dict[str, str] = {}

    def typed_dict(self, name: str, schema: Mapping[str, Any], depth: int) -> str:
        properties: Mapping[str, Any] = schema["properties"]
        required = schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        fields = []
        for key, sub in properties.items():
            annotation = self.annotation(sub, name + _camel(key), depth + 1)
            if key not in needed:
                annotation = f"NotRequired[{annotation}]"
            fields.append((str(key), annotation, _describe(sub)))
        identifiers = all(
            k.isidentifier() and not keyword.iskeyword(k) and k != "_" for k, _, _ in fields
        )
        doc = _describe(schema)

        def render(chosen: str) -> str:
            if identifiers and fields:
                lines = [f"class {chosen}(TypedDict):"]
                if doc:
                    lines.append(f'    """{_docstring_text(doc)}"""')
                for key, annotation, description in fields:
                    lines.append(f"    {key}: {annotation}")
                    if description:
                        lines.append(f'    """{_docstring_text(description)}"""')
                return "\n".join(lines) + "\n"
            entries = ", ".join(f"{key!r}: {annotation}" for key, annotation, _ in fields)
            return f"{chosen} = TypedDict({chosen!r}, {{{entries}}})\n"

        # The same shape under the same name is one class; another shape gets a number.
        body = render("")
        chosen, number = name, 2
        while chosen in self._bodies and self._bodies[chosen] != body:
            chosen = f"{name}{number}"
            number += 1
        if chosen not in self._bodies:
            self._bodies[chosen] = body
            self.classes.append(render(chosen))
        return chosen

    def annotation(self, schema: Any, name: str, depth: int = 0) -> str:
        """The Python type of a schema; ``name`` names a TypedDict made for it."""
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return "Any"
        if "const" in schema:
            literal = _literal([schema["const"]])
            if literal:
                return literal
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            literal = _literal(enum)
            if literal:
                return literal
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return _union(
                    self.annotation(option, f"{name}{i + 1}" if len(options) > 1 else name, depth)
                    for i, option in enumerate(options)
                )
        every = schema.get("allOf")
        if isinstance(every, list) and len(every) == 1:
            return self.annotation(every[0], name, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            if not kind:
                return "Any"
            return _union(self._typed(schema, str(k), name, depth) for k in kind)
        if kind is None:
            if isinstance(schema.get("properties"), Mapping):
                kind = "object"
            elif "items" in schema:
                kind = "array"
            else:
                return "Any"
        return self._typed(schema, str(kind), name, depth)

    def _typed(self, schema: Mapping[str, Any], kind: str, name: str, depth: int) -> str:
        if kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "array":
            items = schema.get("items")
            if isinstance(items, Mapping):
                return f"list[{self.annotation(items, name + 'Item', depth + 1)}]"
            return "list[Any]"
        if kind == "object":
            properties = schema.get("properties")
            if isinstance(properties, Mapping) and properties:
                return self.typed_dict(name, schema, depth)
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and extra:
                return f"dict[str, {self.annotation(extra, name + 'Value', depth + 1)}]"
            return "dict[str, Any]"
        return "Any"


def _function(tool: StubTool, namer: _Types) -> str:
    base = _camel(tool.name)
    params = tool.parameters
    properties = params.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    signature: list[str] = []
    args_doc: list[str] = []
    keyword_only = False
    for parameter in parameter_names(params):
        sub = properties[parameter.property]
        annotation = namer.annotation(sub, base + _camel(parameter.property), 1)
        if parameter.required:
            signature.append(f"{parameter.python}: {annotation}")
        else:
            if not keyword_only:
                signature.append("*")
                keyword_only = True
            default = sub.get("default", None) if isinstance(sub, Mapping) else None
            shown = _python_value(default)
            if shown is None or default is None:
                if annotation not in ("Any", "None") and not annotation.endswith("| None"):
                    annotation += " | None"
                shown = "None"
            signature.append(f"{parameter.python}: {annotation} = {shown}")
        words = _describe(sub)
        if parameter.python != parameter.property:
            words = f"(the property {parameter.property!r}) {words}".rstrip()
        if words:  # a parameter without words is said by its name and type already
            args_doc.append(f"{parameter.python}: {words}")
    returns = "Any"
    if tool.returns:
        returns = namer.annotation(tool.returns, base + "Result", 0)
    data = returns
    if tool.parts:
        returns = "Result"
    lines = [f"async def {python_identifier(tool.name)}({', '.join(signature)}) -> {returns}:"]
    doc = [tool.description.strip() or "No description."]
    if tool.usage_hint.strip():
        doc += ["", tool.usage_hint.strip()]
    if args_doc:
        doc += ["", "Args:", *(f"    {line}" for line in args_doc)]
    if tool.parts:
        kinds = ", ".join(tool.parts)
        said = _describe(tool.returns) if tool.returns else ""
        doc += ["", "Returns:", f"    A Result: its parts ({kinds}) and its data ({data})"
                + (f": {said}" if said else "")]
    elif tool.returns and _describe(tool.returns):
        doc += ["", "Returns:", "    " + _describe(tool.returns)]
    text = "\n".join(("    " + line) if line else "" for line in doc).lstrip()
    # The docstring is the whole body (a stub has nothing to run); one line when it can be.
    closing = "\n    " if len(doc) > 1 else ""
    lines.append(f'    """{_docstring_text(text)}{closing}"""')
    return "\n".join(lines) + "\n"


def _describe(schema: Any) -> str:
    """A schema's description with its constraints, on one line."""
    if not isinstance(schema, Mapping):
        return ""
    text = schema.get("description")
    words = " ".join(text.split()) if isinstance(text, str) else ""
    rules = [
        f"{key} {schema[key]!r}"
        for key in _CONSTRAINTS
        if key in schema and isinstance(schema[key], str | int | float)
    ]
    if rules:
        words = f"{words} ({', '.join(rules)})".strip()
    return words


def _docstring_text(text: str) -> str:
    """Text that stays inside a triple-quoted docstring, whatever it contains."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    text = "".join(c if c.isprintable() or c == "\n" else " " for c in text)
    return text + " " if text.endswith('"') else text


def _literal(values: list[Any]) -> str | None:
    """``Literal[...]`` of JSON scalars (strings, integers, booleans, null), else None."""
    shown: list[str] = []
    for value in values:
        if value is None or isinstance(value, bool | str) or type(value) is int:
            text = repr(value)
        else:
            return None
        if text not in shown:
            shown.append(text)
    return f"Literal[{', '.join(shown)}]"


def _union(annotations: Any) -> str:
    seen: list[str] = []
    for annotation in annotations:
        if annotation == "Any":
            return "Any"
        for part in annotation.split(" | ") if "[" not in annotation else [annotation]:
            if part not in seen:
                seen.append(part)
    return " | ".join(seen)


def _python_value(value: Any, depth: int = 0) -> str | None:
    """A JSON value as a Python literal, or None when it is not plain JSON."""
    if depth > _MAX_DEPTH:
        return None
    if value is None or isinstance(value, bool | str) or type(value) is int:
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, list):
        items = [_python_value(v, depth + 1) for v in value]
        return None if None in items else f"[{', '.join(i for i in items if i is not None)}]"
    if isinstance(value, Mapping):
        pairs = []
        for key, item in value.items():
            shown = _python_value(item, depth + 1)
            if not isinstance(key, str) or shown is None:
                return None
            pairs.append(f"{key!r}: {shown}")
        return "{" + ", ".join(pairs) + "}"
    return None


def _camel(name: str) -> str:
    """``web_search`` -> ``WebSearch``: a class-name part from any text."""
    parts = re.split(r"[^0-9A-Za-z]+", name)
    text = "".join(p[:1].upper() + p[1:] for p in parts if p)
    if not text or text[0].isdigit():
        text = "T" + text
    return text
