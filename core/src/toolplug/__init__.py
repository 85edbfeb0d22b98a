"""toolplug: plugin-based tools for LLM agents.

One public door: every public name is listed in ``__all__`` and imported from here. The
names are resolved on first use, so that ``import toolplug`` (and the command line's cached
paths) stays cheap until a name is needed.
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: importing typing would cost the cached command
# line more than the rest of its work. Type checkers treat this name the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from toolplug._capabilities import (
        Availability,
        Capability,
        CapabilityChecker,
        CapabilityState,
        Check,
        ConfigKey,
        DetectContext,
        EnvVar,
        Package,
    )
    from toolplug._config import Config, Toolset, load_config
    from toolplug._discovery import LoadProblem, PluginInfo, RegisteredTool
    from toolplug._errors import ConfigError, MetadataError, PluginError, ToolplugError, UsageError
    from toolplug._docs import tool_reference
    from toolplug._export import export_tool, export_tools
    from toolplug._hooks import hookimpl
    from toolplug._invoke import ToolCall
    from toolplug._metadata import (
        Annotations,
        Category,
        ConfigField,
        ErrorSpec,
        Example,
        Guidelines,
        ToolMetadata,
    )
    from toolplug._netguard import NetworkPolicy
    from toolplug._plan import Plan
    from toolplug._plan import PlanError
    from toolplug._plan import PlanResult
    from toolplug._plan import parse_plan
    from toolplug._plan import run_plan
    from toolplug._prompt import optional_tools_section
    from toolplug._registry import Registry, load
    from toolplug._tool import (
        Citation,
        ErrorType,
        Tool,
        ToolContext,
        ToolError,
        ToolFailure,
        ToolResult,
    )

__all__ = [
    "Annotations",
    "Availability",
    "Capability",
    "CapabilityChecker",
    "CapabilityState",
    "Category",
    "Check",
    "Citation",
    "Config",
    "ConfigError",
    "ConfigField",
    "ConfigKey",
    "DetectContext",
    "EnvVar",
    "ErrorSpec",
    "ErrorType",
    "Example",
    "Guidelines",
    "LoadProblem",
    "MetadataError",
    "NetworkPolicy",
    "Package",
    "Plan",
    "PlanError",
    "PlanResult",
    "PluginError",
    "PluginInfo",
    "RegisteredTool",
    "Registry",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolFailure",
    "ToolMetadata",
    "ToolResult",
    "ToolplugError",
    "Toolset",
    "UsageError",
    "__version__",
    "export_tool",
    "export_tools",
    "hookimpl",
    "load",
    "load_config",
    "optional_tools_section",
    "parse_plan",
    "run_plan",
    "tool_reference",
]

_HOME = {
    "_capabilities": "Availability Capability CapabilityChecker CapabilityState Check ConfigKey "
    "DetectContext EnvVar Package",
    "_config": "Config Toolset load_config",
    "_discovery": "LoadProblem PluginInfo RegisteredTool",
    "_errors": "ConfigError MetadataError PluginError ToolplugError UsageError",
    "_docs": "tool_reference",
    "_export": "export_tool export_tools",
    "_hooks": "hookimpl",
    "_invoke": "ToolCall",
    "_metadata": "Annotations Category ConfigField ErrorSpec Example Guidelines ToolMetadata",
    "_netguard": "NetworkPolicy",
    "_plan": "Plan PlanError PlanResult parse_plan run_plan",
    "_prompt": "optional_tools_section",
    "_registry": "Registry load",
    "_tool": "Citation ErrorType Tool ToolContext ToolError ToolFailure ToolResult",
}
_WHERE = {name: module for module, names in _HOME.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        value: Any = version("toolplug")
    elif name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f"toolplug.{_WHERE[name]}"), name)
    else:
        raise AttributeError(f"module 'toolplug' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
