"""Tool search for large catalogs: the N most relevant tools in full, the others deferred.

Three ways to defer, by what the provider offers:

``anthropic``         every tool, the deferred ones with ``"defer_loading": true``, and the
                      BM25 tool search tool: Anthropic searches and loads them itself.
``openai-responses``  the deferred functions with ``"defer_loading": true``, grouped into one
                      namespace per category where a category has several, and the hosted
                      ``tool_search`` tool: OpenAI searches and loads them itself.
everything else       (Chat Completions, Gemini, MCP) only the N tools, plus ``search_tools``,
                      a tool toolplug answers (``ToolSearch.answer``): a query in, the
                      matching tools' full definitions out, which the host adds to its next
                      request (``ToolSearch.definitions``).

``search_tools`` is not a registered tool, so ``toolplug list`` and ``registry.call`` know
nothing of it: it exists only in a deferred export, and only the host that asked for one
answers it, through the ``ToolSearch`` that made the export.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._metadata import (
    BUILTIN_CATEGORIES,
    Annotations,
    Category,
    Guidelines,
    ToolMetadata,
    Trust,
)
from toolplug.contract._tool import ErrorType, ToolResult
from toolplug.render._formats import NATIVE_SEARCH, check_format, export_tool
from toolplug.render._select import rank, search

if TYPE_CHECKING:
    from toolplug.config._config import Toolset
    from toolplug.contract._tool import ToolResult
    from toolplug.runtime._registry import Registry

__all__ = [
    "ANTHROPIC_TOOL_SEARCH",
    "OPENAI_TOOL_SEARCH",
    "SEARCH_TOOLS",
    "ToolSearch",
    "deferred_export",
    "search_tools_metadata",
]

SEARCH_TOOLS: Final = "search_tools"
"""The name of toolplug's own tool search tool in a deferred export."""
"""The formats whose provider searches deferred tools itself."""
ANTHROPIC_TOOL_SEARCH: Final = {
    "type": "tool_search_tool_bm25_20251119",
    "name": "tool_search_tool_bm25",
}
"""Anthropic's BM25 tool search tool, as a ``tools`` entry."""
OPENAI_TOOL_SEARCH: Final = {"type": "tool_search"}
"""OpenAI's hosted tool search tool, as a Responses API ``tools`` entry."""
SEARCH_LIMIT: Final = 20
DEFAULT_SEARCH_LIMIT: Final = 5

@functools.cache
def search_tools_metadata() -> ToolMetadata:
    """The metadata of ``search_tools``, exported like any tool's in the chosen format."""
    return ToolMetadata(
        name=SEARCH_TOOLS,
        title="Search tools",
        description="Find more tools for a task: returns the tools that match, which you can "
        "call from your next step.",
        category="utility",
        optionality="required",
        usage_hint="Use when none of your tools fits what you need to do; describe the need "
        "in a few words.",
        guidelines=Guidelines(
            do=("No offered tool does what the task needs",),
            do_not=("A tool you already have fits",),
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "What you need a tool for, in a few words",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": SEARCH_LIMIT,
                    "default": DEFAULT_SEARCH_LIMIT,
                    "description": "The most tools to return",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        # It answers with the installed tools' own definitions (what the prompt and the
        # schemas carry) from the local index; the query goes nowhere.
        trust=Trust(output="trusted"),
    )


class ToolSearch:
    """One conversation's deferred tools: what the model has now, and ``search_tools``.

    Made for a format without native tool search (``export_tools`` makes one for
    ``openai``, ``gemini``, ``gemini-openapi`` and ``mcp`` when ``max_tools`` leaves tools
    out; ``toolplug serve --max-tools`` makes one per MCP session). Give the model
    ``definitions()``; route each of its tool calls through ``call(name, arguments)``
    (``search_tools`` is answered here, any other tool goes to ``registry.call``), and send
    ``definitions()`` again with the next request: the tools it found are in it from then
    on. Any format works, native search or not.

    Args:
        registry: The loaded tools.
        fmt: The export format of the definitions.
        task: The tools most relevant to this task are offered from the start.
        max_tools: How many tools are offered from the start.
        strict: Strict mode for formats that have one (see ``export_tool``).
        toolset: Only this toolset's tools, offered or found.
        include_unavailable: Also tools that are not available here.
    """

    def __init__(
        self,
        registry: Registry,
        fmt: str,
        *,
        task: str | None = None,
        max_tools: int,
        strict: bool | None = None,
        toolset: str | Toolset | None = None,
        include_unavailable: bool = False,
    ) -> None:
        check_format(fmt, strict)
        self.fmt = fmt
        self.strict = strict
        self._export = export_tool
        tools = [
            t.metadata
            for t in registry.select(toolset=toolset, include_unavailable=include_unavailable)
        ]
        self._pool: dict[str, ToolMetadata] = {m.name: m for m in tools}
        self._embed = registry.embedder
        ranked = rank(tools, task or "", max(max_tools, 0), embed=self._embed if task else None)
        self._loaded: dict[str, None] = {m.name: None for m in ranked}
        self._registry = registry

    name: Final = SEARCH_TOOLS
    """The name of the search tool in ``definitions()``."""

    @property
    def loaded(self) -> list[str]:
        """The names of the tools the model has in full, sorted."""
        return sorted(self._loaded)

    @property
    def deferred(self) -> list[str]:
        """The names of the tools it can still find, sorted."""
        return sorted(set(self._pool) - set(self._loaded))

    def load(self, names: Iterable[str]) -> list[str]:
        """Load these tools in full too (a list kept elsewhere: another replica's search);
        the names it did not have, sorted. Names it cannot offer are left out."""
        added = sorted({n for n in names if n in self._pool and n not in self._loaded})
        self._loaded.update(dict.fromkeys(added))
        return added

    def definitions(self) -> list[dict[str, Any]]:
        """The loaded tools' definitions (by name), then ``search_tools``'s."""
        tools = [self._definition(self._pool[name]) for name in self.loaded]
        return [*tools, self._definition(search_tools_metadata())]

    def search(self, query: str, limit: int = DEFAULT_SEARCH_LIMIT) -> list[ToolMetadata]:
        """The tools matching ``query``, best first (the ranking of ``--task``)."""
        return search(list(self._pool.values()), query, limit, embed=self._embed)

    def answer(self, arguments: Mapping[str, Any] | str | None) -> ToolResult:
        """The result of a ``search_tools`` call; the tools found join ``definitions()``.

        The output lists each tool found with its full definition, so a model can call
        it even where the host does not resend the tool list; ``data`` holds
        ``{"query", "tools": [definitions], "added": [names]}`` for the host.
        """
        parsed = _parse(arguments)
        if isinstance(parsed, str):
            return ToolResult.failure(ErrorType.VALIDATION, f"invalid arguments for "
                                      f"{SEARCH_TOOLS}: {parsed}")
        query, limit = parsed
        found = self.search(query, limit)
        added = [m.name for m in found if m.name not in self._loaded]
        self._loaded.update(dict.fromkeys(added))
        definitions = [self._definition(m) for m in found]
        if not found:
            text = f"No tool matches {query!r}. Try other words for what you need to do."
        else:
            names = ", ".join(m.name for m in found)
            text = (
                f"Found {len(found)} tool(s) for {query!r}: {names}. You can call them from "
                "your next step; their definitions:\n"
                + json.dumps(definitions, indent=2, sort_keys=True, ensure_ascii=False)
            )
        data = {"query": query, "tools": definitions, "added": added}
        return ToolResult.success(self._registry.redact(text), data)

    def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> ToolResult:
        """A tool call of the model: ``search_tools`` answered here, any other tool run."""
        if name == SEARCH_TOOLS:
            return self.answer(arguments)
        return self._registry.call(name, arguments)

    async def acall(self, name: str, arguments: Mapping[str, Any] | str | None) -> ToolResult:
        """``call`` for async hosts: other tools run through ``registry.acall``."""
        if name == SEARCH_TOOLS:
            return self.answer(arguments)
        return await self._registry.acall(name, arguments)

    def _definition(self, metadata: ToolMetadata) -> dict[str, Any]:
        # search_tools is no tool of the registry: its own labels
        labels = self._registry.labels(metadata.name) if metadata.name in self._pool else None
        return self._export(metadata, self.fmt, strict=self.strict, labels=labels)


def _parse(arguments: Mapping[str, Any] | str | None) -> tuple[str, int] | str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError as exc:
            return f"not valid JSON ({exc})"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return "expected a JSON object"
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return "query: expected a non-empty string describing what you need a tool for"
    limit = arguments.get("limit", DEFAULT_SEARCH_LIMIT)
    if limit is None:
        limit = DEFAULT_SEARCH_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= SEARCH_LIMIT:
        return f"limit: expected a whole number from 1 to {SEARCH_LIMIT}, received {limit!r}"
    return query.strip(), limit


def deferred_export(
    registry: Registry,
    fmt: str,
    *,
    strict: bool | None,
    toolset: str | Toolset | None,
    include_unavailable: bool,
    task: str | None,
    max_tools: int,
) -> list[dict[str, Any]]:
    """What ``export_tools`` gives when ``max_tools`` leaves tools out (see the module)."""
    if fmt not in NATIVE_SEARCH:
        session = ToolSearch(
            registry,
            fmt,
            task=task,
            max_tools=max_tools,
            strict=strict,
            toolset=toolset,
            include_unavailable=include_unavailable,
        )
        return session.definitions()
    tools = [
        t.metadata
        for t in registry.select(toolset=toolset, include_unavailable=include_unavailable)
    ]
    embed = registry.embedder if task else None
    loaded = {m.name for m in rank(tools, task or "", max_tools, embed=embed)}
    full = sorted((m for m in tools if m.name in loaded), key=lambda m: m.name)
    later = sorted((m for m in tools if m.name not in loaded), key=lambda m: m.name)
    out = [export_tool(m, fmt, strict=strict) for m in full]
    if fmt == "anthropic":
        out += [export_tool(m, fmt, strict=strict, defer_loading=True) for m in later]
        return [*out, dict(ANTHROPIC_TOOL_SEARCH)]
    names = {m.name for m in tools}
    out += _namespaces(later, registry.categories, names, strict)
    return [*out, dict(OPENAI_TOOL_SEARCH)]


def _namespaces(
    tools: Sequence[ToolMetadata],
    categories: Sequence[Category],
    names: set[str],
    strict: bool | None,
) -> list[dict[str, Any]]:
    """Deferred Responses API functions, a namespace per category that has several."""
    about = {c.name: c.description for c in (*BUILTIN_CATEGORIES, *categories)}
    by_category: dict[str, list[ToolMetadata]] = {}
    for meta in tools:
        by_category.setdefault(meta.category, []).append(meta)
    out: list[dict[str, Any]] = []
    singles: list[dict[str, Any]] = []
    for category in sorted(by_category):
        members = by_category[category]
        functions = [export_tool(m, "openai-responses", strict=strict, defer_loading=True)
                     for m in members]
        # A namespace helps when it stands for several functions, and must not take the
        # name of a function.
        if len(members) < 2 or category in names:
            singles += functions
            continue
        listed = ", ".join(m.name for m in members)
        out.append(
            {
                "type": "namespace",
                "name": category,
                "description": f"{about.get(category, category)}: {listed}",
                "tools": functions,
            }
        )
    return out + sorted(singles, key=lambda f: f["name"])
