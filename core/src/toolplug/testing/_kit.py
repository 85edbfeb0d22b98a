"""The contract kit and its pytest fixtures (see ``toolplug.testing``)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from toolplug.contract._tool import Tool, ToolContext
    from toolplug.runtime._registry import Registry

__all__ = [
    "ContractError",
    "check_plugin",
    "check_tool",
    "fake_context",
    "toolplug_config",
    "toolplug_registry",
]


class ContractError(AssertionError):
    """A tool or plugin breaks the contract; the message lists every broken rule."""

    def __init__(self, subject: str, problems: list[str]) -> None:
        self.subject = subject
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{subject} breaks the toolplug contract:\n{lines}")


def fake_context(tool: str, config: Mapping[str, Any] | None = None) -> ToolContext:
    """A context for calling ``run`` directly: temporary directories, no network allowed."""
    from toolplug.contract._tool import ToolContext

    root = Path(tempfile.mkdtemp(prefix=f"toolplug-{tool}-"))
    return ToolContext(
        tool=tool,
        config=dict(config or {}),
        cache_dir=root / "cache",
        state_dir=root / "state",
    )


def check_tool(
    cls: type[Tool],
    *,
    run_examples: bool = True,
    known_categories: set[str] | None = None,
    network: bool = False,
    config: Mapping[str, Any] | None = None,
) -> None:
    """Check one tool class against the contract.

    Rules: metadata is a ``ToolMetadata`` and passes registration checks; every example
    validates; the parameters export to every provider format; an optional tool has a
    usage hint and DO / DO NOT guidance; the errors it returns are declared; with
    ``run_examples``, ``run`` returns a ``ToolResult`` for each example (a tool may fail
    there, but must fail with a structured result). Examples run the way a host calls the
    tool: through ``Registry.call`` (arguments validated, defaults filled, the tool's
    ``config`` resolved from ``config``, a mapping shaped like ``toolplug.toml``), with the
    tool's required capabilities granted. Examples of a tool that requires the ``network``
    capability run only with ``network=True``, because test suites must not leave the
    machine; test those tools against servers on 127.0.0.1 instead.

    Raises:
        ContractError: listing every rule broken.
    """
    from toolplug.contract._errors import MetadataError
    from toolplug.contract._metadata import BUILTIN_CATEGORIES, ToolMetadata, validate_tool_metadata
    from toolplug.contract._tool import Tool

    name = getattr(cls, "__qualname__", repr(cls))
    problems: list[str] = []
    if not (isinstance(cls, type) and issubclass(cls, Tool)):
        raise ContractError(name, ["is not a subclass of toolplug.Tool"])
    meta = getattr(cls, "metadata", None)
    if not isinstance(meta, ToolMetadata):
        raise ContractError(name, ["has no metadata = ToolMetadata(...)"])
    name = meta.name
    categories = known_categories or {c.name for c in BUILTIN_CATEGORIES}
    try:
        validate_tool_metadata(meta, known_categories=categories | {meta.category})
    except MetadataError as exc:
        problems.append(str(exc))
    if cls.run is Tool.run:
        problems.append("does not implement run()")
    for prop, spec in sorted(meta.parameters.get("properties", {}).items()):
        if not isinstance(spec, Mapping) or not spec.get("description"):
            problems.append(f"parameter {prop!r} has no description")
    if meta.optionality == "optional":
        if not meta.usage_hint.strip():
            problems.append("an optional tool needs a usage_hint")
        if not meta.guidelines.do or not meta.guidelines.do_not:
            problems.append("an optional tool needs DO and DO NOT guidelines")
    if not meta.errors:
        problems.append("declares no errors (metadata.errors)")
    if not meta.examples:
        problems.append("has no examples")
    problems += _export_problems(meta)
    if "network" in meta.requires_capabilities and not network:
        run_examples = False
    if run_examples and not problems:
        problems += _example_problems(cls, meta, categories, config or {})
    if problems:
        raise ContractError(f"tool {name!r}", problems)


def _example_problems(
    cls: type[Tool], meta: Any, categories: set[str], config: Mapping[str, Any]
) -> list[str]:
    from toolplug.calls._load import load
    from toolplug.contract._metadata import Category

    class Single:
        """Registers just the tool under test (and its category, if it is not known)."""

        @staticmethod
        def register_tools(register: Callable[[Any], None]) -> None:
            if meta.category not in categories:
                register(Category(name=meta.category, description="declared by the tool"))
            register(cls)

    from toolplug.contract._hooks import hookimpl

    hookimpl(Single.register_tools)
    root = Path(tempfile.mkdtemp(prefix=f"toolplug-contract-{meta.name}-"))
    settings = {"cache_dir": str(root / "cache"), "state_dir": str(root / "state"), **config}
    registry = load(
        settings,
        env={"TOOLPLUG_PLUGINS": ""},
        plugins=[("contract-kit", Single)],
        grant=meta.requires_capabilities,
    )
    declared = {e.type for e in meta.errors} | {
        "ValidationError", "TimeoutError", "ExecutionError", "UnavailableError",
    }
    problems: list[str] = []
    try:
        for example in meta.examples:
            outcome = registry.call(meta.name, dict(example.input))
            if outcome.error is not None:
                if outcome.error.type == "ExecutionError":
                    problems.append(
                        f"example {example.description!r} crashed: {outcome.error.message}; "
                        "return ToolResult.failure(...) or raise ToolFailure instead"
                    )
                elif outcome.error.type not in declared:
                    problems.append(
                        f"example {example.description!r} returned the undeclared error type "
                        f"{outcome.error.type}; add it to metadata.errors"
                    )
            elif meta.returns is not None:
                problems += _returns_problems(meta.returns, outcome.data, example.description)
    finally:
        registry.close()
    return problems


def _returns_problems(schema: dict[str, Any], data: object, label: str) -> list[str]:
    from jsonschema import Draft202012Validator

    errors = sorted(
        Draft202012Validator(schema).iter_errors(data), key=lambda e: list(map(str, e.path))
    )
    return [
        f"example {label!r}: data does not match returns at "
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in errors
    ]


def _export_problems(meta: Any) -> list[str]:
    from toolplug.render._export import FORMATS, STRICT_DEFAULTS, export_tool
    from toolplug.schema import restore_strict_arguments, strict_arguments

    problems = []
    variants = [(fmt, None) for fmt in FORMATS] + [(fmt, True) for fmt in STRICT_DEFAULTS]
    for fmt, strict in variants:
        try:
            export_tool(meta, fmt, strict=strict)
        except Exception as exc:
            label = f"{fmt} (strict)" if strict else fmt
            problems.append(f"does not export to {label}: {type(exc).__name__}: {exc}")
    # A model that follows the strict schema must call the tool as it declared.
    for example in meta.examples:
        for dialect in ("openai", "anthropic"):
            shaped = strict_arguments(meta.parameters, example.input, dialect=dialect)
            back = restore_strict_arguments(meta.parameters, shaped)
            kept = {k: v for k, v in back.items() if k in example.input or v is not None}
            if kept != example.input:
                problems.append(
                    f"example {example.description!r} does not come back from the {dialect} "
                    f"strict shape: {kept!r}"
                )
    return problems


def check_plugin(
    distribution: str,
    *,
    run_examples: bool = True,
    config: Mapping[str, Any] | None = None,
    network: bool = False,
) -> None:
    """Check an installed plugin distribution: it loads cleanly and its tools pass.

    Raises:
        ContractError: the plugin had load problems, registered no tool, or a tool failed.
    """
    from toolplug.calls._load import load
    from toolplug.runtime._discovery import normalize_distribution

    registry = load(config or {}, env={"TOOLPLUG_PLUGINS": distribution})
    wanted = normalize_distribution(distribution)
    problems = [p.describe() for p in registry.problems]
    tools = [
        t
        for t in registry.tools.values()
        if t.distribution and normalize_distribution(t.distribution) == wanted
    ]
    if not tools:
        problems.append(f"no tool was registered by {distribution} (is it installed?)")
    categories = {c.name for c in registry.categories}
    for tool in tools:
        try:
            check_tool(
                tool.cls,
                run_examples=run_examples,
                known_categories=categories,
                network=network,
                config=config,
            )
        except ContractError as exc:
            problems += [f"{tool.name}: {p}" for p in exc.problems]
    if problems:
        raise ContractError(f"plugin {distribution!r}", problems)


@pytest.fixture
def toolplug_config(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """Build an isolated configuration mapping: ``toolplug_config(tools={...}, network=...)``.

    Cache and state directories point into the test's temporary directory.
    """

    def make(**tables: Any) -> dict[str, Any]:
        config: dict[str, Any] = {
            "cache_dir": str(tmp_path / "toolplug-cache"),
            "state_dir": str(tmp_path / "toolplug-state"),
        }
        config.update(tables)
        return config

    return make


@pytest.fixture
def toolplug_registry(toolplug_config: Callable[..., dict[str, Any]]) -> Iterator[Registry]:
    """A registry of every installed plugin with an isolated, empty configuration."""
    from toolplug.calls._load import load

    registry = load(toolplug_config())
    yield registry
    registry.close()
