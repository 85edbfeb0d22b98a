"""``toolplug.load()``: the tools of every source, with the engine that runs their calls."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolplug.config._config import Config
from toolplug.engine._engine import Engine
from toolplug.runtime._registry import assemble, check_sources, configuration
from toolplug.sources._code import CodeMode, code_settings
from toolplug.sources._plugins import InstalledPlugins

if TYPE_CHECKING:
    from toolplug.contract._approval import Approver
    from toolplug.runtime._registry import Registry
    from toolplug.runtime._source import ToolSource

__all__ = ["load"]


def load(
    config: Config | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    grant: Iterable[str] = (),
    deny: Iterable[str] = (),
    plugins: Iterable[tuple[str, object]] = (),
    strict: bool = False,
    approver: Approver | None = None,
    refresh: bool = False,
    sources: Iterable[ToolSource] = (),
) -> Registry:
    """Gather every source of tools and build a ``Registry`` that can run calls.

    The sources, in this order (a tool name two sources give is kept from the first):
    the installed plugins (entry points, then ``plugins``), the mounted MCP servers
    (``[mcp_servers.NAME]``), the OpenAPI APIs (``[openapi.NAME]``), ``sources``, and
    code mode last (``[code]``: its ``run_code`` describes the others). The registry is
    built from all of them at once and does not change afterwards.

    Args:
        config: A ``Config``; a mapping shaped like a ``toolplug.toml`` document (checked the
            same way); or the path of a configuration file. By default the file is found as
            described in docs/configuration.md.
        env: The environment detectors and settings read (default ``os.environ``).
        grant: Capabilities the host declares present, whatever the detectors say.
        deny: Capabilities the host declares absent; a denial wins over a grant.
        plugins: ``(name, plugin)`` pairs registered from code after the installed ones
            (a module, class or object with ``@hookimpl`` functions).
        strict: Raise ``PluginError`` when anything went wrong while loading.
        approver: Decides on calls that need a person's approval, after an approver given
            to the call and before the ``approve_call`` hook (docs/concepts.md, Approvals).
        refresh: Ask every mounted MCP server (``[mcp_servers.NAME]``) for its tools now,
            instead of using a tool list cached within its ``list_ttl_seconds``, and read
            every OpenAPI description (``[openapi.NAME]``) again.
        sources: The host's own ``ToolSource`` objects (docs/sources.md); the registry
            closes them when it closes (and ``load`` does, when it raises).

    Raises:
        ConfigError: the configuration is invalid (including its ``[calls]`` and ``[code]``
            tables).
        PluginError: ``strict`` is set and a plugin failed.
        UsageError: a source is not a ``ToolSource``, or two sources share a name.
    """
    config = configuration(config)
    code = code_settings(config)
    sources = list(sources)
    check_sources(sources)  # before anything is opened for them
    environment = os.environ if env is None else env
    gathered: list[ToolSource] = [InstalledPlugins(environment, plugins)]
    try:
        # Imported only when configured: both stay off the command line's start-up path.
        if config.mcp_servers:  # one plugin per server registers its tools
            from toolplug.sources.mcp import mount

            gathered.append(mount(config, env=environment, refresh=refresh))
        if config.openapi:  # one plugin per API registers its operations
            from toolplug.sources.openapi import describe

            gathered.append(describe(config, env=environment, refresh=refresh))
        gathered += sources
        if code.enabled:
            gathered.append(CodeMode(code))
        return assemble(
            config,
            env=env,
            grant=grant,
            deny=deny,
            strict=strict,
            engine=lambda registry: Engine(registry, approver=approver),
            sources=gathered,
        )
    except BaseException:  # no registry will close them: what they opened ends here
        for source in reversed(gathered):
            source.close()
        raise
