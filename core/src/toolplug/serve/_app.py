"""The MCP server of ``toolplug serve``: the tool list, each call answered, ``--max-tools``.

Built on the official MCP SDK's low-level ``Server``: the tool list comes from the registry
at run time, not from decorated functions. Every call goes through ``Registry.acall``, the
path ``toolplug call`` takes (availability, validation, defaults, time limits, retries and
the ``tool_call`` hooks), and every failure comes back as an ``isError`` result the model
can read and act on, never as a protocol error or a crash.

Imported by ``toolplug.serve._server`` once it knows the SDK is installed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from jsonschema import Draft202012Validator
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

from toolplug.contract._errors import UsageError
from toolplug.contract._metadata import TRUST_ANNOTATIONS
from toolplug.contract._tool import ErrorType, ToolResult
from toolplug.contract._version import toolplug_version
from toolplug.render._export import export_tool
from toolplug.render._mcp import mcp_output_schema, structured_content
from toolplug.render._prompt import optional_tools_section
from toolplug.render._search import SEARCH_TOOLS, ToolSearch
from toolplug.schema._python import CODE_TOOL
from toolplug.serve._allow import call_bound, within
from toolplug.serve._approvals import (
    AskClient,
    InputRequired,
    approved_by_host,
    install_request_state,
)
from toolplug.serve._auth import access_token, may_call, owner_of, scopes_for
from toolplug.serve._content import content_blocks
from toolplug.serve._prompts import prompt_handlers
from toolplug.serve._published import Access, published_handlers
from toolplug.serve._resources import handlers, links
from toolplug.serve._shared import OwnListChanged, RedisBus, SharedLists
from toolplug.serve._spans import install_span_attributes, served_context
from toolplug.serve._talk import InputLater, install_talk
from toolplug.serve._task_extension import install_tasks
from toolplug.state._backend import Backend
from toolplug.state._conversations import Conversations
from toolplug.state._shared import open_backend
from toolplug.utilities._limits import DEFAULT_OUTPUT_CHARS, bounded, data_cut

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.types import (
        CallToolRequestParams,
        CallToolResult,
        InputRequiredResult,
        ListToolsResult,
    )
    from mcp.types import PaginatedRequestParams as PageParams

    from toolplug.config._config import Toolset
    from toolplug.config._settings import AuthSettings
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.runtime._registry import Registry
    from toolplug.serve._shutdown import Drain

__all__ = ["ERROR_META", "TRUST_ANNOTATIONS", "build_server", "error_text", "tool_scopes"]

log = logging.getLogger("toolplug")


def build_server(  # noqa: C901 - the server's handlers, each short, closed over its state
    registry: Registry, *, toolset: str | Toolset | None, max_tools: int | None,
    task: str | None, drain: Drain | None, auth: AuthSettings | None,
) -> Server[Any]:
    """The MCP server for the registry's available tools: ``toolplug.serve.build_server``
    (which says what each option does) once it has checked that the SDK is installed."""
    chosen = registry.select(toolset=toolset)
    served: dict[str, ToolMetadata] = {tool.name: tool.metadata for tool in chosen}
    in_toolset = registry.members(toolset) if toolset is not None else frozenset(registry.tools)
    listed = [
        types.Tool.model_validate(export_tool(meta, "mcp", labels=registry.labels(name)))
        for name, meta in served.items()
    ]
    checker = _OutputCheck()
    backend = _shared_backend(registry)  # the replicas' shared state, or None
    deferred = (
        _DeferredTools(registry, toolset, task, max_tools, served, backend=backend)
        if max_tools is not None and len(served) > max_tools
        else None
    )

    def answer(metadata: ToolMetadata | None, result: ToolResult, name: str) -> CallToolResult:
        replied = _answer(registry, metadata, result, checker)
        replied.content.extend(links(result, name))
        return replied

    def allowed(ctx: ServerRequestContext[Any], tools: list[types.Tool]) -> list[types.Tool]:
        if auth is None:
            return tools
        token = access_token(ctx)
        assert needed is not None
        return [t for t in tools if may_call(needed(t.name), token)]

    needed = tool_scopes(registry, auth) if auth is not None else None

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PageParams | None
    ) -> ListToolsResult:
        if deferred is not None:
            return types.ListToolsResult(tools=allowed(ctx, await deferred.listed(ctx)))
        return types.ListToolsResult(
            tools=allowed(ctx, [tool.model_copy(deep=True) for tool in listed])
        )

    bound = registry.config.serve.allow  # the operator's: every served conversation's
    conversations = Conversations(
        lambda: registry.conversation(None, allow=bound), backend, most=_MAX_SESSIONS
    )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        if drain is None:
            return await answer_call(ctx, params)
        key = (_session_key(ctx), ctx.request_id)
        return await drain.call(key, params.name, lambda: answer_call(ctx, params))

    async def answer_call(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        name = params.name
        try:
            asked_for, malformed = call_bound(ctx.meta)  # the client's _meta["toolplug/allow"]
            if malformed is not None:
                result = _within_budget(malformed, params)
            elif deferred is not None and name == deferred.name:
                result = _within_budget(await deferred.answer(ctx, params.arguments), params)
            elif name in registry.tools and name not in in_toolset:
                result = _within_budget(_outside_toolset(name, toolset, served), params)
            else:
                channel = talking.channel(ctx, params)  # progress, log, ask, sample
                host: dict[str, Any] = {"transport": "mcp", "client": owner_of(ctx)}
                host.update(served_context(ctx))
                if channel.reporter is not None:
                    host["progress"] = channel.reporter
                approver = AskClient(ctx, channel.params)
                try:
                    async with (
                        conversations.of(host["client"], _session_key(ctx)) as conversation,
                        within(conversation, asked_for),  # inside the operator's bound
                    ):
                        arguments = params.arguments or {}
                        # The host's own approval ([serve] approvals = "client") did not see
                        # what the flow guard sees: a call it would ask about is asked here.
                        approved = approved_by_host(registry, name) and (
                            await registry.aguard_reason(name, arguments) is None
                        )
                        result = await registry.acall(
                            name, arguments, context=host, approver=approver,
                            approved=approved, passthrough=(InputRequired, InputLater),
                            channel=channel,
                        )
                except (InputRequired, InputLater) as asking:  # a modern client: the retry answers
                    return asking.result()
                finally:
                    await channel.finished()
                result = approver.unasked_result(result)
            return answer(served.get(name), result, name)
        except Exception as exc:  # never let one call take the server down
            log.exception("serving the MCP call of %.100s failed", name)
            failed = ToolResult.failure(
                ErrorType.EXECUTION, registry.redact(f"{name} failed: {type(exc).__name__}: {exc}")
            )
            return _answer(registry, None, _within_budget(failed, params), checker)

    has_optional = any(meta.optionality == "optional" for meta in served.values())
    instructions = optional_tools_section(registry, toolset=toolset) if has_optional else None
    server_class = Server
    listen: dict[str, Any] = {}
    if deferred is not None:
        server_class = _announcing_list_changes(Server)
        instructions = deferred.instructions()
        listen["on_subscriptions_listen"] = deferred.listen
    access = Access(registry, auth)  # the plugins' prompts and resources each token may see
    server = server_class(
        "toolplug",
        version=toolplug_version() or "0",
        title="toolplug tools",
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        **handlers(registry, access),
        **published_handlers(registry, access),  # subscriptions, completions (serve/_published.py)
        **prompt_handlers(
            registry, toolset=toolset, task=task, max_tools=max_tools, access=access
        ),
        **listen,
    )
    # calls as tasks, for clients that ask, in the same conversations as plain calls
    install_tasks(
        server, registry, served, answer, conversations=conversations, session=_session_key
    )
    # approvals asked of modern clients (serve/_approvals.py)
    install_request_state(server, registry.config.calls.store)
    # the session and transport on the SDK's span of each request (serve/_spans.py)
    install_span_attributes(server)
    # logging/setLevel, and each call's channel (serve/_talk.py)
    talking = install_talk(server, registry.config.serve.progress_interval_seconds)
    return server


def tool_scopes(registry: Registry, auth: AuthSettings) -> Callable[[str], list[str]]:
    """What a call of each tool needs (``scopes_for``); ``search_tools`` only reads, and
    ``run_code`` needs, besides its own, the scopes of every tool a program may call (a
    program must not reach a tool its caller could not call)."""
    def own(name: str) -> list[str]:
        tool = registry.tools.get(name)
        if tool is None and name == SEARCH_TOOLS:
            return sorted({*auth.required_scopes, auth.read_scope})
        return scopes_for(name, tool.metadata if tool else None, registry, auth)

    known: dict[str, list[str]] = {}  # the configuration does not change while serving

    def needed(name: str) -> list[str]:
        found = known.get(name)
        if found is not None:
            return found
        if name != CODE_TOOL or name not in registry.tools:
            found = own(name)
        else:
            toolset = registry.config.code.toolset
            reachable = registry.members(toolset) if toolset is not None else registry.tools
            found = sorted(set(own(name)).union(*(own(t) for t in reachable if t != CODE_TOOL)))
        if len(known) < 10_000:  # names a client made up are not kept without bound
            known[name] = found
        return found

    return needed


# -- serve --max-tools: a short list per session, grown by search_tools ----------------


class _DeferredTools:
    """Each client's tool list under ``--max-tools``, and the ``search_tools`` that grows it.

    A client is its owner (``owner_of``): the verified principal under ``[serve.auth]``,
    else the ``Mcp-Session-Id`` of a streamable HTTP session, else over stdio the one client
    of the process. A client with none of these is served statelessly: it is
    listed the short list each time, and ``search_tools`` answers with the definitions of
    what it found, which it may call (every served tool can be called, listed or not).
    A grown list is announced with ``notifications/tools/list_changed`` to a session, and
    as an event on the ``subscriptions/listen`` streams of its owner (``_OwnersListen``).
    """

    def __init__(
        self,
        registry: Registry,
        toolset: str | Toolset | None,
        task: str | None,
        max_tools: int,
        served: Mapping[str, ToolMetadata],
        *,
        backend: Backend | None,
    ) -> None:
        if SEARCH_TOOLS in served:
            raise UsageError(
                f"--max-tools adds a tool named {SEARCH_TOOLS}, and an installed tool has that "
                "name already; serve without --max-tools, or leave that tool out of the toolset"
            )
        self.name = SEARCH_TOOLS
        self._registry = registry
        self._options: dict[str, Any] = {"task": task, "max_tools": max_tools, "toolset": toolset}
        self._sessions: dict[str, Any] = {}
        store = registry.config.calls.store
        self._shared = SharedLists(backend) if backend is not None else None
        self.bus: InMemorySubscriptionBus | RedisBus = (
            RedisBus(store) if store != "memory" else InMemorySubscriptionBus()
        )
        self.listen = _OwnersListen(self.bus)

    def instructions(self) -> str:
        """The optional-tools section of the tools listed at first, and where the rest are."""
        section = optional_tools_section(self._registry, **self._options)
        return (
            f"{section.rstrip()}\n\nMore tools are installed than listed: call {self.name} "
            "with what you need a tool for, and the tools it finds join your list."
        ).lstrip()

    def _search(self, ctx: ServerRequestContext[Any]) -> Any:
        key = owner_of(ctx)
        if key is None:  # nobody to keep a list for: the short list, every time
            return ToolSearch(self._registry, "mcp", **self._options)
        session = self._sessions.get(key)
        if session is None:
            if len(self._sessions) >= _MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))  # the oldest
            session = self._sessions[key] = ToolSearch(self._registry, "mcp", **self._options)
        return session

    async def listed(self, ctx: ServerRequestContext[Any]) -> list[Any]:
        search = self._search(ctx)
        if isinstance(self.bus, RedisBus):
            await self.bus.started()
        key = owner_of(ctx)
        if self._shared is not None and key is not None and key.startswith("principal:"):
            search.load(await self._shared.names(key))  # what other replicas' searches added
        return [types.Tool.model_validate(tool) for tool in search.definitions()]

    async def answer(self, ctx: ServerRequestContext[Any], arguments: Any) -> ToolResult:
        result: ToolResult = self._search(ctx).answer(arguments)
        key = owner_of(ctx)
        if key is None or not (result.ok and isinstance(result.data, dict)):
            return result
        if result.data.get("added"):
            if self._shared is not None and key.startswith("principal:"):
                await self._shared.add(key, list(result.data["added"]))

            await self.bus.publish(OwnListChanged(key))  # this owner's listen streams
            if not _stateless(ctx):  # a session: it hears notifications
                try:
                    await ctx.session.send_tool_list_changed()
                except Exception:  # the search still answers; the client can list again
                    log.warning("could not send notifications/tools/list_changed", exc_info=True)
        return result


_MAX_SESSIONS: Final = 1024

_LISTENER: ContextVar[str | None] = ContextVar("toolplug_listener", default=None)
"""The owner of the ``subscriptions/listen`` stream being opened (``_OwnersListen``)."""


class _OwnersListen:
    """``subscriptions/listen`` (the SDK's ``ListenHandler``), where an owner's list change
    reaches that owner's streams only: another principal learns nothing of its searches,
    and lists nothing again for a change that is not its own."""

    def __init__(self, bus: InMemorySubscriptionBus | RedisBus) -> None:
        self._handler = ListenHandler(_OwnersBus(bus))

    async def __call__(self, ctx: ServerRequestContext[Any], params: Any) -> Any:
        opened = _LISTENER.set(owner_of(ctx))  # read when the handler subscribes
        try:
            return await self._handler(ctx, params)
        finally:
            _LISTENER.reset(opened)


class _OwnersBus:
    """A ``SubscriptionBus`` over another, whose each listener is one listen stream's and
    hears an ``OwnListChanged`` only when the stream's owner is the one whose list changed
    (a stream with no owner has no list that could)."""

    def __init__(self, bus: InMemorySubscriptionBus | RedisBus) -> None:
        self._bus = bus

    async def publish(self, event: Any) -> None:
        await self._bus.publish(event)

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        owner = _LISTENER.get()

        def owners(event: Any) -> None:
            if not isinstance(event, OwnListChanged) or event.owner == owner:
                listener(event)

        return self._bus.subscribe(owners)


def _shared_backend(registry: Registry) -> Backend | None:
    """The replicas' shared state backend (``[calls] store`` on Redis), or None."""
    store = registry.config.calls.store
    return None if store == "memory" else open_backend(store, entries=_MAX_SESSIONS)


def _stateless(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the request came over HTTP without a session (it hears no notifications)."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    return headers is not None and not headers.get("mcp-session-id")


def _session_key(ctx: ServerRequestContext[Any]) -> str:
    """Which client a request in flight comes from, for the drain: ``stdio``, the HTTP
    session, or (a stateless client, whose request ids may repeat another's) the request."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    if headers is None:
        return "stdio"
    session_id = headers.get("mcp-session-id")
    return str(session_id) if session_id else f"request:{id(ctx)}"


def _announcing_list_changes(server: type[Server[Any]]) -> type[Server[Any]]:
    """The server class, declaring ``tools.listChanged`` in its capabilities."""
    class Announcing(server):  # type: ignore[valid-type, misc]
        def create_initialization_options(
            self,
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> Any:
            options = notification_options or NotificationOptions(tools_changed=True)
            return super().create_initialization_options(
                options, experimental_capabilities, extensions
            )

    return Announcing



# -- answers ------------------------------------------------------------------------


class _OutputCheck:
    """Validators of declared output schemas, compiled once per tool."""

    def __init__(self) -> None:
        self._validators: dict[str, Any] = {}

    def problem(self, metadata: ToolMetadata, schema: dict[str, Any], value: Any) -> str | None:
        validator = self._validators.get(metadata.name)
        if validator is None:
            validator = Draft202012Validator(schema)
            self._validators[metadata.name] = validator
        errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path)))
        if not errors:
            return None
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
        return f"at {where}: {errors[0].message}"


def _answer(
    registry: Registry, metadata: ToolMetadata | None, result: ToolResult, check: _OutputCheck
) -> CallToolResult:
    structured = None
    if result.ok and metadata is not None:
        schema = mcp_output_schema(metadata)
        if schema is not None:
            content = structured_content(
                metadata,
                result.data,
                warnings=result.warnings,
                citations=[c.to_dict() for c in result.citations],
            )
            structured = registry.redactor.redact_data(content)
            problem = check.problem(metadata, schema, structured)
            if problem is not None and data_cut(result):
                # The output budget cut the data (or left it out) and what is left breaks
                # the schema: no plugin bug. A success must carry structuredContent that
                # matches (clients check, and refuse a success without it), so the reply
                # goes as an error result, its text (which says the call succeeded and what
                # was cut) unchanged.
                log.info(
                    "%s: the data cut to fit the output budget no longer matches its returns "
                    "schema %s; answered as an error result",
                    metadata.name,
                    problem,
                )
                text = types.TextContent(type="text", text=result.for_model())
                return types.CallToolResult(content=[text], is_error=True)
            if problem is not None:
                # A client checks structuredContent against outputSchema; a mismatch is the
                # plugin's bug, reported as such rather than as a protocol violation.
                log.error(
                    "%s returned data that breaks its returns schema %s", metadata.name, problem
                )
                result = ToolResult.failure(
                    ErrorType.EXECUTION,
                    f"{metadata.name} returned data that does not match its declared "
                    f"returns schema {problem}",
                )
                structured = None
    # Results are redacted once, by the engine (replies made here carry no secrets).
    if result.error is not None:
        return _failed(result)
    blocks = content_blocks(result)  # the text, then each part as its MCP type
    meta = _trust_meta(result)
    if structured is not None:
        return types.CallToolResult(content=blocks, structured_content=structured, _meta=meta)
    return types.CallToolResult(content=blocks, _meta=meta)




def _trust_meta(result: ToolResult) -> dict[str, Any] | None:
    """The result's labels as the trust annotations extension writes them: ``untrusted``
    (anyone outside could have written it) and ``sensitive`` (the user's private data)."""
    trust = result.trust
    if trust is None:
        return None
    return {TRUST_ANNOTATIONS: {"untrusted": trust.untrusted, "sensitive": trust.private}}


ERROR_META: Final = "toolplug/error"
"""The ``_meta`` key of an error result's structured error, for hosts."""


def _failed(result: ToolResult) -> CallToolResult:
    """An error result, encoded once: prose the model reads, ``isError``, and the error's
    fields in ``_meta`` for a host.

    The text is not JSON on purpose: a client that hands the model its own wrapping of an
    error (pydantic-ai's ``{"error": "..."}``) would otherwise send JSON inside a JSON
    string. There is no ``structuredContent`` either: pydantic-ai prefers it to the text on
    an error and would encode it the same way, and no client checks it on an error.
    """
    assert result.error is not None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=error_text(result))],
        is_error=True,
        _meta={ERROR_META: result.to_dict(), **(_trust_meta(result) or {})},
    )


def error_text(result: ToolResult) -> str:
    """What a model reads of an error result: its type and message, and whether to retry."""
    assert result.error is not None
    error = result.error
    if error.retry_possible:
        after = error.details.get("retry_after_seconds")
        when = f", after {after:g} seconds" if isinstance(after, int | float) else ""
        advice = f"retry_possible: true (the same call may succeed if made again{when})"
    elif error.type == ErrorType.APPROVAL_REQUIRED:
        advice = "retry_possible: false (not until a person approves it)"
    else:
        advice = (
            "retry_possible: false (the same call would fail the same way: change what the "
            "message names, or go on without this tool)"
        )
    return f"{error.type}: {error.message}\n{advice}"


def _within_budget(result: ToolResult, params: CallToolRequestParams) -> ToolResult:
    """A reply made here rather than by a call, bounded as a call's would be."""
    return bounded(result, {"name": params.name, **(params.arguments or {})}, DEFAULT_OUTPUT_CHARS)


def _outside_toolset(
    name: str, toolset: str | Toolset | None, served: Mapping[str, ToolMetadata]
) -> ToolResult:
    label = toolset if isinstance(toolset, str) else getattr(toolset, "name", "the chosen one")
    offered = ", ".join(served) or "none"
    return ToolResult.failure(
        ErrorType.NOT_FOUND,
        f"{name} is not offered by this server (toolset {label}); available tools: {offered}",
    )
