"""Mounting: each configured MCP server becomes a plugin of toolplug tools.

``mount(config, env)`` reads (or asks for) every enabled server's tool list, makes one
``Tool`` class per remote tool with metadata from its definition and the configuration,
and one plugin per server that registers those tools and the server's capability
(``mcp_NAME``: present when the server answered). The registry then treats them like any
installed tool: listing, prompting, exports, docs, search, approvals, limits, telemetry.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolplug.config._gathered import GatheredToolSettings
from toolplug.config._servers import ServerSettings
from toolplug.contract._capabilities import Capability, Check, DetectContext
from toolplug.contract._hooks import hookimpl
from toolplug.contract._metadata import TRUST_ANNOTATIONS, Annotations, ToolMetadata, Trust
from toolplug.contract._settings import SINK_KINDS, ToolSettings, TrustOverlay
from toolplug.contract._tool import ErrorType, Tool, ToolContext, ToolResult
from toolplug.runtime import _progress
from toolplug.sources import _gathered
from toolplug.sources.mcp import _catalog, _credentials, _host, _principals, _published
from toolplug.sources.mcp._content import BadBlock, blocks
from toolplug.sources.mcp._screen import screen
from toolplug.trust._redaction import Redactor
from toolplug.trust._scan import Finding

if TYPE_CHECKING:
    from toolplug.config._config import Config
    from toolplug.runtime._loaded import RegisteredTool
    from toolplug.runtime._registry import Registry

__all__ = ["Mounted", "MountedServer", "mount", "mounted", "report"]

_DISCOVERY_GRACE = 10.0  # seconds for tools/list beyond a server's start-up time


@dataclass
class MountedServer(_gathered.Origin):
    """One configured server as this process sees it."""

    KIND = "mcp"

    settings: ServerSettings
    resolved: _host.Resolved
    cache_dir: Path
    key: str
    connection: _host.Connection | None = None
    listing: _catalog.Listing | None = None
    from_cache: bool = False
    """The listing was read from the cache, not asked for now."""
    names: dict[str, str] = field(default_factory=dict)
    """toolplug name -> the server's name of each mounted tool."""
    prompt_names: dict[str, str] = field(default_factory=dict)
    """toolplug name -> the server's name of each mounted prompt (``_published``)."""
    prompts_withheld: dict[str, list[str]] = field(default_factory=dict)
    """toolplug name -> the scan rules a mounted prompt's definition breaks, not accepted."""
    locked: dict[str, str] | None = None
    """The recorded digests for this server: the lock file's, with those recorded on first
    use (None: not pinned and not in the lock file)."""
    drifted: list[str] = field(default_factory=list)
    """Remote tools whose definition differs from the recorded one."""
    locked_fields: dict[str, dict[str, str]] = field(default_factory=dict)
    """The recorded digest of each part of each definition (what a change is named by)."""
    recorded: list[str] = field(default_factory=list)
    """Remote tools whose definition this load recorded in the lock file (first use)."""
    notes: list[str] = field(default_factory=list)
    """Renames and other things ``doctor`` reports."""
    findings: dict[str, list[tuple[Finding, bool]]] = field(default_factory=dict)
    """toolplug name -> the scan's findings in the server's definition of it, each with
    whether the configuration accepts it."""
    withheld: dict[str, list[str]] = field(default_factory=dict)
    """toolplug name -> the rules of its findings the configuration does not accept: the
    tool is registered without its definition and unavailable."""
    principals: _principals.Principals | None = None
    """Whose sign-in each served principal's call goes with (``on_behalf_of``), or None:
    every call goes with the operator's."""
    redactor: Redactor = field(default_factory=Redactor)
    """The secrets of its configuration (the registry's, once attached): kept out of its
    reasons and of the listing stored on disk."""
    _relisting: asyncio.Future[None] | None = field(default=None, init=False, repr=False)
    """The first call's ``tools/list`` of a server whose list came from the cache."""

    def watched_uris(self) -> list[str]:
        """The URIs of its mounted resources (their updates are listened for)."""
        resources = self.listing.resources if self.listing else []
        return [
            str(r["uri"]) for r in resources
            if "uri" in r and _published.resource_selected(self.settings, str(r["uri"]))
        ]

    @property
    def problem(self) -> str | None:
        """Why the server is unavailable, or None when it answered."""
        if self.listing is None:
            return "it has not been reached yet"
        return self.listing.problem

    def digests(self) -> dict[str, str]:
        """The definition digest of each tool it listed, by the server's names."""
        tools = self.listing.tools if self.listing else []
        return {t["name"]: _catalog.definition_digest(t) for t in tools}

    def field_digests(self) -> dict[str, dict[str, str]]:
        """The digest of each part of each tool it listed, by the server's names."""
        tools = self.listing.tools if self.listing else []
        return {t["name"]: _catalog.field_digests(t) for t in tools}

    # -- calls -------------------------------------------------------------------------

    def definition_now(self, remote: str) -> str | None:
        """The digest of a tool's definition as the server last listed it (a list change
        while this process runs refreshes it), or None when it lists no such tool."""
        tools = self.listing.tools if self.listing else []
        found = next((t for t in tools if t.get("name") == remote), None)
        return None if found is None else _catalog.definition_digest(found)

    async def call(
        self, remote: str, arguments: dict[str, Any], context: ToolContext,
        labels: Trust | None = None,
    ) -> ToolResult:
        """Call one of its tools; every failure comes back as a structured result. A
        result's trust annotations (``_meta``) label it over ``labels``, the tool's:
        ``_said``."""
        refused = self._refused(remote, context.tool)
        if refused is not None:
            return refused
        call = _host.InFlight.here(context)
        connection = self.connection
        assert connection is not None
        principals = self.principals
        principal = _principals.principal_of(context.host) if principals else None

        async def work() -> ToolResult:
            used = connection
            if principals is not None and principal is not None:
                found = await principals.connection(principal)
                if isinstance(found, ToolResult):
                    return found  # not signed in: the link that signs in
                used = found
            try:
                client = await used.client()
            except _host.ServerDown as down:
                again = await principals.down(principal) if principals and principal else None
                if again is not None:
                    return again
                details: dict[str, Any] = {"server": self.name}
                if down.retry_after is not None:
                    details["retry_after_seconds"] = down.retry_after
                return ToolResult.failure(
                    ErrorType.UNAVAILABLE,
                    f"MCP server {self.name!r} is unavailable: {down.reason}",
                    retry_possible=True,
                    details=details,
                )
            if self.settings.pins and self.from_cache:
                try:
                    await self._relist(client)
                except Exception as exc:
                    return ToolResult.failure(
                        ErrorType.UNAVAILABLE,
                        f"MCP server {self.name!r}: its tools could not be checked against "
                        f"toolplug.lock ({type(exc).__name__}: {exc})",
                        retry_possible=True,
                        details={"server": self.name},
                    )
                refused = self._refused(remote, context.tool)
                if refused is not None:
                    return refused
            result: ToolResult = await _host.session().call_tool(
                used, client, remote, arguments, call=call,
                done=lambda answer: _result(
                    answer, self.name, labels, self.settings.trust_annotations
                ),
            )
            return result

        try:
            return await _host.run(work)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # anything the SDK raised that is not an MCP error
            return ToolResult.failure(
                ErrorType.EXECUTION,
                f"MCP server {self.name!r}: {type(exc).__name__}: {exc}",
            )

    def _refused(self, remote: str, tool: str) -> ToolResult | None:
        """The refusal of a call of a pinned tool the server now defines otherwise."""
        locked = self.locked if self.settings.pins else None
        if locked is None or locked.get(remote) == self.definition_now(remote):
            return None
        return ToolResult.failure(
            ErrorType.PERMISSION,
            f"{tool} is pinned and the server now defines it otherwise than "
            "toolplug.lock records; review the change ('toolplug doctor', "
            "'toolplug scan') and run 'toolplug lock' to accept it",
        )

    async def _relist(self, client: Any) -> None:
        """The first call in this process of a pinned server whose list came from the cache
        asks it for its tools (once, for every call that waits on it): a definition that
        changed since the list was cached is met at that call, not when the cache expires."""
        if self._relisting is None:
            self._relisting = asyncio.ensure_future(self._list_now(client))
        try:
            await asyncio.shield(self._relisting)
        except Exception:
            self._relisting = None  # the next call asks again
            raise

    async def _list_now(self, client: Any) -> None:
        before = self.watched_uris()
        tools, prompts, resources, templates = await asyncio.wait_for(
            _list_all(client), _DISCOVERY_GRACE
        )
        self.listing = _catalog.Listing(
            key=self.key, stored=_catalog.now(), server=_server_info(client), tools=tools,
            prompts=prompts, resources=resources, templates=templates,
        )
        self.from_cache = False
        self.store()
        self._watch_anew(before)

    def _watch_anew(self, before: list[str]) -> None:
        if self.connection is not None and self.watched_uris() != before:
            self.connection.relisten()

    async def _refresh(self) -> None:
        """The server said its tools, prompts or resources changed: store the new lists for
        the next load."""
        connection = self.connection
        assert connection is not None
        await self._list_now(await connection.client())

    def store(self) -> None:
        """Write its listing to the cache, secrets redacted."""
        if self.listing is not None:
            _catalog.write_listing(
                self.cache_dir, self.name, self.listing, redact=self.redactor.redact_data
            )


@dataclass
class Mounted(_gathered.GatheredSource):
    """Every mounted server of one registry: the source of their tools."""

    servers: dict[str, MountedServer] = field(default_factory=dict)

    name = "mcp"
    title = "MCP servers"

    def complete(self, registry: Registry) -> Mapping[str, RegisteredTool]:
        """Screen its definitions (a flagged one withheld), and redact from now on every
        secret the registry knows in what its servers store."""
        withheld = screen(self, registry)
        for server in self.servers.values():
            server.redactor = registry.redactor
            _credentials.attach(server.resolved.oauth, registry.redactor)
        return withheld

    def report(self) -> list[str]:
        return report(self)

    def unreached(self) -> list[MountedServer]:
        """The servers that are down and mount no tool (none known from an earlier answer):
        listings show each as one line, so that a server is never missing without a word."""
        return [s for s in self.servers.values() if s.problem is not None and not s.names]

    def annotations_of(self, final: str) -> tuple[str, dict[str, Any]] | None:
        """The server and the annotations it gave (as it wrote them, ``{}`` for none) of
        the mounted tool ``final``; None when no server mounted a tool of that name."""
        for server in self.servers.values():
            remote = server.names.get(final)
            if remote is None:
                continue
            tools = server.listing.tools if server.listing else []
            found = next((t for t in tools if t.get("name") == remote), {})
            return server.name, dict(found.get("annotations") or {})
        return None

    def close(self) -> None:
        """Close every session this registry opened (the servers' processes end)."""
        connections = [s.connection for s in self.servers.values() if s.connection] + [
            c for s in self.servers.values() if s.principals for c in s.principals.connections()
        ]
        if not any(c.started for c in connections):
            for connection in connections:
                connection.forget()
            return

        async def close() -> None:
            await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

        _host.run_blocking(close, 15)


def mounted(registry: Registry) -> Mounted | None:
    """The mounted servers of a registry made by ``toolplug.load()``, if it has any."""
    return next((s for s in registry.sources if isinstance(s, Mounted)), None)


def mount(config: Config, *, env: Mapping[str, str], refresh: bool = False) -> Mounted:
    """Read each enabled server's tool list (from the cache, or by asking it) and build the
    plugins that register its tools. ``refresh`` asks every server now."""
    base = config.path.parent if config.path else Path.cwd()
    servers: dict[str, MountedServer] = {}
    secrets: set[str] = set()
    lock_file = _catalog.lock_path(config.path)
    try:
        lock = _catalog.read_lock(lock_file)
    except ValueError:
        lock = {}
    lock_fields = _catalog.read_lock_fields(lock_file)
    for name, settings in config.mcp_servers.items():
        if not settings.enabled:
            continue
        resolved = _resolve(settings, env, base, config.source, secrets)
        resolved.oauth = _credentials.credentials(
            settings, state_dir=config.state_dir, env=env, base=base, source=config.source,
            secrets=secrets, keep=config.oauth.store,
        )
        resolved.problem = resolved.problem or (resolved.oauth.problem if resolved.oauth else None)
        server = MountedServer(settings, resolved, config.cache_dir, _key(settings, resolved))
        server.principals = _principals.principals_for(settings, resolved, config)
        # pinned: what the lock file records (or first use records) runs, nothing else
        server.locked = dict(lock[name]) if name in lock else ({} if settings.pins else None)
        server.locked_fields = dict(lock_fields.get(name, {}))
        server.connection = _host.Connection(resolved, on_tools_changed=server._refresh)
        server.connection.watched = server.watched_uris
        servers[name] = server
    redactor = Redactor()  # until a registry attaches its own, which knows these too
    for secret in secrets:
        redactor.add(secret)
    for server in servers.values():
        server.redactor = redactor
        _credentials.attach(server.resolved.oauth, redactor)
    now = _catalog.now()
    stale: list[MountedServer] = []
    for server in servers.values():
        listing = _catalog.read_listing(config.cache_dir, server.name)
        if listing is not None and listing.key == server.key:
            server.listing = listing
            fresh = listing.fresh(server.settings.list_ttl_seconds, now)
            server.from_cache = True
            if fresh and not refresh:
                continue
        stale.append(server)
    if stale:
        _discover(stale)
    _name_tools(servers)
    for server in servers.values():
        _published.name_prompts(server)
    _pin(servers, lock_file)
    plugins = [(f"mcp:{s.name}", _ServerPlugin(s, config.source)) for s in servers.values()]
    files = [
        str(config.cache_dir / "mcp" / f"{s.name}.json") for s in servers.values()
    ] + [str(lock_file)]
    expiries = [
        s.listing.expires(s.settings.list_ttl_seconds)
        for s in servers.values()
        if s.listing is not None
    ]
    return Mounted(
        settings=_with_settings(config, servers),
        gathered=plugins,
        found=secrets,
        read=files,
        stale_at=min(expiries) if expiries else None,
        servers=servers,
    )


def _resolve(
    settings: ServerSettings, env: Mapping[str, str], base: Path, source: str, secrets: set[str]
) -> _host.Resolved:
    found = _host.Resolved(settings)
    if settings.cwd is not None:
        found.cwd = str(base / Path(settings.cwd).expanduser())
    problems: list[str] = []
    for kind, table, target in (
        ("env", settings.env, found.env), ("headers", settings.headers, found.headers)
    ):
        for key, value in sorted(table.items()):
            where = f"[mcp_servers.{settings.name}] {kind}.{key} in {source}"
            text, secret = _gathered.resolved(value, where, env=env, base=base, problems=problems)
            if text is None:
                continue
            if secret or kind == "headers":
                secrets.add(text)
            target[key] = text
    if problems:
        found.problem = problems[-1]
    return found


def _key(settings: ServerSettings, resolved: _host.Resolved) -> str:
    return _catalog.config_key(
        {
            "command": settings.command,
            "args": settings.args,
            "cwd": resolved.cwd,
            "url": settings.url,
            "env": {k: _catalog.config_key({"v": v}) for k, v in resolved.env.items()},
            "headers": {k: _catalog.config_key({"v": v}) for k, v in resolved.headers.items()},
        }
    )


def _discover(servers: list[MountedServer]) -> None:
    """Ask each server for its tools, all at once; store what each answered."""
    waiting = [s.name for s in servers]

    def asking() -> str:
        return f"mounting {', '.join(waiting)}..."

    async def ask(server: MountedServer) -> None:
        try:
            await asked(server)
        finally:
            waiting.remove(server.name)
            if waiting:
                say(asking())

    async def asked(server: MountedServer) -> None:
        connection = server.connection
        assert connection is not None
        try:
            client = await connection.client()
            tools, prompts, resources, templates = await asyncio.wait_for(
                _list_all(client), _DISCOVERY_GRACE
            )
        except _host.ServerDown as down:
            _failed(server, down.reason)
            return
        except Exception as exc:
            said = (
                f"no answer to tools/list within {_DISCOVERY_GRACE:g} s"
                if isinstance(exc, TimeoutError)
                else f"tools/list failed: {type(exc).__name__}: {exc}"
            )
            _failed(server, said)
            await connection.stop()  # given up on: its process ends now, not at exit
            return
        before = server.watched_uris()
        server.listing = _catalog.Listing(
            key=server.key, stored=_catalog.now(), server=_server_info(client), tools=tools,
            prompts=prompts, resources=resources, templates=templates,
        )
        server.from_cache = False
        server.store()
        server._watch_anew(before)

    async def ask_all() -> None:
        await asyncio.gather(*(ask(s) for s in servers))

    longest = max(s.settings.startup_timeout_seconds for s in servers)
    try:
        with _progress.status(asking()) as say:
            _host.run_blocking(ask_all, longest + _DISCOVERY_GRACE + 5)
    except TimeoutError:
        for server in servers:
            if server.listing is None or server.from_cache:
                _failed(server, "no answer in time")


def _failed(server: MountedServer, reason: str) -> None:
    """Keep the last known tools, marked with why the server cannot be reached."""
    last = server.listing
    server.listing = _catalog.Listing(
        key=server.key,
        stored=_catalog.now(),
        server=last.server if last else {},
        tools=last.tools if last else [],
        problem=server.redactor.redact(reason),  # it may quote the server's stderr
        prompts=last.prompts if last else [],
        resources=last.resources if last else [],
        templates=last.templates if last else [],
    )
    server.from_cache = False
    server.store()


async def _list_all(client: Any) -> tuple[list[dict[str, Any]], ...]:
    """Its tools, prompts, resources and resource templates (``_published``)."""
    return (await _list_tools(client), *await _published.list_published(client))


async def _list_tools(client: Any) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever is cut off
        page = await client.list_tools(cursor=cursor)
        tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _server_info(client: Any) -> dict[str, Any]:
    info = client.server_info
    if info is None:
        return {}
    return {"name": info.name, "version": info.version}


def _selected(settings: ServerSettings, remote: str) -> bool:
    included = not settings.include or any(
        fnmatch.fnmatchcase(remote, p) for p in settings.include
    )
    return included and not any(fnmatch.fnmatchcase(remote, p) for p in settings.exclude)


def _name_tools(servers: Mapping[str, MountedServer]) -> None:
    """Name every mounted tool; a name two servers would share gets each server's name."""
    wanted: dict[str, list[tuple[MountedServer, str]]] = {}
    for server in servers.values():
        tools = server.listing.tools if server.listing else []
        taken: set[str] = set()
        for tool in tools:
            remote = str(tool.get("name", ""))
            if not remote or not _selected(server.settings, remote):
                continue
            wished = _catalog.tool_name(server.settings.name_prefix, remote)
            name = _gathered.unique_name(wished, taken)
            if name != wished:  # two remote names that read the same once made valid
                server.notes.append(f"{remote!r} is mounted as {name}")
            wanted.setdefault(name, []).append((server, remote))
    for name, claims in sorted(wanted.items()):
        for server, remote in claims:
            final = name
            if len(claims) > 1:
                final = _catalog.tool_name(f"{server.name}_", name)
                others = ", ".join(sorted(s.name for s, _ in claims if s is not server))
                server.notes.append(
                    f"{remote!r} is mounted as {final}: {name} is offered by {others} too"
                )
            server.names[final] = remote


def _pin(servers: Mapping[str, MountedServer], lock_file: Path) -> None:
    """Record first-seen definitions (``pin = "first-use"``) in the lock file, and find the
    mounted tools whose definition differs from the recorded one."""
    first: dict[str, dict[str, str]] = {}
    for server in servers.values():
        if server.settings.pin != "first-use" or server.problem is not None:
            continue
        assert server.locked is not None
        new = {r: d for r, d in sorted(server.digests().items()) if r not in server.locked}
        if new:
            parts = server.field_digests()
            server.locked.update(new)
            server.locked_fields.update({r: parts[r] for r in new})
            server.recorded = sorted(new)
            first[server.name] = new
    if first:
        try:  # merged with what is there now: another process may have recorded too
            try:
                entries = _catalog.read_lock(lock_file)
            except ValueError:
                entries = {}
            fields = _catalog.read_lock_fields(lock_file)
            for name, new in first.items():
                entries[name] = {**new, **entries.get(name, {})}
                parts = servers[name].locked_fields
                fields[name] = {**{r: parts[r] for r in new}, **fields.get(name, {})}
            _catalog.write_lock(lock_file, entries, fields)
        except OSError as exc:
            for name in first:
                servers[name].notes.append(
                    f"the first-seen definitions could not be recorded in {lock_file} "
                    f"({exc.strerror or exc}); they are pinned for this process only"
                )
    for server in servers.values():
        if server.locked is not None:
            digests = server.digests()
            server.drifted = sorted(
                r for r in server.names.values() if server.locked.get(r) != digests.get(r)
            )


def _with_settings(config: Config, servers: Mapping[str, MountedServer]) -> dict[str, ToolSettings]:
    """Each mounted tool's call settings: the server's approval and scopes, then its
    ``tools.TOOL`` table, then a ``[tools.NAME]`` table the user wrote."""
    settings: dict[str, ToolSettings] = {}
    for server in servers.values():
        defaults: dict[str, Any] = {  # the server's defaults for its tools
            key: getattr(server.settings, key)
            for key in ("approval", "scopes")
            if key in server.settings.model_fields_set
        }
        for final, remote in server.names.items():
            own = server.settings.settings_for(remote)
            written = config.settings.get(final)
            values = _gathered.call_settings(
                defaults, own.call_settings() if own else None, written
            )
            trust = _trust(server, own, written)
            if trust is not None:
                values["trust"] = trust
            if values:
                settings[final] = ToolSettings.model_validate(values)
    return settings


def _trust(
    server: MountedServer, own: GatheredToolSettings | None, written: ToolSettings | None
) -> TrustOverlay | None:
    """A mounted tool's trust labels from the configuration, key by key: the server's
    table, then the tool's table under it, then a ``[tools.NAME]`` table; None when none
    sets any (the tool is unlabelled: untrusted, private, every parameter a sink)."""
    layers = [
        server.settings.trust.overlay() if server.settings.trust is not None else None,
        own.trust if own is not None else None,
        written.trust if written is not None else None,
    ]
    found: TrustOverlay | None = None
    for layer in layers:
        if layer is not None:
            found = layer if found is None else found.then(layer)
    return found


def _metadata(server: MountedServer, final: str, tool: Mapping[str, Any]) -> ToolMetadata:
    """A remote tool's definition, with what the configuration adds, as toolplug metadata."""
    settings = server.settings
    own = settings.settings_for(str(tool["name"]))
    hints = tool.get("annotations") or {}
    trusted = hints if settings.trust_annotations else {}
    read_only = bool(trusted.get("readOnlyHint", False))
    annotations = Annotations(  # MCP's defaults: not read-only, destructive, open-world
        read_only=read_only,
        destructive=not read_only and bool(trusted.get("destructiveHint", True)),
        idempotent=bool(trusted.get("idempotentHint", False)),
        open_world=bool(trusted.get("openWorldHint", True)),
    )
    description = " ".join(str(tool.get("description") or "").split())
    title = tool.get("title") or hints.get("title")
    requires = [server.capability]
    if settings.pins and tool["name"] in server.drifted:
        requires.append(f"{server.capability}_lock")
    schema = dict(tool.get("inputSchema") or {"type": "object"})
    schema.setdefault("type", "object")
    values: dict[str, Any] = {
        "name": final,
        "description": description or f"The {tool['name']} tool of the MCP server {server.name}.",
        "title": title or None,
        "category": settings.category,
        "requires_capabilities": tuple(requires),
        "parameters": schema,
        "returns": tool.get("outputSchema"),
        "annotations": annotations,
        "annotations_assumed": _assumed(
            server.name, hints, settings.trust_annotations, annotations
        ),
        "setup_instructions": _setup(server),
    }
    _gathered.overridden(values, own, ("category", "optionality", "usage_hint"))
    return ToolMetadata.model_validate(values)


def _assumed(
    server: str, hints: Mapping[str, Any], trusts: bool, annotations: Annotations
) -> str | None:
    """Why a mounted tool's annotations are toolplug's assumption, or None when what decides
    its approval is the server's own word (the text an approval reason ends with)."""
    if not trusts:
        if hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True:
            return None  # the server itself says destructive: more caution is believed
        said = server_said(hints)
        said = f"the server annotated it {said}, which is not believed" if said else (
            "the server annotated nothing"
        )
        return f"[mcp_servers.{server}] trust_annotations is off ({said})"
    if not annotations.read_only and "destructiveHint" not in hints:
        return "the server did not say whether it is destructive (MCP's default: destructive)"
    if not annotations.destructive and not annotations.read_only and (
        "openWorldHint" not in hints
    ):
        return "the server did not say whether it reaches an open world (MCP's default: yes)"
    return None


_HINT_WORDS: Final = (
    ("readOnlyHint", "read-only"),
    ("destructiveHint", "destructive"),
    ("idempotentHint", "idempotent"),
    ("openWorldHint", "open-world"),
)


def server_said(hints: Mapping[str, Any]) -> str:
    """What a server's annotations say of a tool's effects, in a few words
    (``read-only, not open-world``); "" when they say nothing of them."""
    return ", ".join(
        word if hints[key] else f"not {word}"
        for key, word in _HINT_WORDS
        if isinstance(hints.get(key), bool)
    )


def _setup(server: MountedServer) -> str:
    transport = (
        f"the command `{server.resolved.describe()}` must start and answer MCP over stdio"
        if server.settings.command is not None
        else f"{server.settings.url} must answer MCP over streamable HTTP"
    )
    return (
        f"[mcp_servers.{server.name}]: {transport}.{_credentials.setup_note(server.settings)} "
        "'toolplug doctor' asks it again now and shows why it did not answer."
    )


def _tool_class(server: MountedServer, final: str, tool: Mapping[str, Any]) -> type[Tool] | str:
    """The ``Tool`` class of one remote tool, or why its definition cannot be mounted."""
    remote = str(tool["name"])
    metadata = _gathered.checked_metadata(
        lambda: _metadata(server, final, tool), f"the definition of {remote!r} cannot be mounted"
    )
    if isinstance(metadata, str):
        return metadata
    own = server.settings.settings_for(remote)
    if own is not None and own.trust is not None:
        wrong = _wrong_labels(server.name, remote, own.trust, metadata)
        if wrong:
            return wrong

    # what the server's and the tool's trust tables make of its labels: a result's trust
    # annotations are read against these ([tools.NAME] stands over both in the engine).
    # Worked out at the first call: a definition registration refuses never gets one.
    known: list[Trust] = []

    async def run(self: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        if not known:
            tables = _trust(server, own, None)
            declared = self.metadata.labels
            known.append(tables.over(declared) if tables is not None else declared)
        return await server.call(remote, arguments, context, known[0])

    # each served principal's own sign-in: its answers are its own (the result cache too)
    return _gathered.tool_class(
        "Mounted", metadata, run, __module__=__name__,
        answers_per_caller=server.principals is not None,
    )


def _wrong_labels(server: str, remote: str, trust: TrustOverlay, metadata: ToolMetadata) -> str:
    """Why a tool table's ``trust`` cannot label the server's tool, or ""."""
    parameters = sorted((metadata.parameters.get("properties") or {}).keys())
    # without a sinks key, every parameter is a sink (the cautious default)
    wrong = trust.misnamed(parameters, parameters)
    if wrong is None:
        return ""
    key, names, kind = wrong
    where = f"[mcp_servers.{server}.tools.{remote}]"
    listed = ", ".join(map(repr, names))
    if kind == "parameter":  # refused, not guessed: the server may have renamed what goes out
        return (
            f"{where} trust.{key} names {listed}, not a parameter "
            f"of the server's {remote!r} (its parameters: {', '.join(parameters) or 'none'}); "
            "fix the list, then run 'toolplug doctor' again"
        )
    return (
        f"{where} trust.{key} names {listed}, not among its "
        f"trust.sinks ({', '.join(trust.sinks or ()) or 'none'}); "
        f"{SINK_KINDS[key].meaning}: add it to sinks too"
    )


class _ServerPlugin(_gathered.OriginPlugin):
    """The plugin of one mounted server: its tools and its capability."""

    def __init__(self, server: MountedServer, source: str) -> None:
        info = server.listing.server if server.listing else {}
        super().__init__(server, info.get("version"), self._made, lambda: list(server.names))
        self.server = server
        self.source = source

    @hookimpl
    def register_prompts(self, register: Any) -> None:
        made = self.__dict__.get("_prompts")
        if made is None:  # scanned once, however often the hook is called
            made = self.__dict__["_prompts"] = _published.prompts_of(self.server)
        for each in made:
            register(each)

    @hookimpl
    def register_resources(self, register: Any) -> None:
        for each in _published.resources_of(self.server):
            register(each)

    def _made(self, final: str) -> type[Tool] | str:
        server = self.server
        listed = self.__dict__.get("_listed")
        if listed is None:
            tools = server.listing.tools if server.listing else []
            listed = self.__dict__["_listed"] = {str(t.get("name")): t for t in tools}
        return _tool_class(server, final, listed[server.names[final]])

    @hookimpl
    def register_capabilities(self, register: Any) -> None:
        server = self.server

        def reachable(_ctx: DetectContext) -> str | None:
            return server.problem

        register(
            Capability(
                name=server.capability,
                description=f"The MCP server {server.name!r} starts and answers.",
                detectors=(Check(reachable),),
                setup=_setup(server),
            )
        )
        if server.settings.pins and server.drifted:
            changed = ", ".join(_catalog.drift_text(server, r) for r in server.drifted)
            mode = f"pin = {json.dumps(server.settings.pin)}"

            def unchanged(_ctx: DetectContext) -> str | None:
                return (
                    f"the server's definition of {changed}; {mode} refuses it until "
                    "'toolplug lock' accepts it"
                )

            register(
                Capability(
                    name=f"{server.capability}_lock",
                    description=f"The pinned tools of {server.name!r} match toolplug.lock.",
                    detectors=(Check(unchanged),),
                    setup="Review the changed definitions ('toolplug doctor', 'toolplug "
                    "scan'), then run 'toolplug lock' to accept them.",
                )
            )

        def screened(_ctx: DetectContext) -> str | None:
            if not server.withheld and not server.prompts_withheld:
                return None
            return "; ".join(
                [f"{name} is withheld: {_findings_text(server, name)}"
                 for name in sorted(server.withheld)]
                + [f"the prompt {name} is withheld: {_published.withheld_text(server, name)}"
                   for name in sorted(server.prompts_withheld)]
            )

        register(
            Capability(
                name=f"{server.capability}_scan",
                description=f"The definitions of {server.name!r} pass the scan, or the "
                "configuration accepts what it found.",
                detectors=(Check(screened),),
                setup="Review the findings ('toolplug scan'). To accept them, list their "
                f"rules in accept_findings under [mcp_servers.{server.name}.tools.TOOL] (or "
                f"[mcp_servers.{server.name}] for every tool of the server).",
            )
        )


def _findings_text(server: MountedServer, name: str) -> str:
    """Which rules a withheld tool's definition breaks, and where (no excerpt: this reason
    can reach a model, the excerpt is for the operator's eyes in ``toolplug scan``)."""
    where: dict[str, set[str]] = {}
    for finding, accepted in server.findings.get(name, []):
        if not accepted:
            where.setdefault(finding.rule, set()).add(finding.field.split("/")[0])
    rules = ", ".join(f"{r} (in {', '.join(sorted(f))})" for r, f in sorted(where.items()))
    return f"its definition breaks the scan rules {rules}"


def _result(
    answer: Any, server: str, labels: Trust | None = None, trusts: bool = False
) -> ToolResult:
    """An MCP ``CallToolResult`` as a ``ToolResult``: the text blocks as the output, every
    other block as its part (``_content``), ``structuredContent`` as data, and the result's
    own labels where its trust annotations say more than ``labels``."""
    try:
        output, parts = blocks(answer.content)
    except BadBlock as bad:
        return ToolResult.failure(
            ErrorType.EXECUTION,
            f"MCP server {server!r} sent a result that is not valid MCP: {bad} "
            "(the server's authors can fix it; toolplug passes on nothing it cannot read)",
        )
    if answer.is_error:
        served = _served_error(answer)
        if served is not None:
            return served
        said = ToolResult.success(output, parts=parts).for_model()  # each part in words
        return ToolResult.failure(
            ErrorType.EXECUTION,
            said or f"MCP server {server!r} reported an error and said nothing more",
        )
    own = _said(answer, labels, trusts) if labels is not None else None
    return ToolResult.success(output, answer.structured_content, parts=parts, trust=own)


_ERROR_TYPE: Final = re.compile(r"[A-Z][A-Za-z]{0,60}Error")


def _served_error(answer: Any) -> ToolResult | None:
    """The structured error another ``toolplug serve`` put in the result's ``_meta``
    (``toolplug/error``), kept as it was: its type, message and whether a retry may help,
    so a chain of serves and mounts reads as the original (not "ExecutionError:
    ExecutionError: ..."). None when the result has none, or one not of that shape."""
    meta = getattr(answer, "meta", None) or {}
    error = meta.get("toolplug/error") if isinstance(meta, Mapping) else None
    if not isinstance(error, Mapping):
        return None
    kind, message = error.get("error_type"), error.get("error_message")
    retry = error.get("retry_possible", False)
    if not (isinstance(kind, str) and _ERROR_TYPE.fullmatch(kind) and isinstance(message, str)
            and message and isinstance(retry, bool)):
        return None
    return ToolResult.failure(kind, message, retry_possible=retry)


def _said(answer: Any, labels: Trust, trusts: bool) -> Trust | None:
    """The labels a result's trust annotations give it (MCP's experimental extension, in
    ``_meta``), over the tool's ``labels``: "untrusted" and "sensitive" are believed from
    any server (they only ask for more caution); "not untrusted" and "not sensitive" only
    from a server the configuration trusts (``trust_annotations = true``). None when they
    change nothing."""
    meta = getattr(answer, "meta", None)
    said = meta.get(TRUST_ANNOTATIONS) if isinstance(meta, dict) else None
    if not isinstance(said, dict):
        return None
    output, private = labels.output, labels.private
    untrusted, sensitive = said.get("untrusted"), said.get("sensitive")
    if untrusted is True:
        output = "untrusted"
    elif untrusted is False and trusts:
        output = "trusted"
    if sensitive is True:
        private = True
    elif sensitive is False and trusts:
        private = False
    if output == labels.output and private == labels.private:
        return None
    return labels.model_copy(update={"output": output, "private": private})


def report(mounts: Mounted) -> list[str]:
    """What ``toolplug doctor`` says of each mounted server, one fact a line."""
    lines: list[str] = []
    for server in mounts.servers.values():
        where = f"{server.settings.transport}: {server.resolved.describe()}"
        listing = server.listing
        if server.problem is not None:
            state = f"DOWN: {server.problem}"
            if listing is not None and listing.tools:
                state += f" (its last known {len(listing.tools)} tool(s) are unavailable)"
        else:
            assert listing is not None
            made = " ".join(
                str(v) for v in (listing.server.get("name"), listing.server.get("version")) if v
            )
            state = f"up: {made or 'a server'} listing {len(listing.tools)} tool(s)"
        lines.append(f"  {server.name} ({where}): {state}")
        if server.names:
            lines.append(f"    mounted as: {', '.join(sorted(server.names))}")
        if server.resolved.oauth is not None:
            lines.append(f"    sign-in kept in: {_credentials.kept_in(server.resolved.oauth)}")
        lines += [f"    note: {note}" for note in server.notes]
        if server.names and not server.settings.trust_annotations:
            lines.append(
                "    annotations: not trusted (trust_annotations = false): approvals as if "
                "the server said nothing of its tools"
            )
        if server.recorded:
            lines.append(
                f"    pinned on first use: {len(server.recorded)} definition(s) recorded in "
                "toolplug.lock"
            )
        for final, rules in sorted(server.withheld.items()):
            lines.append(
                f"    withheld: {final} (scan rules {', '.join(rules)}; 'toolplug scan' shows "
                "the findings)"
            )
        lines += _published.report(server)
        if server.locked is None:
            continue
        pin = json.dumps(server.settings.pin)
        refused = f" (refused: pin = {pin})" if server.settings.pins else ""
        for remote in server.drifted:
            drift = _catalog.drift_text(server, remote)
            lines.append(f"    drift: the server's definition of {drift}{refused}")
    return lines
