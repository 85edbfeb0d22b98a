"""Settings parsed once: ``[calls]``, ``[code]``, ``[serve]``, ``[guard]``, ``[policies]``
and each tool's call settings.

The configuration (``toolplug.config._config``) hands every raw table here once, when it
loads; everything above runtime reads the typed models' attributes, never a raw table. A
mistake is a ``ConfigError`` naming the file, the key and what is expected, taken from the
field's description: one list of keys, so a key cannot be valid in one layer and unknown
in another.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from toolplug.contract._errors import ConfigError
from toolplug.contract._settings import POLICY_KEYS, Scope, StrictTable, ToolSettings
from toolplug.trust._settings import GuardSettings, PolicyRule
from toolplug.utilities._limits import (
    DEFAULT_OUTPUT_CHARS,
    DEFAULT_PART_BYTES,
    DEFAULT_RESULT_BYTES,
)

__all__ = [
    "CALLS_KEYS",
    "CODE_KEYS",
    "GUARD_KEYS",
    "SERVE_KEYS",
    "AuthSettings",
    "CallsSettings",
    "CodeSettings",
    "FromEnv",
    "FromFile",
    "ServeSettings",
    "StaticToken",
    "Value",
    "parse_calls",
    "parse_code",
    "parse_guard",
    "parse_named_tables",
    "parse_policies",
    "parse_serve",
    "parse_tool_settings",
    "resolve_value",
]



class CallsSettings(StrictTable):
    """The ``[calls]`` table: what all calls of one registry share."""

    sync_workers: int = Field(
        default_factory=lambda: min(32, (os.cpu_count() or 1) + 4),
        ge=1,
        description="a whole number of threads, 1 or more",
    )
    """Threads that run sync tools for ``acall`` (and for ``call`` when limits apply)."""
    max_concurrency: int = Field(
        default=0, ge=1, description="a whole number of calls, 1 or more"
    )
    """At most this many calls run at once (0, the default: no limit)."""
    store: str = Field(
        default="memory",
        pattern=r"^(memory|(redis|rediss|unix)://.*)$",
        description='"memory", or the URL of a Redis server: "redis://HOST:PORT/DB"',
    )
    """Where the result cache and rate limits live: ``memory`` or a Redis URL."""
    cache_entries: int = Field(
        default=10_000, ge=1, description="a whole number of cached results, 1 or more"
    )
    """The in-process result cache keeps at most this many results."""
    cache_max_mb: float = Field(
        default=256.0, gt=0, allow_inf_nan=False,
        description="a positive number of MB of parts' bytes the in-process result cache holds",
    )
    """The most bytes of cached results' parts (images, files) this process holds, the
    least recently used dropped first; a result whose parts are larger is not cached."""
    telemetry_content: bool = Field(
        default=False,
        description="a boolean: true records arguments and results in telemetry spans",
    )
    """Record arguments and results (secrets redacted) in telemetry spans."""
    max_output_chars: int = Field(
        default=DEFAULT_OUTPUT_CHARS,
        ge=1000,
        description="a whole number of characters a result may hand back, 1,000 or more",
    )
    """The output budget of a call whose tool sets none."""
    max_part_bytes: int = Field(
        default=DEFAULT_PART_BYTES, ge=1,
        description="a whole number of bytes one image, recording or file of a result may hold",
    )
    """The most bytes one binary part of a result may carry (``ToolResult.parts``): a tool
    that returns a larger one gets an ``ExecutionError`` naming the part, not a reply
    no host would carry."""
    max_result_bytes: int = Field(
        default=DEFAULT_RESULT_BYTES, ge=1,
        description="a whole number of bytes the binary parts of one result may hold together",
    )
    """The byte budget of a result's binary parts together: the parts beyond it are cut
    and kept as spills, and the result's warning names them (as ``max_output_chars`` does
    for text)."""
    spill_ttl_seconds: float = Field(
        default=3600.0, ge=0, allow_inf_nan=False,
        description="a number of seconds a cut output is kept whole, 0 to keep none",
    )
    """How long the whole of a result cut to the budget stays readable (``ToolResult.spill``)."""
    spill_max_mb: float = Field(
        default=256.0, gt=0, allow_inf_nan=False,
        description="a positive number of MB (millions of characters) of kept outputs",
    )
    """The most characters of kept outputs this process holds (the oldest go first); one
    output larger than this is not kept."""
    spill_max_count: int = Field(
        default=1000, ge=1, description="a whole number of kept outputs, 1 or more"
    )
    """The most kept outputs (per client in Redis, in all in this process)."""
    ask_timeout_seconds: float = Field(
        default=300.0, gt=0, allow_inf_nan=False,
        description="a positive number of seconds a tool waits for an answer",
    )
    """How long a tool's ``context.ask`` waits for the user's answer, and ``context.sample``
    for the host model's completion, before it raises ``AskError`` (``timeout``)."""
    task_ttl_seconds: float = Field(
        default=3600.0,
        gt=0,
        allow_inf_nan=False,
        description="a positive number of seconds a finished task's result is kept",
    )
    """How long a finished task (``registry.start``, MCP tasks) can still be asked for."""
    task_entries: int = Field(
        default=10_000, ge=1, description="a whole number of finished tasks kept, 1 or more"
    )
    """At most this many finished tasks are kept; the oldest go first."""
    task_after_seconds: float = Field(
        default=1.0,
        ge=0,
        allow_inf_nan=False,
        description="a number of seconds, 0 or more, a call may run before it becomes a task",
    )
    """Over MCP, a call of a client that declared the Tasks extension is answered directly
    when it ends within this time, and becomes a task when it is still running (0: every
    call is a task at once)."""


CALLS_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in CallsSettings.model_fields.items()
}


class CodeSettings(StrictTable):
    """The ``[code]`` table: code mode's ``run_code`` tool and its limits."""

    enabled: bool = Field(default=False, description="a boolean: true offers the run_code tool")
    """Offer ``run_code`` (``toolplug.sources._code``)."""
    toolset: str | None = Field(
        default=None,
        description="the name of a configured toolset: the tools a program may call",
    )
    """The tools a program may call; every available tool when None."""
    timeout_seconds: float = Field(
        default=10.0, gt=0, allow_inf_nan=False,
        description="a positive number of seconds a program may compute",
    )
    """How long a program may compute; its tool calls and approvals are not counted."""
    max_memory_mb: int = Field(default=64, ge=1, description="a whole number of MB, 1 or more")
    """The program's memory."""
    max_recursion: int = Field(
        default=200, ge=10, description="a whole number of nested calls, 10 or more"
    )
    """How deeply the program's functions may nest."""
    max_calls: int = Field(
        default=200, ge=1, description="a whole number of tool calls, 1 or more"
    )
    """How many tool calls one program may make."""
    wall_seconds: float = Field(
        default=3600.0, gt=0, allow_inf_nan=False,
        description="a positive number of seconds a program may take in all, waits included",
    )
    """run_code's own time limit, waiting for tools and approvals included."""
    max_programs_per_owner: int = Field(
        default=8, ge=1,
        description="a whole number of programs, 1 or more, one client may run at once",
    )
    """Programs one owner (an MCP client, else this process) may run at once; more are refused."""


CODE_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in CodeSettings.model_fields.items()
}


GUARD_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in GuardSettings.model_fields.items()
}


def parse_guard(table: Mapping[str, Any], *, file: str, prefix: str = "") -> GuardSettings:
    """The ``[guard]`` table, checked.

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """
    return _parsed(GuardSettings, table, "guard", file=file, prefix=prefix)


def parse_policies(
    table: Any, *, file: str, prefix: str = ""
) -> dict[str, tuple[PolicyRule, ...]]:
    """The ``[policies]`` table: per tool name, a list of rules (``[[policies.TOOL]]``).

    Each rule's schema is meta-validated as JSON Schema 2020-12 here, once.

    Raises:
        ConfigError: naming the rule's key (``policies.TOOL[INDEX].FIELD``).
    """
    raise_as = _raiser(file)
    if not isinstance(table, Mapping):
        raise raise_as("must be a table", key=prefix + "policies",
                       expected="a table of rule lists: [[policies.TOOL]]")
    rules: dict[str, tuple[PolicyRule, ...]] = {}
    for tool in sorted(table):
        raw = table[tool]
        where = f"{prefix}policies.{tool}"
        if isinstance(raw, Mapping):
            raw = [raw]
        if not isinstance(raw, list):
            raise raise_as(f"got {raw!r}", key=where,
                           expected="a list of rules: [[policies.TOOL]] tables")
        parsed: list[PolicyRule] = []
        for index, item in enumerate(raw):
            at = f"{where}[{index}]."
            if not isinstance(item, Mapping):
                raise raise_as(f"got {item!r}", key=at.rstrip("."), expected="a table")
            for key in sorted(set(item) - _RULE_KEYS):  # "schema", not the field's name
                raise raise_as("unknown key", key=at + str(key),
                               expected="one of " + ", ".join(sorted(_RULE_KEYS)))
            try:
                rule = PolicyRule.model_validate(dict(item))
            except ValidationError as exc:
                raise _fail(exc, PolicyRule, at, raise_as) from None
            problem = _schema_problem(rule.json_schema)
            if problem is not None:
                raise raise_as(problem, key=at + "schema", expected="a valid JSON Schema (2020-12)")
            parsed.append(rule)
        rules[str(tool)] = tuple(parsed)
    return rules


_RULE_KEYS: Final = frozenset({"action", "argument", "schema", "reason"})


def _schema_problem(schema: dict[str, Any]) -> str | None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"not a valid JSON Schema: {exc.message}"
    return None




ServeApprovals = Literal["toolplug", "client"]
"""Who approves a served call: toolplug asks the client's user, or the MCP host did."""


class FromEnv(StrictTable):
    """``{ env = "VAR" }``: the value of an environment variable (a secret, redacted)."""

    env: str = Field(min_length=1, description="the name of an environment variable")


class FromFile(StrictTable):
    """``{ file = "PATH" }``: the stripped text of a file (a secret, redacted)."""

    file: str = Field(min_length=1, description="a file path, relative to the configuration")


Value = str | FromEnv | FromFile
"""A configured value: the text itself, or where to read it (a secret)."""


def resolve_value(value: Value, *, env: Mapping[str, str], base: Path) -> tuple[str | None, bool]:
    """A configured value as text, and whether it is a secret (it came from elsewhere).

    An ``{ env = "VAR" }`` whose variable is unset gives None; an unreadable
    ``{ file = "PATH" }`` raises ``OSError``.
    """
    if isinstance(value, str):
        return value, False
    if isinstance(value, FromEnv):
        return env.get(value.env) or None, True
    path = base / Path(value.file).expanduser()
    return path.read_text(encoding="utf-8").strip(), True


_SECRET: Final = '{ env = "VAR" } or { file = "PATH" } (never the value itself)'
_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                      "ES512", "EdDSA")
Algorithm = Literal[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"
]


def _default_algorithms() -> list[Algorithm]:
    return ["RS256", "PS256", "ES256", "EdDSA"]


class StaticToken(StrictTable):
    """``[serve.auth.tokens.NAME]``: a bearer token for development and tests; its holder is
    the principal ``NAME`` (subject and client)."""

    token: FromEnv | FromFile = Field(description=_SECRET)
    """Where the token is: an environment variable or a file, never the file's own text."""
    scopes: list[Scope] = Field(default_factory=list, description="a list of OAuth scopes")
    """The scopes the token grants."""


class AuthSettings(StrictTable):
    """``[serve.auth]``: ``toolplug serve --http`` as an OAuth 2.1 resource server."""

    issuer: str = Field(
        pattern=r"^https?://", description="the authorization server's issuer URL"
    )
    """The authorization server whose tokens are accepted (the ``iss`` they carry); named in
    the protected resource metadata."""
    audience: str = Field(
        pattern=r"^https?://", description="this server's resource URL: https://HOST/mcp"
    )
    """This server's resource URL: a token must be issued for it (``aud``, RFC 8707)."""
    jwks_uri: str | None = Field(
        default=None, pattern=r"^https?://", description="the URL of the issuer's JWKS"
    )
    """Where the signing keys are; found in the issuer's metadata when not set."""
    introspection_url: str | None = Field(
        default=None, pattern=r"^https?://", description="the RFC 7662 introspection endpoint"
    )
    """Ask the authorization server about each token (RFC 7662) instead of reading JWTs."""
    client_id: str | None = Field(
        default=None, min_length=1, description="this server's client id at the issuer"
    )
    """Who this server is when it introspects."""
    client_secret: FromEnv | FromFile | None = Field(default=None, description=_SECRET)
    """The secret it introspects with."""
    algorithms: list[Algorithm] = Field(
        default_factory=_default_algorithms,
        min_length=1,
        description="a list of JWT signature algorithms: " + ", ".join(_ALGORITHMS),
    )
    """The signature algorithms a JWT may use (never ``none``, never a shared-key HMAC)."""
    leeway_seconds: float = Field(
        default=30.0, ge=0, le=300, description="a number of seconds from 0 to 300"
    )
    """How far clocks may disagree when expiry and not-before are checked."""
    required_scopes: list[Scope] = Field(
        default_factory=list, description="a list of OAuth scopes every request needs"
    )
    """Scopes every request needs, whatever it asks for."""
    read_scope: Scope = Field(default="tools:read", description="an OAuth scope")
    """What a read-only tool needs when ``[tools.NAME] scopes`` does not say."""
    write_scope: Scope = Field(default="tools:write", description="an OAuth scope")
    """What every other tool needs when ``[tools.NAME] scopes`` does not say."""
    console_scope: Scope | None = Field(
        default=None,
        description="an OAuth scope: the console is served at /console/ to tokens with it",
    )
    """Serve the console (the approvals, the record, the catalog) at ``/console/`` of
    ``serve --http`` to the holders of a token with this scope; None serves no console."""
    tokens: dict[str, StaticToken] = Field(
        default_factory=dict, description="a table of [serve.auth.tokens.NAME] tables"
    )
    """Static bearer tokens, for development and tests."""

    @model_validator(mode="after")
    def _introspection_needs_a_client(self) -> AuthSettings:
        if self.introspection_url is not None and (
            self.client_id is None or self.client_secret is None
        ):
            raise ValueError(
                "introspection_url needs client_id and client_secret "
                '(client_secret = { env = "VAR" })'
            )
        return self


class ServeSettings(StrictTable):
    """The ``[serve]`` table: how ``toolplug serve`` serves and treats its MCP clients."""

    approvals: ServeApprovals = Field(
        default="toolplug",
        description='"toolplug" (toolplug asks the client\'s user) or "client" (the MCP host '
        "approves calls itself and toolplug does not ask again)",
    )
    """Who approves a call that needs approval (``toolplug.serve``)."""
    approvals_by_tool: dict[str, ServeApprovals] = Field(
        default_factory=dict,
        description='a table of tool names or globs ("notes_*": a mounted server\'s tools), '
        'each "toolplug" or "client"',
    )
    """``approvals`` for some tools: an exact name first, else the longest matching glob."""

    allowed_hosts: list[str] = Field(
        default_factory=list,
        description='a list of host names this server is reached by ("mcp.example.com", '
        '"mcp.example.com:8443", "*.internal.example"; "*" turns the check off)',
    )
    """``Host`` values ``serve --http`` answers besides its own addresses and bind name."""
    allowed_origins: list[str] = Field(
        default_factory=list,
        description='a list of web origins allowed to call ("https://app.example.com"; '
        '"*" allows every origin)',
    )
    """``Origin`` values ``serve --http`` answers besides its own hosts'."""

    progress_interval_seconds: float = Field(
        default=0.05, ge=0, allow_inf_nan=False,
        description="a number of seconds, 0 or more: the least time between two progress "
        "notifications to one session, whatever the number of its calls",
    )
    """A session's calls take turns: a report that cannot go at once waits its call's turn,
    replaced meanwhile by the call's later reports; one still waiting when the result is
    ready is dropped (the result supersedes it). 0 sends every report."""
    auth: AuthSettings | None = Field(
        default=None,
        description="a table: issuer, audience, jwks_uri or introspection_url, "
        "required_scopes, tokens",
    )
    """Authenticate HTTP clients (``[serve.auth]``); None serves without."""
    allow: list[str] | None = Field(
        default=None,
        description='a list of tool names or tool categories ("search", "send_mail"; [] '
        "for none): the effects a served conversation may have once untrusted content "
        "entered it",
    )
    """The effects rule's bound for every served conversation (docs/security.md, "Effects
    the user asked for"); a client's ``_meta["toolplug/allow"]`` narrows it per call, never
    widens it. None bounds nothing."""

    @field_validator("allow")
    @classmethod
    def _effects_named(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            for item in value:
                if not item.strip():
                    raise ValueError(
                        f"allow holds {item!r}: each effect is a tool's name or a tool "
                        'category, a non-empty string (allow = ["search", "send_mail"])'
                    )
        return value

    def approvals_for(self, tool: str) -> ServeApprovals:
        """Who approves the served calls of ``tool``."""
        exact = self.approvals_by_tool.get(tool)
        if exact is not None:
            return exact
        globs = sorted(
            (p for p in self.approvals_by_tool if fnmatch.fnmatchcase(tool, p)),
            key=lambda p: (-len(p), p),
        )
        return self.approvals_by_tool[globs[0]] if globs else self.approvals


SERVE_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in ServeSettings.model_fields.items()
}


def _fail(
    exc: ValidationError, model: type[BaseModel], prefix: str, raise_as: Callable[..., ConfigError]
) -> ConfigError:
    """The first problem pydantic found, as the configuration's error."""
    error = min(exc.errors(), key=lambda e: tuple(map(str, e["loc"])))
    # pydantic's location also names the branch of an optional field (``int``,
    # ``RateLimit``): keep only the keys a person wrote
    keys: list[str] = []
    description: str | None = None
    current: type[BaseModel] | None = model
    keyed = False  # a table keyed by names: the next part is a key
    inside: type[BaseModel] | None = None  # what each of its values is, when a table
    for part in map(str, error["loc"]):
        if keyed:
            keys.append(part)
            current, keyed = inside, False
        elif current is not None and part in current.model_fields:
            keys.append(part)
            description = current.model_fields[part].description
            annotation = current.model_fields[part].annotation
            current = _model_inside(annotation)
            if getattr(annotation, "__origin__", None) is dict:
                keyed, inside, current = True, current, None
        elif error["type"] == "extra_forbidden" and part not in keys:
            known = ", ".join(sorted(current.model_fields)) if current else ""
            return raise_as(
                "unknown key", key=prefix + ".".join([*keys, part]), expected=f"one of {known}"
            )
    return raise_as(
        f"got {error.get('input')!r}", key=prefix + ".".join(keys), expected=description
    )


def _model_inside(annotation: Any) -> type[BaseModel] | None:
    """The settings model a field holds (``RateLimit | None`` holds ``RateLimit``)."""
    for inner in getattr(annotation, "__args__", (annotation,)):
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            return inner
    return None


def parse_calls(table: Mapping[str, Any], *, file: str, prefix: str = "") -> CallsSettings:
    """The ``[calls]`` table, checked.

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """
    return _parsed(CallsSettings, table, "calls", file=file, prefix=prefix)


def parse_code(table: Mapping[str, Any], *, file: str, prefix: str = "") -> CodeSettings:
    """The ``[code]`` table, checked (that its toolset exists is checked where it is used).

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """
    return _parsed(CodeSettings, table, "code", file=file, prefix=prefix)


def parse_serve(table: Mapping[str, Any], *, file: str, prefix: str = "") -> ServeSettings:
    """The ``[serve]`` table, checked.

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """
    try:
        return ServeSettings.model_validate(dict(table))
    except ValidationError as exc:
        problems = exc.errors()
        rule = [p for p in problems if p["type"] == "value_error"]
        if rule:  # a model's own rule
            raise ConfigError(
                rule[0]["msg"].removeprefix("Value error, "), file=file,
                key=prefix + "serve." + ".".join(map(str, rule[0]["loc"])),
            ) from None
        raise _fail(exc, ServeSettings, prefix + "serve.", _raiser(file)) from None


_Model = TypeVar("_Model", bound=BaseModel)


def _parsed(
    model: type[_Model], table: Mapping[str, Any], key: str, *, file: str, prefix: str
) -> _Model:
    """``[KEY]`` checked against its model; the first problem as a ``ConfigError``."""
    try:
        return model.model_validate(dict(table))
    except ValidationError as exc:
        raise _fail(exc, model, f"{prefix}{key}.", _raiser(file)) from None


def parse_tool_settings(
    name: str, table: Mapping[str, Any], *, file: str, prefix: str = ""
) -> ToolSettings:
    """The call settings in ``[tools.NAME]`` (its other keys are the tool's own fields).

    Raises:
        ConfigError: a call setting has a value of the wrong kind.
    """
    try:
        return ToolSettings.model_validate({k: v for k, v in table.items() if k in POLICY_KEYS})
    except ValidationError as exc:
        raise _fail(exc, ToolSettings, f"{prefix}tools.{name}.", _raiser(file)) from None


def _raiser(file: str) -> Callable[..., ConfigError]:
    def make(message: str, *, key: str, expected: str | None) -> ConfigError:
        return ConfigError(message, file=file, key=key, expected=expected)

    return make


def parse_named_tables(
    table: Any, model: type[_Model], *, file: str, key: str, expected: str, entry: str,
    what: str, longest: int, rule: Callable[[list[Any]], Any | None],
) -> dict[str, _Model]:
    """A table of named tables (``[mcp_servers.NAME]``, ``[openapi.NAME]``,
    ``[transforms.NAME]``), checked: one ``model`` per name, sorted.

    ``expected`` says what the table holds and ``entry`` what one of its tables does;
    ``what`` and ``longest`` describe a valid name; ``rule`` picks, among pydantic's
    problems, the model's own rule (reported with its message), or None.

    Raises:
        ConfigError: naming the file, the key and what is expected.
    """
    if not isinstance(table, Mapping):
        raise ConfigError("must be a table", file=file, key=key, expected=expected)
    found: dict[str, _Model] = {}
    for name, body in sorted(table.items()):
        where = f"{key}.{name}"
        if not isinstance(body, Mapping):
            raise ConfigError("must be a table", file=file, key=where, expected=entry)
        try:
            found[name] = model.model_validate({**body, "name": name})
        except ValidationError as exc:
            problems = exc.errors()
            if any(p["loc"] == ("name",) for p in problems):
                raise ConfigError(
                    f"is not a valid {what}", file=file, key=where,
                    expected=f"lower-case letters, digits and _, a letter first, at most {longest}",
                ) from None
            own = rule(problems)
            if own is not None:  # a model's own rule: name the table it belongs to
                at = ".".join(str(p) for p in own["loc"])
                raise ConfigError(
                    own["msg"].removeprefix("Value error, "), file=file,
                    key=f"{where}.{at}" if at else where,
                ) from None
            raise _fail(exc, model, where + ".", _raiser(file)) from None
    return found
