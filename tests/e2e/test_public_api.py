"""The package's one public door: ``__all__`` is exactly the public surface."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import toolplug

EXPECTED = {
    "CONTRACT_VERSION",
    "Annotations", "Approval", "ApprovalRequest", "Availability", "Capability",
    "CapabilityChecker", "CapabilityState",
    "Category", "Check", "Citation", "Config", "ConfigError", "ConfigField", "ConfigKey",
    "Conversation", "DetectContext", "EnvVar", "ErrorSpec", "ErrorType", "Example",
    "Guidelines", "LoadProblem",
    "MetadataError", "NetworkPolicy", "Package", "Plan", "PlanError",
    "PlanResult", "PluginError", "PluginInfo", "Registry", "RegisteredTool", "Task",
    "TaskStatus", "Tool", "ToolCall", "ToolContext", "ToolError", "ToolFailure",
    "ToolMetadata", "ToolResult", "ToolSearch", "ToolplugError", "Toolset", "Trust", "UsageError",
    "__version__", "explain_export", "export_tool", "export_tools", "hookimpl", "load",
    "load_config", "optional_tools_section",
    "parse_plan", "provides", "run_plan", "tool_reference", "tool_stubs",
}


def test_all_is_exactly_the_public_surface() -> None:
    assert set(toolplug.__all__) == EXPECTED
    # sorted as ruff sorts __all__: constants first, then the rest
    assert list(toolplug.__all__) == sorted(toolplug.__all__, key=lambda n: (not n.isupper(), n))


LAYERS = ("contract", "runtime", "calls", "render")
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
