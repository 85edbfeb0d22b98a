"""Provider tool schemas from the installed tools: one entry point, one module per provider.

Pure functions of ``ToolMetadata``: no provider SDK is imported, and the same metadata
always gives the same output, byte for byte through ``dumps``. What each format does with
the ``parameters`` schema::

    openai            Chat Completions: passed through unchanged  (render/_openai.py)
    openai + strict   rewritten for Structured Outputs: every object closed and fully
                      required, optional properties nullable, maps as key/value lists,
                      unsupported keywords folded into the description
    openai-responses  the Responses API's flat function tool; strict by default
    anthropic         passed through unchanged, with ``input_examples`` (render/_anthropic.py);
                      strict: rewritten for Anthropic's strict tool use
    gemini            passed through unchanged as ``parametersJsonSchema``; ``returns`` as
                      ``responseJsonSchema``                        (render/_gemini.py)
    gemini-openapi    rewritten to the OpenAPI subset older Gemini SDKs read (``parameters``)
    mcp               passed through unchanged; ``returns`` becomes the ``outputSchema``
                                                                    (render/_mcp.py)

The rewrites themselves live in ``toolplug.schema``, shared with the call path, which
undoes what they ask of the model; ``explain_export`` lists what each one changed.
``max_tools`` defers the tools beyond the most relevant ones (render/_search.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolplug.render._callers import callable_from_code, caller_losses, check_callers
from toolplug.render._formats import (
    BY_NAME,
    FORMATS,
    STRICT_DEFAULTS,
    check_format,
    dumps,
    export_tool,
    is_strict,
)
from toolplug.render._search import deferred_export
from toolplug.render._select import metadata_of, select_tools
from toolplug.schema import gemini_losses, strict_losses
from toolplug.schema._python import CODE_TOOL

if TYPE_CHECKING:
    from collections.abc import Iterable

    from toolplug.config._config import Toolset
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.runtime._registry import Registry
    from toolplug.schema import SchemaLoss

__all__ = [
    "FORMATS",
    "STRICT_DEFAULTS",
    "check_format",
    "dumps",
    "explain_export",
    "explain_tool",
    "export_tool",
    "export_tools",
    "is_strict",
]

def export_tools(
    registry: Registry | Iterable[ToolMetadata],
    fmt: str,
    *,
    strict: bool | None = None,
    toolset: str | Toolset | None = None,
    include_unavailable: bool = False,
    task: str | None = None,
    max_tools: int | None = None,
    code_execution: bool = False,
) -> list[dict[str, Any]]:
    """The definitions of the registry's tools, sorted by name (see ``export_tool``).

    With ``max_tools``, the tools beyond the ``max_tools`` most relevant to ``task`` are
    deferred: ``anthropic`` and ``openai-responses`` list them marked ``defer_loading``
    (in namespaces by category, for OpenAI) and add the provider's tool search tool; the
    other formats list only the ``max_tools`` tools and add ``search_tools``, which the
    host answers with a ``ToolSearch`` (docs/schemas.md shows all three).

    Args:
        registry: The loaded tools (``toolplug.load()``). An iterable of ``ToolMetadata``
            still works for this release, with a ``DeprecationWarning`` (and no deferring).
        fmt: One of ``FORMATS``.
        strict: Strict mode (see ``export_tool``).
        toolset: Only this toolset's tools.
        include_unavailable: Also the tools that are not available here.
        task: With ``max_tools``: the tools most relevant to this task come in full.
        max_tools: At most this many tools in full (the most relevant to ``task``, else the
            first by name); the others are deferred.
        code_execution: Mark every tool callable from the provider's own code-execution
            tool too, and add that tool (``anthropic``, ``openai-responses``; see
            ``render/_callers.py``).

    Raises:
        ValueError: an unknown format, ``strict`` with a format that has no strict mode,
            or ``code_execution`` with a format whose provider has no such tool.
    """
    check_format(fmt, strict)
    if code_execution:
        check_callers(fmt)
        plain = export_tools(
            registry, fmt, strict=strict, toolset=toolset,
            include_unavailable=include_unavailable, task=task, max_tools=max_tools,
        )
        return callable_from_code(plain, fmt)
    chosen = metadata_of(registry, "export_tools")
    chosen_from_registry = chosen is None
    if chosen is None:
        real: Registry = registry  # type: ignore[assignment]
        chosen = select_tools(real, toolset=toolset, include_unavailable=include_unavailable)
        if max_tools is not None and len(chosen) > max_tools:
            return deferred_export(
                real,
                fmt,
                strict=strict,
                toolset=toolset,
                include_unavailable=include_unavailable,
                task=task,
                max_tools=max_tools,
            )
    labels = real.labels if chosen_from_registry else None
    return [
        export_tool(meta, fmt, strict=strict, labels=labels(meta.name) if labels else None)
        for meta in sorted(chosen, key=lambda m: m.name)
    ]


def explain_tool(
    metadata: ToolMetadata, fmt: str, *, strict: bool | None = None
) -> list[SchemaLoss]:
    """Every keyword of the tool's ``parameters`` that the export does not pass through as
    it is: where it is (a JSON Pointer), and whether it was dropped, moved into a
    description, or rewritten. Empty for a format that passes the schema through.

    Raises:
        ValueError: as ``export_tool``.
    """
    check_format(fmt, strict)
    row = BY_NAME[fmt]
    if row.rewritten:
        return gemini_losses(metadata.parameters)
    if is_strict(fmt, strict):
        return strict_losses(metadata.parameters, dialect=row.dialect)
    return []


def explain_export(
    registry: Registry,
    fmt: str,
    *,
    strict: bool | None = None,
    toolset: str | Toolset | None = None,
    include_unavailable: bool = False,
    task: str | None = None,
    max_tools: int | None = None,
    code_execution: bool = False,
) -> dict[str, list[SchemaLoss]]:
    """The loss report of an export: ``explain_tool`` for each selected tool, by name.

    This is what ``toolplug schema --format FORMAT --explain`` prints. Every tool is a key,
    with an empty list when its export loses nothing. The selection options are those of
    ``export_tools``; with ``max_tools``, the report covers the tools exported in full.
    With ``code_execution``, each tool also lists the ``allowed_callers`` the option adds.
    """
    check_format(fmt, strict)
    added = caller_losses(fmt) if code_execution else []
    chosen = select_tools(
        registry, toolset=toolset, include_unavailable=include_unavailable, task=task,
        max_tools=max_tools,
    )
    return {
        meta.name: explain_tool(meta, fmt, strict=strict)
        + (added if meta.name != CODE_TOOL else [])
        for meta in sorted(chosen, key=lambda m: m.name)
    }
