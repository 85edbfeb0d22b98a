"""The installed plugins: entry points of the group ``toolplug``, then ``load(plugins=...)``.

Entry points are loaded one at a time in sorted order (distribution, then entry point
name), the distributions ``TOOLPLUG_PLUGINS`` names only when it is set. A plugin that
cannot be imported (an import error, a missing module, invalid metadata built at import
time) is offered with the ``LoadProblem`` that says so, and never stops the others; the
registry registers the rest and checks what they register (``runtime/_loaded.py``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata as importlib_metadata
from typing import Final

from pydantic import ValidationError

from toolplug.runtime._loaded import LoadProblem, Offered, PluginInfo, exception_text, offered
from toolplug.runtime._source import OfferingSource

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGINS_ENV",
    "InstalledPlugins",
    "normalize_distribution",
    "selected_distributions",
    "validation_text",
]

ENTRY_POINT_GROUP: Final = "toolplug"
PLUGINS_ENV: Final = "TOOLPLUG_PLUGINS"

EntryPoints = Callable[[], list[importlib_metadata.EntryPoint]]
"""Where entry points come from (tests replace it)."""


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


class InstalledPlugins(OfferingSource):
    """The plugins of installed distributions, then the ones a host registers from code.

    Args:
        env: The environment ``TOOLPLUG_PLUGINS`` is read from (default ``os.environ``).
        plugins: ``(name, object)`` pairs a host registers from code, after the installed
            plugins.
        entry_points: Where entry points come from (tests replace it).
    """

    name = "installed"

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        plugins: Iterable[tuple[str, object]] = (),
        entry_points: EntryPoints = _entry_points,
    ) -> None:
        self._env = os.environ if env is None else env
        self._extra = list(plugins)
        self._entry_points = entry_points
        self._found: tuple[list[Offered], list[LoadProblem]] | None = None

    def offered(self) -> Sequence[Offered]:
        return self._find()[0]

    def problems(self) -> Sequence[LoadProblem]:
        return self._find()[1]

    def _find(self) -> tuple[list[Offered], list[LoadProblem]]:
        """Each entry point selected, imported once (the first call does it all)."""
        if self._found is None:
            found, problems = _installed(self._env, self._entry_points)
            found += [offered(name, plugin) for name, plugin in self._extra]
            self._found = (found, problems)
        return self._found


def _installed(
    env: Mapping[str, str], entry_points: EntryPoints
) -> tuple[list[Offered], list[LoadProblem]]:
    """The selected entry points, each imported or with why it could not be; and the names
    ``TOOLPLUG_PLUGINS`` gives that no installed distribution has."""
    selection = selected_distributions(env)
    seen: set[str] = set()
    found: list[Offered] = []
    for ep in entry_points():
        dist_name = ep.dist.name if ep.dist else None
        normalized = normalize_distribution(dist_name) if dist_name else ""
        seen.add(normalized)
        if selection is not None and normalized not in selection:
            continue
        dist_path = getattr(ep.dist, "_path", None)
        info = PluginInfo(
            f"{normalized or 'unknown'}/{ep.name}",
            dist_name,
            ep.dist.version if ep.dist else None,
            f"{ep.name} = {ep.value}",
            metadata_dir=str(dist_path) if dist_path is not None else None,
        )
        found.append(_imported(ep, info))
    problems = [
        LoadProblem(
            "selection",
            missing,
            f"{PLUGINS_ENV} names {missing!r}, but no installed distribution with a "
            f"{ENTRY_POINT_GROUP!r} entry point has that name",
        )
        for missing in sorted((selection or frozenset()) - seen)
    ]
    return found, problems


def _imported(ep: importlib_metadata.EntryPoint, info: PluginInfo) -> Offered:
    """The entry point's plugin, or the problem that stopped its import."""

    def problem(kind: str, message: str) -> Offered:
        found = LoadProblem(kind, info.name, message, info.distribution, info.entry_point)
        return Offered(info, problem=found)

    try:
        return Offered(info, ep.load())
    except ValidationError as exc:  # a ToolMetadata(...) built at import time was invalid
        return problem("metadata", f"could not be imported: {validation_text(exc)}")
    except (Exception, SystemExit) as exc:  # any import-time failure is the plugin's alone
        return problem("import", f"could not be imported: {exception_text(exc)}")


def validation_text(exc: ValidationError) -> str:
    """A pydantic validation error on one line, naming the model and every bad field."""
    fields = "; ".join(
        f"field {'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
        for err in exc.errors()
    )
    return f"invalid {exc.title}: {fields}"
