"""Settings parsed once: ``[calls]``, ``[code]``, ``[guard]``, ``[policies]`` and each tool's
call settings.

The configuration (``toolplug.runtime._config``) hands every raw table here once, when it
loads; everything above runtime reads the typed models' attributes, never a raw table. A
mistake is a ``ConfigError`` naming the file, the key and what is expected, taken from the
field's description: one list of keys, so a key cannot be valid in one layer and unknown
in another.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolplug.contract._errors import ConfigError
from toolplug.contract._settings import POLICY_KEYS, ToolSettings

__all__ = [
    "CALLS_KEYS",
    "CODE_KEYS",
    "DEFAULT_OUTPUT_CHARS",
    "GUARD_KEYS",
    "CallsSettings",
    "CodeSettings",
    "GuardSettings",
    "PolicyRule",
    "parse_calls",
    "parse_code",
    "parse_guard",
    "parse_policies",
    "parse_tool_settings",
]

DEFAULT_OUTPUT_CHARS: Final = 50_000
"""The output budget of a call whose tool and ``[calls]`` table set none."""


class CallsSettings(BaseModel):
    """The ``[calls]`` table: what all calls of one registry share."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

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


CALLS_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in CallsSettings.model_fields.items()
}


class CodeSettings(BaseModel):
    """The ``[code]`` table: code mode's ``run_code`` tool and its limits."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    enabled: bool = Field(default=False, description="a boolean: true offers the run_code tool")
    """Offer ``run_code`` (``toolplug.calls._code``)."""
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


CODE_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in CodeSettings.model_fields.items()
}


class GuardSettings(BaseModel):
    """The ``[guard]`` table: the flow guard (docs/security.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    enabled: bool = Field(
        default=True, description="a boolean: false turns the flow guard off (policies still hold)"
    )
    """Check sink arguments against what the conversation read (``toolplug.calls._guard``)."""
    min_token_chars: int = Field(
        default=8, ge=4, description="a whole number of characters, 4 or more"
    )
    """A token of a sink value (no spaces, not only letters) this long, found in untrusted
    output, taints the value; a token with ``@`` or ``://`` does at any length."""
    min_phrase_words: int = Field(
        default=6, ge=2, description="a whole number of words, 2 or more"
    )
    """This many consecutive words of a sink value, found in untrusted output, taint it."""
    trifecta: Literal["private", "always", "off"] = Field(
        default="private",
        description='"private" (a sink carries private data after untrusted content was '
        'read), "always" (any sink after both were read) or "off"',
    )
    """When untrusted content, private data and a sink in one conversation ask."""
    delimit_untrusted: bool = Field(
        default=False,
        description="a boolean: true wraps untrusted output in markers in what the model reads",
    )
    """Wrap untrusted text in ``<untrusted source="...">`` markers for the model."""


GUARD_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in GuardSettings.model_fields.items()
}


class PolicyRule(BaseModel):
    """One rule of ``[[policies.TOOL]]``: when the value matches the schema, the action."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)

    action: Literal["allow", "ask", "deny"] = Field(
        description='"allow", "ask" or "deny": what happens to a call the rule matches'
    )
    """What a matching call meets: ``allow`` stops looking at later rules, ``ask`` sends the
    call for approval, ``deny`` refuses it."""
    argument: str | None = Field(
        default=None, description="the name of a top-level parameter of the tool"
    )
    """The argument the schema checks; the whole arguments object when None."""
    json_schema: dict[str, Any] = Field(
        default_factory=dict,
        alias="schema",
        description="a JSON Schema (2020-12) the value matches",
    )
    """The schema (``schema`` in the file); ``{}`` matches every value."""
    reason: str = Field(default="", description="a text saying why, shown when the rule refuses")
    """Shown to the person asked and to the model when the rule refuses."""


def parse_guard(table: Mapping[str, Any], *, file: str, prefix: str = "") -> GuardSettings:
    """The ``[guard]`` table, checked.

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """
    try:
        return GuardSettings.model_validate(dict(table))
    except ValidationError as exc:
        raise _fail(exc, GuardSettings, prefix + "guard.", _raiser(file)) from None


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
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"not a valid JSON Schema: {exc.message}"
    return None


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
    keyed: type[BaseModel] | None = None  # a table of tables: the next part is a key
    for part in map(str, error["loc"]):
        if keyed is not None:
            keys.append(part)
            current, keyed = keyed, None
        elif current is not None and part in current.model_fields:
            keys.append(part)
            description = current.model_fields[part].description
            annotation = current.model_fields[part].annotation
            current = _model_inside(annotation)
            if getattr(annotation, "__origin__", None) is dict:
                keyed, current = current, None
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
    try:
        return CallsSettings.model_validate(dict(table))
    except ValidationError as exc:
        raise _fail(exc, CallsSettings, prefix + "calls.", _raiser(file)) from None


def parse_code(table: Mapping[str, Any], *, file: str, prefix: str = "") -> CodeSettings:
    """The ``[code]`` table, checked (that its toolset exists is checked where it is used).

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """
    try:
        return CodeSettings.model_validate(dict(table))
    except ValidationError as exc:
        raise _fail(exc, CodeSettings, prefix + "code.", _raiser(file)) from None


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
