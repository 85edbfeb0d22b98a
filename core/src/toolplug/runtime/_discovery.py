"""Discovery: entry points of the group ``toolplug`` into a pluggy plugin manager.

Entry points are loaded one at a time in sorted order (distribution, then entry point
name). Each failure is isolated, recorded as a ``LoadProblem`` naming the distribution and
the entry point, and never stops the other plugins: an import error, a missing module, a
hook that raises, a ``register(...)`` of something that is not a tool, invalid metadata,
an invalid schema, a tool name registered twice (the first in sorted order is kept).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from typing import Any, Final

import pluggy
from pydantic import ValidationError

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

__all__ = ["ENTRY_POINT_GROUP", "LoadProblem", "Loaded", "PluginInfo", "RegisteredTool", "discover"]

ENTRY_POINT_GROUP: Final = "toolplug"
PLUGINS_ENV: Final = "TOOLPLUG_PLUGINS"
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
    """Everything discovery produced."""

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
class _Source:
    name: str
    distribution: str | None
    version: str | None
    entry_point: str | None
    builtin: bool

    def problem(self, kind: str, message: str, tool: str | None = None) -> LoadProblem:
        return LoadProblem(kind, self.name, message, self.distribution, self.entry_point, tool)


def normalize_distribution(name: str) -> str:
    """The PEP 503 normal form of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def selected_distributions(env: Mapping[str, str]) -> frozenset[str] | None:
    """The distributions ``TOOLPLUG_PLUGINS`` selects: None for all, empty for none."""
    if PLUGINS_ENV not in env:
        return None
    return frozenset(
        normalize_distribution(part.strip()) for part in env[PLUGINS_ENV].split(",") if part.strip()
    )


def _entry_points() -> list[importlib_metadata.EntryPoint]:
    found = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)

    def key(ep: importlib_metadata.EntryPoint) -> tuple[str, str, str]:
        dist = normalize_distribution(ep.dist.name) if ep.dist else ""
        return (dist, ep.name, ep.value)

    return sorted(found, key=key)


def discover(
    *,
    env: Mapping[str, str] | None = None,
    extra_plugins: Iterable[tuple[str, object]] = (),
    entry_points: Callable[[], list[importlib_metadata.EntryPoint]] = _entry_points,
) -> Loaded:
    """Load the built-in plugin, the selected entry points, and any extra plugins.

    Args:
        env: Environment to read ``TOOLPLUG_PLUGINS`` from (default ``os.environ``).
        extra_plugins: ``(name, object)`` pairs a host registers from code, after the
            installed plugins.
        entry_points: Where entry points come from (tests replace it).
    """
    env = os.environ if env is None else env
    manager = pluggy.PluginManager(_hooks.PROJECT_NAME)
    manager.add_hookspecs(_hooks)
    loaded = Loaded(manager=manager)
    sources: list[_Source] = []
    version = toolplug_version()
    builtin = _Source(BUILTIN_PLUGIN, "toolplug", version, None, True)
    manager.register(_builtin, name=BUILTIN_PLUGIN)
    sources.append(builtin)
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

    selection = selected_distributions(env)
    seen_dists: set[str] = set()
    for ep in entry_points():
        dist_name = ep.dist.name if ep.dist else None
        dist_version = ep.dist.version if ep.dist else None
        normalized = normalize_distribution(dist_name) if dist_name else ""
        seen_dists.add(normalized)
        if selection is not None and normalized not in selection:
            continue
        written = f"{ep.name} = {ep.value}"
        name = f"{normalized or 'unknown'}/{ep.name}"
        dist_path = getattr(ep.dist, "_path", None)
        metadata_dir = str(dist_path) if dist_path is not None else None
        source = _Source(name, dist_name, dist_version, written, False)
        problem = _load_entry_point(manager, ep, source)
        if problem is not None:
            loaded.problems.append(problem)
            loaded.plugins.append(
                PluginInfo(
                    name, dist_name, dist_version, written, loaded=False, metadata_dir=metadata_dir
                )
            )
            continue
        module_file = getattr(manager.get_plugin(name), "__file__", None)
        hooks = _hook_names(manager, name)
        mismatch = contract_problem(manager.get_plugin(name))
        if mismatch:
            loaded.problems.append(LoadProblem("contract", name, mismatch, dist_name, written))
        loaded.plugins.append(
            PluginInfo(
                name,
                dist_name,
                dist_version,
                written,
                hooks,
                module_file=module_file,
                metadata_dir=metadata_dir,
            )
        )
        unknown = _unknown_hooks(manager, name)
        if unknown:
            known = ", ".join(
                sorted(n for n, c in vars(manager.hook).items() if getattr(c, "spec", None))
            )
            loaded.problems.append(
                LoadProblem(
                    "hooks",
                    name,
                    f"implements {', '.join(unknown)}, which is not a toolplug hook "
                    f"(known hooks: {known})",
                    dist_name,
                    written,
                )
            )
        elif not hooks:
            loaded.problems.append(
                LoadProblem(
                    "hooks",
                    name,
                    "implements no toolplug hook; decorate functions with "
                    "@toolplug.hookimpl (register_tools, register_capabilities, "
                    "register_prompts, register_resources)",
                    dist_name,
                    written,
                )
            )
        sources.append(source)
    if selection:
        for missing in sorted(selection - seen_dists):
            loaded.problems.append(
                LoadProblem(
                    "selection",
                    missing,
                    f"{PLUGINS_ENV} names {missing!r}, but no installed distribution with a "
                    f"{ENTRY_POINT_GROUP!r} entry point has that name",
                )
            )
    for extra_name, plugin in extra_plugins:
        try:
            manager.register(plugin, name=extra_name)
        except Exception as exc:  # a host's plugin object that pluggy refuses
            loaded.problems.append(LoadProblem("hooks", extra_name, _exc_text(exc)))
            continue
        mismatch = contract_problem(plugin)
        if mismatch:
            loaded.problems.append(LoadProblem("contract", extra_name, mismatch))
        # A plugin made from code may say where its tools come from (a mounted server).
        origin = getattr(plugin, "TOOLPLUG_DISTRIBUTION", None)
        made_version = getattr(plugin, "TOOLPLUG_VERSION", None)
        info = PluginInfo(extra_name, origin, made_version, None, _hook_names(manager, extra_name))
        loaded.plugins.append(info)
        sources.append(_Source(extra_name, origin, made_version, None, False))

    _collect(loaded, sources)
    return loaded


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


def _exc_text(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _load_entry_point(
    manager: pluggy.PluginManager, ep: importlib_metadata.EntryPoint, source: _Source
) -> LoadProblem | None:
    try:
        plugin = ep.load()
    except ValidationError as exc:  # a ToolMetadata(...) built at import time was invalid
        return source.problem(
            "metadata",
            f"could not be imported: {validation_text(exc)}",
        )
    except (Exception, SystemExit) as exc:  # any import-time failure is the plugin's alone
        return source.problem(
            "import",
            f"could not be imported: {_exc_text(exc)}",
        )
    try:
        manager.register(plugin, name=source.name)
    except Exception as exc:  # pluggy validates hook signatures and names
        return source.problem(
            "hooks",
            f"was refused by the plugin manager: {_exc_text(exc)}",
        )
    return None


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


def _call_hook(loaded: Loaded, source: _Source, hook: str, register: Callable[[Any], None]) -> bool:
    """Call one plugin's implementation of a registration hook; False when it raised."""
    for impl in _impls(loaded.manager, hook, source.name):
        kwargs = {"register": register}
        try:
            impl.function(*[kwargs[arg] for arg in impl.argnames])
        except Exception as exc:  # isolate the plugin: record and go on
            loaded.problems.append(
                source.problem(
                    "hook-error",
                    f"hook {hook} raised {_exc_text(exc)}",
                )
            )
            return False
    return True


def _collect(loaded: Loaded, sources: list[_Source]) -> None:  # noqa: C901 - discovery's checks of each tool, in order
    categories: dict[str, Category] = {c.name: c for c in BUILTIN_CATEGORIES}
    declared: dict[str, Category] = {}
    pending: list[tuple[_Source, type[Tool]]] = []

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


def _collect_published(loaded: Loaded, sources: list[_Source]) -> None:
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


def _check_item(item: Any, source: _Source) -> LoadProblem | None:
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


def validation_text(exc: ValidationError) -> str:
    """A pydantic validation error on one line, naming the model and every bad field."""
    fields = "; ".join(
        f"field {'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
        for err in exc.errors()
    )
    return f"invalid {exc.title}: {fields}"
