"""Tool search: one index per set of tools, used by every consumer of ranking.

``Index(tools).search(query, limit)`` ranks tool metadata directly; a registry's
``search`` does the same for its available tools (docs/ranking.md).
"""

from toolplug.search._index import FIELD_WEIGHTS, Hit, Index

__all__ = ["FIELD_WEIGHTS", "Hit", "Index"]
