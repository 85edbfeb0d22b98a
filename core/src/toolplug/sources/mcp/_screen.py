"""Definitions from outside, screened before a model reads them.

``toolplug.load()`` mounts the configured servers and, while it builds the registry,
screens every mounted tool's definition as its server gave it (``toolplug.trust._scan``), against
the installed tools and the other servers' tools. A tool with a finding the configuration
does not accept (``accept_findings`` under ``[mcp_servers.NAME]`` or
``[mcp_servers.NAME.tools.TOOL]``) is withheld: it stays registered, under a neutral
definition that carries none of the server's text, and unavailable (the capability
``mcp_NAME_scan`` says why), so no prompt, schema, stub, reference page or ``tools/list``
shows what was flagged, with ``--all`` or without.

Installed plugins are scanned by ``toolplug scan`` and ``toolplug doctor`` too, and their
findings reported; they are not withheld: an installed plugin is code the operator chose
to install, and it runs with the operator's rights whatever its description says.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._metadata import ToolMetadata
from toolplug.trust._scan import Finding, Subject, definition_texts, metadata_texts, scan

if TYPE_CHECKING:
    from toolplug.runtime._loaded import RegisteredTool
    from toolplug.runtime._registry import Registry
    from toolplug.sources.mcp._mount import Mounted, MountedServer

__all__ = ["Reported", "findings", "screen"]

_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")


@dataclasses.dataclass(frozen=True)
class Reported:
    """A finding as ``toolplug scan`` and ``doctor`` report it."""

    finding: Finding
    state: str
    """``withheld`` (a mounted tool, refused until accepted), ``accepted`` (the
    configuration accepts it) or ``reported`` (an installed plugin's: shown, not withheld)."""

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON."""
        return {**dataclasses.asdict(self.finding), "state": self.state}


def _installed(registry: Registry) -> list[RegisteredTool]:
    return [t for t in registry.tools.values() if not (t.distribution or "").startswith("mcp:")]


def _families(registry: Registry) -> dict[str, str]:
    """Plugin name -> what its tools were built from, for sources that say (an OpenAPI
    API's description, by its content key): two APIs from one description do not shadow
    each other."""
    families: dict[str, str] = {}
    for source in registry.sources:
        for name, key in getattr(source, "families", dict)().items():
            families[name] = key
    return families


def _names(tool: RegisteredTool) -> tuple[str, ...]:
    title = tool.metadata.title
    return (tool.name, title) if title else (tool.name,)


def _mounted_subjects(mounts: Mounted, registry: Registry) -> list[Subject]:
    subjects = []
    for server in mounts.servers.values():
        listed = {str(t.get("name")): t for t in (server.listing.tools if server.listing else [])}
        for final, remote in sorted(server.names.items()):
            entry = registry.tools.get(final)
            if entry is None or entry.distribution != f"mcp:{server.name}":
                continue  # not mounted: an invalid definition, or an installed tool's name
            tool = listed[remote]
            hints = tool.get("annotations") or {}
            titles = [t for t in (tool.get("title"), hints.get("title")) if isinstance(t, str)]
            subjects.append(
                Subject(
                    final,
                    f"mcp:{server.name}",
                    tuple(definition_texts(tool)),
                    (final, remote, *titles),
                    outside=True,
                )
            )
    return subjects


def screen(mounts: Mounted, registry: Registry) -> dict[str, RegisteredTool]:
    """Scan every mounted tool's definition: the entries that withhold each one with a
    finding the configuration does not accept. Runs once, while the registry is built
    (``Mounted.complete``) and before anything has read it."""
    subjects = [
        Subject(t.name, t.distribution or t.plugin, (), _names(t)) for t in _installed(registry)
    ]
    subjects += _mounted_subjects(mounts, registry)
    owner = {
        final: server for server in mounts.servers.values() for final in server.names
    }
    for finding in scan(subjects):
        server = owner.get(finding.tool)
        if server is None:
            continue
        accepted = server.settings.accepts(server.names[finding.tool], finding.rule)
        server.findings.setdefault(finding.tool, []).append((finding, accepted))
        if not accepted:
            rules = server.withheld.setdefault(finding.tool, [])
            if finding.rule not in rules:
                rules.append(finding.rule)
    tools = registry.tools
    withheld: dict[str, RegisteredTool] = {}
    for server in mounts.servers.values():
        for final, rules in sorted(server.withheld.items()):
            rules.sort()
            withheld[final] = _withheld(tools[final], server, server.names[final], rules)
    return withheld


def _withheld(
    entry: RegisteredTool, server: MountedServer, remote: str, rules: list[str]
) -> RegisteredTool:
    """The entry of a withheld tool: a neutral definition, unavailable, that says why."""
    meta = entry.metadata
    table = f"mcp_servers.{server.name}.tools.{_toml_key(remote)}"
    neutral = ToolMetadata(
        name=meta.name,
        description=f"Withheld: the definition the MCP server {server.name!r} gives of this "
        f"tool breaks the scan rules {', '.join(rules)}.",
        category=meta.category,
        optionality=meta.optionality,
        requires_capabilities=(*meta.requires_capabilities, f"{server.capability}_scan"),
        parameters={"type": "object"},
        annotations=meta.annotations,
        timeout_seconds=meta.timeout_seconds,
        setup_instructions=f"Review the findings with 'toolplug scan'. To accept them, add "
        f"accept_findings = {json.dumps(rules)} under [{table}].",
    )
    cls = type(
        entry.cls.__name__, (entry.cls,), {"metadata": neutral, "__doc__": neutral.description}
    )
    return dataclasses.replace(entry, cls=cls, metadata=neutral)


def _toml_key(key: str) -> str:
    """A TOML key for a tool name: bare when it can be, else a quoted, escaped string."""
    if _BARE_KEY.fullmatch(key):
        return key
    escaped = []
    for char in key:
        code = ord(char)
        if char in '"\\':
            escaped.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            escaped.append(char)
        else:
            escaped.append(f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}")
    return '"' + "".join(escaped) + '"'


def findings(registry: Registry, mounts: Mounted | None) -> list[Reported]:
    """Every finding in the registry's definitions: the installed plugins' (scanned now,
    against one another) and the mounted servers' (as screened when loaded), sorted."""
    installed = _installed(registry)
    families = _families(registry)
    subjects = [
        Subject(
            t.name, t.distribution or t.plugin, tuple(metadata_texts(t.metadata)), _names(t),
            family=families.get(t.plugin, ""),
        )
        for t in installed
    ]
    reported = [Reported(f, "reported") for f in scan(subjects)]
    for server in (mounts.servers.values() if mounts is not None else ()):
        for found in server.findings.values():
            reported += [Reported(f, "accepted" if ok else "withheld") for f, ok in found]
    return sorted(reported, key=lambda r: (r.finding, r.state))
