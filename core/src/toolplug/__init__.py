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

    from toolplug.trust._conversation import Conversation
    from toolplug.sources._load import load
    from toolplug.engine._plan import Plan
    from toolplug.engine._plan import PlanError
    from toolplug.engine._plan import PlanResult
    from toolplug.engine._plan import parse_plan
    from toolplug.engine._plan import run_plan
    from toolplug.state._spill import Entry
    from toolplug.state._spill import Page
    from toolplug.state._tasks import Task
    from toolplug.state._tasks import TaskStatus
    from toolplug.state._events import RecordFilters
    from toolplug.state._events import RecordEvent
    from toolplug.state._record import Recorder
    from toolplug.contract._approval import Approval
    from toolplug.contract._approval import ApprovalRequest
    from toolplug.contract._call import ToolCall
    from toolplug.contract._capabilities import Capability
    from toolplug.contract._capabilities import Check
    from toolplug.contract._capabilities import ConfigKey
    from toolplug.contract._capabilities import DetectContext
    from toolplug.contract._capabilities import EnvVar
    from toolplug.contract._capabilities import Package
    from toolplug.contract._errors import ConfigError
    from toolplug.contract._errors import MetadataError
    from toolplug.contract._errors import PluginError
    from toolplug.contract._errors import PublishedError
    from toolplug.contract._errors import ToolplugError
    from toolplug.contract._errors import UsageError
    from toolplug.contract._hooks import CONTRACT_VERSION
    from toolplug.contract._hooks import hookimpl
    from toolplug.contract._hooks import provides
    from toolplug.contract._metadata import Annotations
    from toolplug.contract._metadata import Category
    from toolplug.contract._metadata import ConfigField
    from toolplug.contract._metadata import ErrorSpec
    from toolplug.contract._metadata import Example
    from toolplug.contract._metadata import Guidelines
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.contract._metadata import Trust
    from toolplug.contract._network import NetworkPolicy
    from toolplug.contract._parts import Audio
    from toolplug.contract._parts import EmbeddedResource
    from toolplug.contract._parts import File
    from toolplug.contract._parts import Image
    from toolplug.contract._parts import Part
    from toolplug.contract._parts import ResourceLink
    from toolplug.contract._parts import Text
    from toolplug.contract._parts import part_for
    from toolplug.contract._published import Message
    from toolplug.contract._published import Prompt
    from toolplug.contract._published import PromptArgument
    from toolplug.contract._published import PublishedContext
    from toolplug.contract._published import RenderedPrompt
    from toolplug.contract._published import Resource
    from toolplug.contract._published import ResourceContents
    from toolplug.contract._published import ResourceTemplate
    from toolplug.contract._published import prompt
    from toolplug.contract._published import resource
    from toolplug.contract._published import resource_changed
    from toolplug.contract._settings import ToolSettings
    from toolplug.contract._talk import Answer
    from toolplug.contract._talk import AskError
    from toolplug.contract._talk import Channel
    from toolplug.contract._talk import LOG_LEVELS
    from toolplug.contract._talk import Question
    from toolplug.contract._talk import Sampled
    from toolplug.contract._talk import SamplingMessage
    from toolplug.contract._talk import SamplingRequest
    from toolplug.contract._tool import Citation
    from toolplug.contract._tool import ErrorType
    from toolplug.contract._tool import Tool
    from toolplug.contract._tool import ToolContext
    from toolplug.contract._tool import ToolError
    from toolplug.contract._tool import ToolFailure
    from toolplug.contract._tool import ToolResult
    from toolplug.render._docs import tool_reference
    from toolplug.render._export import explain_export
    from toolplug.render._export import export_tool
    from toolplug.render._export import export_tools
    from toolplug.render._results import ResultLoss
    from toolplug.render._results import explain_result
    from toolplug.render._results import export_result
    from toolplug.render._prompt import optional_tools_section
    from toolplug.render._search import ToolSearch
    from toolplug.render._stubs import tool_stubs
    from toolplug.runtime._capabilities import Availability
    from toolplug.runtime._capabilities import CapabilityChecker
    from toolplug.runtime._capabilities import CapabilityState
    from toolplug.config._config import Config
    from toolplug.config._config import Toolset
    from toolplug.config._config import load_config
    from toolplug.runtime._loaded import LoadProblem
    from toolplug.runtime._loaded import PluginInfo
    from toolplug.runtime._loaded import RegisteredTool
    from toolplug.runtime._registry import Registry
    from toolplug.runtime._selection import Selection
    from toolplug.runtime._source import ToolSource

__all__ = [
    "CONTRACT_VERSION",
    "LOG_LEVELS",
    "Annotations",
    "Answer",
    "Approval",
    "ApprovalRequest",
    "AskError",
    "Audio",
    "Availability",
    "Capability",
    "CapabilityChecker",
    "CapabilityState",
    "Category",
    "Channel",
    "Check",
    "Citation",
    "Config",
    "ConfigError",
    "ConfigField",
    "ConfigKey",
    "Conversation",
    "DetectContext",
    "EmbeddedResource",
    "Entry",
    "EnvVar",
    "ErrorSpec",
    "ErrorType",
    "Example",
    "File",
    "Guidelines",
    "Image",
    "LoadProblem",
    "Message",
    "MetadataError",
    "NetworkPolicy",
    "Package",
    "Page",
    "Part",
    "Plan",
    "PlanError",
    "PlanResult",
    "PluginError",
    "PluginInfo",
    "Prompt",
    "PromptArgument",
    "PublishedContext",
    "PublishedError",
    "Question",
    "RecordEvent",
    "RecordFilters",
    "Recorder",
    "RegisteredTool",
    "Registry",
    "RenderedPrompt",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceTemplate",
    "ResultLoss",
    "Sampled",
    "SamplingMessage",
    "SamplingRequest",
    "Selection",
    "Task",
    "TaskStatus",
    "Text",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolFailure",
    "ToolMetadata",
    "ToolResult",
    "ToolSearch",
    "ToolSettings",
    "ToolSource",
    "ToolplugError",
    "Toolset",
    "Trust",
    "UsageError",
    "__version__",
    "explain_export",
    "explain_result",
    "export_result",
    "export_tool",
    "export_tools",
    "hookimpl",
    "load",
    "load_config",
    "optional_tools_section",
    "parse_plan",
    "part_for",
    "prompt",
    "provides",
    "resource",
    "resource_changed",
    "run_plan",
    "tool_reference",
    "tool_stubs",
]

_HOME = {
    "contract._approval": "Approval ApprovalRequest",
    "contract._call": "ToolCall",
    "contract._capabilities": "Capability Check ConfigKey DetectContext EnvVar Package",
    "contract._errors": "ConfigError MetadataError PluginError PublishedError ToolplugError "
    "UsageError",
    "contract._hooks": "CONTRACT_VERSION hookimpl provides",
    "contract._metadata": "Annotations Category ConfigField ErrorSpec Example Guidelines "
    "ToolMetadata Trust",
    "contract._network": "NetworkPolicy",
    "contract._parts": "Audio EmbeddedResource File Image Part ResourceLink Text part_for",
    "contract._published": "Message Prompt PromptArgument PublishedContext RenderedPrompt "
    "Resource ResourceContents ResourceTemplate prompt resource resource_changed",
    "contract._settings": "ToolSettings",
    "contract._talk": "Answer AskError Channel LOG_LEVELS Question Sampled SamplingMessage "
    "SamplingRequest",
    "contract._tool": "Citation ErrorType Tool ToolContext ToolError ToolFailure ToolResult",
    "runtime._capabilities": "Availability CapabilityChecker CapabilityState",
    "config._config": "Config Toolset load_config",
    "runtime._loaded": "LoadProblem PluginInfo RegisteredTool",
    "runtime._registry": "Registry",
    "runtime._selection": "Selection",
    "runtime._source": "ToolSource",
    "trust._conversation": "Conversation",
    "sources._load": "load",
    "engine._plan": "Plan PlanError PlanResult parse_plan run_plan",
    "state._spill": "Entry Page",
    "state._tasks": "Task TaskStatus",
    "state._events": "RecordEvent RecordFilters",
    "state._record": "Recorder",
    "render._docs": "tool_reference",
    "render._export": "explain_export export_tool export_tools",
    "render._results": "ResultLoss explain_result export_result",
    "render._prompt": "optional_tools_section",
    "render._search": "ToolSearch",
    "render._stubs": "tool_stubs",
}
_WHERE = {name: module for module, names in _HOME.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from toolplug.contract._version import toolplug_version

        value: Any = toolplug_version()
    elif name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f"toolplug.{_WHERE[name]}"), name)
    else:
        raise AttributeError(f"module 'toolplug' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
