"""Each configured OpenAPI description becomes a plugin of toolplug tools.

``describe(config, env)`` reads each enabled API's parsed description (from the cache, or
by reading and converting it), makes one ``Tool`` class per selected operation with
metadata from the description and the configuration, and one plugin per API that
registers those tools and the API's capability (``openapi_NAME``: present when the
description was read, its base URL passes the network guard and its credentials are
set). The registry then treats them like any installed tool.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urljoin, urlsplit

from toolplug.config._openapi import ApiSettings, ApiTrust
from toolplug.contract._capabilities import Capability, Check, DetectContext
from toolplug.contract._hooks import hookimpl
from toolplug.contract._metadata import (
    TOOL_NAME_PATTERN,
    Annotations,
    ToolMetadata,
    Trust,
    schema_digest,
    vouch,
)
from toolplug.contract._settings import SINK_KINDS, ToolSettings, TrustOverlay
from toolplug.contract._tool import Tool, ToolContext, ToolResult
from toolplug.runtime import _progress
from toolplug.sources import _gathered
from toolplug.sources._signin import store_for
from toolplug.sources.openapi import (
    _catalog,
    _convert,
    _oauth,
    _request,
    _security,
    _signin,
    _spec,
)

if TYPE_CHECKING:
    from toolplug.config._config import Config
    from toolplug.contract._network import NetworkPolicy
    from toolplug.runtime._loaded import RegisteredTool
    from toolplug.runtime._registry import Registry

__all__ = ["Api", "Described", "describe", "described", "report"]

_TOOL_NAME: Final = re.compile(TOOL_NAME_PATTERN)
_NETWORK: Final = "network"


@dataclass
class Api(_gathered.Origin):
    """One configured API as this process sees it."""

    KIND = "openapi"

    settings: ApiSettings
    base: Path
    """The directory a relative ``spec`` is read from (the configuration's)."""
    key: str
    parsed: _catalog.Parsed | None = None
    from_cache: bool = False
    base_url: str | None = None
    credentials: _request.Credentials = field(default_factory=_request.Credentials)
    unset: list[str] = field(default_factory=list)
    """Credentials that could not be resolved, and why."""
    refused: str | None = None
    """Why the network guard refuses the base URL."""
    names: dict[str, dict[str, Any]] = field(default_factory=dict)
    """toolplug name -> converted operation, for each selected operation."""
    notes: list[str] = field(default_factory=list)
    needs: dict[str, str] = field(default_factory=dict)
    """toolplug name -> the capability of the security its configuration does not meet."""
    securities: dict[str, str] = field(default_factory=dict)
    """Each such capability -> its reason (the scheme it needs and how to supply it)."""
    pool: _request.ClientPool = field(default_factory=_request.ClientPool)
    """Connections kept for its calls, one client per event loop."""
    grant: _oauth.Grant | _signin.SignIn | None = None
    """Its OAuth client (``auth = "oauth"``), which gets its access token: the client
    credentials grant, or a person's sign-in."""
    signed_out: str | None = None
    """Why its person's sign-in cannot be used now (none yet, or expired), at load."""

    @functools.cached_property
    def setup(self) -> str:
        """The setup steps every one of its tools shows when it is unavailable."""
        return _setup(self)

    @functools.cached_property
    def common(self) -> dict[str, Any]:
        """The metadata every one of its operations shares, from its table."""
        return {
            "category": self.settings.category,
            "requires_capabilities": (_NETWORK, self.capability),
            "setup_instructions": self.setup,
            "timeout_seconds": self.settings.timeout_seconds,
            "errors": _request.ERRORS,
        }

    @functools.cached_property
    def template(self) -> ToolMetadata:
        """``common``, checked once: what each vouched operation's metadata is copied from."""
        return ToolMetadata.model_validate(
            {"name": "openapi_operation", "description": "An operation.", **self.common}
        )

    @functools.cached_property
    def vouched(self) -> frozenset[str]:
        """The operations whose metadata passed every check when a load first registered
        them (``Parsed.checked_ids``): their definitions are the cache's, unchanged."""
        parsed = self.parsed
        return frozenset(parsed.checked_ids) if parsed is not None else frozenset()

    @property
    def problem(self) -> str | None:
        """Why the API's tools cannot be called, or None."""
        if self.parsed is None:
            return "its description has not been read yet"
        if self.parsed.problem:
            return f"its description cannot be read: {self.parsed.problem}"
        if self.base_url is None:
            return (
                "no base URL: the description names no server; set "
                f"[openapi.{self.name}] base_url"
            )
        if self.refused:
            return f"the network guard refuses its base URL: {self.refused}"
        if self.unset:
            return "; ".join(self.unset)
        return None

    async def call(
        self, operation: _request.Operation, arguments: dict[str, Any], context: ToolContext
    ) -> ToolResult:
        """Make one operation's request."""
        assert self.base_url is not None
        grant = self.grant
        if grant is None or operation.anonymous:  # security: [] gets no credentials
            return await _request.send(
                operation, arguments, context, base_url=self.base_url,
                credentials=_request.Credentials() if operation.anonymous else self.credentials,
                pool=self.pool,
            )
        spent = stepped = 0
        before: str | None = None
        wider = ""  # the scopes a step-up asked a new token for
        while True:
            timeout = min(context.network.timeout_seconds, operation.timeout)
            try:
                header = await grant.authorization(context.network, timeout)
            except _oauth.GrantError as exc:
                said = str(exc)
                if stepped and isinstance(grant, _oauth.Grant):
                    grant.narrow(before)  # the wider scopes refused: not asked for again
                    said = (
                        f"{operation.method} {operation.path} answered HTTP 403 "
                        f"insufficient_scope (the API wants the scopes {wider}), and a token "
                        f"with them was refused: {said}"
                    )
                return ToolResult.failure(
                    exc.error_type, said, retry_possible=exc.retry_possible,
                    details={"token_url": grant.token_url or grant.discovery_url},
                )
            result = await _request.send(
                operation, arguments, context, base_url=self.base_url,
                credentials=_request.Credentials(headers={"Authorization": header}),
                pool=self.pool,
            )
            details = (result.error.details or {}) if result.error is not None else {}
            if details.get("status") == 401 and not spent:
                spent += 1  # a 401 spends the token: once more with a new one
                grant.spent(header)
                continue
            challenged = _oauth.insufficient_scope(details)
            if challenged is None:
                return result
            if isinstance(grant, _signin.SignIn):  # only a person can grant more
                reason = await grant.step_up(challenged)
            elif stepped < _oauth.STEP_UPS and challenged:
                stepped += 1
                before, wider = grant.widen(header, challenged), challenged
                continue
            else:
                if stepped and grant.granted is not None:
                    grant.narrow(before, wider)  # not asked again for what was not given
                wants = f"the scopes {challenged}" if challenged else "more scopes"
                has = grant.granted or "none named"
                reason = (
                    f"still wants {wants} (the new token has {has}): the authorization "
                    f"server did not grant them; check {grant.table} scopes against what "
                    "the client may be granted"
                ) if stepped else (
                    "wants more scopes than the token has (its answer names none): "
                    f"check {grant.table} scopes"
                )
            where = f"{operation.method} {operation.path}"
            return ToolResult.failure(
                "PermissionError",
                f"{where} answered HTTP 403 insufficient_scope: the API {reason}",
                details={**details, "scopes": challenged},
            )


@dataclass
class Described(_gathered.GatheredSource):
    """Every configured API of one registry: the source of their operations' tools."""

    apis: dict[str, Api] = field(default_factory=dict)

    name = "openapi"
    title = "OpenAPI descriptions"

    def complete(self, registry: Registry) -> Mapping[str, RegisteredTool]:
        """Keep the digests of the schemas it registered beside the cache for the next
        load (what is vouched for is not checked again); it replaces no entry."""
        tools = registry.tools
        for api in self.apis.values():
            if api.grant is not None:
                api.grant.redactor = registry.redactor
            parsed = api.parsed
            if parsed is None or parsed.problem:
                continue
            done = set(parsed.checked_ids)
            registered = {
                name: op for name, op in api.names.items()
                if name in tools and tools[name].plugin == f"openapi:{api.name}"
            }
            fresh = {n: op for n, op in registered.items() if op["operation_id"] not in done}
            if not fresh:
                continue  # every registered operation was vouched for already
            passed = {
                schema_digest(schema)
                for name in fresh
                for schema in (tools[name].metadata.parameters, tools[name].metadata.returns)
                if schema is not None
            }
            parsed.checked = sorted(set(parsed.checked) | passed)
            parsed.checked_ids = sorted(done | {op["operation_id"] for op in fresh.values()})
            _catalog.write_parsed(registry.config.cache_dir, api.name, parsed)
        return {}

    def report(self) -> list[str]:
        return report(self)

    def families(self) -> dict[str, str]:
        """Each API's plugin -> its description's content key (path, size and time; or
        URL): APIs configured from one description are one family (``doctor``'s shadowing
        rule does not compare them)."""
        return {f"openapi:{api.name}": api.key for api in self.apis.values()}

    def unlisted(self) -> list[str]:
        """Each API with no known operation because its description was never read."""
        return [
            f"[openapi.{api.name}] ({api.settings.spec}): no tools, {api.problem}"
            for api in self.apis.values()
            if api.problem and not (api.parsed and api.parsed.operations)
        ]

    def close(self) -> None:
        """Close each API's pooled clients and end their closing tasks, so nothing of
        theirs is left pending on a loop when the interpreter exits."""
        for api in self.apis.values():
            api.pool.close()


def described(registry: Registry) -> Described | None:
    """The APIs of a registry made by ``toolplug.load()``, if it has any."""
    return next((s for s in registry.sources if isinstance(s, Described)), None)


def describe(config: Config, *, env: Mapping[str, str], refresh: bool = False) -> Described:
    """Read each enabled API's description (from the cache, or the spec itself) and build
    the plugins that register its operations as tools. ``refresh`` reads every spec now."""
    with _catalog.collector_paused():  # every object it makes lives as long as the registry
        return _describe(config, env=env, refresh=refresh)


def _describe(config: Config, *, env: Mapping[str, str], refresh: bool) -> Described:
    base = config.path.parent if config.path else Path.cwd()
    apis: dict[str, Api] = {}
    secrets: set[str] = set()
    files: list[str] = []
    now = _catalog.now()
    for name, settings in config.openapi.items():
        if not settings.enabled:
            continue
        key, path = _spec.spec_key(settings.spec, base)
        key = f"{key}:v{_convert.CONVERTER_VERSION}"
        limits = {"max_bytes", "max_operations"} & settings.model_fields_set
        if limits:  # a description read under other limits is read again under these
            key += f":{settings.max_bytes}:{settings.max_operations}"
        api = Api(settings, base, key)
        if path is not None:
            files.append(str(path))
        files.append(str(_catalog.listing_path(config.cache_dir, name)))
        parsed = _catalog.read_parsed(config.cache_dir, name)
        ttl = settings.spec_ttl_seconds if path is None else float("inf")
        if parsed is not None and parsed.key == key:
            api.parsed, api.from_cache = parsed, True
            if not refresh and parsed.fresh(ttl, now):
                apis[name] = api
                continue
        _read(api, config.network, config.cache_dir, last=parsed)
        apis[name] = api
    for api in apis.values():
        if api.parsed is not None:
            vouch(api.parsed.checked)
        _resolve(api, env, secrets, config.source)
        api.base_url = _base_url(api)
        if api.base_url is not None:
            api.refused = _refused(api.base_url, config.network)
            _grant(api, env, secrets, config.source, config.state_dir,
                   keep=config.oauth.store)
        _name_tools(api)
    plugins = [(f"openapi:{a.name}", _ApiPlugin(a)) for a in apis.values()]
    expiries = [
        a.parsed.expires(a.settings.spec_ttl_seconds)
        for a in apis.values()
        if a.parsed is not None and _spec.is_url(a.settings.spec)
    ]
    for api in apis.values():  # a sign-in or sign-out changes what a listing says
        if isinstance(api.grant, _signin.SignIn):
            files.append(str(api.grant.store.path))
            ends = api.grant.ends()
            if ends is not None:
                expiries.append(ends)
    return Described(
        settings=_with_settings(config, apis),
        gathered=plugins,
        found=secrets,
        read=files,
        stale_at=min(expiries) if expiries else None,
        apis=apis,
    )


def _read(
    api: Api, policy: NetworkPolicy, cache_dir: Path, last: _catalog.Parsed | None = None
) -> None:
    """Read and convert the description now; keep the last known one (``last``, what the
    cache held, even for a file since changed) if that fails."""
    try:
        settings, table = api.settings, f"[openapi.{api.name}]"
        with _progress.status(f"parsing description {api.name}..."):
            raw, where = _spec.read_source(
                settings.spec, base=api.base, policy=policy, timeout=settings.timeout_seconds,
                max_bytes=settings.max_bytes, limit_key=f"{table} max_bytes",
            )
            description = _convert.convert(_spec.parse_document(
                raw, where, max_operations=settings.max_operations,
                limit_key=f"{table} max_operations",
            ))
    except _spec.SpecError as exc:
        last = api.parsed or last
        api.parsed = _catalog.Parsed(
            key=api.key, stored=_catalog.now(),
            description=last.description if last else {}, problem=str(exc),
        )
    else:
        api.parsed = _catalog.Parsed(key=api.key, stored=_catalog.now(), description=description)
    api.from_cache = False
    _catalog.write_parsed(cache_dir, api.name, api.parsed)


def _resolve(api: Api, env: Mapping[str, str], secrets: set[str], source: str) -> None:
    auth = api.settings.auth
    if auth is None:
        return
    if auth == "oauth":
        return  # _grant, once the base URL is known
    values: dict[str, str] = {}
    for key, value in auth.secrets().items():
        where = f"[openapi.{api.name}] auth.{key} in {source}"
        text, secret = _gathered.resolved(value, where, env=env, base=api.base, problems=api.unset)
        if text is None:
            continue
        if secret:
            secrets.add(text)
        values[key] = text
    if api.unset:
        return
    if auth.type == "bearer":
        bearer = f"Bearer {values['token']}"
        api.credentials = _request.Credentials(headers={"Authorization": bearer})
    elif auth.type == "header":
        assert auth.name is not None
        api.credentials = _request.Credentials(headers={auth.name: values["value"]})
    elif auth.type == "query":
        assert auth.name is not None
        api.credentials = _request.Credentials(query={auth.name: values["value"]})
    else:
        pair = f"{values['username']}:{values['password']}".encode()
        token = base64.b64encode(pair).decode("ascii")
        secrets.add(token)
        api.credentials = _request.Credentials(headers={"Authorization": f"Basic {token}"})


def _grant(
    api: Api, env: Mapping[str, str], secrets: set[str], source: str, state_dir: Path,
    *, keep: str = "auto",
) -> None:
    """The OAuth client of an ``auth = "oauth"`` API, its secret read: the client
    credentials grant, or a person's sign-in (whose state the store says)."""
    oauth = api.settings.oauth_settings
    if oauth is None or api.base_url is None:
        return
    schemes = api.parsed.description.get("security_schemes") if api.parsed else None
    operations = api.parsed.description.get("operations") if api.parsed else None
    made: _oauth.Grant | _signin.SignIn | str
    if oauth.grant == "authorization_code":
        made = _signin.sign_in_for(
            api.name, oauth, base_url=api.base_url, schemes=schemes or {},
            store=store_for(state_dir, keep), operations=operations,
        )
    else:
        made = _oauth.grant_for(
            api.name, oauth, base_url=api.base_url, schemes=schemes or {},
            operations=operations,
        )
    if not isinstance(made, str) and importlib.util.find_spec("mcp") is None:
        made = (
            f'[openapi.{api.name}] auth = "oauth" asks for its token with the MCP SDK, which '
            'is not installed: pip install "toolplug[openapi,mcp]"'
        )
    if isinstance(made, str):
        if api.parsed is not None and not api.parsed.problem:
            api.unset.append(made)
        return
    for key in ("client_secret", "client_assertion_key"):
        value = getattr(oauth, key)
        if value is None:
            continue
        where = f"[openapi.{api.name}.oauth] {key} in {source}"
        text, _secret = _gathered.resolved(value, where, env=env, base=api.base, problems=api.unset)
        if text is None:
            continue
        if key == "client_assertion_key" and "\n" not in text:
            text = text.replace("\\n", "\n")  # a PEM in one line of a variable
        secrets.add(text)
        setattr(made, key, text)
        named = getattr(value, "env", None)
        if isinstance(made, _oauth.Grant):
            made.secret_from = f"{key} (the environment variable {named})" if named else key
    api.grant = made
    if isinstance(made, _signin.SignIn):
        api.signed_out = made.status()


def _base_url(api: Api) -> str | None:
    if api.settings.base_url is not None:
        return api.settings.base_url
    servers = api.parsed.description.get("servers") if api.parsed else None
    if not servers:  # OpenAPI's default server is "/", beside the description
        servers = ["/"]
    first = str(servers[0])
    if "{" in first:  # server variables: the user says which
        return None
    if first.startswith(("http://", "https://")):
        return first
    if _spec.is_url(api.settings.spec):  # relative to where the description came from
        return urljoin(api.settings.spec, first)
    return None


_DNS_NAME: Final = re.compile(r"(?:[a-z0-9-]+\.)+[a-z]{2,63}\.?")
"""A plain host name: letters, digits and hyphens, its last label letters (so no spelling
of an IP address)."""


def _refused(url: str, policy: NetworkPolicy) -> str | None:
    """Why the guard refuses the base URL, judged without a DNS look-up (an IP literal or
    localhost is checked now; a host name when a call resolves it)."""
    try:  # a plain host name is judged when a call resolves it: nothing to import now
        parts = urlsplit(url)
        if (
            parts.scheme in ("http", "https") and "@" not in parts.netloc
            and "\\" not in parts.netloc and parts.hostname is not None
            and _DNS_NAME.fullmatch(parts.hostname) and parts.port is None
        ):
            return None
    except ValueError:
        pass  # the guard's own parser says what is wrong
    from toolplug.http import NetworkError, check_url  # the guard, only when needed
    from toolplug.http._netguard import parse_url

    try:
        target = parse_url(url)
    except NetworkError as exc:
        return exc.reason
    host = target.host.strip("[]").lower()
    literal = host == "localhost" or host.replace(".", "").isdigit() or ":" in host
    if not literal:
        return None
    try:
        check_url(url, policy, resolve=lambda _h, _p: ["127.0.0.1"])
    except NetworkError as exc:
        return str(exc)
    return None


def _name_tools(api: Api) -> None:
    """Name every selected operation: the prefix and its base name, made unique."""
    taken: set[str] = set()
    for op in api.parsed.operations if api.parsed else []:
        if not api.settings.selects(
            op["operation_id"], method=op["method"], path=op["path"], tags=tuple(op["tags"])
        ):
            continue
        wished = (api.settings.name_prefix + op["name"])[:64]
        name = _gathered.unique_name(wished, taken)
        if name != wished:
            api.notes.append(f"{op['operation_id']!r} is offered as {name}")
        api.names[name] = op
        _secured(api, name, op)
    known = {op["operation_id"] for op in (api.parsed.operations if api.parsed else [])}
    for operation_id in sorted(set(api.settings.tools) - known):
        if api.parsed and not api.parsed.problem:
            api.notes.append(f"tools.{operation_id}: the description has no such operationId")


def _secured(api: Api, name: str, op: Mapping[str, Any]) -> None:
    """Note the capability of the security an operation needs and its configuration does
    not supply (one capability per reason: ``openapi_NAME_auth``, ``..._auth_2``, ...)."""
    schemes = api.parsed.description.get("security_schemes") if api.parsed else None
    reason = _security.unmet(
        api.settings, op.get("security"), schemes or {}, signed_out=api.signed_out
    )
    if reason is None:
        return
    found = next((c for c, r in api.securities.items() if r == reason), None)
    if found is None:
        count = len(api.securities)
        found = f"{api.capability}_auth" + (f"_{count + 1}" if count else "")
        api.securities[found] = reason
    api.needs[name] = found


def _with_settings(config: Config, apis: Mapping[str, Api]) -> dict[str, ToolSettings]:
    """Each operation's call settings: the API's approval and scopes, then its
    ``tools.OPERATION_ID`` table, then a ``[tools.NAME]`` table the user wrote."""
    settings: dict[str, ToolSettings] = {}
    for api in apis.values():
        defaults: dict[str, Any] = {}
        if "approval" in api.settings.model_fields_set:
            defaults["approval"] = api.settings.approval
        if api.settings.scopes is not None:
            defaults["scopes"] = api.settings.scopes
        tables, written = api.settings.tools, config.settings
        for final, op in api.names.items():
            own = tables.get(op["operation_id"])
            if not defaults and own is None and final not in written:
                continue  # nothing to set: most operations of a large API
            values = _gathered.call_settings(
                defaults, own.call_settings() if own else None, written.get(final)
            )
            if values:
                settings[final] = ToolSettings.model_validate(values)
    return settings


@functools.cache
def _annotations(method: str) -> Annotations:
    read_only = method in ("GET", "HEAD", "OPTIONS")
    return Annotations(
        read_only=read_only,
        destructive=method in ("DELETE", "PUT"),
        idempotent=method in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE"),
        open_world=True,
    )


def _trust(overlay: ApiTrust, op: Mapping[str, Any], own: TrustOverlay | None) -> Trust:
    """The API's labels for this operation, with the operation's own table on top."""
    names = set(op["parameters"].get("properties") or {})
    output, private = overlay.output, overlay.private
    chosen = overlay.sinks
    if own is not None:
        output = own.output if own.output is not None else output
        private = own.private if own.private is not None else private
        chosen = list(own.sinks) if own.sinks is not None else chosen
    if chosen is not None:
        sinks = [s for s in chosen if s in names]
    else:
        sinks = [a for a, spec in op["args"].items() if spec[0] in ("query", "body")]
        whole = (op.get("body") or {}).get("whole")
        if whole:
            sinks.append(whole)
    kinds = tuple(
        tuple(sorted(s for s in getattr(overlay, kind) if s in sinks)) for kind in SINK_KINDS
    )
    return _labels(output, private, tuple(sorted(sinks)), kinds)


@functools.lru_cache(maxsize=1024)
def _labels(
    output: str, private: bool, sinks: tuple[str, ...], kinds: tuple[tuple[str, ...], ...] = ()
) -> Trust:
    """One ``Trust`` per set of labels (``kinds``: the names of each of ``SINK_KINDS``, in
    its order), shared by the operations that have it."""
    return Trust.model_validate({
        "output": output, "private": private, "sinks": sinks,
        **dict(zip(SINK_KINDS, kinds, strict=False)),
    })


def _setup(api: Api) -> str:
    steps = [f"[openapi.{api.name}] spec = {api.settings.spec!r} must be a readable OpenAPI "
             "3.0 or 3.1 description (JSON or YAML)"]
    if api.settings.base_url is None:
        steps.append("the description's first server, or base_url, must be an http(s) URL")
    steps.append("the base URL must pass the network guard (a private or loopback address "
                 "needs [network] allow)")
    if api.settings.auth is not None:
        steps.append("its auth values ({ env = ... } or { file = ... }) must be set")
    return "; ".join(steps) + ". 'toolplug doctor' reads the description again now."


def _metadata(api: Api, final: str, op: Mapping[str, Any]) -> ToolMetadata:
    """One operation's metadata. Checked field by field, unless the cache vouches for the
    operation (``Api.vouched``) and no table of the configuration adds to it: then what the
    operation brings passed every check when it was first registered, what the API's table
    brings is checked once, in ``Api.template``, and the model is a copy of that template
    with the operation's fields (a copy checks nothing, and costs a microsecond)."""
    settings = api.settings
    own = settings.tools.get(op["operation_id"])
    description = op["description"]
    if op.get("deprecated"):
        description = f"(Deprecated) {description}"
    values: dict[str, Any] = {
        "name": final,
        "description": description,
        "title": f"{op['method']} {op['path']}",
        "parameters": op["parameters"],
        "returns": op.get("returns"),
        "parts": tuple(op.get("parts") or ()),
        "annotations": _annotations(op["method"]),
        "trust": _trust(settings.trust, op, own.trust if own else None),
    }
    needs = api.needs.get(final)
    if needs is not None:
        values["requires_capabilities"] = (*api.common["requires_capabilities"], needs)
    if (
        own is None and op["operation_id"] in api.vouched and _TOOL_NAME.match(final)
        and op["parameters"].get("type") == "object"
        and description and "\n" not in description and description == description.strip()
    ):
        return api.template.model_copy(update=values)
    values = {**api.common, **values}
    _gathered.overridden(values, own, ("category", "optionality", "usage_hint", "description"))
    return ToolMetadata.model_validate(values)


async def _run(self: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    """The ``run`` of every operation's tool: the request its class describes."""
    tool = type(self)
    api: Api = getattr(tool, "api")  # noqa: B009 - set by _tool_class, unknown to Tool
    operation: _request.Operation | None = tool.__dict__.get("operation")
    if operation is None:  # made by the first call: a load makes a thousand tools
        definition = getattr(tool, "definition")  # noqa: B009
        operation = _request.Operation.of(definition, tool.metadata.timeout_seconds)
        setattr(tool, "operation", operation)  # noqa: B010
    return await api.call(operation, arguments, context)


def _tool_class(api: Api, final: str, op: Mapping[str, Any]) -> type[Tool] | str:
    """The ``Tool`` class of one operation, or why it cannot be offered."""
    metadata = _gathered.checked_metadata(
        lambda: _metadata(api, final, op),
        f"the operation {op['operation_id']!r} cannot be offered",
    )
    if isinstance(metadata, str):
        return metadata
    return _gathered.tool_class(
        "OpenAPI", metadata, _run, api=api, definition=op, __module__=__name__
    )


class _ApiPlugin(_gathered.OriginPlugin):
    """The plugin of one API: its operations' tools and its capability."""

    def __init__(self, api: Api) -> None:
        description = api.parsed.description if api.parsed else {}
        super().__init__(
            api, description.get("api_version"),
            lambda final: _tool_class(api, final, api.names[final]), lambda: list(api.names),
        )
        self.api = api

    @hookimpl
    def register_tools(self, register: Any) -> None:
        """Its tools, made with the cyclic garbage collector paused: a thousand classes and
        models hold no garbage, and collecting while they are made costs more than making
        them."""
        with _catalog.collector_paused():
            super().register_tools(register)

    @hookimpl
    def register_capabilities(self, register: Any) -> None:
        api = self.api

        def usable(_ctx: DetectContext) -> str | None:
            return api.problem

        register(
            Capability(
                name=api.capability,
                description=f"The OpenAPI description of {api.name!r} is read, its base URL "
                "passes the network guard and its credentials are set.",
                detectors=(Check(usable),),
                setup=_setup(api),
            )
        )
        for name, reason in api.securities.items():
            register(
                Capability(
                    name=name,
                    description=f"[openapi.{api.name}] supplies the credentials the "
                    "description's security schemes ask for.",
                    detectors=(Check(functools.partial(_said, reason)),),
                    setup=reason,
                )
            )


def _said(reason: str, _ctx: DetectContext) -> str:
    return reason


def report(described: Described) -> list[str]:
    """What ``toolplug doctor`` says of each API, one fact a line."""
    lines: list[str] = []
    for api in described.apis.values():
        parsed = api.parsed
        description = parsed.description if parsed else {}
        made = " ".join(v for v in (description.get("title"), description.get("api_version")) if v)
        count = len(parsed.operations) if parsed else 0
        state = (
            f"DOWN: {api.problem}" if api.problem
            else f"up: {made or 'an API'} (OpenAPI {description.get('openapi')}), "
            f"{count} operation(s), {len(api.names)} offered, requests to {api.base_url}"
        )
        lines.append(f"  {api.name} ({api.settings.spec}): {state}")
        lines += [f"    note: {note}" for note in api.notes]
        for capability, reason in api.securities.items():
            count = sum(1 for c in api.needs.values() if c == capability)
            lines.append(f"    note: {count} operation(s) unavailable: {reason}")
        lines += [f"    note: {p}" for p in description.get("problems") or []]
    return lines
