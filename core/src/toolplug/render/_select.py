"""The one selection every renderer makes: which tools, in which order.

Every renderer (prompt section, provider exports, reference docs) takes the registry first
and the same options, so ``toolset``, ``include_unavailable``, ``task`` and ``max_tools``
mean the same thing wherever they appear.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from toolplug.search._index import index_of, ranked

if TYPE_CHECKING:
    from toolplug.config._config import Toolset
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.runtime._registry import Registry

__all__ = ["metadata_of", "rank", "search", "select_tools"]


def select_tools(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    include_unavailable: bool = False,
    optional_only: bool = False,
    task: str | None = None,
    max_tools: int | None = None,
) -> list[ToolMetadata]:
    """The chosen tools' metadata: by name, or the most relevant to ``task`` first.

    Args:
        registry: The loaded tools (``toolplug.load()``).
        toolset: Only this toolset's tools.
        include_unavailable: Also the tools that are not available here.
        optional_only: Only tools whose optionality is ``optional``.
        task: Order by relevance to this task (ties by name).
        max_tools: Keep at most this many (the most relevant to ``task``, when given).
    """
    return registry.select(
        toolset=toolset,
        include_unavailable=include_unavailable,
        optional_only=optional_only,
        task=task,
        max_tools=max_tools,
    ).metadata


# The two functions below are the only place renderers rank: both use the one search
# index of ``toolplug.search`` (as does ``Registry.search``).


def rank(
    tools: Sequence[ToolMetadata], task: str, limit: int | None = None, *, embed: Any = None
) -> list[ToolMetadata]:
    """The tools, the most relevant to ``task`` first (by name among equals), at most ``limit``.

    With an empty task the order is by name. Every tool is kept (up to ``limit``), whether
    it matches or not. ``embed``: the registry's embedder, for hybrid ranking.
    """
    return ranked(tools, task, limit, embed)


def search(
    tools: Sequence[ToolMetadata], query: str, limit: int, *, embed: Any = None
) -> list[ToolMetadata]:
    """The tools that match ``query``, best first, at most ``limit``; none for no match."""
    return index_of(tools).ranking(query, limit, embed=embed, keep_all=False)


def metadata_of(source: Any, function: str) -> list[ToolMetadata] | None:
    """The metadata list of the deprecated call form (an iterable of metadata), else None.

    Before 0.2 renderers took an iterable of ``ToolMetadata``; they take the registry now.
    The old form keeps working for one release and warns.
    """
    if hasattr(source, "select") and hasattr(source, "tools"):
        return None
    if isinstance(source, Iterable) and not isinstance(source, str | bytes):
        warnings.warn(
            f"{function}() with an iterable of ToolMetadata is deprecated and will be removed "
            f"in toolplug 0.3; pass the registry: {function}(toolplug.load(), ...)",
            DeprecationWarning,
            stacklevel=3,
        )
        return list(source)
    raise TypeError(
        f"{function}() takes the registry as its first argument (toolplug.load()), "
        f"got {type(source).__name__}"
    )
