"""The optional-tools section of a system prompt, rendered as Markdown.

The output depends only on the tools passed in and the options: categories in their fixed
order, tools by name, lists in the order the plugin wrote them. No dict or set order leaks.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from toolplug.contract._metadata import BUILTIN_CATEGORIES, ToolMetadata

if TYPE_CHECKING:
    from toolplug.config._config import Toolset
    from toolplug.runtime._registry import Registry

__all__ = ["optional_tools_section", "render_optional_tools"]

TITLE = "# Optional Tools"
INTRO = (
    "The tools below are available in this session but never required. Call one when it "
    "clearly improves your answer, and follow its guidance; otherwise answer without it."
)
NONE_AVAILABLE = "No optional tools are available in this session."
APPROVAL_NOTE = (
    "a person approves each call before it runs. Call it only for what the user asked "
    "for; if a call is denied, do not retry it: tell the user."
)
_BUILTIN_ORDER = {c.name: i for i, c in enumerate(BUILTIN_CATEGORIES)}
_WORD = re.compile(r"\b\w+\b")
"""A word of a guidance item: a tool name (``[a-z][a-z0-9_]*``) is one whole word."""


def optional_tools_section(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    include_unavailable: bool = False,
    task: str | None = None,
    max_tools: int | None = None,
    include_guidelines: bool = True,
) -> str:
    """The Markdown section describing the available optional tools.

    Args:
        registry: The loaded tools (``toolplug.load()``).
        toolset: Offer only this toolset's tools.
        include_unavailable: Also describe optional tools that are not available here
            (for documentation; a model should be offered only what it can call).
        task: Keep the tools most relevant to this task (with ``max_tools``).
        max_tools: Keep at most this many tools (the most relevant to ``task``, when given).
        include_guidelines: Include each tool's DO / DO NOT guidance and common mistakes.
    """
    selection = registry.select(
        toolset=toolset,
        include_unavailable=include_unavailable,
        optional_only=True,
        task=task,
        max_tools=max_tools,
    )
    # Guidance that names a tool the model is not offered would send it to that tool:
    # one that is unavailable here, or outside the toolset.
    return render_optional_tools(
        selection.metadata,
        include_guidelines=include_guidelines,
        absent=selection.absent.keys(),
        approvals=selection.approvals,
    )


def category_order(name: str) -> tuple[int, str]:
    """Sort key of a category: the built-in ones in their fixed order, then others by name."""
    return (_BUILTIN_ORDER.get(name, len(_BUILTIN_ORDER)), name)


def render_optional_tools(
    tools: Sequence[ToolMetadata],
    *,
    include_guidelines: bool = True,
    absent: Collection[str] = (),
    approvals: Mapping[str, str | None] | None = None,
) -> str:
    """Render the section for exactly these tools (a pure function of its inputs).

    A guidance item that names a tool in ``absent`` (installed, but unavailable here) is
    left out: "use currency_convert" must not send the model to a tool it cannot call.
    ``approvals`` maps a tool's name to why its calls need a person's approval (None or
    absent: they do not); such tools say so, so that the model expects the pause.
    """
    mentions = frozenset(absent)
    lines = [TITLE, "", INTRO, ""]
    if not tools:
        lines += [NONE_AVAILABLE, ""]
        return "\n".join(lines)
    by_category: dict[str, list[ToolMetadata]] = {}
    for meta in tools:
        by_category.setdefault(meta.category, []).append(meta)
    for category in sorted(by_category, key=category_order):
        lines += [f"## {category.replace('_', ' ').title()} Tools", ""]
        for meta in sorted(by_category[category], key=lambda m: m.name):
            approval = (approvals or {}).get(meta.name)
            lines += _render_tool(meta, include_guidelines, mentions, approval)
    return "\n".join(lines)


def _render_tool(
    meta: ToolMetadata,
    include_guidelines: bool,
    mentions: frozenset[str],
    approval: str | None = None,
) -> list[str]:
    lines = [f"### {meta.name}", "", meta.description, ""]
    if approval:
        lines += [f"**Needs approval:** {APPROVAL_NOTE}", ""]
    if meta.usage_hint.strip():
        hint = meta.usage_hint.strip()
        if "\n" in hint:
            lines += ["**When to use:**", "", hint, ""]
        else:
            lines += [f"**When to use:** {hint}", ""]
    if include_guidelines:
        sections = (
            ("DO use when:", meta.guidelines.do),
            ("DO NOT use when:", meta.guidelines.do_not),
            ("Common mistakes:", meta.guidelines.common_mistakes),
        )
        for heading, listed in sections:
            items = [i for i in listed if not mentions.intersection(_WORD.findall(i))]
            if items:
                lines += [f"**{heading}**", ""]
                lines += [f"- {item.strip()}" for item in items]
                lines.append("")
    return lines
