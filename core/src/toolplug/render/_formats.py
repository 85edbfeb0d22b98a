"""The schema formats, declared once: every other list of them is read from ``TABLE``.

A format is one row: its name, the module and function that write one tool in it, and
what the provider offers around it (a strict mode and its default, its own tool search,
code execution that calls tools, rewrites ``doctor`` should check). The command line's
``--format`` choices, the checks of every export option, the dispatch of ``export_tool``,
the contract kit's variants and the docs' list are all derived from it. This module imports
nothing but the standard library, so the command line can read it on every start; a
writer's module is imported when a tool is first written in its format.

A new format is a row here, its writer (``render/_NAME.py``: a function of the metadata and
the keyword options ``strict``, ``defer_loading`` and ``labels``), its section in
docs/schemas.md and its cases in tests/render/test_export.py; and, when its provider takes
tool results, the writer of those (``result``, see render/_results.py) and its cases in
tests/render/test_results.py.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust

__all__ = [
    "BY_NAME",
    "CODE_EXECUTION_FORMATS",
    "FORMATS",
    "NATIVE_SEARCH",
    "STRICT_DEFAULTS",
    "TABLE",
    "Format",
    "check_format",
    "dumps",
    "export_tool",
    "is_strict",
    "writer",
]

Writer = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class Format:
    """One schema format and what its provider offers around it."""

    name: str
    """What ``--format`` and ``export_tool`` take."""
    summary: str
    """One line: the provider's shape (``toolplug schema --help`` and docs/schemas.md)."""
    module: str
    """The module of ``toolplug.render`` that writes it."""
    function: str
    """The writer in that module: ``(metadata, *, strict, defer_loading, labels) -> dict``."""
    strict: bool | None = None
    """None: no strict mode; else whether strict mode is on when not asked for."""
    tool_search: bool = False
    """The provider has its own tool search: tools can be marked ``defer_loading``."""
    allowed_callers: tuple[str, ...] = ()
    """Non-empty: the provider's code execution calls tools; each tool's ``allowed_callers``."""
    code_tool: Mapping[str, str] = field(default_factory=dict)
    """The provider's code-execution tool, added with ``allowed_callers``."""
    dialect: Literal["openai", "anthropic"] = "openai"
    """The dialect of ``toolplug.schema.strict_schema`` its strict mode writes."""
    rewritten: bool = False
    """Its plain export rewrites the parameters (``toolplug.schema.gemini_losses`` lists what
    changed); the others pass them through unless strict."""
    checked: bool = False
    """Its export may rewrite the parameters: ``doctor`` warns of what a provider would no
    longer enforce (strict mode on, when it has one)."""
    result: str = ""
    """The function of the same module that writes a call's result as the provider's
    tool-result item (``toolplug.export_result``); "" when the format has none."""
    result_needs: tuple[str, ...] = ()
    """What that item must carry: ``call_id`` (the call it answers), ``name`` (the
    function's)."""


TABLE: Final[tuple[Format, ...]] = (
    Format(
        "openai", "Chat Completions functions", "_openai", "openai_tool",
        strict=False, checked=True, result="openai_result", result_needs=("call_id",),
    ),
    Format(
        "openai-responses", "Responses API functions", "_openai", "openai_responses_tool",
        strict=True, tool_search=True, allowed_callers=("direct", "programmatic"),
        code_tool={"type": "programmatic_tool_calling"}, checked=True,
        result="openai_responses_result", result_needs=("call_id",),
    ),
    Format(
        "anthropic", "Anthropic tools", "_anthropic", "anthropic_tool",
        strict=False, tool_search=True,
        allowed_callers=("direct", "code_execution_20260521"),
        code_tool={"type": "code_execution_20260521", "name": "code_execution"},
        dialect="anthropic", checked=True, result="anthropic_result",
        result_needs=("call_id",),
    ),
    Format(
        "gemini", "Gemini function declarations (JSON Schema)", "_gemini", "gemini_tool",
        result="gemini_result", result_needs=("name",),
    ),
    Format(
        "gemini-openapi", "Gemini function declarations (the older OpenAPI subset)",
        "_gemini", "gemini_openapi_tool", rewritten=True, checked=True,
        result="gemini_result", result_needs=("name",),
    ),
    Format("mcp", "MCP tool definitions", "_mcp", "mcp_tool"),
)
"""Every format, in the order the command line lists them."""

FORMATS: Final = tuple(f.name for f in TABLE)
"""The format names, in ``TABLE``'s order."""
BY_NAME: Final[Mapping[str, Format]] = {f.name: f for f in TABLE}
STRICT_DEFAULTS: Final[Mapping[str, bool]] = {
    f.name: f.strict for f in TABLE if f.strict is not None
}
"""The formats with a strict mode, and whether it is on when ``strict`` is not given."""
NATIVE_SEARCH: Final = frozenset(f.name for f in TABLE if f.tool_search)
"""The formats whose provider searches deferred tools itself (``defer_loading``)."""
CODE_EXECUTION_FORMATS: Final[Mapping[str, Format]] = {
    f.name: f for f in TABLE if f.allowed_callers
}
"""The formats whose provider's code execution calls tools."""


@cache
def writer(fmt: str) -> Writer:
    """The function that writes one tool in ``fmt`` (its module imported on first use)."""
    row = BY_NAME[fmt]
    found: Writer = getattr(importlib.import_module(f"toolplug.render.{row.module}"), row.function)
    return found


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
    if defer_loading and fmt not in NATIVE_SEARCH:
        raise ValueError(
            f"defer_loading applies to {' and '.join(sorted(NATIVE_SEARCH))}, not {fmt!r}"
        )
    return writer(fmt)(
        metadata, strict=is_strict(fmt, strict), defer_loading=defer_loading, labels=labels
    )


def dumps(obj: Any) -> str:
    """JSON text that is byte-identical for equal input: sorted keys, indent 2, final newline."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def is_strict(fmt: str, strict: bool | None) -> bool:
    """Whether an export in ``fmt`` is strict, given the ``strict`` asked for (None: default)."""
    return STRICT_DEFAULTS.get(fmt, False) if strict is None else strict


def check_format(fmt: str, strict: bool | None) -> None:
    """Raise ``ValueError`` for an unknown format, or ``strict`` where it does not apply."""
    if fmt not in BY_NAME:
        raise ValueError(f"unknown schema format {fmt!r}; use one of: {', '.join(FORMATS)}")
    if strict and fmt not in STRICT_DEFAULTS:
        raise ValueError(
            f"strict mode applies to {', '.join(STRICT_DEFAULTS)}, not {fmt!r}; "
            "drop strict or use one of those formats"
        )
