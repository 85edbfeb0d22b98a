"""Code mode's parts: what a program holds of the pictures and files its tools return.

Bytes never enter the sandbox. A call whose result holds parts answers the program with a
``Result`` (``output``, ``data``, ``parts``, ``warnings``) whose parts are ``Part`` objects:
what each is (``kind``, ``mime_type``, ``size``, ``name``, ``uri``, ``text``) and an ``id``
into the table of the parts this program was handed, kept here, outside. Both cross as
Monty ``ClassInstance`` values with every field sent at once, so they survive a program
parked and resumed on another worker (they come back as ``MontyClassProxy`` stand-ins
then, whose attributes carry the ``id``); a program may change a field it holds, but only
the ``id`` is read back, and only the parts of its own table can be named by it.

Out of the sandbox, a part goes two ways: passed to a tool, it becomes what a plan passes
(``contract._parts.as_argument``: its text, its URI, or its bytes as a ``data:`` URL);
returned by the program (alone, in a list or a dict, or in a ``Result``), the run_code
result carries the part itself, and the program's value shows it as a short description
(``{"part": 0, "kind": "image", ...}``, ``part`` its position in the result's parts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from toolplug.contract._parts import (
    Part as ContentPart,
)
from toolplug.contract._parts import (
    ResourceLink,
    as_argument,
)
from toolplug.contract._tool import ToolResult

__all__ = ["Held", "Part", "Result"]

_MAX_DEPTH: Final = 50


@dataclass(frozen=True)
class Part:
    """A part as the program sees it (the class is named ``Part`` inside the sandbox)."""

    kind: str
    mime_type: str | None
    size: int | None
    """Bytes (characters for text); a resource link's size when it says one."""
    name: str | None
    uri: str | None
    text: str | None
    id: int
    """Its place in the table of the parts the program was handed."""


@dataclass(frozen=True)
class Result:
    """What a call whose result holds parts returns to the program."""

    output: str
    data: Any
    parts: list[Any] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _view(part: ContentPart, number: int) -> Part:
    body = part.to_dict()
    size = part.size_bytes if isinstance(part, ResourceLink) else part.size
    return Part(
        kind=part.kind, mime_type=body.get("mime_type"), size=size, name=body.get("name"),
        uri=body.get("uri"), text=body.get("text"), id=number,
    )


class Held:
    """The parts one program was handed, by ``id``, and the way values cross back out."""

    def __init__(self, monty: Any) -> None:
        self.monty = monty
        self.parts: list[ContentPart] = []

    def answer(self, result: ToolResult) -> Any:
        """A successful call's value inside the program: its data (else its text), or a
        ``Result`` when it holds parts."""
        if not result.parts:
            return result.data if result.data is not None else result.for_model()
        wrap = self.monty.ClassInstance
        views = []
        for part in result.parts:
            self.parts.append(part)
            views.append(wrap(_view(part, len(self.parts) - 1), eager_attrs="all"))
        shown = Result(result.output, result.data, views, list(result.warnings))
        return wrap(shown, eager_attrs="all")

    def _part(self, value: Any) -> ContentPart | None:
        """The part ``value`` stands for (a view, its wrapper or its stand-in), or None."""
        if isinstance(value, self.monty.ClassInstance):
            value = value.value
        if isinstance(value, Part):
            number: Any = value.id
        elif isinstance(value, self.monty.MontyClassProxy) and value.name == "Part":
            number = value.attributes.get("id")
        else:
            return None
        if type(number) is int and 0 <= number < len(self.parts):
            return self.parts[number]
        return None

    def _fields(self, value: Any) -> Mapping[str, Any] | None:
        """A ``Result``'s fields (from the object, its wrapper or its stand-in), or None."""
        if isinstance(value, self.monty.ClassInstance):
            value = value.value
        if isinstance(value, Result):
            return {"output": value.output, "data": value.data, "parts": value.parts,
                    "warnings": value.warnings}
        if isinstance(value, self.monty.MontyClassProxy) and value.name == "Result":
            return dict(value.attributes)
        return None

    def argument(self, value: Any, depth: int = 0) -> Any:
        """An argument of a tool call with each part in it as ``as_argument`` makes it."""
        part = self._part(value)
        if part is not None:
            return as_argument(part)
        fields = self._fields(value)
        if fields is not None:
            value = fields
        if depth > _MAX_DEPTH:
            return value
        if isinstance(value, list | tuple):
            return [self.argument(v, depth + 1) for v in value]
        if isinstance(value, Mapping):
            return {k: self.argument(v, depth + 1) for k, v in value.items()}
        return value

    def returned(self, value: Any) -> tuple[Any, list[ContentPart]]:
        """The program's value with each part it holds described, and those parts in the
        order met (each once)."""
        found: list[ContentPart] = []

        def walk(node: Any, depth: int) -> Any:
            part = self._part(node)
            if part is not None:
                if not any(p is part for p in found):
                    found.append(part)
                position = next(i for i, p in enumerate(found) if p is part)
                view = _view(part, 0)
                shown = {"part": position, "kind": view.kind, "mime_type": view.mime_type,
                         "name": view.name, "size": view.size}
                return {k: v for k, v in shown.items() if v is not None}
            fields = self._fields(node)
            if fields is not None:
                node = fields
            if depth > _MAX_DEPTH:
                return node
            if isinstance(node, list | tuple):
                return [walk(v, depth + 1) for v in node]
            if isinstance(node, Mapping):
                return {k: walk(v, depth + 1) for k, v in node.items()}
            return node

        return walk(value, 0), found
