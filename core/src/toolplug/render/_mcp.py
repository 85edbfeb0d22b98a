"""MCP tool definitions, and the structured content of MCP results."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._settings import SINK_KINDS

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust

__all__ = [
    "PARTS_META",
    "RESULT_EXTRAS",
    "TRUST_META",
    "mcp_output_schema",
    "mcp_tool",
    "structured_content",
    "trust_meta",
]

PARTS_META: Final = "toolplug/parts"
"""The key of a tool's ``_meta`` that lists the kinds of part its results may hold
(``ToolMetadata.parts``: ``image``, ``audio``, ``file``, ...); absent when it declares none."""

TRUST_META: Final = "toolplug/trust"
"""The key of a tool's ``_meta`` that carries its trust labels."""


def trust_meta(labels: Trust) -> dict[str, Any]:
    """Trust labels as the ``_meta`` of an MCP tool carries them (``TRUST_META``).

    ``output``, ``private`` and ``sinks`` are toolplug's labels, and ``refs`` (the sinks
    whose values name something the service holds) and ``destinations`` (the sinks whose
    values say where the call goes) when the tool has any. ``returnMetadata`` says
    the same of the output in the names of MCP's draft trust and sensitivity annotations
    (SEP-1913), for a client that reads those: ``source`` ``untrustedPublic`` for
    untrusted output, else ``user`` (private) or ``system``; ``sensitivity`` ``user`` when
    private, else ``none``. The draft's ``inputMetadata`` says where a tool's inputs go as
    a whole, which sinks (named parameters) do not map onto, so it is left out.
    """
    source = "untrustedPublic" if labels.untrusted else "user" if labels.private else "system"
    meta: dict[str, Any] = {
        "output": labels.output,
        "private": labels.private,
        "sinks": list(labels.sinks),
    }
    # each left out when none: the same _meta as before refs and destinations existed
    for kind in SINK_KINDS:
        if getattr(labels, kind):
            meta[kind] = list(getattr(labels, kind))
    meta["returnMetadata"] = {
        "source": source, "sensitivity": "user" if labels.private else "none"
    }
    return meta


def mcp_tool(
    metadata: ToolMetadata, *, strict: bool = False, defer_loading: bool = False,
    labels: Trust | None = None,
) -> dict[str, Any]:
    """An MCP ``Tool``: input schema, annotations, ``outputSchema`` from ``returns``, and
    the trust labels in ``_meta`` (``labels``, the ones in force, else the tool's own),
    beside the kinds of part its results may hold (``PARTS_META``) when it declares any."""
    title = metadata.title or metadata.name
    description = metadata.description
    if metadata.usage_hint.strip():
        # An MCP host shows the model nothing but this text, so the hint travels with it.
        description = f"{description}\n\n{metadata.usage_hint.strip()}"
    hints = metadata.annotations
    tool: dict[str, Any] = {
        "name": metadata.name,
        "title": title,
        "description": description,
        "inputSchema": copy.deepcopy(metadata.parameters),
        "annotations": {
            "title": title,
            "readOnlyHint": hints.read_only,
            "destructiveHint": hints.destructive,
            "idempotentHint": hints.idempotent,
            "openWorldHint": hints.open_world,
        },
    }
    output = mcp_output_schema(metadata)
    if output is not None:
        tool["outputSchema"] = output
    tool["_meta"] = {TRUST_META: trust_meta(labels if labels is not None else metadata.labels)}
    if metadata.parts:  # what a host may get besides text, as ToolMetadata.parts names it
        tool["_meta"][PARTS_META] = list(metadata.parts)
    return tool


RESULT_EXTRAS: Final[dict[str, Any]] = {
    "warnings": {
        "type": "array",
        "items": {"type": "string"},
        "description": "What the model should know about this result (cut to fit, and where "
        "to read on).",
    },
    "citations": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "url": {"type": "string"}},
            "required": ["title", "url"],
        },
        "description": "The sources the result came from.",
    },
}
"""The members every structured result may carry beside the tool's data (when it has any)."""


def mcp_output_schema(metadata: ToolMetadata) -> dict[str, Any] | None:
    """The MCP ``outputSchema`` of the tool, or None when it declares no ``returns``.

    MCP wants an object schema at the top, and a client that reads only
    ``structuredContent`` must still see a result's warnings and citations, so the schema
    declares them too (``RESULT_EXTRAS``, both optional). An object ``returns`` gets them
    beside its own properties; one whose top is only ``oneOf``/``anyOf`` of objects gets
    ``"type": "object"`` beside them and the two in each. Any other ``returns`` (or an
    object that has a ``warnings`` or ``citations`` of its own) is wrapped as
    ``{"type": "object", "properties": {"result": <returns>, ...}, "required": ["result"]}``,
    and ``structured_content`` wraps the data the same way.
    """
    return _mcp_output(metadata)[0]


def structured_content(
    metadata: ToolMetadata,
    data: Any,
    *,
    warnings: Sequence[str] = (),
    citations: Sequence[Mapping[str, str]] = (),
) -> Any:
    """The MCP ``structuredContent`` for a successful result.

    None when the tool declares no ``returns``; ``{"result": data}`` when its
    ``outputSchema`` is a wrapper (see ``mcp_output_schema``); otherwise ``data``. Warnings
    and citations, when there are any, go beside the data (data that is not an object where
    the schema wants one is left as it is: it breaks the schema either way).
    """
    schema, wrapped = _mcp_output(metadata)
    if schema is None:
        return None
    extras: dict[str, Any] = {}
    if warnings:
        extras["warnings"] = list(warnings)
    if citations:
        extras["citations"] = [dict(c) for c in citations]
    if wrapped:
        return {"result": data, **extras}
    return {**data, **extras} if extras and isinstance(data, dict) else data


def _mcp_output(metadata: ToolMetadata) -> tuple[dict[str, Any] | None, bool]:
    schema = metadata.returns
    if schema is None:
        return None, False
    if schema.get("type") == "object" and _room(schema):
        return _with_extras(copy.deepcopy(schema)), False
    if "type" not in schema and "const" not in schema and "enum" not in schema:
        branches = [
            b for key in ("oneOf", "anyOf") for b in schema.get(key) or () if isinstance(b, dict)
        ]
        if branches and all(b.get("type") == "object" and _room(b) for b in branches):
            merged: dict[str, Any] = {"type": "object", **copy.deepcopy(schema)}
            for key in ("oneOf", "anyOf"):
                merged[key] = [_with_extras(b) for b in merged.get(key) or ()]
                if not merged[key]:
                    del merged[key]
            return merged, False
    inner = copy.deepcopy(schema)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {"result": inner, **copy.deepcopy(RESULT_EXTRAS)},
        "required": ["result"],
        "additionalProperties": False,
    }
    # References into $defs keep resolving when the definitions move to the new top.
    for key in ("$defs", "definitions"):
        if key in inner:
            wrapper[key] = inner.pop(key)
    inner.pop("$schema", None)
    return wrapper, True


def _room(schema: Mapping[str, Any]) -> bool:
    """Whether an object schema leaves the names of ``RESULT_EXTRAS`` free, or declares
    them as ``RESULT_EXTRAS`` does (a tool ``toolplug serve`` gave, mounted again)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return True
    shared = set(properties) & set(RESULT_EXTRAS)
    return all(properties[name] == RESULT_EXTRAS[name] for name in shared)


def _with_extras(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    schema["properties"] = {
        **(properties if isinstance(properties, dict) else {}),
        **copy.deepcopy(RESULT_EXTRAS),
    }
    return schema
