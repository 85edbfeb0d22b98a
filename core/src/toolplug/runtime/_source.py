"""Tool sources: where a registry's tools come from, gathered before it is built.

A source lists its tools (``Tool`` classes: metadata and ``run``) and says what else it
brings: capabilities, call settings merged into the configuration, secrets to redact,
files read (the command line's output cache watches them), what ``doctor`` reports of it,
and what to close. ``toolplug.load()`` gathers the sources in a stated order (installed
plugins, then mounted MCP servers, OpenAPI APIs, the host's own sources, code mode last)
and the registry is built from all of them at once: once built, it has no writer.

Every tool registers through pluggy's hooks: an installed plugin's own, a source's through
a plugin made for it (``plugins``), so the registry treats every tool alike (validation,
duplicates, categories, problems: ``runtime/_loaded.py``). The installed plugins are the
first source (``toolplug.sources._plugins``), an ``OfferingSource``: it says where each of
its plugins came from, the ones that could not be imported included.

The base is declared here, in the registry's layer, so the registry depends on nothing
above it; the sources toolplug ships live in ``toolplug.sources``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolplug.contract._capabilities import Capability
from toolplug.contract._hooks import CONTRACT_VERSION, hookimpl
from toolplug.contract._tool import Tool

if TYPE_CHECKING:
    from toolplug.config._config import Config
    from toolplug.runtime._loaded import LoadProblem, Offered, RegisteredTool
    from toolplug.runtime._registry import Registry

__all__ = ["OfferingSource", "SourcePlugin", "ToolSource"]


class ToolSource:
    """A source of tools for ``toolplug.load(sources=[...])``: subclass it and list tools.

    Only ``tools`` is needed; every other method has a default that brings nothing. The
    registry calls each method once while it is built, in this order: ``configure``,
    ``plugins`` (by default ``tools`` and ``capabilities``), ``secrets`` and ``files``,
    then ``complete``; ``close`` when the registry closes. docs/sources.md has a source
    with capabilities, secrets and a report; the built-in ones are ``toolplug.sources``.

    Example:
        >>> import toolplug
        >>> from toolplug import Tool, ToolMetadata, ToolResult
        >>> class Greeting(Tool):
        ...     metadata = ToolMetadata(
        ...         name="greeting", description="Say hello.", category="utility"
        ...     )
        ...
        ...     def run(self, arguments, context):
        ...         return ToolResult.success("hello")
        >>> class Greetings(ToolSource):
        ...     name = "greetings"
        ...
        ...     def tools(self):
        ...         return [Greeting]
        >>> registry = toolplug.load({}, sources=[Greetings()])
        >>> registry.get("greeting").plugin, registry.call("greeting", {}).output
        ('greetings', 'hello')
        >>> registry.close()
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

    def unlisted(self) -> Sequence[str]:
        """Its origins whose tools are not known at all (an API whose description was never
        read), each a line saying which and why: ``toolplug list --all`` shows them, since
        they have no tool to be listed as unavailable."""
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


class OfferingSource(ToolSource):
    """A source whose plugins were found, not made: it describes each one it offers (its
    distribution, entry point, ``.dist-info`` directory), the ones it could not load among
    them with the problem that stopped each, and what went wrong finding them. The
    installed plugins are one (``toolplug.sources._plugins``); ``Registry.sources`` does
    not list it."""

    def offered(self) -> Sequence[Offered]:
        """Each plugin found, in the order it is registered."""
        return ()

    def problems(self) -> Sequence[LoadProblem]:
        """What went wrong finding plugins that names no plugin found."""
        return ()

    def plugins(self) -> Sequence[tuple[str, object]]:
        return [(o.info.name, o.plugin) for o in self.offered() if o.plugin is not None]
