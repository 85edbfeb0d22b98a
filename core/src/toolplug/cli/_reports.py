"""What ``info`` and ``doctor`` say beyond one tool's record: approvals and what a mounted
server said, servers that never answered, plugins, trust labels, the shared store, and what
the schema exports would lose."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolplug.contract._settings import SINK_KINDS

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust
    from toolplug.runtime._registry import Registry

__all__ = [
    "VALIDATION_THAT_MATTERS",
    "approval_lines",
    "approval_record",
    "plugin_lines",
    "scan_lines",
    "schema_warnings",
    "server_annotations",
    "store_state",
    "tool_record",
    "trust_report",
    "trust_source",
    "trust_words",
    "unreached_records",
]

def unreached_records(
    registry: Registry, toolset: str | None, category: str | None
) -> list[dict[str, Any]]:
    """One unavailable record for each mounted server that is down and mounts no tool (no
    earlier answer named any): its name is ``mcp:NAME``, its reason the server's."""
    if not registry.config.mcp_servers:
        return []  # nothing mounted: the mount package stays unimported
    from toolplug.sources.mcp import mounted

    mounts = mounted(registry)
    chosen = registry.toolset(toolset) if toolset is not None else None
    records = []
    for server in mounts.unreached() if mounts is not None else []:
        settings = server.settings
        if category is not None and settings.category != category:
            continue
        if chosen is not None and not chosen.matches(f"{settings.name_prefix}*", settings.category):
            continue
        state = registry.checker.state(server.capability)
        records.append({
            "name": server.origin,
            "kind": "mcp_server",
            "description": f"The tools of the MCP server {server.name!r}: none known yet, "
            "it has not answered",
            "category": settings.category,
            "optionality": "optional",
            "available": False,
            "reasons": [f"capability {server.capability!r} is missing: {state.reason}"],
            "setup": [state.setup] if state.setup else [],
            "requires_capabilities": [server.capability],
            "plugin": server.origin,
            "distribution": server.origin,
            "version": None,
        })
    return records


def approval_record(registry: Registry, name: str) -> dict[str, Any]:
    """``info``'s approval decision: the policy, whether a call is asked about and why (by
    the declared annotations; ``per_call`` when the tool refines them by its arguments)."""
    from toolplug.contract._tool import Tool

    cls = registry.get(name).cls
    reason = registry.needs_approval(name)
    return {
        "policy": registry.config.tool_settings(name).approval,
        "required": reason is not None,
        "reason": reason,
        "per_call": cls.annotations_for.__func__ is not Tool.annotations_for.__func__,  # type: ignore[attr-defined]
    }


def server_annotations(registry: Registry, name: str) -> dict[str, Any] | None:
    """What a mounted MCP server said of the tool (its annotations as it wrote them) and
    whether the configuration believes it; None for a tool no server mounted."""
    from toolplug.sources.mcp import mounted

    mounts = mounted(registry)
    found = mounts.annotations_of(name) if mounts is not None else None
    if found is None:
        return None
    server, annotations = found
    trusted = registry.config.mcp_servers[server].trust_annotations
    return {"server": server, "annotations": annotations, "trusted": trusted}


def approval_lines(meta: ToolMetadata, record: Mapping[str, Any]) -> list[str]:
    """``info``'s lines on the annotations in force, what a server said, and approval."""
    from toolplug.sources.mcp._mount import server_said

    hints = meta.annotations
    words = [
        word if on else f"not {word}"
        for on, word in (
            (hints.read_only, "read-only"),
            (hints.destructive, "destructive"),
            (hints.idempotent, "idempotent"),
            (hints.open_world, "open-world"),
        )
    ]
    if "annotations" not in meta.model_fields_set:
        shown = "none declared"
    elif meta.annotations_assumed:
        shown = f"{', '.join(words)} (assumed: {meta.annotations_assumed})"
    else:
        shown = ", ".join(words)
    lines = [f"  annotations   {shown}"]
    said = record.get("server_annotations")
    if said is not None:
        belief = "trusted" if said["trusted"] else (
            f"not trusted: [mcp_servers.{said['server']}] trust_annotations is off"
        )
        words_said = server_said(said["annotations"]) or "nothing"
        lines.append(f"  server said   {words_said} ({belief})")
    approval = record["approval"]
    if approval["required"]:
        decision = f"asked before each call, because {approval['reason']}"
    else:
        decision = f"not asked (approval = {json.dumps(approval['policy'])})"
    if approval["per_call"]:
        decision += "; the tool refines its annotations by its arguments, call by call"
    lines.append(f"  approval      {decision}")
    return lines


def store_state(url: str) -> str:
    """Whether the shared store of ``[calls] store`` answers."""
    from toolplug.contract._errors import ConfigError
    from toolplug.state._shared import SharedBackend, open_backend

    try:
        store = open_backend(url, entries=1)
    except ConfigError as exc:
        return f"unusable: {exc}"
    assert isinstance(store, SharedBackend)

    async def check() -> str | None:
        try:
            return await store.ping()
        finally:
            await store.aclose()

    problem = asyncio.run(check())
    if problem is None:
        return f"{store.safe_url}: reachable (rate limits and the result cache are shared)"
    return (
        f"{store.safe_url}: UNREACHABLE ({problem}); calls still run, with rate limits and "
        "the result cache per process"
    )


def scan_lines(reported: Sequence[Any]) -> list[str]:
    """One finding a line: where, which rule, what became of it; then the excerpt."""
    lines = []
    for item in reported:
        f = item.finding
        lines.append(f"  {f.tool}: {f.field}: {f.rule} ({item.state})")
        lines.append(f"    {f.excerpt}")
    return lines


def plugin_lines(registry: Registry) -> list[str]:
    """Doctor's line for each plugin: name, version, where it comes from, its state. A
    plugin a source made (a mounted server, an OpenAPI API) says which source, and is
    unavailable with its reason when the capability all its tools need is missing."""
    made_by = {name: source for source in registry.sources for name, _ in source.plugins()}
    lines = []
    for plugin in registry.plugins:
        state = "loaded" if plugin.loaded else "FAILED"
        source = made_by.get(plugin.name)
        version = f" {plugin.version}" if plugin.version else ""
        if plugin.entry_point:
            where, version = f" ({plugin.entry_point})", f" {plugin.version or '?'}"
        elif plugin.builtin:
            where = " (built-in)"
        elif source is not None:
            where = f" ({source.title or source.name})"
            capability = plugin.name.replace(":", "_", 1)  # mcp:NAME needs mcp_NAME
            if capability in registry.capabilities:
                cap = registry.checker.state(capability)
                if not cap.present:
                    state = f"unavailable: {cap.reason}"
        else:
            where = " (registered from code)"
        lines.append(f"  {plugin.distribution or plugin.name}{version}{where}: {state}")
    return lines


def trust_words(labels: Trust) -> str:
    """Labels in a few words: ``untrusted output, private, sinks: url, body`` (and
    ``, refs: channel`` and ``, destinations: to`` when the tool has them)."""
    sinks = ", ".join(labels.sinks) or "none"
    private = "private" if labels.private else "not private"
    kinds = "".join(
        f", {kind}: {', '.join(getattr(labels, kind))}"
        for kind in SINK_KINDS
        if getattr(labels, kind)
    )
    return f"{labels.output} output, {private}, sinks: {sinks}{kinds}"


def trust_source(registry: Registry, name: str) -> str:
    """Who set the labels in force: ``declared``, ``configured`` or ``default``."""
    if registry.config.tool_settings(name).trust is not None:
        return "configured"
    return "declared" if registry.labelled(name) else "default"


def trust_report(registry: Registry) -> list[str]:
    """Doctor's lines on trust labels: every tool nobody labelled, and what it gets (a
    mounted server's tools together, since one table labels them all)."""
    lines: list[str] = []
    servers: dict[str, list[str]] = {}
    for name in registry.tools:
        if registry.labelled(name):
            continue
        distribution = registry.get(name).distribution or ""
        if distribution.startswith("mcp:"):
            servers.setdefault(distribution.removeprefix("mcp:"), []).append(name)
            continue
        lines += [
            f"  {name}: unlabelled, so it gets the cautious default: "
            + trust_words(registry.labels(name)),
            "    to label it: its author declares trust=Trust(...) in its metadata; until "
            f"then, set [tools.{name}] trust = {{ output = ..., private = ..., sinks = [...] }}",
        ]
    for server, names in sorted(servers.items()):
        lines += [
            f"  {', '.join(names)} (MCP server {server}): unlabelled, so they get the cautious "
            "default: untrusted output, private, every parameter a sink",
            f"    to label them: set [mcp_servers.{server}] trust = {{ output = ..., private = "
            f"... }} for all of them, and [mcp_servers.{server}.tools.TOOL] trust = "
            "{ sinks = [...] } for each",
        ]
    if not lines:
        return ["  every tool is labelled ('toolplug info NAME' shows its labels)"]
    return lines


# What a provider should enforce and an export may lose: doctor warns about these.
VALIDATION_THAT_MATTERS = ("pattern", "enum", "required")


def schema_warnings(registry: Registry) -> list[str]:
    """One line per available tool and keyword whose export a provider no longer enforces."""
    from toolplug.render._export import explain_tool
    from toolplug.render._formats import TABLE

    checked = [row for row in TABLE if row.checked]
    warnings = []
    for tool in registry.select():
        found: dict[tuple[str, str, str], list[str]] = {}
        for row in checked:
            fmt, strict = row.name, (True if row.strict is not None else None)
            label = f"{fmt} strict" if strict else fmt
            for loss in explain_tool(tool.metadata, fmt, strict=strict):
                if loss.keyword in VALIDATION_THAT_MATTERS and loss.action != "rewritten":
                    key = (loss.path or "/", loss.keyword, loss.action)
                    found.setdefault(key, []).append(label)
        for (path, keyword, action), labels in found.items():
            warnings.append(
                f"{tool.name}: {keyword} at {path} is {action} in {', '.join(labels)} exports "
                "(the provider does not enforce it; toolplug still checks each call)"
            )
    return warnings


def tool_record(registry: Registry, name: str) -> dict[str, Any]:
    """What ``list`` and ``info`` say of one tool, and the console's catalog shows: its
    category, its plugin, whether it is available, why not and how to set it up."""
    tool = registry.get(name)
    availability = registry.availability(name)
    return {
        "name": name,
        "description": tool.metadata.description,
        "category": tool.metadata.category,
        "optionality": tool.metadata.optionality,
        "available": availability.available,
        "reasons": list(availability.reasons),
        "setup": list(availability.setup),
        "requires_capabilities": list(tool.metadata.requires_capabilities),
        "plugin": tool.plugin,
        "distribution": tool.distribution,
        "version": tool.version,
    }
