"""The plugins' prompts and resources over MCP: their listings, reads, subscriptions and
completions.

``serve/_prompts.py`` lists the plugins' prompts after ``optional_tools`` and answers
``prompts/get`` for them here; ``serve/_resources.py`` lists their resources and templates
beside the kept outputs and reads them here. This module also answers
``resources/subscribe`` and ``resources/unsubscribe`` (per session: a plugin's
``resource_changed(uri)`` reaches the sessions subscribed to that URI as
``notifications/resources/updated``, and no other) and ``completion/complete`` (a
plugin prompt's arguments, a template's variables).

Under ``[serve.auth]`` each item needs scopes (``published_scopes``: ``read_scope``, or its
mounted server's ``scopes``, with ``required_scopes``): the listings show a principal only
what its token allows, and ``prompts/get``, ``resources/read``, ``resources/subscribe`` and
``completion/complete`` of an item it does not allow are refused with -32600
(``data.error`` "insufficient_scope", ``data.scopes`` what it needs) before anything of the
item is read.

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
from toolplug.serve._auth import access_token, may_call, owner_of, published_scopes, refusal
from toolplug.serve._content import part_block

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.session import ServerSession

    from toolplug.config._settings import AuthSettings
    from toolplug.contract._published import Prompt, Resource, ResourceTemplate
    from toolplug.runtime._registry import Registry

__all__ = [
    "RESOURCE_NOT_FOUND",
    "Access",
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


# -- who may see what ---------------------------------------------------------------------

_Item = Any  # a Prompt, Resource or ResourceTemplate


class Access:
    """Which published items a request's token allows (all of them without ``[serve.auth]``)."""

    def __init__(self, registry: Registry, auth: AuthSettings | None) -> None:
        self._registry, self._auth = registry, auth

    def allows(self, ctx: ServerRequestContext[Any], item: _Item) -> bool:
        if self._auth is None:
            return True
        return may_call(published_scopes(item, self._registry, self._auth), access_token(ctx))

    def shown(self, ctx: ServerRequestContext[Any], items: list[Any]) -> list[Any]:
        """The items the request's token allows."""
        return [item for item in items if self.allows(ctx, item)]

    def check(self, ctx: ServerRequestContext[Any], item: _Item | None, what: str) -> None:
        """Refuse (-32600 naming the scopes) when the token does not allow ``item``; an
        item that is not there (None) is for the caller to answer."""
        if item is None or self._auth is None or self.allows(ctx, item):
            return
        needed = published_scopes(item, self._registry, self._auth)
        raise MCPError(
            types.INVALID_REQUEST, refusal(what, needed, access_token(ctx)),
            data={"error": "insufficient_scope", "scopes": needed},
        )

    def for_uri(self, uri: str) -> _Item | None:
        """The offered resource of that URI, else the first offered template it matches."""
        registry = self._registry
        found = next((r for r in registry.resources() if r.uri == uri), None)
        if found is not None:
            return found
        return next((t for t in registry.resource_templates() if t.match(uri) is not None), None)

    def prompt(self, name: str) -> _Item | None:
        return next((p for p in self._registry.prompts() if p.name == name), None)

    def template(self, uri_template: str) -> _Item | None:
        templates = self._registry.resource_templates()
        return next((t for t in templates if t.uri_template == uri_template), None)


# -- prompts -------------------------------------------------------------------------------


def listed_prompts(
    registry: Registry, ctx: ServerRequestContext[Any], access: Access
) -> list[types.Prompt]:
    """The plugins' offered prompts the request's token allows, as MCP lists them."""
    return [_prompt(p) for p in access.shown(ctx, registry.prompts())]


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
    *, own: str, access: Access,
) -> types.GetPromptResult:
    """``prompts/get`` of a plugin's prompt: its messages, text redacted. ``own`` is the
    server's own prompt, named too when the prompt asked for is unknown."""
    access.check(ctx, access.prompt(params.name), f"getting the prompt {params.name}")
    try:
        rendered = await registry.aget_prompt(
            params.name, params.arguments or {}, context=_host(ctx)
        )
    except (PublishedError, PluginError) as exc:
        if isinstance(exc, PublishedError) and exc.kind == "unknown_prompt":
            shown = access.shown(ctx, registry.prompts())
            offered = ", ".join(repr(n) for n in [own, *(p.name for p in shown)])
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


def listed_resources(
    registry: Registry, ctx: ServerRequestContext[Any], access: Access
) -> list[types.Resource]:
    """The plugins' offered resources the request's token allows, as MCP lists them."""
    return [_resource(r) for r in access.shown(ctx, registry.resources())]


def _resource(item: Resource) -> types.Resource:
    return types.Resource(
        uri=item.uri, name=item.name, title=item.title, description=item.description,
        mime_type=item.mime_type,
    )


def listed_templates(
    registry: Registry, ctx: ServerRequestContext[Any], access: Access
) -> list[types.ResourceTemplate]:
    """The plugins' offered resource templates the request's token allows, as MCP lists
    them."""
    return [_template(t) for t in access.shown(ctx, registry.resource_templates())]


def _template(item: ResourceTemplate) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        uri_template=item.uri_template, name=item.name, title=item.title,
        description=item.description, mime_type=item.mime_type,
    )


async def read_published(
    registry: Registry, ctx: ServerRequestContext[Any], uri: str, access: Access
) -> types.ReadResourceResult:
    """``resources/read`` of a plugin's resource: text (redacted) or a blob."""
    access.check(ctx, access.for_uri(uri), f"reading {uri}")
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

    def __init__(self, access: Access) -> None:
        self._access = access
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
        uri = str(params.uri)
        self._access.check(ctx, self._access.for_uri(uri), f"subscribing to {uri}")
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


def published_handlers(registry: Registry, access: Access) -> dict[str, Any]:
    """``on_subscribe_resource``, ``on_unsubscribe_resource`` and ``on_completion`` of the
    low-level ``Server``."""
    subscriptions = Subscriptions(access)

    async def complete(
        ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref = params.ref
        others = dict(params.context.arguments or {}) if params.context else {}
        values: list[str] = []
        if isinstance(ref, types.PromptReference):
            item, what = access.prompt(ref.name), f"completing the prompt {ref.name}"
        else:
            item, what = access.template(ref.uri), f"completing {ref.uri}"
        access.check(ctx, item, what)
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
