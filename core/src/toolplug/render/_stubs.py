"""Typed Python stubs of the selected tools: what a model writes code-mode programs against.

The text itself comes from ``toolplug.schema`` (``python_stubs``), shared with the
``run_code`` tool of code mode (``toolplug.sources._code``), which puts the same stubs into
its description.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolplug.render._select import select_tools
from toolplug.schema._python import CODE_TOOL, StubTool, python_stubs

if TYPE_CHECKING:
    from toolplug.config._config import Toolset
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.runtime._registry import Registry

__all__ = ["stub_tools", "tool_stubs"]


def tool_stubs(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    include_unavailable: bool = False,
    task: str | None = None,
    max_tools: int | None = None,
) -> str:
    """The selected tools as one Python module of typed ``async def`` stubs, by name.

    Parameters come from each tool's JSON Schema (``TypedDict`` for objects, ``Literal``
    for enums, defaults, optional parameters keyword-only), the return type from its
    ``returns``; the docstrings carry the descriptions. Byte-identical on repeated runs.
    What ``toolplug stubs`` prints, and what a ``run_code`` program calls.

    Args:
        registry: The loaded tools (``toolplug.load()``).
        toolset: Only this toolset's tools.
        include_unavailable: Also the tools that are not available here.
        task: With ``max_tools``: keep the tools most relevant to this task.
        max_tools: At most this many tools (the most relevant to ``task``, else by name).
    """
    chosen = select_tools(
        registry, toolset=toolset, include_unavailable=include_unavailable, task=task,
        max_tools=max_tools,
    )
    return python_stubs(stub_tools(chosen))


def stub_tools(tools: list[ToolMetadata]) -> list[StubTool]:
    """What the stubs are made of, sorted by name, without the code-mode tool itself."""
    return [
        StubTool(m.name, m.description, m.parameters, m.returns, m.usage_hint, m.parts)
        for m in sorted(tools, key=lambda m: m.name)
        if m.name != CODE_TOOL
    ]
