"""What the sources gathered from the configuration share: mounted MCP servers
(``toolplug.sources.mcp``) and OpenAPI APIs (``toolplug.sources.openapi``).

Each is a ``GatheredSource``: one plugin per configured server or API (an ``Origin``,
registered through an ``OriginPlugin``), its tools' call settings merged key by key
(``call_settings``), its secrets, the files it read and when its listing goes stale.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from toolplug.config._gathered import GatheredToolSettings
from toolplug.config._settings import Value, resolve_value
from toolplug.contract._hooks import CONTRACT_VERSION, hookimpl
from toolplug.contract._metadata import ToolMetadata
from toolplug.contract._settings import ToolSettings
from toolplug.contract._tool import Tool
from toolplug.runtime._source import ToolSource

if TYPE_CHECKING:
    from toolplug.config._config import Config


__all__ = [
    "GatheredSource",
    "Origin",
    "OriginPlugin",
    "call_settings",
    "checked_metadata",
    "overridden",
    "resolved",
    "tool_class",
    "unique_name",
]


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


# -- what mounted servers and OpenAPI APIs share ------------------------------------------


class Origin:
    """One configured server or API (``settings.name``), whose tools require the capability
    ``KIND_NAME`` and register through a plugin named ``KIND:NAME``."""

    KIND: ClassVar[str]
    settings: Any
    notes: list[str]

    @property
    def name(self) -> str:
        """Its name in the configuration."""
        return str(self.settings.name)

    @property
    def capability(self) -> str:
        """The capability every one of its tools requires."""
        return f"{self.KIND}_{self.name}"

    @property
    def origin(self) -> str:
        """The name its tools are registered under."""
        return f"{self.KIND}:{self.name}"


class OriginPlugin:
    """The plugin of one server or API: registers the tool ``made`` for each of its names
    (a name whose definition cannot be offered becomes a note ``doctor`` shows)."""

    TOOLPLUG_CONTRACT = CONTRACT_VERSION

    def __init__(
        self, origin: Origin, version: str | None,
        made: Callable[[str], type[Tool] | str], names: Callable[[], Sequence[str]],
    ) -> None:
        self.TOOLPLUG_DISTRIBUTION = origin.origin
        self.TOOLPLUG_VERSION = version or None
        self._origin, self._made, self._names = origin, made, names

    @hookimpl
    def register_tools(self, register: Any) -> None:
        for final in sorted(self._names()):
            made = self._made(final)
            if isinstance(made, str):
                self._origin.notes.append(made)
                continue
            register(made)


def unique_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... (within 64 characters) when it is taken; the
    result is added to ``taken``."""
    if name in taken:
        number = 2
        while f"{name[:60]}_{number}" in taken:
            number += 1
        name = f"{name[:60]}_{number}"
    taken.add(name)
    return name


def overridden(
    values: dict[str, Any], own: GatheredToolSettings | None, keys: Sequence[str]
) -> dict[str, Any]:
    """``values`` with what a tool's own table sets on top: ``keys``, ``guidelines`` and
    ``timeout_seconds`` (each only when set)."""
    if own is None:
        return values
    for key in keys:
        if getattr(own, key) is not None:
            values[key] = getattr(own, key)
    if own.guidelines is not None:
        values["guidelines"] = own.guidelines.guidelines()
    if own.timeout_seconds is not None:
        values["timeout_seconds"] = own.timeout_seconds
    return values


def checked_metadata(build: Callable[[], ToolMetadata], what: str) -> ToolMetadata | str:
    """The metadata ``build`` makes, or why it cannot (``what`` names the definition and
    what becomes of it: ``the definition of 'add' cannot be mounted``)."""
    try:
        return build()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        return f"{what}: {where}: {first['msg']}"


def tool_class(
    prefix: str, metadata: ToolMetadata, run: Callable[..., Any], **extra: Any
) -> type[Tool]:
    """A ``Tool`` class named ``prefix_NAME`` with this metadata and ``run``."""
    return type(
        f"{prefix}_{metadata.name}",
        (Tool,),
        {"metadata": metadata, "run": run, "__doc__": metadata.description, **extra},
    )


def resolved(
    value: Value, where: str, *, env: Mapping[str, str], base: Path, problems: list[str],
) -> tuple[str | None, bool]:
    """A configured value as text and whether it is a secret; None, with why in
    ``problems``, when its variable is unset or its file cannot be read."""
    try:
        text, secret = resolve_value(value, env=env, base=base)
    except OSError as exc:
        problems.append(f"{where}: cannot read its file: {exc.strerror or exc}")
        return None, False
    if text is None:
        variable = getattr(value, "env", "?")
        problems.append(f"{where}: the environment variable {variable} is not set")
    return text, secret
