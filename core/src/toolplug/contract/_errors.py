"""Errors raised when toolplug is used wrongly.

Two kinds of failure are kept apart on purpose:

* **Raised** (this module): a plugin author's or host's mistake, such as invalid tool
  metadata, a bad configuration file, or an unknown toolset. These are programming or setup
  errors and stop the operation that hit them.
* **Returned** (``ToolResult.error``): a tool that failed at run time, or a model that sent
  bad arguments. Those never raise; see ``toolplug.contract._tool``.

Hierarchy::

    ToolplugError
    ├── MetadataError      a tool's metadata breaks the contract
    ├── PluginError        a plugin failed to load or misbehaved in a hook
    ├── ConfigError        a configuration file or value is invalid
    └── UsageError         the API or CLI was called with arguments that make no sense
        └── PublishedError an unknown prompt or resource, or a prompt's arguments wrong
"""

from __future__ import annotations

__all__ = [
    "ConfigError", "MetadataError", "PluginError", "PublishedError", "ToolplugError", "UsageError",
]


class ToolplugError(Exception):
    """Base class of every error toolplug raises."""


class MetadataError(ToolplugError):
    """A tool's metadata breaks the contract; names the plugin, the tool and the field."""

    def __init__(
        self,
        message: str,
        *,
        tool: str | None = None,
        field: str | None = None,
        plugin: str | None = None,
    ) -> None:
        self.tool = tool
        self.field = field
        self.plugin = plugin
        parts = []
        if plugin:
            parts.append(f"plugin {plugin!r}")
        if tool:
            parts.append(f"tool {tool!r}")
        if field:
            parts.append(f"field {field!r}")
        prefix = ", ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.detail = message


class PluginError(ToolplugError):
    """A plugin failed to load, or raised or misbehaved in one of its hooks."""

    def __init__(self, message: str, *, plugin: str | None = None) -> None:
        self.plugin = plugin
        super().__init__(f"plugin {plugin!r}: {message}" if plugin else message)


class ConfigError(ToolplugError):
    """A configuration file or value is invalid; names the file, the key and what is expected."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.file = file
        self.key = key
        self.expected = expected
        where = []
        if file:
            where.append(file)
        if key:
            where.append(key)
        text = f"{': '.join(where)}: {message}" if where else message
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)


class UsageError(ToolplugError):
    """The API or the command line was called with arguments that make no sense."""


class PublishedError(UsageError):
    """A prompt or resource asked for that is not offered, or a prompt's arguments that do
    not fit it; ``kind`` says which, and ``prompt``, ``uri`` and ``argument`` name it.

    ``kind`` is ``unknown_prompt``, ``unknown_resource``, ``unavailable`` (registered, but
    a capability it requires is missing), ``missing_argument``, ``unknown_argument`` or
    ``invalid_argument`` (not a string).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        prompt: str | None = None,
        uri: str | None = None,
        argument: str | None = None,
    ) -> None:
        self.kind = kind
        self.prompt = prompt
        self.uri = uri
        self.argument = argument
        super().__init__(message)
