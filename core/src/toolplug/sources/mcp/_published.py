"""A mounted server's prompts, resources and resource templates, published as a plugin's.

At mount time the server is asked for ``prompts/list``, ``resources/list`` and
``resources/templates/list`` (each only when its capabilities declare it; paged), and the
answers are cached with its tool list (``_catalog.Listing``). ``_ServerPlugin`` registers
what this module makes of them, so the registry lists, renders, reads and completes them,
and ``toolplug serve`` offers them onward, as it does a plugin's:

- a prompt is named as a tool is (the server's prefix, ``NAME_`` by default), and
  ``include``/``exclude`` select prompts by the server's names as they select tools;
- a resource keeps the URI the server gives it (a URI names the thing itself: rewriting it
  would break the links a server's results and prompts carry); ``include_resources`` and
  ``exclude_resources`` select resources and templates by URI (or URI template) globs;
- each requires the server's capability (``mcp_NAME``): a server that is down makes them
  unavailable with its reason, as for its tools;
- a prompt's definition is scanned as a tool's is, and the messages it renders are scanned
  when it is got: a finding the configuration does not accept holds it back;
- the text read from a resource joins the flow guard's conversation as an untrusted record
  (the server's ``trust`` table may say otherwise), as a tool's result would.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._errors import PluginError, PublishedError
from toolplug.contract._metadata import Trust
from toolplug.contract._published import (
    Message,
    Prompt,
    PromptArgument,
    PublishedContext,
    Resource,
    ResourceContents,
    ResourceTemplate,
)
from toolplug.contract._tool import ToolResult
from toolplug.sources import _gathered
from toolplug.sources.mcp import _catalog, _host
from toolplug.sources.mcp._content import BadBlock, blocks
from toolplug.trust._conversation import CURRENT
from toolplug.trust._scan import Finding, Subject, scan

if TYPE_CHECKING:
    from toolplug.config._servers import ServerSettings
    from toolplug.sources.mcp._mount import MountedServer

__all__ = [
    "list_published", "name_prompts", "prompts_of", "report", "resources_of", "withheld_text",
]

_PAGES: Final = 100  # a server that pages forever is cut off
_METHOD_NOT_FOUND: Final = -32601
_INVALID_PARAMS: Final = -32602
_RESOURCE_NOT_FOUND: Final = -32002


# -- listing (on the sessions' loop, at mount time and on list_changed) ----------------------


async def list_published(client: Any) -> tuple[list[dict[str, Any]], ...]:
    """The server's prompts, resources and resource templates, as JSON: each list asked for
    only when the server's capabilities declare it."""
    caps = client.server_capabilities
    prompts: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    templates: list[dict[str, Any]] = []
    if caps is not None and caps.prompts is not None:
        prompts = await _paged(client.list_prompts, "prompts")
    if caps is not None and caps.resources is not None:
        resources = await _paged(client.list_resources, "resources")
        templates = await _paged(client.list_resource_templates, "resource_templates")
    return prompts, resources, templates


async def _paged(ask: Callable[..., Any], key: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(_PAGES):
        page = await ask(cursor=cursor)
        found += [
            item.model_dump(by_alias=True, exclude_none=True, mode="json")
            for item in getattr(page, key)
        ]
        cursor = page.next_cursor
        if cursor is None:
            break
    return found


# -- naming and selecting --------------------------------------------------------------------


def _selected(patterns: list[str], excluded: list[str], name: str) -> bool:
    included = not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)
    return included and not any(fnmatch.fnmatchcase(name, p) for p in excluded)


def resource_selected(settings: ServerSettings, uri: str) -> bool:
    """Whether ``include_resources``/``exclude_resources`` keep a URI (or URI template)."""
    return _selected(settings.include_resources, settings.exclude_resources, uri)


def name_prompts(server: MountedServer) -> None:
    """Name the server's prompts as its tools are named (its prefix and the server's name,
    made valid), those ``include``/``exclude`` keep; two that read the same get ``_2``."""
    server.prompt_names.clear()
    taken: set[str] = set()
    for entry in server.listing.prompts if server.listing else []:
        remote = str(entry.get("name", ""))
        if not remote or not _selected(server.settings.include, server.settings.exclude, remote):
            continue
        final = _gathered.unique_name(
            _catalog.tool_name(server.settings.name_prefix, remote), taken
        )
        server.prompt_names[final] = remote


# -- calling the server ------------------------------------------------------------------------


async def _ask(
    server: MountedServer, ask: Callable[[Any], Coroutine[Any, Any, Any]], what: str, *,
    prompt: str | None = None, uri: str | None = None,
) -> Any:
    """``ask(client)`` on the server's open session (started if need be), on the sessions'
    loop; a server that is down is ``PublishedError`` ``unavailable`` with its reason, an
    MCP error the server answered is a ``PublishedError`` or ``PluginError`` naming it."""
    connection = server.connection
    assert connection is not None

    async def work() -> Any:
        from mcp.shared.exceptions import MCPError  # the SDK, only once a server is asked

        try:
            client = await connection.client()
        except _host.ServerDown as down:
            raise PublishedError(
                f"{what} is not offered: the MCP server {server.name!r} is unavailable: "
                f"{down.reason}",
                kind="unavailable", prompt=prompt, uri=uri,
            ) from None
        try:
            return await ask(client)
        except MCPError as exc:
            said = f"MCP server {server.name!r} answered {what}: {exc.message}"
            if exc.code == _RESOURCE_NOT_FOUND:
                raise PublishedError(said, kind="unknown_resource", uri=uri) from None
            if exc.code == _INVALID_PARAMS:
                raise PublishedError(
                    said, kind="invalid_argument", prompt=prompt, uri=uri
                ) from None
            raise PluginError(said, plugin=f"mcp:{server.name}") from None

    return await _host.run(work)


# -- prompts -------------------------------------------------------------------------------------


def _prompt_texts(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    texts = [
        (k, entry[k]) for k in ("name", "title", "description") if isinstance(entry.get(k), str)
    ]
    for index, argument in enumerate(entry.get("arguments") or []):
        for key in ("name", "description"):
            if isinstance(argument.get(key), str):
                texts.append((f"arguments/{index}/{key}", argument[key]))
    return texts


def _unaccepted(server: MountedServer, remote: str, found: list[Finding]) -> list[str]:
    return sorted({f.rule for f in found if not server.settings.accepts(remote, f.rule)})


def prompts_of(server: MountedServer) -> list[Prompt]:
    """The ``Prompt`` of each mounted prompt of the server; its definition scanned once
    here (a finding the configuration does not accept holds it back: it is registered
    under a neutral description, unavailable, and ``mcp_NAME_scan`` says why)."""
    listed = {str(p.get("name")): p for p in (server.listing.prompts if server.listing else [])}
    made: list[Prompt] = []
    for final, remote in sorted(server.prompt_names.items()):
        entry = listed[remote]
        key = f"prompt:{final}"
        found = scan([
            Subject(final, f"mcp:{server.name}", tuple(_prompt_texts(entry)), (final, remote),
                    outside=True)
        ])
        server.findings[key] = [(f, server.settings.accepts(remote, f.rule)) for f in found]
        rules = _unaccepted(server, remote, found)
        if rules:
            server.prompts_withheld[final] = rules
        try:
            made.append(_prompt(server, final, remote, entry, rules))
        except ValueError as exc:
            server.notes.append(f"the prompt {remote!r} cannot be mounted: {exc}")
    return made


def _prompt(
    server: MountedServer, final: str, remote: str, entry: Mapping[str, Any], rules: list[str]
) -> Prompt:
    requires = (server.capability,)
    if rules:
        return Prompt(
            name=final,
            render=_held_back(server, final),
            description=f"Withheld: the definition the MCP server {server.name!r} gives of "
            f"this prompt breaks the scan rules {', '.join(rules)}.",
            requires=(*requires, f"{server.capability}_scan"),
        )
    arguments = tuple(
        PromptArgument(str(a.get("name", "")), str(a.get("description") or ""),
                       bool(a.get("required", False)))
        for a in entry.get("arguments") or []
    )
    description = " ".join(str(entry.get("description") or "").split())

    async def render(given: Mapping[str, str], _context: PublishedContext) -> list[Message]:
        answer = await _ask(
            server, lambda client: client.get_prompt(remote, dict(given) or None),
            f"prompts/get of {remote!r}", prompt=final,
        )
        return _messages(server, final, remote, answer)

    render.__qualname__ = f"mcp:{server.name} prompt {remote}"
    return Prompt(
        name=final,
        render=render,
        description=description or f"The {remote} prompt of the MCP server {server.name}.",
        title=entry.get("title") or None,
        arguments=arguments,
        requires=requires,
        complete=_completer(server, "prompt", remote),
    )


def _held_back(server: MountedServer, final: str) -> Callable[..., Any]:
    def render(_given: Mapping[str, str], _context: PublishedContext) -> Any:
        raise PublishedError(
            f"prompt {final!r} is withheld: {withheld_text(server, final)}",
            kind="unavailable", prompt=final,
        )

    return render


def _messages(server: MountedServer, final: str, remote: str, answer: Any) -> list[Message]:
    """A ``GetPromptResult``'s messages, each content as text or its part; their text is
    scanned, and a finding the configuration does not accept holds the prompt back."""
    messages: list[Message] = []
    texts: list[tuple[str, str]] = []
    for index, message in enumerate(answer.messages):
        try:
            text, parts = blocks([message.content])
        except BadBlock as bad:
            raise PluginError(
                f"MCP server {server.name!r} rendered the prompt {remote!r} with a message "
                f"that is not valid MCP: {bad}", plugin=f"mcp:{server.name}",
            ) from None
        content: Any = parts[0] if parts else text
        messages.append(Message(message.role, content))
        inner = text or getattr(content, "text", None)
        if isinstance(inner, str) and inner:
            texts.append((f"messages/{index}", inner))
    found = scan([Subject(final, f"mcp:{server.name}", tuple(texts), (final, remote),
                          outside=True)])
    rules = _unaccepted(server, remote, found)
    if rules:
        table = f"[mcp_servers.{server.name}.tools.{remote}]"
        raise PublishedError(
            f"prompt {final!r} is held back: the messages the MCP server {server.name!r} "
            f"rendered break the scan rules {', '.join(rules)}; to accept them, add "
            f"accept_findings = {rules!r} under {table}".replace("'", '"'),
            kind="unavailable", prompt=final,
        )
    return messages


def withheld_text(server: MountedServer, final: str) -> str:
    """Which rules a withheld prompt's definition breaks (no excerpt: this can reach a
    model; ``toolplug scan`` shows the finding to the operator)."""
    rules = server.prompts_withheld.get(final, [])
    return f"its definition breaks the scan rules {', '.join(rules)}"


def _completer(server: MountedServer, ref: str, name: str) -> Callable[..., Any]:
    """The completion of a prompt's argument or a template's variable: ``completion/
    complete`` of the server ([] from a server that does not complete)."""

    async def complete(argument: str, typed: str, others: Mapping[str, str]) -> list[str]:
        from mcp.types import PromptReference, ResourceTemplateReference

        reference: Any = (
            PromptReference(type="ref/prompt", name=name) if ref == "prompt"
            else ResourceTemplateReference(type="ref/resource", uri=name)
        )

        async def ask(client: Any) -> Any:
            caps = client.server_capabilities
            if caps is None or caps.completions is None:
                return None
            return await client.complete(
                reference, {"name": argument, "value": typed}, dict(others) or None
            )

        answer = await _ask(server, ask, f"completion/complete of {name!r}")
        return [] if answer is None else [str(v) for v in answer.completion.values]

    complete.__qualname__ = f"mcp:{server.name} completion of {name}"
    return complete


# -- resources -----------------------------------------------------------------------------------


def resources_of(server: MountedServer) -> list[Resource | ResourceTemplate]:
    """The ``Resource`` and ``ResourceTemplate`` of each resource the server lists that
    ``include_resources``/``exclude_resources`` keep, at the URI the server gives."""
    listing = server.listing
    made: list[Resource | ResourceTemplate] = []
    requires = (server.capability,)
    for entry in listing.resources if listing else []:
        uri = str(entry.get("uri", ""))
        if not resource_selected(server.settings, uri):
            continue
        try:
            made.append(Resource(
                uri=uri, name=str(entry.get("name") or uri), read=_reader(server, uri),
                title=entry.get("title") or None, description=_described(entry),
                mime_type=entry.get("mimeType") or None, requires=requires,
            ))
        except ValueError as exc:
            server.notes.append(f"the resource {uri!r} cannot be mounted: {exc}")
    for entry in listing.templates if listing else []:
        template = str(entry.get("uriTemplate", ""))
        if not resource_selected(server.settings, template):
            continue
        try:
            made.append(ResourceTemplate(
                uri_template=template, name=str(entry.get("name") or template),
                read=_template_reader(_reader(server, None)),
                title=entry.get("title") or None, description=_described(entry),
                mime_type=entry.get("mimeType") or None, requires=requires,
                complete=_completer(server, "resource", template),
            ))
        except ValueError as exc:
            server.notes.append(f"the resource template {template!r} cannot be mounted: {exc}")
    return made


def _template_reader(read: Callable[..., Any]) -> Callable[..., Any]:
    async def from_template(_variables: Mapping[str, str], context: PublishedContext) -> Any:
        return await read(context)

    from_template.__qualname__ = read.__qualname__
    return from_template


def _described(entry: Mapping[str, Any]) -> str | None:
    return " ".join(str(entry.get("description") or "").split()) or None


def _reader(server: MountedServer, uri: str | None) -> Callable[..., Any]:
    """``resources/read`` of ``uri`` (a template's: the URI being read, which the context
    names); the text read joins the conversation the read runs in, labelled as the
    server's ``trust`` table says (untrusted when it says nothing)."""

    async def read(context: PublishedContext) -> ResourceContents:
        target = uri or context.name
        answer = await _ask(
            server, lambda client: client.read_resource(target),
            f"resources/read of {target}", uri=target,
        )
        contents = _contents(server, target, answer)
        if contents.text:
            conversation = CURRENT.get()
            if conversation is not None:
                conversation.record(
                    f"mcp:{server.name} resource {target}", _labels(server),
                    ToolResult.success(contents.text),
                )
        return contents

    read.__qualname__ = f"mcp:{server.name} resources/read"
    return read


def _labels(server: MountedServer) -> Trust:
    trust = server.settings.trust
    if trust is None:
        return Trust(output="untrusted")
    return Trust(output=trust.output or "untrusted", private=trust.private is not False)


def _contents(server: MountedServer, uri: str, answer: Any) -> ResourceContents:
    """The first contents of a ``ReadResourceResult`` (text, or a blob decoded)."""
    if not answer.contents:
        raise PluginError(f"MCP server {server.name!r} read {uri} and returned no contents",
                          plugin=f"mcp:{server.name}")
    first = answer.contents[0]
    mime = first.mime_type
    text = getattr(first, "text", None)
    if text is not None:
        return ResourceContents(uri, mime or "text/plain", text=text)
    try:
        data = base64.b64decode(first.blob, validate=True)
    except (binascii.Error, ValueError):
        raise PluginError(f"MCP server {server.name!r} read {uri}: its blob is not base64",
                          plugin=f"mcp:{server.name}") from None
    return ResourceContents(uri, mime or "application/octet-stream", data=data)


def report(server: MountedServer) -> list[str]:
    """What ``toolplug doctor`` says of a server's prompts and resources (nothing when it
    offers none)."""
    listing = server.listing
    if listing is None or not (server.prompt_names or listing.resources or listing.templates):
        return []
    resources = [r for r in listing.resources if resource_selected(server.settings,
                                                                   str(r.get("uri", "")))]
    templates = [t for t in listing.templates if resource_selected(server.settings,
                                                                   str(t.get("uriTemplate", "")))]
    lines = [
        f"    published: {len(server.prompt_names)} prompt(s), {len(resources)} resource(s), "
        f"{len(templates)} resource template(s)"
    ]
    lines += [
        f"    withheld: the prompt {final} (scan rules {', '.join(rules)}; 'toolplug scan' "
        "shows the findings)"
        for final, rules in sorted(server.prompts_withheld.items())
    ]
    return lines
