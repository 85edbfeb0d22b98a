"""What the registry loads its tools from: the plugins every source offers, registered in
one pluggy plugin manager, and the records it keeps of them.

The built-in plugin is registered first, then each source's plugins in the order
``load()`` gathered the sources (the installed ones come from
``toolplug.sources._plugins``). Every plugin's tools are treated alike, whoever offered
it: each failure is isolated, recorded as a ``LoadProblem`` naming the plugin (its
distribution and entry point when it has them), and never stops the others: a plugin
manager that refuses it, a hook that raises, a ``register(...)`` of something that is not
a tool, invalid metadata, an invalid schema, a tool name registered twice (the first is
kept).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Final

import pluggy

from toolplug.contract import _hooks
from toolplug.contract._capabilities import Capability
from toolplug.contract._errors import MetadataError
from toolplug.contract._metadata import (
    BUILTIN_CATEGORIES,
    Category,
    ToolMetadata,
    validate_tool_metadata,
)
from toolplug.contract._published import Prompt, Resource, ResourceTemplate
from toolplug.contract._tool import Tool
from toolplug.contract._version import toolplug_version
from toolplug.runtime import _builtin

__all__ = [
    "LoadProblem",
    "Loaded",
    "Offered",
    "PluginInfo",
    "RegisteredTool",
    "contract_problem",
    "exception_text",
    "load_plugins",
    "offered",
]

BUILTIN_PLUGIN: Final = "toolplug"


@dataclass(frozen=True)
class LoadProblem:
    """Something that went wrong while loading plugins; reported, never fatal."""

    kind: str
    """``import``, ``hooks``, ``hook-error``, ``register``, ``metadata``, ``duplicate``,
    ``contract``, ``selection`` or ``config``."""
    plugin: str
    """The plugin's name: ``distribution/entry-point`` (or ``toolplug`` for built-ins)."""
    message: str
    distribution: str | None = None
    entry_point: str | None = None
    """The entry point as written: ``name = module:attr``."""
    tool: str | None = None

    def describe(self) -> str:
        """One line naming who caused it and what happened."""
        who = self.distribution or self.plugin
        if self.entry_point:
            who += f" (entry point {self.entry_point})"
        if self.tool:
            who += f", tool {self.tool!r}"
        return f"[{self.kind}] {who}: {self.message}"


@dataclass(frozen=True)
class PluginInfo:
    """A plugin that was found, loaded or not."""

    name: str
    distribution: str | None
    version: str | None
    entry_point: str | None
    hooks: tuple[str, ...] = ()
    """The toolplug hooks it implements."""
    loaded: bool = True
    builtin: bool = False
    module_file: str | None = None
    metadata_dir: str | None = None
    """The distribution's ``.dist-info`` directory, when it is one on disk."""


@dataclass(frozen=True)
class RegisteredTool:
    """A tool class with its validated metadata and where it came from."""

    cls: type[Tool]
    metadata: ToolMetadata
    plugin: str
    distribution: str | None
    version: str | None

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.metadata.name


@dataclass
class Loaded:
    """Everything the plugins registered, and what went wrong."""

    manager: pluggy.PluginManager
    plugins: list[PluginInfo] = field(default_factory=list)
    tools: dict[str, RegisteredTool] = field(default_factory=dict)
    capabilities: dict[str, Capability] = field(default_factory=dict)
    capability_plugins: dict[str, str] = field(default_factory=dict)
    categories: list[Category] = field(default_factory=list)
    problems: list[LoadProblem] = field(default_factory=list)
    prompts: dict[str, Prompt] = field(default_factory=dict)
    resources: dict[str, Resource] = field(default_factory=dict)
    templates: dict[str, ResourceTemplate] = field(default_factory=dict)
    """Resource templates by their URI template."""
    published_by: dict[str, str] = field(default_factory=dict)
    """Who registered each prompt (``prompt:NAME``) and resource (its URI or template)."""


@dataclass(frozen=True)
class _Registrant:
    """A registered plugin as its hooks are called: its name and where it came from."""

    name: str
    distribution: str | None
    version: str | None
    entry_point: str | None
    builtin: bool

    def problem(self, kind: str, message: str, tool: str | None = None) -> LoadProblem:
        return LoadProblem(kind, self.name, message, self.distribution, self.entry_point, tool)


@dataclass(frozen=True)
class Offered:
    """A plugin a source offers the registry, with what is known of where it came from."""

    info: PluginInfo
    """Its name, distribution, version, entry point and ``.dist-info`` directory; its hooks
    and module file are filled in once it is registered."""
    plugin: object | None = None
    """The plugin itself (a module, class or object with ``@hookimpl`` functions); None
    when it could not be loaded, and ``problem`` says why."""
    problem: LoadProblem | None = None


def offered(name: str, plugin: object) -> Offered:
    """A plugin made from code, registered under ``name``: it may say where its tools come
    from (``TOOLPLUG_DISTRIBUTION``, ``TOOLPLUG_VERSION``: a mounted server does)."""
    origin = getattr(plugin, "TOOLPLUG_DISTRIBUTION", None)
    version = getattr(plugin, "TOOLPLUG_VERSION", None)
    return Offered(PluginInfo(name, origin, version, None), plugin)


def load_plugins(offers: Iterable[Offered], problems: Iterable[LoadProblem] = ()) -> Loaded:
    """Register the built-in plugin, then each plugin offered, and collect what their hooks
    register; ``problems`` are the sources' own (what went wrong finding plugins).

    A plugin with an entry point (an installed distribution) that implements no toolplug
    hook, or marks a function that is not one, is reported; a plugin made from code is not.
    """
    manager = pluggy.PluginManager(_hooks.PROJECT_NAME)
    manager.add_hookspecs(_hooks)
    loaded = Loaded(manager=manager)
    version = toolplug_version()
    manager.register(_builtin, name=BUILTIN_PLUGIN)
    sources = [_Registrant(BUILTIN_PLUGIN, "toolplug", version, None, True)]
    loaded.plugins.append(
        PluginInfo(
            BUILTIN_PLUGIN,
            "toolplug",
            version,
            None,
            _hook_names(manager, BUILTIN_PLUGIN),
            builtin=True,
            module_file=getattr(_builtin, "__file__", None),
        )
    )
    for offer in offers:
        info = offer.info
        source = _Registrant(info.name, info.distribution, info.version, info.entry_point, False)
        problem = offer.problem or _register(manager, offer, source)
        if problem is not None:
            loaded.problems.append(problem)
            if info.entry_point is not None:  # an installed plugin that failed is listed
                loaded.plugins.append(replace(info, hooks=(), loaded=False))
            continue
        mismatch = contract_problem(offer.plugin)
        if mismatch:
            loaded.problems.append(
                LoadProblem("contract", info.name, mismatch, info.distribution, info.entry_point)
                if info.entry_point is not None
                else LoadProblem("contract", info.name, mismatch)
            )
        hooks = _hook_names(manager, info.name)
        module_file = info.module_file
        if info.entry_point is not None:
            module_file = getattr(offer.plugin, "__file__", None)
            loaded.problems.extend(_hook_problems(manager, source, hooks))
        loaded.plugins.append(replace(info, hooks=hooks, module_file=module_file))
        sources.append(source)
    loaded.problems.extend(problems)
    _collect(loaded, sources)
    return loaded


def _register(
    manager: pluggy.PluginManager, offer: Offered, source: _Registrant
) -> LoadProblem | None:
    """Register one plugin; why the plugin manager refused it, if it did."""
    try:
        manager.register(offer.plugin, name=source.name)
    except Exception as exc:  # pluggy validates hook signatures and names
        if source.entry_point is None:
            return LoadProblem("hooks", source.name, exception_text(exc))
        return source.problem(
            "hooks", f"was refused by the plugin manager: {exception_text(exc)}"
        )
    return None


def _hook_problems(
    manager: pluggy.PluginManager, source: _Registrant, hooks: tuple[str, ...]
) -> list[LoadProblem]:
    """An installed plugin that marks a function no hook specifies, or implements none."""
    unknown = _unknown_hooks(manager, source.name)
    if unknown:
        known = ", ".join(
            sorted(n for n, c in vars(manager.hook).items() if getattr(c, "spec", None))
        )
        return [
            source.problem(
                "hooks",
                f"implements {', '.join(unknown)}, which is not a toolplug hook "
                f"(known hooks: {known})",
            )
        ]
    if not hooks:
        return [
            source.problem(
                "hooks",
                "implements no toolplug hook; decorate functions with "
                "@toolplug.hookimpl (register_tools, register_capabilities, "
                "register_prompts, register_resources)",
            )
        ]
    return []


def contract_problem(plugin: object) -> str | None:
    """Why the contract a plugin declares (``TOOLPLUG_CONTRACT``) does not fit this core."""
    declared, core = getattr(plugin, "TOOLPLUG_CONTRACT", None), _hooks.CONTRACT_VERSION
    major, minor = map(int, core.split("."))
    found = re.fullmatch(r"(\d+)\.(\d+)", declared) if isinstance(declared, str) else None
    if declared is None or (found and int(found[1]) == major and int(found[2]) <= minor):
        return None
    if found is None:
        return f"TOOLPLUG_CONTRACT is {declared!r}; expected a string such as {core!r}"
    fix = (
        "upgrade toolplug (pip install -U toolplug)"
        if (int(found[1]), int(found[2])) > (major, minor)
        else f"install a release of the plugin written for contract {major}.x"
    )
    return f"written for toolplug contract {declared}, but this toolplug implements {core}: {fix}"


def exception_text(exc: BaseException) -> str:
    """An exception on one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _hook_names(manager: pluggy.PluginManager, plugin_name: str) -> tuple[str, ...]:
    """The toolplug hooks the plugin implements (hooks with a specification)."""
    plugin = manager.get_plugin(plugin_name)
    callers = manager.get_hookcallers(plugin) or []
    return tuple(sorted(c.name for c in callers if c.spec is not None))


def _unknown_hooks(manager: pluggy.PluginManager, plugin_name: str) -> tuple[str, ...]:
    """Names marked with ``@hookimpl`` that are not toolplug hooks (typos, old names)."""
    plugin = manager.get_plugin(plugin_name)
    callers = manager.get_hookcallers(plugin) or []
    return tuple(sorted(c.name for c in callers if c.spec is None))


def _impls(manager: pluggy.PluginManager, hook: str, plugin_name: str) -> list[Any]:
    caller = getattr(manager.hook, hook)
    return [impl for impl in caller.get_hookimpls() if impl.plugin_name == plugin_name]


def _call_hook(
    loaded: Loaded, source: _Registrant, hook: str, register: Callable[[Any], None]
) -> bool:
    """Call one plugin's implementation of a registration hook; False when it raised."""
    for impl in _impls(loaded.manager, hook, source.name):
        kwargs = {"register": register}
        try:
            impl.function(*[kwargs[arg] for arg in impl.argnames])
        except Exception as exc:  # isolate the plugin: record and go on
            loaded.problems.append(
                source.problem(
                    "hook-error",
                    f"hook {hook} raised {exception_text(exc)}",
                )
            )
            return False
    return True


def _collect(loaded: Loaded, sources: list[_Registrant]) -> None:  # noqa: C901 - the checks of each tool, in order
    categories: dict[str, Category] = {c.name: c for c in BUILTIN_CATEGORIES}
    declared: dict[str, Category] = {}
    pending: list[tuple[_Registrant, type[Tool]]] = []

    for source in sources:
        items: list[Any] = []
        if not _call_hook(loaded, source, "register_tools", items.append):
            continue
        for item in items:
            problem = _check_item(item, source)
            if problem is not None:
                loaded.problems.append(problem)
            elif isinstance(item, Category):
                known = categories.get(item.name) or declared.get(item.name)
                if known is None:
                    declared[item.name] = item
                elif known.description != item.description:
                    loaded.problems.append(
                        source.problem(
                            "register",
                            f"category {item.name!r} is already declared with another description; "
                            "the first declaration is kept",
                        )
                    )
            else:
                pending.append((source, item))

    known_names = set(categories) | set(declared)
    for source, cls in pending:
        meta = cls.metadata
        try:
            validate_tool_metadata(meta, known_categories=known_names, plugin=source.name)
        except MetadataError as exc:
            loaded.problems.append(
                source.problem(
                    "metadata",
                    str(exc.detail) + (f" (field {exc.field})" if exc.field else ""),
                    tool=meta.name,
                )
            )
            continue
        first = loaded.tools.get(meta.name)
        if first is not None:
            loaded.problems.append(
                source.problem(
                    "duplicate",
                    f"tool name {meta.name!r} is already registered by "
                    f"{first.distribution or first.plugin}; "
                    "that one is kept and this one is ignored",
                    tool=meta.name,
                )
            )
            continue
        loaded.tools[meta.name] = RegisteredTool(
            cls, meta, source.name, source.distribution, source.version
        )
    loaded.tools = dict(sorted(loaded.tools.items()))
    loaded.categories = list(BUILTIN_CATEGORIES) + [declared[n] for n in sorted(declared)]

    for source in sources:
        caps: list[Any] = []
        if not _call_hook(loaded, source, "register_capabilities", caps.append):
            continue
        for cap in caps:
            if not isinstance(cap, Capability):
                loaded.problems.append(
                    source.problem(
                        "register",
                        f"register_capabilities got {cap!r}; expected a toolplug.Capability",
                    )
                )
                continue
            if cap.name in loaded.capabilities:
                loaded.problems.append(
                    source.problem(
                        "duplicate",
                        f"capability {cap.name!r} is already registered by "
                        f"{loaded.capability_plugins[cap.name]}; that one is kept",
                    )
                )
                continue
            loaded.capabilities[cap.name] = cap
            loaded.capability_plugins[cap.name] = source.distribution or source.name
    _collect_published(loaded, sources)


_PUBLISHED: Final = {
    "register_prompts": ((Prompt,), "a toolplug.Prompt"),
    "register_resources": (
        (Resource, ResourceTemplate), "a toolplug.Resource or toolplug.ResourceTemplate"
    ),
}


def _collect_published(loaded: Loaded, sources: list[_Registrant]) -> None:
    """The prompts, resources and resource templates of ``register_prompts`` and
    ``register_resources``: each checked, the first of a name (or URI) kept."""
    tables: dict[type, dict[str, Any]] = {
        Prompt: loaded.prompts, Resource: loaded.resources, ResourceTemplate: loaded.templates,
    }
    for hook, (kinds, expected) in _PUBLISHED.items():
        for source in sources:
            items: list[Any] = []
            if not _call_hook(loaded, source, hook, items.append):
                continue
            for item in items:
                if not isinstance(item, kinds):
                    loaded.problems.append(
                        source.problem("register", f"{hook} got {item!r}; expected {expected}")
                    )
                    continue
                name, what = _published_name(item)
                key = f"prompt:{name}" if isinstance(item, Prompt) else name
                first = loaded.published_by.get(key)
                if first is not None:
                    loaded.problems.append(
                        source.problem(
                            "duplicate",
                            f"{what} {name!r} is already registered by {first}; that one is "
                            "kept and this one is ignored",
                        )
                    )
                    continue
                next(t for kind, t in tables.items() if isinstance(item, kind))[name] = item
                loaded.published_by[key] = source.distribution or source.name
    loaded.prompts = dict(sorted(loaded.prompts.items()))
    loaded.resources = dict(sorted(loaded.resources.items()))
    loaded.templates = dict(sorted(loaded.templates.items()))


def _published_name(item: Prompt | Resource | ResourceTemplate) -> tuple[str, str]:
    """What names a published item, and what to call it in a report."""
    if isinstance(item, Prompt):
        return item.name, "prompt"
    if isinstance(item, Resource):
        return item.uri, "resource"
    return item.uri_template, "resource template"


def _check_item(item: Any, source: _Registrant) -> LoadProblem | None:
    if isinstance(item, Category):
        return None
    if not (isinstance(item, type) and issubclass(item, Tool)):
        return source.problem(
            "register",
            f"register() got {item!r}; expected a toolplug.Tool subclass or a toolplug.Category",
        )
    meta = getattr(item, "metadata", None)
    if not isinstance(meta, ToolMetadata):
        return source.problem(
            "metadata",
            f"{item.__qualname__}.metadata is {type(meta).__name__}; "
            "expected toolplug.ToolMetadata",
        )
    if item.run is Tool.run:
        return source.problem(
            "metadata",
            f"{item.__qualname__} does not implement run()",
            tool=meta.name,
        )
    return None
