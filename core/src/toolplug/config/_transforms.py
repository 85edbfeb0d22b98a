"""Transforms: a configured tool made from another one, whatever its source.

``[transforms.NEW_NAME]`` with ``from = "TOOL"`` offers ``TOOL`` (an installed, mounted or
OpenAPI tool) as ``NEW_NAME``: another description or guidance, arguments renamed
(``rename_args = { new = "old" }``), hidden behind a fixed value (``hide = { arg = value }``)
or given another default (``defaults = { arg = value }``). Without ``from`` the table
transforms the tool of its own name in place. The original is no longer offered unless
``keep_original = true``.

The registry applies transforms once, when it is built: schemas, stubs, prompts, search
and calls all see the transformed tool, and a call reaches the original's ``run`` with
the original's arguments.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import re
from collections.abc import Mapping
from typing import Any, Final

from jsonschema import Draft202012Validator
from pydantic import Field, ValidationError, model_validator

from toolplug.config._gathered import GuidelinesTable
from toolplug.config._settings import parse_named_tables
from toolplug.contract._metadata import TOOL_NAME_PATTERN, ToolMetadata, Trust
from toolplug.contract._settings import SINK_KINDS, StrictTable, ToolSettings
from toolplug.contract._tool import Tool, ToolContext, ToolResult

__all__ = ["Transform", "apply_transforms", "parse_transforms"]

_ARG: Final = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class Transform(StrictTable):
    """``[transforms.NAME]``: how one tool is offered under ``NAME``."""

    name: str = Field(pattern=TOOL_NAME_PATTERN, description="a valid tool name")
    from_: str | None = Field(
        default=None, alias="from", min_length=1,
        description="the name of the tool to transform (default: the table's own name)",
    )
    description: str | None = Field(
        default=None, min_length=1, description="one sentence on one line"
    )
    usage_hint: str | None = Field(
        default=None, description="a short, imperative sentence: when to reach for the tool"
    )
    guidelines: GuidelinesTable | None = Field(
        default=None, description="a table: do, do_not, common_mistakes (lists of strings)"
    )
    category: str | None = Field(
        default=None, pattern=r"^[a-z][a-z0-9_]{0,31}$", description="a category name"
    )
    hide: dict[str, Any] = Field(
        default_factory=dict,
        description="a table of argument = fixed value: the argument is removed from the "
        "schema and always sent with that value",
    )
    defaults: dict[str, Any] = Field(
        default_factory=dict, description="a table of argument = the default a call gets"
    )
    rename_args: dict[str, str] = Field(
        default_factory=dict, description='a table of new = "old" argument names'
    )
    keep_original: bool = Field(
        default=False, description="a boolean: true offers the original tool as well"
    )

    @model_validator(mode="after")
    def _names(self) -> Transform:
        for new in self.rename_args:
            if not re.fullmatch(_ARG, new):
                raise ValueError(f"rename_args: {new!r} is not a valid argument name")
        if set(self.hide) & set(self.rename_args.values()):
            raise ValueError("an argument cannot be both hidden and renamed")
        return self

    @property
    def source(self) -> str:
        """The name of the tool it transforms."""
        return self.from_ or self.name


def parse_transforms(table: Any, *, file: str, prefix: str = "") -> dict[str, Transform]:
    """The ``[transforms]`` table, checked: one ``Transform`` per new name.

    Raises:
        ConfigError: naming the file, the key and what is expected.
    """
    return parse_named_tables(
        table, Transform, file=file, key=prefix + "transforms",
        expected="[transforms.NEW_NAME] tables", entry='from = "TOOL", description = ...',
        what="tool name", longest=64,
        rule=lambda problems: next(
            (p for p in problems if p["type"] == "value_error" and not p["loc"]), None
        ),
    )


class TransformError(ValueError):
    """A transform that does not fit the tool it names."""


def _transformed_schema(
    parameters: dict[str, Any], transform: Transform
) -> tuple[dict[str, Any], dict[str, str]]:
    """The new parameters schema, and new name -> original name of every shown argument."""
    schema = copy.deepcopy(parameters)
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    required = list(schema.get("required") or [])
    for arg in [*transform.hide, *transform.defaults, *transform.rename_args.values()]:
        if arg not in properties:
            known = ", ".join(sorted(properties)) or "none"
            raise TransformError(f"{transform.source} has no argument {arg!r} (it has: {known})")
    for arg, value in [*transform.hide.items(), *transform.defaults.items()]:
        check = {**properties[arg], "$defs": schema.get("$defs") or {}}
        problem = next(iter(Draft202012Validator(check).iter_errors(value)), None)
        if problem is not None:
            raise TransformError(
                f"{value!r} does not fit {transform.source}'s argument {arg!r}: {problem.message}"
            )
    for arg in transform.hide:
        properties.pop(arg)
        if arg in required:
            required.remove(arg)
    for arg, value in transform.defaults.items():
        properties[arg] = {**properties[arg], "default": value}
        if arg in required:
            required.remove(arg)
    to_original = {n: n for n in properties}
    for new, old in transform.rename_args.items():
        if new in properties and new != old:
            raise TransformError(f"rename_args: {transform.source} already has an argument {new!r}")
        to_original.pop(old)
        to_original[new] = old
    renamed = {new: properties[old] for new, old in sorted(to_original.items())}
    back = {old: new for new, old in to_original.items()}
    schema["properties"] = renamed
    if required:
        schema["required"] = sorted(back[r] for r in required)
    else:
        schema.pop("required", None)
    return schema, to_original


def _transformed(original: type[Tool], transform: Transform) -> type[Tool]:
    """A ``Tool`` class offering ``original`` as the transform says."""
    metadata = original.metadata
    parameters, to_original = _transformed_schema(metadata.parameters, transform)
    back = {old: new for new, old in to_original.items()}
    values: dict[str, Any] = {"name": transform.name, "parameters": parameters}
    for key in ("description", "usage_hint", "category"):
        if getattr(transform, key) is not None:
            values[key] = getattr(transform, key)
    if transform.guidelines is not None:
        values["guidelines"] = transform.guidelines.guidelines()
    labels = metadata.labels
    values["trust"] = Trust(
        output=labels.output,
        private=labels.private,
        sinks=tuple(sorted(back[s] for s in labels.sinks if s in back)),
        **{
            kind: tuple(sorted(back[s] for s in getattr(labels, kind) if s in back))
            for kind in SINK_KINDS
        },
    )
    examples = []
    for example in metadata.examples:
        arguments = {back[k]: v for k, v in example.input.items() if k in back}
        examples.append(example.model_copy(update={"input": arguments}))
    values["examples"] = tuple(examples)
    new_metadata = metadata.model_copy(update=values)
    ToolMetadata.model_validate(new_metadata.model_dump())  # the new schema is checked
    fixed = dict(transform.hide)

    def original_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
        mapped = {to_original.get(k, k): v for k, v in arguments.items()}
        mapped.update(copy.deepcopy(fixed))
        return mapped

    inner = original()
    shown = _shown_names(back, metadata.name, transform.name)

    async def arun(self: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        result: ToolResult = await inner.run(original_arguments(arguments), context)  # type: ignore[misc]
        made: ToolResult = shown(result)
        return made

    def run(self: Tool, arguments: dict[str, Any], context: ToolContext) -> Any:
        return shown(inner.run(original_arguments(arguments), context))

    def annotations_for(cls: type[Tool], arguments: Mapping[str, Any]) -> Any:
        return original.annotations_for(original_arguments(arguments))

    namespace: dict[str, Any] = {
        "metadata": new_metadata,
        "run": arun if inspect.iscoroutinefunction(original.run) else run,
        "__module__": original.__module__,
        "__doc__": new_metadata.description,
        "transformed_from": original,
        "answers_per_caller": original.answers_per_caller,
        "renamed_arguments": back,
    }
    if original.annotations_for.__func__ is not Tool.annotations_for.__func__:  # type: ignore[attr-defined]
        namespace["annotations_for"] = classmethod(annotations_for)
    return type(f"Transformed_{transform.name}", (Tool,), namespace)


def _shown_names(back: Mapping[str, str], original: str = "", name: str = "") -> Any:
    """What rewrites a result of the original for the model: in its warnings and its
    error's message, a renamed argument named the way toolplug's own messages name one
    (``'old'``, ``old=VALUE``) takes the name the model sees (a next-page hint, a check of
    the original's arguments), and so does the original's own name (``call read_file
    again``: the model is offered ``read_note``). The output is the tool's content and is
    left as it is: a tool that names itself there reads ``ToolContext.tool``."""
    renamed = {old: new for old, new in back.items() if old != new}
    itself = re.compile(r"(?<![\w.])" + re.escape(original) + r"(?!\w)") if (
        original and original != name
    ) else None
    if not renamed and itself is None:
        return lambda result: result
    pattern = re.compile(
        r"(?<![\w.])(?:'(" + "|".join(map(re.escape, renamed)) + r")'|("
        + "|".join(map(re.escape, renamed)) + r")(?==))"
    ) if renamed else None

    def text(value: str) -> str:
        if pattern is not None:
            value = pattern.sub(
                lambda m: f"'{renamed[m.group(1)]}'" if m.group(1) else renamed[m.group(2)],
                value,
            )
        return itself.sub(name, value) if itself is not None else value

    def shown(result: Any) -> Any:
        if not isinstance(result, ToolResult):
            return result
        warnings = tuple(text(w) for w in result.warnings)
        error = result.error
        if error is not None and (message := text(error.message)) != error.message:
            error = dataclasses.replace(error, message=message)
        if warnings == result.warnings and error is result.error:
            return result
        return dataclasses.replace(result, warnings=warnings, error=error)

    return shown


def _inherited(settings: ToolSettings, made: type[Tool]) -> ToolSettings:
    """The original's call settings for its transformed tool: a ``trust`` table's sinks,
    refs and destinations by the names the model sees (a hidden argument is none the model
    sends)."""
    trust = settings.trust
    keys = ("sinks", *SINK_KINDS)
    if trust is None or all(getattr(trust, key) is None for key in keys):
        return settings
    back: Mapping[str, str] = getattr(made, "renamed_arguments", {})
    renamed = {
        key: tuple(back[s] for s in names if s in back)
        for key in keys
        if (names := getattr(trust, key)) is not None
    }
    return settings.model_copy(update={"trust": trust.model_copy(update=renamed)})


def apply_transforms(
    tools: dict[str, Any],
    settings: Mapping[str, ToolSettings],
    transforms: Mapping[str, Transform],
    problem: Any,
) -> dict[str, ToolSettings]:
    """Replace or add the transformed tools in ``tools`` (name -> ``RegisteredTool``).

    ``problem(name, message)`` records a transform that cannot be applied; the tools stay
    as they were. Returns the call settings with each transformed tool's (its own
    ``[tools.NEW]`` table, else the original's).
    """
    originals = dict(tools)
    merged = dict(settings)
    drop: set[str] = set()
    for name, transform in sorted(transforms.items()):
        source = originals.get(transform.source)
        if source is None:
            problem(name, f"[transforms.{name}] from = {transform.source!r}: no tool has that name")
            continue
        if name != transform.source and name in originals:
            problem(name, f"[transforms.{name}]: a tool named {name!r} exists already")
            continue
        try:
            made = _transformed(source.cls, transform)
        except (TransformError, ValidationError) as exc:
            text = str(exc).splitlines()[0] if isinstance(exc, TransformError) else (
                f"{'.'.join(map(str, exc.errors()[0]['loc']))}: {exc.errors()[0]['msg']}"
            )
            problem(name, f"[transforms.{name}]: {text}")
            continue
        tools[name] = dataclasses.replace(source, cls=made, metadata=made.metadata)
        if name not in settings and transform.source in settings:
            merged[name] = _inherited(settings[transform.source], made)
        if not transform.keep_original and name != transform.source:
            drop.add(transform.source)
    for name in drop:
        tools.pop(name, None)
    ordered = dict(sorted(tools.items()))
    tools.clear()
    tools.update(ordered)
    return merged
