"""``toolplug serve``: the available tools as an MCP server, over stdio or streamable HTTP.

Built on the official MCP SDK's low-level ``Server``: the tool list comes from the registry
at run time, not from decorated functions. Every call goes through ``Registry.acall``, the
path ``toolplug call`` takes (availability, validation, defaults, time limits, retries and
the ``tool_call`` hooks), and every failure comes back as an ``isError`` result the model
can read and act on, never as a protocol error or a crash.

The SDK is optional (``pip install "toolplug[mcp]"``) and imported only when serving.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._errors import UsageError
from toolplug.serve._resources import client_key
from toolplug.serve._shared import RedisBus
from toolplug.serve._shutdown import DEFAULT_GRACE_SECONDS, Drain

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult
    from mcp.types import PaginatedRequestParams as PageParams

    from toolplug.contract._approval import Approval, ApprovalRequest
    from toolplug.contract._metadata import ToolMetadata
    from toolplug.contract._tool import ToolResult
    from toolplug.runtime._config import Toolset
    from toolplug.runtime._registry import Registry

__all__ = ["INSTALL_LINE", "build_server", "parse_address", "serve"]

log = logging.getLogger("toolplug")

INSTALL_LINE: Final = 'pip install "toolplug[mcp]"'
"""What to run when the MCP SDK is missing."""

HTTP_PATH: Final = "/mcp"
"""Where the streamable HTTP endpoint answers."""

_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})


def serve(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    http: str | None = None,
    max_tools: int | None = None,
    task: str | None = None,
    grace: float = DEFAULT_GRACE_SECONDS,
) -> None:
    """Serve the registry's available tools over MCP until the client or a signal ends it.

    On SIGTERM or SIGINT the server takes no new requests, lets the calls in flight finish
    for up to ``grace`` seconds, answers each call still running then with a JSON-RPC
    error, and ends the way the signal ends a process (SIGINT raises KeyboardInterrupt).

    Args:
        registry: The loaded tools (``toolplug.load()``).
        toolset: Offer only this toolset's tools.
        http: ``HOST:PORT`` (or ``PORT``, or ``[IPv6]:PORT``) to serve streamable HTTP at
            ``http://HOST:PORT/mcp``; stdio when None.
        max_tools: List at most this many tools, and ``search_tools``, which adds the tools
            it finds to the session's list (see ``build_server``).
        task: With ``max_tools``: list the tools most relevant to this task first.
        grace: Seconds the calls in flight may take to finish once shutdown begins.

    Raises:
        UsageError: the MCP SDK is not installed, the toolset is unknown, the address is
            malformed, the port cannot be opened, or ``grace`` is negative.
    """
    if not grace >= 0:
        raise UsageError(f"the shutdown grace is a number of seconds, 0 or more; got {grace}")
    address = parse_address(http) if http is not None else None
    drain = Drain(grace)
    server = build_server(registry, toolset=toolset, max_tools=max_tools, task=task, drain=drain)
    try:
        if address is None:
            import anyio

            from toolplug.serve._stdio import serve_stdio

            received = anyio.run(serve_stdio, server, drain)
        else:
            received = _serve_http(server, *address, drain)
    finally:
        registry.close()
    if received is not None:
        # Every call is answered and the registry closed: end as the signal would have.
        signal.raise_signal(received)


def build_server(
    registry: Registry,
    *,
    toolset: str | Toolset | None = None,
    max_tools: int | None = None,
    task: str | None = None,
    drain: Drain | None = None,
) -> Server[Any]:
    """The MCP server for the registry's available tools (optionally one toolset's).

    With ``max_tools``, each session's ``tools/list`` starts with the ``max_tools`` tools
    most relevant to ``task`` and ``search_tools``; a search adds the tools it finds to that
    session's list and sends ``notifications/tools/list_changed``. Every available tool can
    be called at any time, listed or not. With ``drain``, each call is in flight there until
    it is answered, and shutdown can refuse or cancel it.

    Raises:
        UsageError: the MCP SDK is not installed, or the toolset is unknown.
    """
    _require_mcp()
    from mcp import types
    from mcp.server.lowlevel import Server

    from toolplug.render._export import export_tool
    from toolplug.render._prompt import optional_tools_section
    from toolplug.serve._resources import handlers, links

    chosen = registry.select(toolset=toolset)
    served: dict[str, ToolMetadata] = {tool.name: tool.metadata for tool in chosen}
    in_toolset = registry.members(toolset) if toolset is not None else frozenset(registry.tools)
    listed = [types.Tool.model_validate(export_tool(meta, "mcp")) for meta in served.values()]
    checker = _OutputCheck()
    deferred = (
        _DeferredTools(registry, toolset, task, max_tools, served)
        if max_tools is not None and len(served) > max_tools
        else None
    )

    def answer(metadata: ToolMetadata | None, result: ToolResult, name: str) -> CallToolResult:
        replied = _answer(registry, metadata, result, checker)
        replied.content.extend(links(result, name))
        return replied

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PageParams | None
    ) -> ListToolsResult:
        if deferred is not None:
            return types.ListToolsResult(tools=await deferred.listed(ctx))
        return types.ListToolsResult(tools=[tool.model_copy(deep=True) for tool in listed])

    conversations = _Conversations(registry)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        if drain is None:
            return await answer_call(ctx, params)
        key = (_session_key(ctx), ctx.request_id)
        return await drain.call(key, params.name, lambda: answer_call(ctx, params))

    async def answer_call(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        name = params.name
        try:
            if deferred is not None and name == deferred.name:
                result = _within_budget(await deferred.answer(ctx, params.arguments), params)
            elif name in registry.tools and name not in in_toolset:
                result = _within_budget(_outside_toolset(name, toolset, served), params)
            else:
                progress = _Progress.asked_by(ctx)
                host: dict[str, Any] = {"transport": "mcp", "client": client_key(ctx)}
                if progress is not None:
                    host["progress"] = progress
                try:
                    with conversations.of(host["client"]):
                        result = await registry.acall(
                            name, params.arguments or {}, context=host, approver=_Elicit(ctx)
                        )
                finally:
                    if progress is not None:
                        await progress.sent()
            return answer(served.get(name), result, name)
        except Exception as exc:  # never let one call take the server down
            log.exception("serving the MCP call of %.100s failed", name)
            from toolplug.contract._tool import ErrorType, ToolResult

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
    server = server_class(
        "toolplug",
        version=_version(),
        title="toolplug tools",
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        **handlers(registry),
        **listen,
    )
    from toolplug.serve._tasks import install_tasks

    install_tasks(server, registry, served, answer)  # calls as tasks, for clients that ask
    return server


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``PORT`` (on 127.0.0.1) as ``(host, port)``.

    Raises:
        UsageError: the text is not an address with a port from 0 to 65535.
    """
    raw = text.strip()
    if raw.isdigit():
        host, port = "", raw
    elif raw.startswith("["):
        host, found, port = raw[1:].partition("]:")
        port = port if found else ""
    else:
        host, _, port = raw.rpartition(":")
        if ":" in host:  # a bare IPv6 address: ambiguous without brackets
            port = ""
    if not port.isdigit() or int(port) > 65535:
        raise UsageError(
            "--http expects HOST:PORT (such as 127.0.0.1:8000), [IPv6]:PORT or a port alone; "
            f"received {text!r}"
        )
    return host or "127.0.0.1", int(port)


# -- serve --max-tools: a short list per session, grown by search_tools ----------------


class _DeferredTools:
    """Each client's tool list under ``--max-tools``, and the ``search_tools`` that grows it.

    A client is what ``client_key`` finds: the ``Mcp-Session-Id`` of a streamable HTTP
    session, else the credential a stateless (2026-07-28) client sends, else over stdio the
    one client of the process. A client with none of these is served statelessly: it is
    listed the short list each time, and ``search_tools`` answers with the definitions of
    what it found, which it may call (every served tool can be called, listed or not).
    A grown list is announced with ``notifications/tools/list_changed`` to a session, and
    as an event on ``subscriptions/listen`` streams to stateless clients.
    """

    def __init__(
        self,
        registry: Registry,
        toolset: str | Toolset | None,
        task: str | None,
        max_tools: int,
        served: Mapping[str, ToolMetadata],
    ) -> None:
        from toolplug.render._search import SEARCH_TOOLS

        if SEARCH_TOOLS in served:
            raise UsageError(
                f"--max-tools adds a tool named {SEARCH_TOOLS}, and an installed tool has that "
                "name already; serve without --max-tools, or leave that tool out of the toolset"
            )
        self.name = SEARCH_TOOLS
        self._registry = registry
        self._options: dict[str, Any] = {"task": task, "max_tools": max_tools, "toolset": toolset}
        self._sessions: dict[str, Any] = {}
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        from toolplug.serve._shared import SharedLists

        store = registry.config.calls.store
        self._shared = SharedLists(store) if store != "memory" else None
        self.bus: InMemorySubscriptionBus | RedisBus = (
            RedisBus(store) if store != "memory" else InMemorySubscriptionBus()
        )
        self.listen = ListenHandler(self.bus)

    def instructions(self) -> str:
        """The optional-tools section of the tools listed at first, and where the rest are."""
        from toolplug.render._prompt import optional_tools_section

        section = optional_tools_section(self._registry, **self._options)
        return (
            f"{section.rstrip()}\n\nMore tools are installed than listed: call {self.name} "
            "with what you need a tool for, and the tools it finds join your list."
        ).lstrip()

    def _search(self, ctx: ServerRequestContext[Any]) -> Any:
        from toolplug.render._search import ToolSearch

        key = client_key(ctx)
        if key is None:  # nobody to keep a list for: the short list, every time
            return ToolSearch(self._registry, "mcp", **self._options)
        session = self._sessions.get(key)
        if session is None:
            if len(self._sessions) >= _MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))  # the oldest
            session = self._sessions[key] = ToolSearch(self._registry, "mcp", **self._options)
        return session

    async def listed(self, ctx: ServerRequestContext[Any]) -> list[Any]:
        from mcp import types

        search = self._search(ctx)
        if isinstance(self.bus, RedisBus):
            await self.bus.started()
        key = client_key(ctx)
        if self._shared is not None and key is not None and key.startswith("credential:"):
            search.load(await self._shared.names(key))  # what other replicas' searches added
        return [types.Tool.model_validate(tool) for tool in search.definitions()]

    async def answer(self, ctx: ServerRequestContext[Any], arguments: Any) -> ToolResult:
        result: ToolResult = self._search(ctx).answer(arguments)
        key = client_key(ctx)
        if key is None or not (result.ok and isinstance(result.data, dict)):
            return result
        if result.data.get("added"):
            from mcp.shared.subscriptions import ToolsListChanged

            if self._shared is not None and key.startswith("credential:"):
                await self._shared.add(key, list(result.data["added"]))

            await self.bus.publish(ToolsListChanged())  # stateless clients that listen
            if not key.startswith("credential:"):  # a session: it hears notifications
                try:
                    await ctx.session.send_tool_list_changed()
                except Exception:  # the search still answers; the client can list again
                    log.warning("could not send notifications/tools/list_changed", exc_info=True)
        return result


_MAX_SESSIONS: Final = 1024


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
    from mcp.server.lowlevel import NotificationOptions

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


class _Progress:
    """A tool's ``progress(done, total)`` as MCP progress notifications, sent in order.

    Tools call it synchronously, from the loop or from a worker thread; each call queues
    one notification behind the previous one, and the answer waits until all are sent.
    """

    def __init__(self, ctx: ServerRequestContext[Any], token: str | int) -> None:
        self._ctx, self._token = ctx, token
        self._loop = asyncio.get_running_loop()
        self._last: asyncio.Task[None] | None = None

    @classmethod
    def asked_by(cls, ctx: ServerRequestContext[Any]) -> _Progress | None:
        """A reporter when the client sent a progress token with its request, else None."""
        meta: Mapping[str, Any] = ctx.meta or {}
        token = meta.get("progress_token", meta.get("progressToken"))
        return cls(ctx, token) if isinstance(token, str | int) else None

    def __call__(self, done: float, total: float | None = None) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._queue(done, total)
        else:
            self._loop.call_soon_threadsafe(self._queue, done, total)

    def _queue(self, done: float, total: float | None) -> None:
        self._last = self._loop.create_task(self._send(self._last, done, total))

    async def _send(
        self, before: asyncio.Task[None] | None, done: float, total: float | None
    ) -> None:
        if before is not None:
            await before
        request = self._ctx.request_id  # sends it on this request's stream (HTTP)
        related = None if request is None else str(request)
        try:
            await self._ctx.session.send_progress_notification(
                self._token, done, total, related_request_id=related
            )
        except Exception as exc:  # a client gone away: the call's answer still matters
            log.debug("progress notification not sent: %s", exc)

    async def sent(self) -> None:
        """Wait until every notification queued so far is on its way."""
        await asyncio.sleep(0)  # let reports made from worker threads land first
        if self._last is not None:
            await self._last


class _Elicit:
    """Approval by MCP elicitation: the client shows the request to its user, who answers.

    A client that does not support elicitation (or cannot be asked now) makes no decision,
    so the call returns ``ApprovalRequiredError`` as an ``isError`` result.
    """

    _SCHEMA: Final = {
        "type": "object",
        "properties": {
            "approve": {"type": "boolean", "title": "Run this call?", "default": False}
        },
        "required": ["approve"],
    }

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        self._ctx = ctx

    async def __call__(self, request: ApprovalRequest) -> Approval | None:
        from mcp import types

        from toolplug.contract._approval import Approval

        session = self._ctx.session
        wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        if not session.check_client_capability(wanted):
            return None
        try:
            answer = await session.elicit_form(
                request.describe(), self._SCHEMA, related_request_id=self._ctx.request_id
            )
        except Exception as exc:  # the client could not ask: nobody decided
            log.warning("could not ask the MCP client to approve %s: %s", request.tool, exc)
            return None
        if answer.action != "accept":
            return Approval.deny(f"the client's user answered {answer.action}")
        if (answer.content or {}).get("approve") is True:
            return Approval.approve("approved by the client's user")
        return Approval.deny("the client's user said no")


class _OutputCheck:
    """Validators of declared output schemas, compiled once per tool."""

    def __init__(self) -> None:
        self._validators: dict[str, Any] = {}

    def problem(self, metadata: ToolMetadata, schema: dict[str, Any], value: Any) -> str | None:
        validator = self._validators.get(metadata.name)
        if validator is None:
            from jsonschema import Draft202012Validator

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
    from mcp import types

    from toolplug.calls._limits import data_cut
    from toolplug.contract._tool import ErrorType, ToolResult
    from toolplug.render._mcp import mcp_output_schema, structured_content

    structured = None
    if result.ok and metadata is not None:
        schema = mcp_output_schema(metadata)
        if schema is not None:
            structured = _redacted(registry, structured_content(metadata, result.data))
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
    text = types.TextContent(type="text", text=result.for_model())
    meta = _trust_meta(result)
    if structured is not None:
        return types.CallToolResult(content=[text], structured_content=structured, _meta=meta)
    return types.CallToolResult(content=[text], is_error=not result.ok, _meta=meta)


TRUST_ANNOTATIONS: Final = "io.modelcontextprotocol/trust-annotations"
"""The ``_meta`` key of MCP's experimental trust annotations extension."""


def _trust_meta(result: ToolResult) -> dict[str, Any] | None:
    """The result's labels as the trust annotations extension writes them: ``untrusted``
    (anyone outside could have written it) and ``sensitive`` (the user's private data)."""
    trust = result.trust
    if trust is None:
        return None
    return {TRUST_ANNOTATIONS: {"untrusted": trust.untrusted, "sensitive": trust.private}}


class _Conversations:
    """One conversation per client (``client_key``: the session, the credential, or the
    stdio client), kept in this process (the oldest dropped past ``_MAX_SESSIONS``); a
    client with no key is served without one. Not shared through Redis: a session that
    moves to another replica starts a new conversation there."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._by_client: dict[str, Any] = {}

    def of(self, client: str | None) -> Any:
        import contextlib

        if client is None:
            return contextlib.nullcontext()
        found = self._by_client.get(client)
        if found is None:
            if len(self._by_client) >= _MAX_SESSIONS:
                self._by_client.pop(next(iter(self._by_client)))  # the oldest
            found = self._by_client[client] = self._registry.conversation()
        return found


def _within_budget(result: ToolResult, params: CallToolRequestParams) -> ToolResult:
    """A reply made here rather than by a call, bounded as a call's would be."""
    from toolplug.calls._limits import DEFAULT_OUTPUT_CHARS, bounded

    return bounded(result, {"name": params.name, **(params.arguments or {})}, DEFAULT_OUTPUT_CHARS)


def _outside_toolset(
    name: str, toolset: str | Toolset | None, served: Mapping[str, ToolMetadata]
) -> ToolResult:
    from toolplug.contract._tool import ErrorType, ToolResult

    label = toolset if isinstance(toolset, str) else getattr(toolset, "name", "the chosen one")
    offered = ", ".join(served) or "none"
    return ToolResult.failure(
        ErrorType.NOT_FOUND,
        f"{name} is not offered by this server (toolset {label}); available tools: {offered}",
    )


def _redacted(registry: Registry, value: Any) -> Any:
    if isinstance(value, str):
        return registry.redact(value)
    if isinstance(value, dict):
        return {k: _redacted(registry, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(registry, v) for v in value]
    return value


# -- transports ---------------------------------------------------------------------


def _serve_http(server: Server[Any], host: str, port: int, drain: Drain) -> int | None:
    """Serve until a signal ends serving; the signal's number."""
    import uvicorn

    listener = _listen(host, port)
    bound = listener.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"toolplug: MCP server at http://{shown}:{bound}{HTTP_PATH}", file=sys.stderr)
    if host not in _LOOPBACK:
        print(
            "toolplug: warning: the server has no authentication; anyone who can reach "
            f"{host} can call these tools",
            file=sys.stderr,
        )
    # Host and Origin checks against DNS rebinding are on when the host is a loopback name.
    from toolplug.serve._screen import MAX_BODY_BYTES, ScreeningApp

    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH, host=host, max_request_body_size=MAX_BODY_BYTES
    )
    screening = ScreeningApp(app, HTTP_PATH, max_body=MAX_BODY_BYTES)
    config = uvicorn.Config(
        screening,
        log_level="warning",
        # By the time uvicorn shuts down, every call is answered: what is left are idle
        # connections and the clients' notification streams.
        timeout_graceful_shutdown=2,
        lifespan="on",
    )
    runner = _draining_server(uvicorn.Server)(config, drain, screening)
    try:
        runner.run(sockets=[listener])
    finally:
        listener.close()
    return runner.received[0] if runner.received else None


def _draining_server(base: type[Any]) -> type[Any]:
    """uvicorn's ``Server``, draining calls in flight before it shuts down.

    uvicorn's own handling of SIGTERM and SIGINT starts its shutdown at once, and the
    event streams that carry MCP answers close when it starts (sse-starlette watches for
    it), cutting every call in flight. Here the first signal starts the drain
    (``_shutdown``: new calls are refused, each with an error it can read, and the calls in
    flight finish or are cancelled), and only then lets uvicorn shut down, which closes
    the listener. A second signal cuts the grace period short; a third stops at once.
    """

    class Draining(base):  # type: ignore[misc]
        def __init__(self, config: Any, drain: Drain, screening: Any) -> None:
            super().__init__(config)
            self.drain, self.screening = drain, screening
            self.received: list[int] = []
            self.loop: asyncio.AbstractEventLoop | None = None
            self.draining: asyncio.Task[None] | None = None

        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            self.loop = asyncio.get_running_loop()
            await super().serve(sockets)

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.received.append(sig)
            if len(self.received) == 2:
                self.drain.hurry()
            elif len(self.received) > 2 or self.loop is None:
                self.should_exit = self.force_exit = True
            else:
                self.loop.call_soon_threadsafe(self._begin)

        def _begin(self) -> None:
            assert self.loop is not None
            self.draining = self.loop.create_task(self._drain_then_exit())

        async def _drain_then_exit(self) -> None:
            try:
                # The listener stays open meanwhile: a client that cannot connect fails
                # its own way, one that is refused a call reads why.
                await self.drain.drain(idle=lambda: self.screening.active == 0)
            finally:
                self.should_exit = True

    return Draining


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket bound here, so a busy port is our error to report, not uvicorn's."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise UsageError(f"cannot serve MCP on {host}:{port}: {exc.strerror or exc}") from None


# -- helpers ------------------------------------------------------------------------


def _require_mcp() -> None:
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"toolplug serve needs the MCP SDK, which could not be imported ({exc}); "
            f"install it with: {INSTALL_LINE}"
        ) from None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolplug")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"
