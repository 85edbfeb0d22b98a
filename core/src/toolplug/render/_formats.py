"""One tool's definition in each provider's format: the dispatch every export shares.

``export_tools`` (render/_export.py) and tool search (render/_search.py) both write single
tools through ``export_tool``; keeping it here lets each of them import it without
importing the other.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from toolplug.render._anthropic import anthropic_tool
from toolplug.render._gemini import gemini_openapi_tool, gemini_tool
from toolplug.render._mcp import mcp_tool
from toolplug.render._openai import openai_responses_tool, openai_tool

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust

__all__ = ["FORMATS", "STRICT_DEFAULTS", "check_format", "dumps", "export_tool", "is_strict"]

FORMATS: Final = ("openai", "openai-responses", "anthropic", "gemini", "gemini-openapi", "mcp")
"""The schema formats ``export_tool`` writes, in the order the CLI lists them."""
STRICT_DEFAULTS: Final = {"openai": False, "openai-responses": True, "anthropic": False}
"""The formats with a strict mode, and whether it is on when ``strict`` is not given."""


def export_tool(
    metadata: ToolMetadata,
    fmt: str,
    *,
    strict: bool | None = None,
    defer_loading: bool = False,
    labels: Trust | None = None,
) -> dict[str, Any]:
    """One tool's definition in a provider's format.

    Args:
        metadata: The tool's metadata.
        fmt: One of ``FORMATS``.
        strict: Strict mode (``openai``, ``openai-responses``, ``anthropic``): the
            parameters rewritten for what the provider's strict mode accepts (see
            ``toolplug.schema.strict_schema``). None: the format's default, which is on for
            ``openai-responses`` only.
        defer_loading: Mark the tool for the provider's own tool search (``anthropic`` and
            ``openai-responses``); ``export_tools`` sets it for you with ``max_tools``.
        labels: The trust labels in force (``Registry.labels``), which ``mcp`` carries in
            the tool's ``_meta``; None: the tool's own (``metadata.labels``).

    Raises:
        ValueError: an unknown format, ``strict`` with a format that has no strict mode, or
            ``defer_loading`` with one whose provider has no tool search.
    """
    check_format(fmt, strict)
    on = is_strict(fmt, strict)
    if defer_loading and fmt not in ("anthropic", "openai-responses"):
        raise ValueError(f"defer_loading applies to anthropic and openai-responses, not {fmt!r}")
    if fmt == "openai":
        return openai_tool(metadata, on)
    if fmt == "openai-responses":
        return openai_responses_tool(metadata, on, defer_loading=defer_loading)
    if fmt == "anthropic":
        return anthropic_tool(metadata, on, defer_loading=defer_loading)
    if fmt == "gemini":
        return gemini_tool(metadata)
    if fmt == "gemini-openapi":
        return gemini_openapi_tool(metadata)
    return mcp_tool(metadata, labels)


def dumps(obj: Any) -> str:
    """JSON text that is byte-identical for equal input: sorted keys, indent 2, final newline."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def is_strict(fmt: str, strict: bool | None) -> bool:
    """Whether an export in ``fmt`` is strict, given the ``strict`` asked for (None: default)."""
    return STRICT_DEFAULTS.get(fmt, False) if strict is None else strict


def check_format(fmt: str, strict: bool | None) -> None:
    """Raise ``ValueError`` for an unknown format, or ``strict`` where it does not apply."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown schema format {fmt!r}; use one of: {', '.join(FORMATS)}")
    if strict and fmt not in STRICT_DEFAULTS:
        raise ValueError(
            f"strict mode applies to {', '.join(STRICT_DEFAULTS)}, not {fmt!r}; "
            "drop strict or use one of those formats"
        )
