"""Provider tool schemas from the installed tools: one entry point, one module per provider.

Pure functions of ``ToolMetadata``: no provider SDK is imported, and the same metadata
always gives the same output, byte for byte through ``dumps``. What each format does with
the ``parameters`` schema::

    openai      passed through unchanged                          (render/_openai.py)
    openai +    rewritten for Structured Outputs (``strict=True``): every object closed and
      strict    fully required, optional properties made nullable, unsupported keywords
                folded into the description; a tool strict mode cannot express without
                refusing valid arguments stays as it is, with ``"strict": false``
    anthropic   passed through unchanged                          (render/_anthropic.py)
    gemini      rewritten to the OpenAPI subset Gemini reads: no $ref, oneOf, allOf,
                additionalProperties or const; one type per node with ``nullable``
                                                                  (render/_gemini.py)
    mcp         passed through unchanged; ``returns`` becomes the ``outputSchema``
                                                                  (render/_mcp.py)

The rewrites themselves live in ``toolplug.schema``, shared with the call path, which
undoes what they ask of the model. docs/schemas.md lists exactly what each one loses.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from toolplug.render._anthropic import anthropic_tool
from toolplug.render._gemini import gemini_tool
from toolplug.render._mcp import mcp_tool
from toolplug.render._openai import openai_tool
from toolplug.render._select import metadata_of, select_tools

if TYPE_CHECKING:
    from collections.abc import Iterable

    from toolplug.contract._metadata import ToolMetadata
    from toolplug.runtime._config import Toolset
    from toolplug.runtime._registry import Registry

__all__ = ["FORMATS", "dumps", "export_tool", "export_tools"]

FORMATS: Final = ("openai", "anthropic", "gemini", "mcp")
"""The schema formats ``export_tool`` writes, in the order the CLI lists them."""


def export_tool(metadata: ToolMetadata, fmt: str, *, strict: bool = False) -> dict[str, Any]:
    """One tool's definition in a provider's format.

    Args:
        metadata: The tool's metadata.
        fmt: One of ``FORMATS``.
        strict: OpenAI only: mark the function strict and rewrite its parameters for
            Structured Outputs (see ``toolplug.schema.strict_schema``); when
            ``strict_problems`` finds arguments strict mode could not carry,
            ``"strict": false`` and the parameters unchanged instead.

    Raises:
        ValueError: an unknown format, or ``strict`` with a format other than openai.
    """
    _check_format(fmt, strict)
    if fmt == "openai":
        return openai_tool(metadata, strict)
    if fmt == "anthropic":
        return anthropic_tool(metadata)
    if fmt == "gemini":
        return gemini_tool(metadata)
    return mcp_tool(metadata)


def export_tools(
    registry: Registry | Iterable[ToolMetadata],
    fmt: str,
    *,
    strict: bool = False,
    toolset: str | Toolset | None = None,
    include_unavailable: bool = False,
    task: str | None = None,
    max_tools: int | None = None,
) -> list[dict[str, Any]]:
    """The definitions of the registry's tools, sorted by name (see ``export_tool``).

    Args:
        registry: The loaded tools (``toolplug.load()``). An iterable of ``ToolMetadata``
            still works for this release, with a ``DeprecationWarning``.
        fmt: One of ``FORMATS``.
        strict: OpenAI strict mode (see ``export_tool``).
        toolset: Only this toolset's tools.
        include_unavailable: Also the tools that are not available here.
        task: With ``max_tools``: keep the tools most relevant to this task.
        max_tools: Keep at most this many tools.

    Raises:
        ValueError: an unknown format, or ``strict`` with a format other than openai.
    """
    _check_format(fmt, strict)
    chosen = metadata_of(registry, "export_tools")
    if chosen is None:
        chosen = select_tools(
            registry,  # type: ignore[arg-type]
            toolset=toolset,
            include_unavailable=include_unavailable,
            task=task,
            max_tools=max_tools,
        )
    return [export_tool(meta, fmt, strict=strict) for meta in sorted(chosen, key=lambda m: m.name)]


def dumps(obj: Any) -> str:
    """JSON text that is byte-identical for equal input: sorted keys, indent 2, final newline."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _check_format(fmt: str, strict: bool) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown schema format {fmt!r}; use one of: {', '.join(FORMATS)}")
    if strict and fmt != "openai":
        raise ValueError(
            f"strict mode applies only to the openai format, not {fmt!r}; "
            "drop strict or use the openai format"
        )
