"""The registry: installed tools, their configuration, and whether each is available."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar

from toolplug.config._config import (
    Config,
    Toolset,
    how_to_set,
    load_config,
    parse_config,
    resolve_tool_config,
)
from toolplug.config._settings import resolve_value
from toolplug.config._transforms import apply_transforms
from toolplug.contract._approval import approval_reason
from toolplug.contract._capabilities import Capability, DetectContext
from toolplug.contract._errors import PluginError, UsageError
from toolplug.contract._metadata import Category, ToolMetadata, Trust
from toolplug.contract._tool import Tool, ToolContext, ToolResult
from toolplug.runtime._capabilities import Availability, CapabilityChecker, CapabilityState
from toolplug.runtime._loaded import (
    Loaded,
    LoadProblem,
    Offered,
    PluginInfo,
    RegisteredTool,
    load_plugins,
    offered,
)
from toolplug.runtime._published import Publications, run_async, run_sync
from toolplug.runtime._selection import Selection
from toolplug.runtime._source import OfferingSource, ToolSource
from toolplug.runtime._talk import CHANNEL, talk_for
from toolplug.search._index import Embedder, Hit, ranked
from toolplug.trust._logs import protect
from toolplug.trust._redaction import Redactor

if TYPE_CHECKING:
    from toolplug.contract._published import (
        Prompt,
        RenderedPrompt,
        Resource,
        ResourceContents,
        ResourceTemplate,
    )
    from toolplug.contract._talk import Channel, Talk
    from toolplug.runtime._published import Ref
    from toolplug.state._record import Recorder
    from toolplug.state._spill import Entry, Page
    from toolplug.state._tasks import Task
    from toolplug.trust._conversation import Conversation

_T = TypeVar("_T")

__all__ = ["CallEngine", "EngineFactory", "Registry", "assemble", "check_sources", "configuration"]

_UNKNOWN: Final = object()
_SELECTIONS_KEPT: Final = 256
"""Selections a registry keeps (one per distinct set of options)."""


class CallEngine(Protocol):
    """What runs a registry's calls (``toolplug.engine``), held so runtime never imports it."""

    recorder: Recorder | None
    """The record of calls and decisions (``[record]``), or None when it is off."""

    def call(
        self, name: str, arguments: Any, host: Any, approver: Any, *, approved: bool,
        passthrough: tuple[type[BaseException], ...],
    ) -> ToolResult:
        """Run one call and wait for its result."""

    async def acall(
        self, name: str, arguments: Any, host: Any, approver: Any, *, approved: bool,
        passthrough: tuple[type[BaseException], ...],
    ) -> ToolResult:
        """Run one call on the caller's event loop."""

    async def read(
        self, uri: str, *, owner: str | None, offset: int = 0, length: int | None = None
    ) -> Page | None:
        """A range of a spilled output."""

    async def spills(self, owner: str | None) -> list[Entry]:
        """The spilled outputs ``owner`` may read, newest first."""

    def wait(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run a coroutine of the engine's to its end for a caller in this thread."""

    @property
    def approvals(self) -> Any:
        """Pending requests and remembered decisions (``toolplug.engine._inbox``)."""

    def conversation(
        self,
        request: str | None,
        allow: Iterable[str] | Mapping[str, int | None] | str | None = None,
    ) -> Conversation:
        """A new conversation carrying ``request`` as trusted text, its effects bounded by
        ``allow``."""

    def guard_reason(self, name: str, arguments: Any) -> str | None:
        """Why the flow guard or a policy would ask about this call now, or None."""

    async def aguard_reason(self, name: str, arguments: Any) -> str | None:
        """``guard_reason`` from the event loop: a long check runs off it."""

    def start(
        self, name: str, arguments: Any, host: Any, approver: Any, *, approved: bool
    ) -> Task:
        """Start one call as a task; its handle at once."""

    async def astart(
        self, name: str, arguments: Any, host: Any, approver: Any, *, approved: bool
    ) -> Task:
        """Start one call as a task from async code."""

    def task(self, task_id: str) -> Task:
        """The handle of a task started here or by another process sharing the store."""

    def close(self) -> None:
        """Release what the engine holds (worker threads, connections)."""


EngineFactory: TypeAlias = "Callable[[Registry], CallEngine]"
"""Builds the engine of a registry, on its first call."""


class Registry:
    """The installed tools as one process sees them: metadata, config and availability.

    Build one with ``toolplug.load()``. Everything it reports is sorted (deterministic).
    It is complete once built: its tools, configuration and sources do not change (a
    reload builds a new registry).
    """

    def __init__(
        self,
        loaded: Loaded,
        config: Config,
        *,
        env: Mapping[str, str],
        grant: Iterable[str] = (),
        deny: Iterable[str] = (),
        engine: EngineFactory | None = None,
        sources: Sequence[ToolSource] = (),
    ) -> None:
        self._loaded = loaded
        self._tools: Mapping[str, RegisteredTool] = MappingProxyType(loaded.tools)
        self._engine_factory = engine
        self._engine_instance: CallEngine | None = None
        self._sources = tuple(sources)
        self._open = list(self._sources)
        self._env = env
        self._config = config
        self.redactor = Redactor()
        """Knows every secret value; ``redact`` output before showing it."""
        self._tool_config: dict[str, dict[str, Any]] = {}
        self._missing: dict[str, list[tuple[str, str]]] = {}
        self._files: list[str] = []
        originals: dict[str, Any] = {}  # a transformed tool's original, by its name
        for name, tool in loaded.tools.items():
            origin = getattr(tool.cls, "transformed_from", None)
            if origin is not None:
                originals[origin.metadata.name] = origin
            values, missing = resolve_tool_config(
                config, tool.metadata, env=env, redactor=self.redactor, files_read=self._files,
                inherit=origin.metadata.name if origin is not None else None,
            )
            self._tool_config[name], self._missing[name] = values, missing
            hints = tool.metadata.annotations
            ttl = config.tool_settings(name).cache_ttl_seconds
            if ttl and not (hints.read_only and hints.idempotent):
                loaded.problems.append(
                    LoadProblem(
                        "config",
                        name,
                        f"{config.source}: [tools.{name}] cache_ttl_seconds has no effect: "
                        "only tools annotated read-only and idempotent are cached",
                    )
                )
        for name in sorted(set(config.tools) - set(loaded.tools) - set(originals)):
            loaded.problems.append(
                LoadProblem(
                    "config",
                    name,
                    f"{config.source} configures [tools.{name}], but no installed plugin provides "
                    f"a tool named {name!r}",
                )
            )
        for problem in _policy_problems(config, loaded.tools):
            loaded.problems.append(problem)
        detected = {n: dict(v) for n, v in self._tool_config.items()}
        for name, origin in sorted(originals.items()):
            if name not in detected:  # offered only transformed: its capabilities still
                # read its [tools.ORIGINAL] settings (a configured key, say)
                detected[name] = resolve_tool_config(
                    config, origin.metadata, env=env, redactor=self.redactor,
                    files_read=self._files,
                )[0]
        detect_config: dict[str, Any] = {"offline": config.offline, "tools": detected}
        ways = {
            f"tools.{name}.{spec.name}": how_to_set(config, name, spec)
            for name, tool in loaded.tools.items()
            for spec in tool.metadata.config_fields
        }
        self.checker = CapabilityChecker(
            capabilities=loaded.capabilities,
            context=DetectContext(env, detect_config, ways),
            grants=frozenset(grant) | config.grants,
            denials=frozenset(deny) | config.denials,
        )
        self.published = Publications(loaded, self.checker, self.redactor, env)
        """The plugins' prompts and resources (``runtime._published``)."""
        self._availability: dict[str, Availability] = {}
        self._approvals: dict[str, object] = {}
        self._labels: dict[str, Trust] = {}
        self._members: dict[Toolset, frozenset[str]] = {}
        self._selections: dict[tuple[Any, ...], Selection] = {}
        self._pools: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        for secret in _serve_secrets(config, env):  # the server's own: known from the start
            self.redactor.add(secret)
        for source in self._sources:
            for secret in source.secrets():
                self.redactor.add(secret)
            self._files.extend(source.files())
        for source in self._sources:  # in order: code mode, last, describes the others
            self._complete(source)
        # the log records of toolplug and its plugins never carry this registry's secrets
        protect(self.redactor)

    def _complete(self, source: ToolSource) -> None:
        """Replace the entries ``source`` completes now that every tool is registered; what
        was worked out from the entries before is worked out again."""
        replaced = source.complete(self)
        if not replaced:
            return
        origins = {name for name, _plugin in source.plugins()}
        for name, entry in replaced.items():
            found = self._loaded.tools.get(name)
            if found is None or found.plugin not in origins or entry.name != name:
                raise PluginError(
                    f"the source {source.name!r} completed {name!r}, which is not one of "
                    "its registered tools; a source completes only its own tools"
                )
            self._loaded.tools[name] = entry
        for kept in (self._availability, self._approvals, self._labels, self._members,
                     self._selections, self._pools):
            kept.clear()

    # -- what was built ---------------------------------------------------------------

    @property
    def config(self) -> Config:
        """The configuration this registry was built with (its sources' call settings
        merged in, its transforms applied)."""
        return self._config

    @property
    def files_read(self) -> tuple[str, ...]:
        """Files read for settings (``{ file = ... }``) and by its sources (cached tool
        lists, descriptions, the lock file); the CLI's cache watches them."""
        return tuple(self._files)

    @property
    def sources(self) -> tuple[ToolSource, ...]:
        """The sources its tools came from besides the installed plugins, in the order
        ``load()`` gathered them (docs/sources.md)."""
        return tuple(s for s in self._sources if not isinstance(s, OfferingSource))

    # -- what was loaded -------------------------------------------------------------

    @property
    def plugins(self) -> list[PluginInfo]:
        """Every plugin found, the built-in one first, then in sorted order."""
        return list(self._loaded.plugins)

    @property
    def problems(self) -> list[LoadProblem]:
        """Everything that went wrong while loading, in the order it happened."""
        problems = list(self._loaded.problems)
        for name, exc in self.checker.errors:
            plugin = self._loaded.capability_plugins.get(name, "unknown")
            problems.append(
                LoadProblem(
                    "capability",
                    plugin,
                    f"the detector of capability {name!r} raised {type(exc).__name__}: {exc}",
                )
            )
        return problems

    @property
    def categories(self) -> list[Category]:
        """Built-in categories in their fixed order, then declared ones by name."""
        return list(self._loaded.categories)

    @property
    def capabilities(self) -> Mapping[str, Capability]:
        """Registered capabilities by name."""
        return dict(sorted(self._loaded.capabilities.items()))

    @property
    def tools(self) -> Mapping[str, RegisteredTool]:
        """Every registered tool, available or not, sorted by name (read-only)."""
        return self._tools

    @property
    def plugin_manager(self) -> Any:
        """The underlying ``pluggy.PluginManager``."""
        return self._loaded.manager

    def get(self, name: str) -> RegisteredTool:
        """The registered tool of that name.

        Raises:
            UsageError: no installed plugin provides it.
        """
        try:
            return self._loaded.tools[name]
        except KeyError:
            raise UsageError(f"no installed tool is named {name!r}") from None

    # -- availability ----------------------------------------------------------------

    def capability_states(self) -> list[CapabilityState]:
        """Every capability's state, sorted by name (including ones tools require)."""
        names = {s.name for s in self.checker.states()}
        for tool in self._loaded.tools.values():
            names.update(tool.metadata.requires_capabilities)
        return [self.checker.state(n) for n in sorted(names)]

    def availability(self, name: str) -> Availability:
        """Whether the tool is offered now, the reasons it is not, and how to fix that."""
        if name not in self._availability:
            tool = self.get(name)
            self._availability[name] = self.checker.availability(
                tool.metadata, enabled=self.config.enabled(name), missing=self._missing[name]
            )
        return self._availability[name]

    def tool_config(self, name: str) -> Mapping[str, Any]:
        """The tool's resolved settings (defaults filled, secrets resolved)."""
        self.get(name)
        return dict(self._tool_config[name])

    # -- selection -------------------------------------------------------------------

    def toolset(self, toolset: str | Toolset) -> Toolset:
        """A toolset by name from the configuration, or the one given.

        Raises:
            UsageError: no toolset of that name is configured.
        """
        if isinstance(toolset, Toolset):
            return toolset
        try:
            return self.config.toolsets[toolset]
        except KeyError:
            known = ", ".join(sorted(self.config.toolsets)) or "none are configured"
            raise UsageError(
                f"unknown toolset {toolset!r} (known: {known}); define it under "
                f"[toolsets.{toolset}] in the configuration"
            ) from None

    def members(self, toolset: str | Toolset) -> frozenset[str]:
        """The names of the installed tools in a toolset (worked out once per toolset)."""
        chosen = self.toolset(toolset)
        found = self._members.get(chosen)
        if found is None:
            found = self._members[chosen] = frozenset(
                name
                for name, tool in self._loaded.tools.items()
                if chosen.matches(name, tool.metadata.category)
            )
        return found

    def select(
        self,
        *,
        toolset: str | Toolset | None = None,
        include_unavailable: bool = False,
        category: str | None = None,
        optional_only: bool = False,
        task: str | None = None,
        max_tools: int | None = None,
    ) -> Selection:
        """What an agent is offered: the one selection every renderer, ``serve`` and
        integration reads (``Selection``).

        Args:
            toolset: Only this toolset's tools (a name from the configuration, or a
                ``Toolset``).
            include_unavailable: Also the tools that are not available here (for docs).
            category: Only tools of this category.
            optional_only: Only tools whose optionality is ``optional``.
            task: Order by relevance to this task, the best first (ties by name).
            max_tools: Keep at most this many (the most relevant to ``task``, when given);
                the rest are ``deferred``.

        Raises:
            UsageError: ``toolset`` names no configured toolset.
        """
        chosen = self.toolset(toolset) if toolset is not None else None
        key = (chosen, include_unavailable, category, optional_only, task, max_tools)
        found = self._selections.get(key)
        if found is not None:
            return found
        pool, metas, absent = self._pool(chosen, include_unavailable, category, optional_only)
        tools: Sequence[RegisteredTool] = pool
        if task is not None or max_tools is not None:
            by_name = self._loaded.tools
            embed = self.embedder if task else None
            tools = [by_name[m.name] for m in ranked(metas, task or "", max_tools, embed)]
        approvals = {
            t.name: reason
            for t in tools
            if (reason := self.needs_approval(t.name)) is not None
        }
        selection = Selection(
            tools=tuple(tools),
            absent=absent,
            approvals=approvals,
            toolset=chosen,
            task=task,
            max_tools=max_tools,
            offered=pool,
            _registry=self,
        )
        if len(self._selections) >= _SELECTIONS_KEPT:
            self._selections.clear()
        self._selections[key] = selection
        return selection

    def _pool(
        self, chosen: Toolset | None, include_unavailable: bool, category: str | None,
        optional_only: bool,
    ) -> tuple[tuple[RegisteredTool, ...], list[ToolMetadata], Mapping[str, tuple[str, ...]]]:
        """The offerable tools for these options (before any ranking), their metadata, and
        the installed tools left out with why: worked out once per set of options."""
        key = (chosen, include_unavailable, category, optional_only)
        found = self._pools.get(key)
        if found is not None:
            return found
        members = self.members(chosen) if chosen is not None else None
        absent: dict[str, tuple[str, ...]] = {}
        pool = []
        for name, tool in self._loaded.tools.items():
            if members is not None and name not in members:
                absent[name] = (f"not in the toolset {chosen.name!r}",)  # type: ignore[union-attr]
                continue
            if not include_unavailable:
                availability = self.availability(name)
                if not availability.available:
                    absent[name] = tuple(availability.reasons)
                    continue
            meta = tool.metadata
            if (category is None or meta.category == category) and (
                not optional_only or meta.optionality == "optional"
            ):
                pool.append(tool)
        found = (tuple(pool), [t.metadata for t in pool], MappingProxyType(absent))
        self._pools[key] = found
        return found

    def available_tools(self, *, toolset: str | Toolset | None = None) -> Selection:
        """The tools an agent can call now (in ``toolset`` when given), sorted by name;
        ``tools`` holds every installed one, and ``availability`` says why one is missing."""
        return self.select(toolset=toolset)

    # -- running ---------------------------------------------------------------------

    def search(
        self, task: str, *, limit: int | None = 10, toolset: str | Toolset | None = None,
        include_unavailable: bool = False,
    ) -> list[Hit]:
        """The tools (``select``'s choice) best matching ``task``: scores, matched terms."""
        selection = self.select(toolset=toolset, include_unavailable=include_unavailable)
        return selection.search(task, limit)

    def context_for(self, name: str, host: Mapping[str, Any] | None = None) -> ToolContext:
        """The context a call of this tool receives (built once per tool, then reused)."""
        contexts: dict[str, ToolContext] = self.__dict__.setdefault("_contexts", {})
        context = contexts.get(name)
        if context is None:
            network = self.config.network
            state = self.checker.state("network")
            if not state.present:  # every request of every tool is refused, whatever it needs
                network = dataclasses.replace(network, disabled=state.reason or "denied")
            context = ToolContext(
                tool=name,
                config=MappingProxyType(self.tool_config(name)),
                network=network,
                cache_dir=self.config.cache_dir / "tools" / name,
                state_dir=self.config.state_dir / "tools" / name,
                env=self._env,
                talk=self._talk(name, {}),
            )
            contexts[name] = context
        if host:
            return dataclasses.replace(
                context, host=MappingProxyType(dict(host)), talk=self._talk(name, host)
            )
        return context

    def _talk(self, name: str, host: Mapping[str, Any]) -> Talk:
        return talk_for(name, host, self.redactor, self.config.calls.ask_timeout_seconds)

    @property
    def embedder(self) -> Embedder | None:
        """The ``embed_texts`` hook as one function (the same object each time, so that tool
        vectors are computed once per index), or None when no plugin implements it."""
        if "_embedder" not in self.__dict__:
            hook = self.plugin_manager.hook.embed_texts
            found: Embedder | None = None
            if hook.get_hookimpls():

                def embed(texts: list[str]) -> Sequence[Sequence[float]]:
                    vectors = hook(texts=texts)
                    if vectors is None or len(vectors) != len(texts):
                        raise ValueError("embed_texts must return one vector per text")
                    return list(vectors)

                found = embed
            self.__dict__["_embedder"] = found
        embedder: Embedder | None = self.__dict__["_embedder"]
        return embedder

    def redact(self, text: str) -> str:
        """The text with every configured secret replaced by ``***``."""
        return self.redactor.redact(text)

    @property
    def record(self) -> Recorder | None:
        """The record of every call, approval and guard decision (``[record] enabled``:
        ``query``, ``aquery``, ``flush``, ``aflush``; docs/record.md), or None when off."""
        return self._engine.recorder

    @property
    def _engine(self) -> CallEngine:
        engine = self._engine_instance
        if engine is None:
            if self._engine_factory is None:
                raise UsageError(
                    "this Registry was built without a call engine; build it with toolplug.load()"
                )
            engine = self._engine_instance = self._engine_factory(self)
        return engine

    def call(
        self, name: str, arguments: Any = None, *, context: Mapping[str, Any] | None = None,
        approver: Any = None, approved: bool = False,
        passthrough: tuple[type[BaseException], ...] = (), channel: Channel | None = None,
    ) -> ToolResult:
        """Call a tool and return its result; never raises for the tool's or caller's fault.

        Args:
            name: The tool's name.
            arguments: The model's JSON object (a mapping or JSON text); validated, defaults
                filled.
            context: Reaches the tool as ``context.host``.
            approver: Decides first on a call that needs approval (docs/concepts.md).
            approved: The host's own framework already had a person approve this call:
                toolplug does not ask again (one gate, not two).
            passthrough: Exception types that leave the call unchanged when an approver,
                a ``tool_call`` hook or the tool raises them: a framework pausing its run
                (LangGraph's ``GraphInterrupt``, llm's ``PauseChain``).
            channel: The host's end of the tool's ``report_progress``, ``log``, ``ask`` and
                ``sample`` (docs/talking-back.md); none: the tool can ask nobody.

        From async code use ``acall``.
        """
        return self._engine.call(
            name, arguments, _with_channel(context, channel), approver, approved=approved,
            passthrough=passthrough,
        )

    async def acall(
        self, name: str, arguments: Any = None, *, context: Mapping[str, Any] | None = None,
        approver: Any = None, approved: bool = False,
        passthrough: tuple[type[BaseException], ...] = (), channel: Channel | None = None,
    ) -> ToolResult:
        """``call`` for async code: async tools run on this loop, sync tools in a thread."""
        return await self._engine.acall(
            name, arguments, _with_channel(context, channel), approver, approved=approved,
            passthrough=passthrough,
        )

    async def aread(
        self, uri: str, *, offset: int = 0, length: int | None = None, owner: str | None = None
    ) -> Page | None:
        """A range of an output the budget cut (``ToolResult.spill``), or None when it is
        not kept (expired, evicted, or kept for another ``owner``: the ``client`` a call's
        ``context`` named). ``length`` None reads to the end."""
        return await self._engine.read(uri, owner=owner, offset=offset, length=length)

    def read(
        self, uri: str, *, offset: int = 0, length: int | None = None, owner: str | None = None
    ) -> Page | None:
        """``aread`` for code that is not async."""
        engine = self._engine
        return engine.wait(engine.read(uri, owner=owner, offset=offset, length=length))

    async def aspills(self, *, owner: str | None = None) -> list[Entry]:
        """The cut outputs kept whole that ``owner`` may read (``aread``), newest first."""
        return await self._engine.spills(owner)

    def start(
        self, name: str, arguments: Any = None, *, context: Mapping[str, Any] | None = None,
        approver: Any = None, approved: bool = False,
    ) -> Task:
        """Start a call as a task and return its handle at once (docs/concepts.md, Tasks).

        The call runs through the same engine as ``call`` (validation, approvals, limits,
        telemetry) on the registry's loop thread. Its state lives in the call store: with
        ``[calls] store`` on Redis, any process sharing it can ask for the task by id.
        ``context`` reaches the tool as ``context.host``, with ``task`` (the id) and
        ``progress(done, total=None, message=None)``, which the task's status reports.
        From async code use ``astart``.
        """
        return self._engine.start(name, arguments, context, approver, approved=approved)

    async def astart(
        self, name: str, arguments: Any = None, *, context: Mapping[str, Any] | None = None,
        approver: Any = None, approved: bool = False,
    ) -> Task:
        """``start`` for async code."""
        return await self._engine.astart(name, arguments, context, approver, approved=approved)

    def task(self, task_id: str) -> Task:
        """The handle of a task started by ``start`` here, or by any process sharing the
        Redis store; an id nobody knows reads as ``unknown``."""
        return self._engine.task(task_id)

    @property
    def approvals(self) -> Any:
        """The person in the loop (docs/approvals.md): the calls waiting for a decision
        (``pending``, ``decide``) and the decisions remembered (``remembered``, ``forget``),
        each with an ``a``-prefixed async twin; kept where ``[approvals] store`` says."""
        return self._engine.approvals

    def needs_approval(self, name: str, arguments: Mapping[str, Any] | None = None) -> str | None:
        """Why this call of ``name`` needs a person's approval, or None when it does not.

        The rule (docs/concepts.md, Approvals) reads ``[tools.NAME] approval`` and the
        annotations that hold for these arguments: the tool's declared ones, refined by its
        ``annotations_for(arguments)`` (url_fetch's GET is read-only, its POST is not).

        Raises:
            UsageError: no installed tool has that name.
        """
        tool = self.get(name)
        cls = tool.cls
        policy = self.config.tool_settings(name).approval
        if cls.annotations_for.__func__ is Tool.annotations_for.__func__:  # type: ignore[attr-defined]
            known = self._approvals.get(name, _UNKNOWN)
            if known is _UNKNOWN:
                known = self._approvals[name] = approval_reason(tool.metadata, policy)
            return known  # type: ignore[return-value]
        try:
            hints = cls.annotations_for(arguments or {})
        except Exception:  # arguments the tool cannot read: judge by what it declares
            hints = tool.metadata.annotations
        return approval_reason(tool.metadata, policy, hints)

    def conversation(
        self,
        request: str | None = None,
        *,
        allow: Iterable[str] | Mapping[str, int | None] | str | None = None,
    ) -> Conversation:
        """A conversation: use it as ``with`` (or ``async with``) around an agent's run.

        Calls made inside it are recorded with their tools' labels, and the flow guard asks
        before a sink argument carries text that came from untrusted output and not from
        ``request``, the user's own words (docs/security.md).

        ``allow``: the effects the user's request asked for, tool names or tool categories
        (``["send_email", "calendar"]``), or ``"inferred"`` to read them from ``request``
        (a tool's verb or whole name in it); once untrusted content entered, a call with
        an effect outside them asks (the effects rule). A mapping gives counts too
        (``{"delete_file": 1}``: one deletion asked for; None for any number), and a call
        beyond its tool's count asks as well. None (the default) bounds nothing.
        """
        return self._engine.conversation(request, allow)

    def guard_reason(self, name: str, arguments: Any = None) -> str | None:
        """Why the flow guard or a ``[policies]`` rule would ask about this call in the
        current conversation, or None: what a framework's own approval flow asks on, beside
        ``needs_approval``. A policy's ``deny`` is not a question: the engine refuses."""
        return self._engine.guard_reason(name, arguments)

    async def aguard_reason(self, name: str, arguments: Any = None) -> str | None:
        """``guard_reason`` for async code, where frameworks and servers ask: when the
        conversation has read long untrusted or private text, the check searches it in
        toolplug's worker thread, as a call's own check does, and the event loop goes on."""
        return await self._engine.aguard_reason(name, arguments)

    def labels(self, name: str) -> Trust:
        """The trust labels in force for ``name``: what the tool declares, else the cautious
        default (untrusted output, private, every parameter a sink), with what the
        configuration's ``trust`` table for it sets on top (``[tools.NAME]``, and for a
        mounted tool ``[mcp_servers.SERVER]`` and its ``tools.TOOL`` table before that).

        Raises:
            UsageError: no installed tool has that name.
        """
        found = self._labels.get(name)
        if found is None:
            labels = self.get(name).metadata.labels
            overlay = self.config.tool_settings(name).trust
            found = self._labels[name] = overlay.over(labels) if overlay else labels
        return found

    def labelled(self, name: str) -> bool:
        """Whether anyone labelled ``name``: its author (``trust``) or the configuration.

        An unlabelled tool gets the cautious default, which ``toolplug doctor`` states.

        Raises:
            UsageError: no installed tool has that name.
        """
        return (
            self.get(name).metadata.trust is not None
            or self.config.tool_settings(name).trust is not None
        )

    # -- prompts and resources (docs/prompts-and-resources.md) ---------------------------

    def prompts(self) -> list[Prompt]:
        """The plugins' prompts that are offered (their capabilities present), by name."""
        return self.published.prompts()

    def resources(self) -> list[Resource]:
        """The plugins' resources that are offered, by URI."""
        return self.published.resources()

    def resource_templates(self) -> list[ResourceTemplate]:
        """The plugins' resource templates that are offered, by URI template."""
        return self.published.templates()

    def published_availability(self, item: Prompt | Resource | ResourceTemplate) -> Availability:
        """Whether a registered prompt or resource is offered, and if not why not."""
        return self.published.availability(item)

    async def aget_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *,
        context: Mapping[str, Any] | None = None,
    ) -> RenderedPrompt:
        """The prompt ``name`` rendered with ``arguments`` (its text redacted).

        Raises:
            PublishedError: no such prompt is offered, a required argument is missing, or an
                argument is one it does not take (``kind``, ``prompt``, ``argument``).
        """
        prompt = self.published.prompt(name)
        given = self.published.checked_arguments(prompt, arguments)
        value = await run_async(prompt.render, given, self.published.context(name, context))
        return self.published.rendered(prompt, value)

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *,
        context: Mapping[str, Any] | None = None,
    ) -> RenderedPrompt:
        """``aget_prompt`` for code that is not async."""
        prompt = self.published.prompt(name)
        given = self.published.checked_arguments(prompt, arguments)
        value = run_sync(prompt.render, given, self.published.context(name, context))
        return self.published.rendered(prompt, value)

    async def aread_resource(
        self, uri: str, *, context: Mapping[str, Any] | None = None
    ) -> ResourceContents:
        """The contents of a plugin's resource: one of that URI, else a template it matches.

        Raises:
            PublishedError: nothing offered has that URI (``kind`` ``unknown_resource``).
        """
        read, args, mime = self.published.reader(uri)
        value = await run_async(read, *args, self.published.context(uri, context))
        return self.published.contents(uri, mime, value)

    def read_resource(
        self, uri: str, *, context: Mapping[str, Any] | None = None
    ) -> ResourceContents:
        """``aread_resource`` for code that is not async."""
        read, args, mime = self.published.reader(uri)
        value = run_sync(read, *args, self.published.context(uri, context))
        return self.published.contents(uri, mime, value)

    async def acomplete(
        self, ref: Ref, name: str, argument: str, value: str = "",
        arguments: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Suggested values of ``argument`` of a prompt (``ref`` "prompt", ``name`` its name)
        or a resource template (``ref`` "resource", ``name`` its URI template), given what
        was typed so far (``value``) and the other arguments; [] when it suggests none."""
        complete = self.published.completer(ref, name, argument)
        if complete is None:
            return []
        found = await run_async(complete, argument, value, dict(arguments or {}))
        return self.published.values(found, f"{ref} {name!r}")

    def complete(
        self, ref: Ref, name: str, argument: str, value: str = "",
        arguments: Mapping[str, str] | None = None,
    ) -> list[str]:
        """``acomplete`` for code that is not async."""
        complete = self.published.completer(ref, name, argument)
        if complete is None:
            return []
        found = run_sync(complete, argument, value, dict(arguments or {}))
        return self.published.values(found, f"{ref} {name!r}")

    def close(self) -> None:
        """Release the worker threads of sync tools called through ``acall``, then close
        every source, the last gathered first (mounted MCP servers' processes end)."""
        if self._engine_instance is not None:
            self._engine_instance.close()
        while self._open:  # each once, however often close is called
            self._open.pop().close()


def _serve_secrets(config: Config, env: Mapping[str, str]) -> list[str]:
    """The static tokens and the introspection secret of ``[serve.auth]`` that resolve:
    redacted by every registry built with them, served or not (``serve`` reports one
    that does not resolve)."""
    auth = config.serve.auth
    if auth is None:
        return []
    base = config.path.parent if config.path else Path.cwd()
    values = [static.token for static in auth.tokens.values()]
    if auth.client_secret is not None:
        values.append(auth.client_secret)
    found = []
    for value in values:
        try:
            text, _secret = resolve_value(value, env=env, base=base)
        except OSError:
            continue
        if text:
            found.append(text)
    return found


def _policy_problems(
    config: Config, tools: Mapping[str, RegisteredTool]
) -> list[LoadProblem]:
    """``[[policies.TOOL]]`` rules that can never match: a tool no plugin provides, or an
    ``argument`` the tool does not take. A ``deny`` written for a misspelt name would
    otherwise refuse nothing, and say nothing."""
    problems = []
    for name, rules in sorted(config.policies.items()):
        tool = tools.get(name)
        if tool is None:
            problems.append(LoadProblem(
                "config", name,
                f"{config.source}: [[policies.{name}]] names no installed tool, so its rules "
                "never apply; check the name ('toolplug list --all' shows every tool)",
            ))
            continue
        taken = tool.metadata.parameters.get("properties", {})
        for index, rule in enumerate(rules):
            if rule.argument is not None and rule.argument not in taken:
                known = ", ".join(sorted(taken)) or "none"
                problems.append(LoadProblem(
                    "config", name,
                    f"{config.source}: policies.{name}[{index}].argument {rule.argument!r} is "
                    f"not a parameter of {name} (it takes: {known}), so the rule never "
                    "applies",
                ))
    return problems


def _transform(loaded: Loaded, config: Config) -> Config:
    def problem(name: str, message: str) -> None:
        loaded.problems.append(LoadProblem("config", name, f"{config.source}: {message}"))

    settings = apply_transforms(loaded.tools, config.settings, config.transforms, problem)
    return dataclasses.replace(config, settings=settings)


def configuration(config: Config | Mapping[str, Any] | str | os.PathLike[str] | None) -> Config:
    """The configuration ``load()`` is given: a ``Config`` as it is, a mapping checked like a
    ``toolplug.toml`` document, or the file at a path (None: found as docs/configuration.md
    says)."""
    if isinstance(config, Config):
        return config
    if isinstance(config, Mapping):
        return parse_config(config)
    return load_config(Path(config) if config is not None else None)


def assemble(
    config: Config, *, env: Mapping[str, str] | None, grant: Iterable[str],
    deny: Iterable[str], strict: bool, engine: EngineFactory | None,
    sources: Sequence[ToolSource],
) -> Registry:
    """Register every source's plugins, in order, and build a ``Registry`` from them
    (``toolplug.load`` documents the arguments; ``engine`` builds what runs its calls)."""
    environment = os.environ if env is None else env
    check_sources(sources)
    for source in sources:
        config = source.configure(config)
    offers: list[Offered] = []
    problems: list[LoadProblem] = []
    for source in sources:
        if isinstance(source, OfferingSource):  # found plugins: each says where it came from
            offers += source.offered()
            problems += source.problems()
        else:
            offers += [offered(name, plugin) for name, plugin in source.plugins()]
    loaded = load_plugins(offers, problems)
    if config.transforms:  # every source's tools are in: offer them as configured
        config = _transform(loaded, config)
    registry = Registry(
        loaded, config, env=environment, grant=grant, deny=deny, engine=engine, sources=sources
    )
    if strict and registry.problems:
        lines = "\n".join("  " + p.describe() for p in registry.problems)
        raise PluginError(f"{len(registry.problems)} problem(s) while loading plugins:\n{lines}")
    return registry


def check_sources(sources: Sequence[ToolSource]) -> None:
    """Each source once, each under a name of its own.

    Raises:
        UsageError: two sources share a name, or one is not a ``ToolSource``.
    """
    seen: set[str] = set()
    for source in sources:
        if not isinstance(source, ToolSource):
            raise UsageError(
                f"sources= got {source!r}; expected a toolplug.ToolSource (subclass it and "
                "list its tools)"
            )
        if source.name in seen:
            raise UsageError(
                f"two sources are named {source.name!r}; give each source a name of its own"
            )
        seen.add(source.name)


def _with_channel(
    context: Mapping[str, Any] | None, channel: Channel | None
) -> Mapping[str, Any] | None:
    """The host's ``context`` with its ``channel`` entry (``runtime/_talk.py``)."""
    if channel is None:
        return context
    return {**(context or {}), CHANNEL: channel}
