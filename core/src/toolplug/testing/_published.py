"""The contract kit's checks of a plugin's prompts and resources (``check_plugin`` runs them).

Each prompt is rendered with example arguments (the ones given, else ``"example"`` for
every argument it takes), and must give messages; each resource is read, and each
template read at a URI made of example variables, and must give ``str`` or ``bytes`` that
fit its MIME type: text for a ``text/*`` or JSON type, bytes that start as the type says
for a picture or a recording. A URI may not use the ``toolplug:`` scheme, which
``toolplug serve`` keeps for itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from toolplug.contract._errors import PluginError, PublishedError
from toolplug.contract._parts import part_for
from toolplug.contract._published import ResourceTemplate
from toolplug.sources._plugins import normalize_distribution

if TYPE_CHECKING:
    from toolplug.contract._published import Prompt, Resource
    from toolplug.runtime._registry import Registry

__all__ = ["published_problems"]

_TEXT_TYPES = ("application/json", "application/xml", "application/yaml")


def _theirs(registry: Registry, key: str, wanted: str) -> bool:
    return normalize_distribution(registry.published.plugin_of(key)) == wanted


def published_problems(
    registry: Registry,
    distribution: str,
    *,
    prompt_arguments: Mapping[str, Mapping[str, str]] | None = None,
    template_uris: Mapping[str, str] | None = None,
) -> tuple[int, list[str]]:
    """How many prompts, resources and templates ``distribution`` publishes, and every
    rule they break. ``prompt_arguments`` gives a prompt's example arguments by its name,
    ``template_uris`` a template's example URI by its URI template."""
    wanted = normalize_distribution(distribution)
    loaded = registry.published
    every_prompt, every_resource, every_template = loaded.registered()
    prompts = [p for p in every_prompt if _theirs(registry, f"prompt:{p.name}", wanted)]
    resources = [r for r in every_resource if _theirs(registry, r.uri, wanted)]
    templates = [t for t in every_template if _theirs(registry, t.uri_template, wanted)]
    problems: list[str] = []
    for item in prompts:
        if not loaded.availability(item).available:
            continue  # what its capabilities allow is checked where they are present
        problems += _prompt_problems(registry, item, (prompt_arguments or {}).get(item.name))
    readable: list[Resource | ResourceTemplate] = [*resources, *templates]
    for each in readable:
        if not loaded.availability(each).available:
            continue
        problems += _resource_problems(registry, each, template_uris or {})
    return len(prompts) + len(resources) + len(templates), problems


def _prompt_problems(
    registry: Registry, prompt: Prompt, given: Mapping[str, str] | None
) -> list[str]:
    arguments = dict(given) if given is not None else {a.name: "example" for a in prompt.arguments}
    where = f"prompt {prompt.name!r}"
    try:
        rendered = registry.get_prompt(prompt.name, arguments)
    except (PluginError, PublishedError) as exc:
        return [f"{where}: rendering it with {json.dumps(arguments)} failed: {exc}"]
    if not rendered.messages:
        return [f"{where}: rendered no message; give at least one"]
    return []


def _resource_problems(
    registry: Registry, item: Resource | ResourceTemplate, uris: Mapping[str, str]
) -> list[str]:
    if isinstance(item, ResourceTemplate):
        key = item.uri_template
        uri = uris.get(key) or key
        for name in item.variables:
            uri = uri.replace("{" + name + "}", "example")
    else:
        key = uri = item.uri
    where = f"resource {key!r}"
    if key.lower().startswith("toolplug:"):
        return [f"{where}: the toolplug: scheme is toolplug serve's own; use a scheme of yours"]
    try:
        found = registry.read_resource(uri)
    except (PluginError, PublishedError) as exc:
        return [f"{where}: reading {uri} failed: {exc}"]
    mime = found.mime_type
    textual = mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith("+json")
    if found.text is not None and not textual and item.mime_type is not None:
        return [f"{where}: read text, but its mime_type {mime!r} is not a text type; return "
                "bytes, or declare a text type"]
    if found.data is not None:
        if textual:
            return [f"{where}: read bytes, but its mime_type {mime!r} is text; return str"]
        problem = part_for(found.data, mime).problem()
        if problem is not None:
            return [f"{where}: {problem}"]
    return []
