"""``toolplug.load()``: the installed tools with the engine that runs their calls."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolplug.calls._code import code_plugin, code_settings, install_code_mode
from toolplug.calls._engine import Invoker
from toolplug.runtime._config import Config, load_config, parse_config
from toolplug.runtime._registry import assemble

if TYPE_CHECKING:
    from toolplug.contract._approval import Approver
    from toolplug.runtime._registry import Registry

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
) -> Registry:
    """Discover the installed plugins and build a ``Registry`` that can run calls.

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

    Raises:
        ConfigError: the configuration is invalid (including its ``[calls]`` and ``[code]``
            tables).
        PluginError: ``strict`` is set and a plugin failed.
    """
    if isinstance(config, Mapping):
        config = parse_config(config)
    elif not isinstance(config, Config):
        config = load_config(Path(config) if config is not None else None)
    code = code_settings(config)
    if code.enabled:  # run_code registers through register_tools, like any tool
        plugins = [*plugins, code_plugin()]
    mounts = None
    if config.mcp_servers:  # each server's tools register through a plugin of its own
        from toolplug.mount import mount

        mounts = mount(config, env=os.environ if env is None else env, refresh=refresh)
        config = mounts.config
        plugins = [*plugins, *mounts.plugins]
    described = None
    if config.openapi:  # each API's operations register through a plugin of its own
        from toolplug.openapi import describe

        described = describe(config, env=os.environ if env is None else env, refresh=refresh)
        config = described.config
        plugins = [*plugins, *described.plugins]
    registry = assemble(
        config,
        env=env,
        grant=grant,
        deny=deny,
        plugins=plugins,
        strict=strict,
        engine=lambda registry: Invoker(registry, approver=approver),
    )
    if mounts is not None:
        mounts.attach(registry)
    if described is not None:
        described.attach(registry)
    if code.enabled:
        install_code_mode(registry)
    return registry
