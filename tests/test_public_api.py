"""The package's one public door: ``__all__`` is exactly the public surface."""

from __future__ import annotations

import subprocess
import sys

import pytest

import toolplug

EXPECTED = {
    "CONTRACT_VERSION",
    "Annotations", "Approval", "ApprovalRequest", "Availability", "Capability",
    "CapabilityChecker", "CapabilityState",
    "Category", "Check", "Citation", "Config", "ConfigError", "ConfigField", "ConfigKey",
    "DetectContext", "EnvVar", "ErrorSpec", "ErrorType", "Example", "Guidelines", "LoadProblem",
    "MetadataError", "NetworkPolicy", "Package", "Plan", "PlanError",
    "PlanResult", "PluginError", "PluginInfo", "Registry",
    "RegisteredTool", "Tool", "ToolCall", "ToolContext", "ToolError", "ToolFailure",
    "ToolMetadata", "ToolResult", "ToolSearch", "ToolplugError", "Toolset", "UsageError",
    "__version__", "explain_export", "export_tool", "export_tools", "hookimpl", "load",
    "load_config", "optional_tools_section",
    "parse_plan", "provides", "run_plan", "tool_reference", "tool_stubs",
}


def test_all_is_exactly_the_public_surface() -> None:
    assert set(toolplug.__all__) == EXPECTED
    # sorted as ruff sorts __all__: constants first, then the rest
    assert list(toolplug.__all__) == sorted(toolplug.__all__, key=lambda n: (not n.isupper(), n))


LAYERS = ("contract", "runtime", "calls", "render")


def test_every_name_resolves_and_lives_in_a_private_module_of_a_core_layer() -> None:
    for name in toolplug.__all__:
        value = getattr(toolplug, name)
        assert value is not None, name
        module = getattr(value, "__module__", "toolplug.contract._x")
        if name != "__version__" and module.startswith("toolplug"):
            parts = module.split(".")
            assert parts[1] in LAYERS, (name, module)
            assert parts[-1].startswith("_"), (name, module)


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
