"""The contract kit: checks every tool and plugin must pass, and pytest fixtures.

Use it from a plugin's tests::

    from toolplug.testing import check_plugin


    def test_contract():
        check_plugin("toolplug-my-tool")

``check_tool`` and ``check_plugin`` raise ``ContractError`` listing every broken rule. The
module is also a pytest plugin (entry point ``pytest11``), which provides the fixtures
``toolplug_config`` and ``toolplug_registry``.
"""

from __future__ import annotations

import asyncio
import inspect
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from toolplug._registry import Registry
    from toolplug._tool import Tool, ToolContext

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
    from toolplug._tool import ToolContext

    root = Path(tempfile.mkdtemp(prefix=f"toolplug-{tool}-"))
    return ToolContext(
        tool=tool,
        config=dict(config or {}),
        cache_dir=root / "cache",
        state_dir=root / "state",
    )


def _run(tool: Tool, arguments: dict[str, Any], context: ToolContext) -> object:
    outcome: Any = tool.run(arguments, context)
    if inspect.isawaitable(outcome):

        async def wait() -> object:
            return await outcome

        return asyncio.run(wait())
    return outcome


def check_tool(
    cls: type[Tool],
    *,
    run_examples: bool = True,
    context: Callable[[str], ToolContext] | None = None,
    known_categories: set[str] | None = None,
) -> None:
    """Check one tool class against the contract.

    Rules: metadata is a ``ToolMetadata`` and passes registration checks; every example
    validates; the parameters export to every provider format; an optional tool has a
    usage hint and DO / DO NOT guidance; the errors it returns are declared; with
    ``run_examples``, ``run`` returns a ``ToolResult`` for each example (a tool may fail
    there, for lack of network, say, but must fail with a structured result).

    Raises:
        ContractError: listing every rule broken.
    """
    from toolplug._errors import MetadataError
    from toolplug._metadata import BUILTIN_CATEGORIES, ToolMetadata, validate_tool_metadata
    from toolplug._tool import Tool, ToolResult

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
    if run_examples and not problems:
        declared = {e.type for e in meta.errors} | {
            "ValidationError",
            "TimeoutError",
            "ExecutionError",
            "UnavailableError",
        }
        make = context or fake_context
        for example in meta.examples:
            try:
                outcome = _run(cls(), dict(example.input), make(meta.name))
            except Exception as exc:
                failure = getattr(exc, "to_result", None)
                if failure is None:
                    problems.append(
                        f"run() raised {type(exc).__name__} for example {example.description!r}; "
                        "return ToolResult.failure(...) or raise ToolFailure instead"
                    )
                    continue
                outcome = failure()
            if not isinstance(outcome, ToolResult):
                problems.append(
                    f"run() returned {type(outcome).__name__} for example "
                    f"{example.description!r}, not a ToolResult"
                )
            elif outcome.error is not None and outcome.error.type not in declared:
                problems.append(
                    f"example {example.description!r} returned the undeclared error type "
                    f"{outcome.error.type}; add it to metadata.errors"
                )
            elif outcome.ok and meta.returns is not None:
                problems += _returns_problems(meta.returns, outcome.data, example.description)
    if problems:
        raise ContractError(f"tool {name!r}", problems)


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
    try:
        from toolplug import _export
    except ImportError:  # pragma: no cover - the exporters ship with core
        return []
    problems = []
    for fmt in _export.FORMATS:
        try:
            _export.export_tool(meta, fmt)
        except Exception as exc:
            problems.append(f"does not export to {fmt}: {type(exc).__name__}: {exc}")
    return problems


def check_plugin(
    distribution: str, *, run_examples: bool = True, config: Mapping[str, Any] | None = None
) -> None:
    """Check an installed plugin distribution: it loads cleanly and its tools pass.

    Raises:
        ContractError: the plugin had load problems, registered no tool, or a tool failed.
    """
    from toolplug._discovery import normalize_distribution
    from toolplug._registry import load

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
            check_tool(tool.cls, run_examples=run_examples, known_categories=categories)
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
    from toolplug._registry import load

    registry = load(toolplug_config())
    yield registry
    registry.close()
