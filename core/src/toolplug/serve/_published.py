"""The plugins' prompts and resources over MCP: their listings, reads, subscriptions and
completions.

``serve/_prompts.py`` lists the plugins' prompts after ``optional_tools`` and answers
``prompts/get`` for them here; ``serve/_resources.py`` lists their resources and templates
beside the kept outputs and reads them here. This module also answers
``resources/subscribe`` and ``resources/unsubscribe`` (per session: a plugin's
``resource_changed(uri)`` reaches the sessions subscribed to that URI as
``notifications/resources/updated``, and no other) and ``completion/complete`` (a
plugin prompt's arguments, a template's variables).

Bad input is the client's error: an unknown URI is -32002 "resource not found" naming it
(in ``data.uri`` too), an unknown prompt or a missing or unknown argument -32602 naming it.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, NoReturn

from mcp import types
from mcp.shared.exceptions import MCPError

from toolplug.contract._errors import PluginError, PublishedError
from toolplug.contract._published import watch_resources
from toolplug.serve._auth import owner_of
from toolplug.serve._content import part_block

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.session import ServerSession

    from toolplug.contract._published import Prompt, Resource, ResourceTemplate
    from toolplug.runtime._registry import Registry

__all__ = [
    "RESOURCE_NOT_FOUND",
    "get_prompt",
    "listed_prompts",
    "listed_resources",
    "listed_templates",
    "published_handlers",
    "read_published",
]

log = logging.getLogger("toolplug")

RESOURCE_NOT_FOUND: Final = -32002
"""The JSON-RPC code of ``resources/read`` for a URI nothing here has (MCP 2025-11-25)."""
_MAX_SESSIONS: Final = 1024


def _host(ctx: ServerRequestContext[Any]) -> dict[str, Any]:
    return {"transport": "mcp", "client": owner_of(ctx)}


def _refused(exc: PublishedError | PluginError) -> NoReturn:
    if isinstance(exc, PublishedError) and exc.kind == "unknown_resource":
        raise MCPError(RESOURCE_NOT_FOUND, str(exc), data={"uri": exc.uri}) from None
    if isinstance(exc, PublishedError):
        data = {k: v for k in ("prompt", "uri", "argument") if (v := getattr(exc, k))}
        raise MCPError(types.INVALID_PARAMS, str(exc), data=data or None) from None
    log.error("%s", exc)  # the plugin's bug: the client learns that it failed, not why
    raise MCPError(types.INTERNAL_ERROR, "the plugin failed to answer; see the server's log")


# -- prompts -------------------------------------------------------------------------------


def listed_prompts(registry: Registry) -> list[types.Prompt]:
    """The plugins' offered prompts, as MCP lists them."""
    return [_prompt(p) for p in registry.prompts()]


def _prompt(prompt: Prompt) -> types.Prompt:
    return types.Prompt(
        name=prompt.name, title=prompt.title, description=prompt.description,
        arguments=[
            types.PromptArgument(name=a.name, description=a.description or None,
                                 required=a.required)
            for a in prompt.arguments
        ],
    )


async def get_prompt(
    registry: Registry, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams,
    *, own: str,
) -> types.GetPromptResult:
    """``prompts/get`` of a plugin's prompt: its messages, text redacted. ``own`` is the
    server's own prompt, named too when the prompt asked for is unknown."""
    try:
        rendered = await registry.aget_prompt(
            params.name, params.arguments or {}, context=_host(ctx)
        )
    except (PublishedError, PluginError) as exc:
        if isinstance(exc, PublishedError) and exc.kind == "unknown_prompt":
            offered = ", ".join(repr(n) for n in [own, *(p.name for p in registry.prompts())])
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown prompt {params.name!r}; this server offers {offered}",
                data={"prompt": params.name},
            ) from None
        _refused(exc)
    messages = [
        types.PromptMessage(
            role=m.role,
            content=types.TextContent(type="text", text=m.content)
            if isinstance(m.content, str) else part_block(m.content),
        )
        for m in rendered.messages
    ]
    return types.GetPromptResult(description=rendered.description, messages=messages)


# -- resources -----------------------------------------------------------------------------


def listed_resources(registry: Registry) -> list[types.Resource]:
    """The plugins' offered resources, as MCP lists them."""
    return [_resource(r) for r in registry.resources()]


def _resource(item: Resource) -> types.Resource:
    return types.Resource(
        uri=item.uri, name=item.name, title=item.title, description=item.description,
        mime_type=item.mime_type,
    )


def listed_templates(registry: Registry) -> list[types.ResourceTemplate]:
    """The plugins' offered resource templates, as MCP lists them."""
    return [_template(t) for t in registry.resource_templates()]


def _template(item: ResourceTemplate) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        uri_template=item.uri_template, name=item.name, title=item.title,
        description=item.description, mime_type=item.mime_type,
    )


async def read_published(
    registry: Registry, ctx: ServerRequestContext[Any], uri: str
) -> types.ReadResourceResult:
    """``resources/read`` of a plugin's resource: text (redacted) or a blob."""
    try:
        found = await registry.aread_resource(uri, context=_host(ctx))
    except (PublishedError, PluginError) as exc:
        _refused(exc)
    contents: types.TextResourceContents | types.BlobResourceContents
    if found.text is not None:
        contents = types.TextResourceContents(uri=uri, mime_type=found.mime_type, text=found.text)
    else:
        blob = base64.b64encode(found.data or b"").decode("ascii")
        contents = types.BlobResourceContents(uri=uri, mime_type=found.mime_type, blob=blob)
    return types.ReadResourceResult(contents=[contents])


# -- subscriptions and completions ---------------------------------------------------------


def _session_of(ctx: ServerRequestContext[Any]) -> str | None:
    """Which session a request comes from: ``stdio``, the HTTP session, or None (a
    stateless HTTP client, which hears no notifications)."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    if headers is None:
        return "stdio"
    session_id = headers.get("mcp-session-id")
    return str(session_id) if session_id else None


class Subscriptions:
    """Each session's subscribed URIs, and the notifications a change sends them."""

    def __init__(self) -> None:
        self._sessions: dict[str, tuple[ServerSession, set[str]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        # held weakly: a server that is gone (one built per test, say) hears nothing more
        heard = weakref.WeakMethod(self.changed)
        stop: list[Callable[[], None]] = []

        def watcher(uri: str) -> None:
            method = heard()
            if method is not None:
                method(uri)
            elif stop:
                stop.pop()()

        stop.append(watch_resources(watcher))

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        key = _session_of(ctx)
        self._loop = asyncio.get_running_loop()
        if key is not None:
            _old, uris = self._sessions.pop(key, (None, set()))
            uris.add(str(params.uri))
            if len(self._sessions) >= _MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))  # the oldest
            self._sessions[key] = (ctx.session, uris)  # its notifications go on the session
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        key = _session_of(ctx)
        if key is not None and key in self._sessions:
            self._sessions[key][1].discard(str(params.uri))
        return types.EmptyResult()

    def changed(self, uri: str) -> None:
        """``resource_changed(uri)``, from any thread: notify the sessions subscribed."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(lambda: loop.create_task(self._notify(uri)))

    async def _notify(self, uri: str) -> None:
        for key, (session, uris) in list(self._sessions.items()):
            if uri not in uris:
                continue
            try:
                await session.send_resource_updated(uri)
            except Exception:  # a session gone away: forget it
                log.debug("notifications/resources/updated not sent to %s", key, exc_info=True)
                self._sessions.pop(key, None)


def published_handlers(registry: Registry) -> dict[str, Any]:
    """``on_subscribe_resource``, ``on_unsubscribe_resource`` and ``on_completion`` of the
    low-level ``Server``."""
    subscriptions = Subscriptions()

    async def complete(
        ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref = params.ref
        others = dict(params.context.arguments or {}) if params.context else {}
        values: list[str] = []
        try:
            if isinstance(ref, types.PromptReference):
                if any(p.name == ref.name for p in registry.prompts()):
                    values = await registry.acomplete(
                        "prompt", ref.name, params.argument.name, params.argument.value, others
                    )
                elif ref.name != "optional_tools":  # toolplug's own: nothing to suggest
                    registry.published.prompt(ref.name)  # raises, naming it
            else:
                values = await registry.acomplete(
                    "resource", ref.uri, params.argument.name, params.argument.value, others
                )
        except (PublishedError, PluginError) as exc:
            _refused(exc)
        shown = values[:100]  # MCP's most per answer
        return types.CompleteResult(
            completion=types.Completion(
                values=shown, total=len(values), has_more=len(values) > len(shown)
            )
        )

    return {
        "on_subscribe_resource": subscriptions.subscribe,
        "on_unsubscribe_resource": subscriptions.unsubscribe,
        "on_completion": complete,
    }
