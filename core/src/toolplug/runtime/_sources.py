"""Tool sources: where a registry's tools come from, gathered before it is built.

A source lists its tools (``Tool`` classes: metadata and ``run``) and says what else it
brings: capabilities, call settings merged into the configuration, secrets to redact,
files read (the command line's output cache watches them), what ``doctor`` reports of it,
and what to close. ``toolplug.load()`` gathers the sources in a stated order (installed
plugins, then mounted MCP servers, OpenAPI APIs, the host's own sources, code mode last)
and the registry is built from all of them at once: once built, it has no writer.

Installed plugins still register through pluggy's hooks (entry points); a source's tools
register through a plugin made for it (``plugins``), so discovery treats every tool alike:
validation, duplicates, categories, problems.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from toolplug.contract._capabilities import Capability
from toolplug.contract._hooks import CONTRACT_VERSION, hookimpl
from toolplug.contract._settings import ToolSettings
from toolplug.contract._tool import Tool

if TYPE_CHECKING:
    from toolplug.runtime._config import Config
    from toolplug.runtime._discovery import RegisteredTool
    from toolplug.runtime._registry import Registry

__all__ = ["GatheredSource", "SourcePlugin", "ToolSource", "call_settings"]


class ToolSource:
    """A source of tools for ``toolplug.load(sources=[...])``: subclass it and list tools.

    Only ``tools`` is needed; every other method has a default that brings nothing. The
    registry calls each method once while it is built, in this order: ``configure``,
    ``plugins`` (by default ``tools`` and ``capabilities``), ``secrets`` and ``files``,
    then ``complete``; ``close`` when the registry closes.
    """

    name: str = "source"
    """The name its tools are registered under (``RegisteredTool.plugin`` and
    ``distribution``), unique among the sources of one registry."""
    version: str | None = None
    """Its version, shown beside its name (``toolplug plugins``, ``doctor``)."""
    title: str = ""
    """The heading ``toolplug doctor`` puts over ``report`` (none: not reported)."""

    def tools(self) -> Sequence[type[Tool]]:
        """Its tools: ``Tool`` subclasses, each with its metadata and its ``run``."""
        return ()

    def capabilities(self) -> Sequence[Capability]:
        """Capabilities its tools require (``requires_capabilities``), with detectors."""
        return ()

    def plugins(self) -> Sequence[tuple[str, object]]:
        """The ``(name, plugin)`` pairs that register its tools and capabilities: one plugin
        under ``name`` by default. A source with tools from several origins (one MCP
        server each) returns one plugin per origin, and may add hooks (``tool_call``)."""
        return [(self.name, SourcePlugin(self.name, self.version, self.tools, self.capabilities))]

    def configure(self, config: Config) -> Config:
        """The configuration with what it adds (its tools' call settings), before any tool
        is registered; the default adds nothing."""
        return config

    def secrets(self) -> Collection[str]:
        """Values the registry redacts from every result, error and log line."""
        return ()

    def files(self) -> Collection[str]:
        """Files it read: a change to one makes the command line's cached answers stale."""
        return ()

    def expires(self) -> float | None:
        """When what it listed stops being fresh (seconds since the epoch), or None."""
        return None

    def complete(self, registry: Registry) -> Mapping[str, RegisteredTool]:
        """Entries of its own tools to replace, now that every tool is registered (and the
        sources before it are complete): a definition withheld, a tool that describes the
        others. ``registry`` reads as built but is offered to nobody yet."""
        return {}

    def report(self) -> Sequence[str]:
        """What ``toolplug doctor`` says of it under ``title``, one fact a line."""
        return ()

    def close(self) -> None:
        """Release what it holds (sessions, processes); ``Registry.close`` calls it."""


class SourcePlugin:
    """The plugin that registers a source's tools and capabilities through the hooks."""

    TOOLPLUG_CONTRACT = CONTRACT_VERSION

    def __init__(
        self, name: str, version: str | None, tools: Callable[[], Sequence[type[Tool]]],
        capabilities: Callable[[], Sequence[Capability]],
    ) -> None:
        self.TOOLPLUG_DISTRIBUTION = name
        self.TOOLPLUG_VERSION = version
        self._tools, self._capabilities = tools, capabilities

    @hookimpl
    def register_tools(self, register: Any) -> None:
        for tool in self._tools():
            register(tool)

    @hookimpl
    def register_capabilities(self, register: Any) -> None:
        for capability in self._capabilities():
            register(capability)


@dataclass
class GatheredSource(ToolSource):
    """A source gathered from the configuration (mounted MCP servers, OpenAPI APIs): its
    plugins (one per server or API), its tools' call settings, its secrets and files, and
    when what it listed goes stale."""

    settings: Mapping[str, ToolSettings]
    """Each of its tools' call settings, the user's ``[tools.NAME]`` table on top."""
    gathered: Sequence[tuple[str, object]]
    """One plugin per server or API."""
    found: set[str] = field(default_factory=set)
    """Its secrets."""
    read: list[str] = field(default_factory=list)
    """The files it read."""
    stale_at: float | None = None
    """When the first listing used stops being fresh (seconds since the epoch)."""

    def plugins(self) -> Sequence[tuple[str, object]]:
        return self.gathered

    def configure(self, config: Config) -> Config:
        return replace(config, settings={**config.settings, **self.settings})

    def secrets(self) -> Collection[str]:
        return self.found

    def files(self) -> Collection[str]:
        return self.read

    def expires(self) -> float | None:
        return self.stale_at


def call_settings(
    defaults: Mapping[str, Any], own: ToolSettings | None, written: ToolSettings | None
) -> dict[str, Any]:
    """One gathered tool's call settings, key by key: its server's or API's ``defaults``,
    then its own table under it (``own``), then the ``[tools.NAME]`` table the user wrote
    (``written``); only the keys each sets."""
    values = dict(defaults)
    for layer in (own, written):
        if layer is not None:
            values.update({k: getattr(layer, k) for k in layer.model_fields_set})
    return values
