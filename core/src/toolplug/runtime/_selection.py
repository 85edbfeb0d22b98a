"""The selection: what an agent is offered now, answered once and shared.

``Registry.select(...)`` returns a ``Selection``: the chosen tools in order, the installed
tools that are not offered with the reasons, which chosen tools need a person's approval,
the tools held back by ``max_tools`` and the ranking that chose them. The prompt section,
the provider exports, tool search, ``serve`` and every integration read the same object;
nothing re-derives it. A registry keeps the selections it made (the inputs do not change
while it lives), and works out each toolset's members once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from toolplug.search._index import index_of

if TYPE_CHECKING:
    from toolplug.config._config import Toolset
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.runtime._loaded import RegisteredTool
    from toolplug.search._index import Hit

__all__ = ["Selection"]


@dataclass(frozen=True, eq=False)
class Selection(Sequence["RegisteredTool"]):
    """The tools an agent is offered, and everything said about the others.

    A sequence of the chosen ``RegisteredTool`` entries: iterate it, index it, take its
    ``len``. Made by ``Registry.select``; do not build one yourself.
    """

    tools: tuple[RegisteredTool, ...]
    """The chosen tools: by name, or the most relevant to ``task`` first."""
    absent: Mapping[str, tuple[str, ...]]
    """Installed tools not offered (unavailable here, or outside the toolset), by name, with
    the reasons. Tools held back by ``max_tools`` are in ``deferred`` instead."""
    approvals: Mapping[str, str]
    """Chosen tools whose calls need a person's approval, with why (from the declared
    annotations; ``needs_approval`` answers for one call's arguments)."""
    toolset: Toolset | None = None
    task: str | None = None
    max_tools: int | None = None
    offered: tuple[RegisteredTool, ...] = field(default=(), repr=False)
    """Every tool these options allow, before ``task`` and ``max_tools`` chose."""
    _registry: Any = field(default=None, repr=False)

    @functools.cached_property
    def deferred(self) -> tuple[RegisteredTool, ...]:
        """Offerable tools that ``max_tools`` held back (exports may defer them to search)."""
        picked = set(self.names)
        return tuple(t for t in self.offered if t.name not in picked)

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        """The chosen tools' names, in order."""
        return tuple(t.name for t in self.tools)

    @property
    def metadata(self) -> list[ToolMetadata]:
        """The chosen tools' metadata, in order."""
        return [t.metadata for t in self.tools]

    def needs_approval(self, name: str, arguments: Mapping[str, Any] | None = None) -> str | None:
        """Why this call needs a person's approval, or None (``Registry.needs_approval``)."""
        reason: str | None = self._registry.needs_approval(name, arguments)
        return reason

    def search(self, query: str, limit: int | None = 10) -> list[Hit]:
        """The offerable tools (chosen and deferred) best matching ``query``, with scores
        and matched terms: the one ranker behind ``search_tools`` and ``toolplug search``."""
        offered = [t.metadata for t in self.offered]
        hits: list[Hit] = index_of(offered).search(query, limit, embed=self._registry.embedder)
        return hits

    @overload
    def __getitem__(self, index: int) -> RegisteredTool: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[RegisteredTool]: ...

    def __getitem__(self, index: int | slice) -> RegisteredTool | Sequence[RegisteredTool]:
        return self.tools[index]

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter(self.tools)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return item in self.names
        return item in self.tools
