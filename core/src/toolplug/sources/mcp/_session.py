"""The part of mounting that speaks MCP: it opens a server's session, listens for changes
to its tools, and calls them, through the MCP SDK (imported here, at the top). What a
server sends back during a call (questions, sampling, progress, log lines) is relayed to
the call's host by ``_relay``.

``toolplug.sources.mcp._host.session()`` imports this module once, when a server is first
started or called, so reading mounted tools from their cached lists never loads the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx2  # the SDK's HTTP client
from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp.types import CONNECTION_CLOSED, INVALID_PARAMS, Implementation

from toolplug.contract._published import resource_changed
from toolplug.contract._tool import ErrorType, ToolResult
from toolplug.contract._version import toolplug_version
from toolplug.sources.mcp import _oauth, _refresh
from toolplug.sources.mcp._down import ServerDown, tail
from toolplug.sources.mcp._relay import CALL, Relay, capabilities

if TYPE_CHECKING:
    from toolplug.config._servers import ServerSettings
    from toolplug.sources.mcp._credentials import Credentials
    from toolplug.sources.mcp._host import Connection, InFlight

__all__ = ["call_tool", "own"]

log = logging.getLogger("toolplug.mount")

_SETTLE_TURNS = 3
"""Turns of the loop a call gives the notifications received before its answer."""
_LIST_CHANGED = (
    types.ToolListChangedNotification, types.PromptListChangedNotification,
    types.ResourceListChangedNotification,
)


async def own(
    connection: Connection, ready: asyncio.Future[Client], closing: asyncio.Event, stderr: Any
) -> None:
    """Open the session, hand it over, hold it until closed: the one task that owns it."""
    server = connection.server
    settings = server.settings
    statuses: list[int] = []
    refusals: list[str] = []  # a step-up the OAuth flow could not do (this task's requests)
    _oauth.REFUSALS.set(refusals)
    target: Any
    if settings.command is not None:
        params = StdioServerParameters(
            command=settings.command, args=list(settings.args), env=server.env or None,
            cwd=server.cwd,
        )
        target = stdio_client(params, errlog=stderr)
    else:
        target = _http_transport(settings.url or "", server.headers, statuses, server.oauth)

    async def message(message: Any) -> None:
        """Notifications of a legacy session: a list changed refreshes the lists; a
        resource updated is told to the hosts watching it (``resource_changed``)."""
        if isinstance(message, _LIST_CHANGED):
            await connection.tools_changed()
        elif isinstance(message, types.ResourceUpdatedNotification):
            resource_changed(str(message.params.uri))

    relay = Relay(connection)
    client = Client(
        target, message_handler=message, client_info=_client_info(), cache=None,
        elicitation_callback=relay.elicit, sampling_callback=relay.sample,
        logging_callback=relay.logged, log_level="debug",
    )
    _declare(client, relay.sampling)
    try:
        async with client:
            if not ready.done():
                ready.set_result(client)
            if not connection.listens:
                await closing.wait()
                return
            async with asyncio.TaskGroup() as group:
                listener = group.create_task(_listen(connection, client))
                await closing.wait()
                listener.cancel()
    except BaseException as exc:  # reported as the reason it is down
        if isinstance(exc, asyncio.CancelledError) and not ready.done():
            ready.cancel()  # the start was given up (its time ran out): nobody waits
        elif not ready.done():
            problem = refusals[-1] if refusals else _start_problem(exc, settings, statuses)
            ready.set_exception(ServerDown(problem + tail(stderr, "; its stderr ends with: ")))
        elif not isinstance(exc, asyncio.CancelledError):
            log.debug("MCP server %s: session ended: %r", connection.name, exc)
    finally:
        stderr.close()
        connection.ended(client)


def _declare(client: Client, sampling: bool) -> None:
    """Make ``client`` declare only what the mount honours (``_relay.capabilities``): the
    SDK declares URL elicitation with form, and sampling whenever it has a callback (the
    mount's refuses, naming the setting, when sampling is off)."""
    build = client._build_session  # the SDK offers no switch for this

    async def built(exit_stack: Any) -> Any:
        session = await build(exit_stack)
        full = session._build_capabilities

        def declared(version: str) -> types.ClientCapabilities:
            own = capabilities(sampling)
            return full(version).model_copy(
                update={"elicitation": own.elicitation, "sampling": own.sampling}
            )

        session._build_capabilities = declared  # type: ignore[method-assign]
        return session

    client._build_session = built  # type: ignore[method-assign]


async def call_tool(
    connection: Connection, client: Client, remote: str, arguments: dict[str, Any], *,
    call: InFlight,
    done: Callable[[Any], ToolResult],
) -> ToolResult:
    """Call one tool of the server on its open session: what the server sends back during
    it (progress, log lines, questions, sampling) reaches ``call``'s context (``_relay``);
    ``done`` turns the answer into a result; an MCP error becomes a structured one (a
    closed connection is dropped)."""
    name = connection.name

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        call.context.report_progress(progress, total, message)  # to this call's caller

    token = CALL.set(call)
    refusals: list[str] = []  # why the OAuth flow let a 403 through (a step-up it could not do)
    refused = _oauth.REFUSALS.set(refusals)
    connection.calls.append(call)
    try:
        answer = await client.call_tool(remote, arguments, progress_callback=forward)
        # The SDK hands the answer over at once, but runs each notification that came before
        # it (progress, log lines) in a task of its own: let those run while this call is
        # still in flight, so that they reach its host before its result does.
        for _ in range(_SETTLE_TURNS):
            await asyncio.sleep(0)
    except MCPError as exc:
        if call.paused is not None:  # the server's error answers the refusal: moot too
            raise call.paused from None
        if exc.code == CONNECTION_CLOSED:
            connection.lost(f"the connection closed during a call of {remote}")
            return ToolResult.failure(
                ErrorType.NETWORK,
                f"MCP server {name!r} closed the connection during the call "
                "(it may have crashed); it is started again on the next call",
                retry_possible=True,
            )
        if refusals and isinstance(refusals[-1], _refresh.Transient):
            return ToolResult.failure(
                ErrorType.NETWORK, f"MCP server {name!r} {refusals[-1]}", retry_possible=True
            )
        if refusals:
            return ToolResult.failure(ErrorType.PERMISSION, f"MCP server {name!r} {refusals[-1]}")
        kind = ErrorType.VALIDATION if exc.code == INVALID_PARAMS else ErrorType.EXECUTION
        return ToolResult.failure(kind, f"MCP server {name!r}: {exc.message}")
    finally:
        connection.calls.remove(call)
        _oauth.REFUSALS.reset(refused)
        CALL.reset(token)
    if call.paused is not None:  # the host answers on a retry: this call's result is moot
        raise call.paused
    return done(answer)


async def _listen(connection: Connection, client: Client) -> None:
    """Refresh the lists when the server says one changed, and tell the hosts watching a
    mounted resource when the server says it was updated (a ``subscriptions/listen`` stream
    on 2026-07-28 sessions; ``resources/subscribe`` of each mounted resource on earlier
    ones, when the server declares it). Listened for again when the mounted resources
    change (the first listing arrives after the session opened)."""
    while True:
        uris = list(connection.watched())
        again = connection.relistening()
        stream = asyncio.ensure_future(_stream(connection, client, uris))
        waiting = asyncio.ensure_future(again.wait())
        try:
            done, _ = await asyncio.wait({stream, waiting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
            if not stream.done():
                stream.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await stream
        if stream in done and not again.is_set():
            return


async def _stream(connection: Connection, client: Client, uris: list[str]) -> None:
    caps = client.server_capabilities
    wanted = {
        "tools_list_changed": bool(caps.tools and caps.tools.list_changed),
        "prompts_list_changed": bool(caps.prompts and caps.prompts.list_changed),
        "resources_list_changed": bool(caps.resources and caps.resources.list_changed),
    }
    if caps.resources is None:
        uris = []
    if not any(wanted.values()) and not uris:
        await asyncio.Event().wait()  # nothing to hear until the mounted resources change
    try:
        async with client.listen(**wanted, resource_subscriptions=uris) as subscription:
            async for event in subscription:
                if isinstance(event, ResourceUpdated):
                    resource_changed(event.uri)
                else:
                    await connection.tools_changed()
    except ListenNotSupportedError:
        subscribes = bool(caps.resources and caps.resources.subscribe)
        await _subscribe(connection, client, uris if subscribes else [])
        await asyncio.Event().wait()  # updates arrive as notifications from now on
    except Exception as exc:  # a server that refuses: notices only
        log.debug("MCP server %s: no listen stream: %r", connection.name, exc)


async def _subscribe(connection: Connection, client: Client, uris: list[str]) -> None:
    """``resources/subscribe`` of each mounted resource (a legacy session's way)."""
    for uri in uris:
        try:
            await client.session.subscribe_resource(uri)
        except Exception as exc:  # one refused is no reason to give up the others
            log.debug("MCP server %s: resources/subscribe %s: %r", connection.name, uri, exc)


def _client_info() -> Implementation:
    return Implementation(name="toolplug", version=toolplug_version() or "0")


def _http_transport(
    url: str, headers: Mapping[str, str], statuses: list[int], oauth: Credentials | None
) -> Any:
    """The SDK's streamable HTTP transport with the headers, and the OAuth flow as the
    client's ``auth`` for an ``auth = "oauth"`` server (``_oauth``); every HTTP error status
    is noted in ``statuses`` (the SDK's error names none). The SDK's own time limits: 30 s,
    300 s to read."""

    async def note(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            statuses.append(response.status_code)

    @contextlib.asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        auth = None if oauth is None else await _oauth.auth_for(oauth)
        async with (
            httpx2.AsyncClient(  # the caller of the SDK's transport owns its client
                headers=dict(headers), auth=auth,
                timeout=httpx2.Timeout(30, read=300),
                # No cap on connections: the SDK's 100 would count the listen stream and
                # send the 100th of many concurrent calls after a whole earlier one.
                limits=httpx2.Limits(max_connections=None, max_keepalive_connections=100),
                event_hooks={"response": [note]},
            ) as client,
            streamable_http_client(url, http_client=client) as streams,
        ):
            yield streams

    return transport()


def _start_problem(exc: BaseException, settings: ServerSettings, statuses: list[int]) -> str:
    """A reason in words for a server that did not start or answer."""
    inner = exc
    while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
        inner = inner.exceptions[0]
    signing_in = _oauth.sign_in_problem(exc) if settings.auth is not None else None
    if signing_in is not None:
        return signing_in
    status = getattr(getattr(inner, "response", None), "status_code", None)
    if status is None and statuses:
        status = statuses[-1]
    if status is not None:
        return f"HTTP {status} from {settings.url}"
    if isinstance(inner, MCPError):
        return f"the server closed the connection during start-up ({inner.message})"
    if isinstance(inner, OSError):
        return f"cannot start or reach the server: {inner.strerror or inner}"
    return f"the server did not start: {type(inner).__name__}: {inner}"
