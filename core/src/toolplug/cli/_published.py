"""What ``list``, ``info`` and ``doctor`` say of the plugins' prompts and resources: each as a
record (``--json``) and as lines, offered or not and why (docs/prompts-and-resources.md)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolplug.contract._published import Prompt, Resource, ResourceTemplate
    from toolplug.runtime._registry import Registry

__all__ = [
    "find_published",
    "published_hint",
    "published_lines",
    "published_listing",
    "published_records",
    "record_lines",
]


def _availability(registry: Registry, item: Any, key: str) -> dict[str, Any]:
    why = registry.published_availability(item)
    return {
        "available": why.available,
        "reasons": list(why.reasons),
        "setup": list(why.setup),
        "requires_capabilities": list(item.requires),
        "plugin": registry.published.plugin_of(key),
    }


def prompt_record(registry: Registry, item: Prompt) -> dict[str, Any]:
    """One prompt: its name, arguments, whether it is offered and why not."""
    return {
        "kind": "prompt",
        "name": item.name,
        "title": item.title,
        "description": item.description,
        "arguments": [
            {"name": a.name, "description": a.description, "required": a.required}
            for a in item.arguments
        ],
        **_availability(registry, item, f"prompt:{item.name}"),
    }


def resource_record(registry: Registry, item: Resource | ResourceTemplate) -> dict[str, Any]:
    """One resource or resource template: its URI (or template), name, MIME type and
    whether it is offered."""
    from toolplug.contract._published import ResourceTemplate

    if isinstance(item, ResourceTemplate):
        where: dict[str, Any] = {
            "kind": "resource_template", "uri_template": item.uri_template,
            "variables": list(item.variables),
        }
        key = item.uri_template
    else:
        where, key = {"kind": "resource", "uri": item.uri}, item.uri
    return {
        **where,
        "name": item.name,
        "title": item.title,
        "description": item.description,
        "mime_type": item.mime_type,
        **_availability(registry, item, key),
    }


def published_records(registry: Registry, *, everything: bool = False) -> dict[str, Any]:
    """The prompts, resources and resource templates (the offered ones, or every registered
    one with ``everything``), each list in the registry's order."""
    prompts, resources, templates = registry.published.registered()
    records = {
        "prompts": [prompt_record(registry, p) for p in prompts],
        "resources": [resource_record(registry, r) for r in resources],
        "resource_templates": [resource_record(registry, t) for t in templates],
    }
    if everything:
        return records
    return {k: [r for r in v if r["available"]] for k, v in records.items()}


def find_published(registry: Registry, name: str) -> dict[str, Any] | None:
    """The record of the prompt named ``name``, else of the resource at that URI or the
    template written so; None when nothing registered is."""
    prompts, resources, templates = registry.published.registered()
    for prompt in prompts:
        if prompt.name == name:
            return prompt_record(registry, prompt)
    for one in resources:
        if one.uri == name:
            return resource_record(registry, one)
    for template in templates:
        if template.uri_template == name:
            return resource_record(registry, template)
    return None


def _where(record: dict[str, Any]) -> str:
    return str(record.get("uri") or record.get("uri_template") or record["name"])


def _signature(record: dict[str, Any]) -> str:
    if record["kind"] == "prompt":
        names = [a["name"] + ("" if a["required"] else "?") for a in record["arguments"]]
        return f"{record['name']}({', '.join(names)})"
    mime = f" ({record['mime_type']})" if record["mime_type"] else ""
    return f"{_where(record)}{mime}"


def published_lines(records: dict[str, Any], *, why: bool) -> list[str]:
    """``list``'s and ``doctor``'s sections: one line an item (a prompt's arguments, ``?``
    after an optional one; a resource's URI and MIME type), with ``why`` its state, why it
    is not offered and how to enable it."""
    lines: list[str] = []
    for heading, key in (("Prompts", "prompts"), ("Resources", "resources"),
                         ("Resource templates", "resource_templates")):
        if not records[key]:
            continue
        lines += ["", f"{heading}:"]
        for record in records[key]:
            line = f"  {_signature(record)}"
            if why:
                line += ": " + ("available" if record["available"] else "unavailable")
            elif record["description"]:
                line += f" - {record['description']}"
            lines.append(line)
            if why:
                lines += [f"    why: {reason}" for reason in record["reasons"]]
                lines += ["    to enable: " + step.strip() for step in record["setup"]]
    return lines


def record_lines(record: dict[str, Any]) -> list[str]:
    """``info``'s text of one prompt or resource."""
    kind = record["kind"].replace("_", " ")
    out = [f"{_where(record)}: {record['description'] or record['name']}", ""]
    out.append(f"  kind          {kind}")
    if record["title"]:
        out.append(f"  title         {record['title']}")
    if record["kind"] != "prompt":
        out.append(f"  name          {record['name']}")
        out.append(f"  mime type     {record['mime_type'] or 'not declared'}")
    if record["kind"] == "resource_template":
        out.append("  variables     " + ", ".join(record["variables"]))
    out.append(f"  plugin        {record['plugin']}")
    if record["requires_capabilities"]:
        out.append("  capabilities  " + ", ".join(record["requires_capabilities"]))
    out.append("  available     " + ("yes" if record["available"] else "no"))
    out += [f"    why not: {reason}" for reason in record["reasons"]]
    out += ["    to enable: " + step.strip() for step in record["setup"]]
    if record["kind"] == "prompt":
        out += ["", "Arguments:" if record["arguments"] else "Arguments: none"]
        for argument in record["arguments"]:
            said = f" - {argument['description']}" if argument["description"] else ""
            need = " (required)" if argument["required"] else ""
            out.append(f"  {argument['name']}{need}{said}")
    return out


def published_hint(registry: Registry) -> str:
    """The line after the tools that says what else the plugins publish, or nothing."""
    records = published_records(registry)
    counts = [
        f"{len(records[key])} {word}{'' if len(records[key]) == 1 else 's'}"
        for key, word in (("prompts", "prompt"), ("resources", "resource"),
                          ("resource_templates", "resource template"))
        if records[key]
    ]
    if not counts:
        return ""
    return f"\n\nAlso published: {', '.join(counts)} (toolplug list --published)"


def published_listing(registry: Registry, *, everything: bool, as_json: bool) -> str:
    """What ``list --published`` prints: the records as JSON, or a line each (with why an
    item is not offered when ``everything``)."""
    records = published_records(registry, everything=everything)
    if as_json:
        return json.dumps(records, indent=2, sort_keys=True, ensure_ascii=False)
    lines = published_lines(records, why=everything)
    if not lines:
        return "No prompts or resources are published. Run 'toolplug doctor' to see why."
    return "\n".join(lines[1:])
