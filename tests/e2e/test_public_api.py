"""The package's one public door: ``__all__`` is exactly the public surface."""

from __future__ import annotations

import ast
import collections.abc
import importlib
import importlib.metadata
import inspect
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolplug

EXPECTED = {
    "CONTRACT_VERSION",
    "Annotations", "Approval", "ApprovalRequest", "Availability", "Capability",
    "CapabilityChecker", "CapabilityState",
    "Category", "Check", "Citation", "Config", "ConfigError", "ConfigField", "ConfigKey",
    "Conversation", "DetectContext", "Entry", "EnvVar", "ErrorSpec", "ErrorType", "Example",
    "Guidelines", "LoadProblem", "MetadataError", "NetworkPolicy", "Package", "Page", "Plan",
    "PlanError", "PlanResult", "PluginError", "PluginInfo", "Registry", "RegisteredTool",
    "Selection", "Task",
    "TaskStatus", "Tool", "ToolCall", "ToolContext", "ToolError", "ToolFailure",
    "ToolMetadata", "ToolResult", "ToolSearch", "ToolSettings", "ToolSource", "ToolplugError",
    "Toolset",
    "Trust", "UsageError",
    # content parts of a result (contract/_parts.py)
    "Audio", "EmbeddedResource", "File", "Image", "Part", "ResourceLink", "Text", "part_for",
    # prompts and resources plugins publish (contract/_published.py)
    "Message", "Prompt", "PromptArgument", "PublishedContext", "PublishedError",
    "RenderedPrompt", "Resource", "ResourceContents", "ResourceTemplate", "prompt", "resource",
    "resource_changed",
    # the record of calls, approvals and guard decisions (state/_events.py, state/_record.py)
    "RecordEvent", "RecordFilters", "Recorder",
    # tools that talk back (contract/_talk.py)
    "LOG_LEVELS", "Answer", "AskError", "Channel", "Question", "Sampled", "SamplingMessage",
    "SamplingRequest",
    # a call's result in a provider's own form (render/_results.py)
    "ResultLoss", "explain_result", "export_result",
    "__version__", "explain_export", "export_tool", "export_tools", "hookimpl", "load",
    "load_config", "optional_tools_section",
    "parse_plan", "provides", "run_plan", "tool_reference", "tool_stubs",
}


def test_all_is_exactly_the_public_surface() -> None:
    assert set(toolplug.__all__) == EXPECTED
    # sorted as ruff sorts __all__: constants first, then the rest
    assert list(toolplug.__all__) == sorted(toolplug.__all__, key=lambda n: (not n.isupper(), n))


LAYERS = (
    "config", "contract", "engine", "render", "runtime", "sources", "state", "trust", "utilities",
)
# The public doors besides `toolplug` itself, each for one concept (docs/reference/index.md).
DOORS = ("toolplug.http", "toolplug.schema", "toolplug.search", "toolplug.testing")
PACKAGE = Path(toolplug.__file__).parent


def assigned_in(name: str) -> list[str]:
    """The modules of toolplug whose own top level assigns ``name`` (imports do not count)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            targets = (
                node.targets if isinstance(node, ast.Assign)
                else [node.target] if isinstance(node, ast.AnnAssign)
                else []
            )
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
                found.append(".".join(parts))
    return found


def defining_module(name: str, value: object) -> str:
    """Where ``name`` is defined: a class or function says so itself; any other value (a
    constant, pluggy's marker) is found by the one module that assigns it."""
    if inspect.isclass(value) or inspect.isfunction(value):
        return value.__module__
    modules = assigned_in(name)
    assert len(modules) == 1, (name, modules)
    return modules[0]


def test_every_name_resolves_and_lives_in_a_private_module_of_a_core_layer() -> None:
    for name in toolplug.__all__:
        value = getattr(toolplug, name)
        assert value is not None, name
        if name == "__version__":  # the distribution's own, not a module's
            assert value == importlib.metadata.version("toolplug")
            continue
        module = defining_module(name, value)
        parts = module.split(".")
        assert parts[0] == "toolplug", (name, module)
        assert parts[1] in LAYERS, (name, module)
        assert parts[-1].startswith("_"), (name, module)
        assert getattr(importlib.import_module(module), name) is value, (name, module)


def test_the_values_that_are_not_classes_or_functions_are_found_where_they_are_defined() -> None:
    # Worked cases for ``defining_module``: these say nothing of where they come from.
    assert defining_module("CONTRACT_VERSION", toolplug.CONTRACT_VERSION) == (
        "toolplug.contract._hooks"
    )
    assert defining_module("hookimpl", toolplug.hookimpl) == "toolplug.contract._hooks"


def toolplug_classes() -> dict[str, type]:
    """Every class defined in a module of the core layers, by name: what the return
    annotations (strings, many imported only for type checking) may name."""
    found: dict[str, type] = {}
    for path in sorted(PACKAGE.rglob("_*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if len(parts) != 3 or parts[1] not in (*LAYERS, "schema", "search"):
            continue
        module = importlib.import_module(".".join(parts))
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__:
                found.setdefault(name, value)
    return found


def returned_classes(function: object, known: dict[str, type]) -> Iterator[type]:
    """The classes of toolplug that ``function``'s return annotation names."""
    annotation = getattr(function, "__annotations__", {}).get("return")
    if annotation is None:
        return
    if isinstance(annotation, str):
        module = sys.modules[function.__module__]
        scope = {**vars(collections.abc), **vars(typing), **known, **vars(module)}
        annotation = eval(annotation, scope)  # our own annotations, in our own modules
    stack = [annotation]
    while stack:
        item = stack.pop()
        if inspect.isclass(item) and item.__module__.startswith("toolplug."):
            yield item
        stack.extend(typing.get_args(item))


def public_methods(cls: type) -> Iterator[tuple[str, object]]:
    """The public methods and properties ``cls`` defines or inherits from toolplug."""
    for name in dir(cls):
        if name.startswith("_") or name.startswith("model_"):
            continue
        static = inspect.getattr_static(cls, name)
        function = static.fget if isinstance(static, property) else getattr(
            static, "__func__", static
        )
        if inspect.isfunction(function) and function.__module__.startswith("toolplug."):
            yield name, function


def test_every_type_a_public_method_returns_is_public_too() -> None:
    # A host that calls registry.select() or registry.read() must be able to name what it
    # gets back (annotate, isinstance) without importing a private module: from `toolplug`,
    # or from the door of its own concept (a search Hit from toolplug.search).
    known = toolplug_classes()
    doors = [toolplug, *(importlib.import_module(door) for door in DOORS)]
    public = {v for m in doors for v in (getattr(m, n) for n in m.__all__) if inspect.isclass(v)}
    missing: dict[str, set[str]] = {}
    seen: set[type] = set()
    queue: list[tuple[str, object]] = []
    for name in toolplug.__all__:
        value = getattr(toolplug, name)
        if inspect.isclass(value):
            queue += [(f"{name}.{m}", f) for m, f in public_methods(value)]
        elif inspect.isfunction(value):
            queue.append((f"{name}()", value))
    while queue:
        where, function = queue.pop()
        for cls in returned_classes(function, known):
            if cls not in public:
                missing.setdefault(f"{cls.__module__}.{cls.__name__}", set()).add(where)
            if cls not in seen:
                seen.add(cls)
                queue += [(f"{cls.__name__}.{m}", f) for m, f in public_methods(cls)]
    assert missing == {}
    assert {toolplug.Selection, toolplug.Page, toolplug.Entry, toolplug.ToolSettings} <= seen


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="DoesNotExist"):
        toolplug.DoesNotExist  # noqa: B018


def test_dir_lists_the_public_names() -> None:
    assert set(dir(toolplug)) >= EXPECTED


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolplug", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    for command in ("list", "info", "doctor", "plugins", "prompt"):
        assert command in done.stdout
