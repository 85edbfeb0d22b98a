"""The tool metadata contract: what every tool declares about itself.

The models are frozen pydantic models. Cheap, local checks (name patterns, non-empty text)
run when a model is built; the checks that need a JSON Schema validator run once, when the
tool is registered (``validate_tool_metadata``), so that importing a plugin stays cheap.
"""

from __future__ import annotations

import hashlib
import marshal
import re
from collections.abc import Iterable
from typing import Any, Final, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolplug.contract._errors import MetadataError
from toolplug.contract._parts import PartKind
from toolplug.contract._settings import POLICY_KEYS, SINK_KINDS

__all__ = [
    "BUILTIN_CATEGORIES",
    "POLICY_KEYS",
    "Annotations",
    "Category",
    "ConfigField",
    "ErrorSpec",
    "Example",
    "Guidelines",
    "ToolMetadata",
    "Trust",
    "schema_digest",
    "validate_tool_metadata",
    "vouch",
]


TOOL_NAME_PATTERN: Final = r"^[a-z][a-z0-9_]{0,63}$"
_CATEGORY_PATTERN: Final = r"^[a-z][a-z0-9_]{0,31}$"
_ERROR_TYPE_PATTERN: Final = r"^[A-Z][A-Za-z0-9]*Error$"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Category(_Frozen):
    """A group of tools in the optional-tools prompt section."""

    name: str = Field(pattern=_CATEGORY_PATTERN)
    """Lower-case identifier, such as ``research``."""
    description: str = Field(min_length=1)
    """What the tools in this category are for, in one line."""


BUILTIN_CATEGORIES: Final[tuple[Category, ...]] = (
    Category(name="research", description="Gather external information"),
    Category(name="reference", description="Add citations and links"),
    Category(name="enhance", description="Improve content quality"),
    Category(name="publish", description="Distribute content"),
    Category(name="utility", description="General-purpose helpers"),
)
"""The five categories every installation knows, in prompt order."""


class Guidelines(_Frozen):
    """DO / DO NOT guidance that helps a model decide whether to call a tool."""

    do: tuple[str, ...] = ()
    """Situations in which the tool should be used."""
    do_not: tuple[str, ...] = ()
    """Situations in which the tool should not be used."""
    common_mistakes: tuple[str, ...] = ()
    """Mistakes models make with this tool, phrased as advice."""

    @property
    def empty(self) -> bool:
        """True when no guidance at all is given."""
        return not (self.do or self.do_not or self.common_mistakes)


class ErrorSpec(_Frozen):
    """An error type a tool can return, and when."""

    type: str = Field(pattern=_ERROR_TYPE_PATTERN)
    """The ``error_type`` of the result, such as ``NotFoundError``."""
    when: str = Field(min_length=1)
    """The situation that produces it."""
    retry_possible: bool = False
    """Whether making the same call again later may succeed (what call retries act on)."""


class Example(_Frozen):
    """A worked call: what it is for, the arguments, and optionally the result."""

    description: str = Field(min_length=1)
    input: dict[str, Any]
    """Arguments; validated against the tool's ``parameters`` at registration."""
    output: Any = None
    """An illustrative result (``data``), if helpful."""


ConfigType = Literal["string", "integer", "number", "boolean", "array", "object"]


class ConfigField(_Frozen):
    """A setting the tool reads from its ``[tools.<name>]`` configuration table."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    type: ConfigType
    description: str = Field(min_length=1)
    env_var: str | None = None
    """Environment variable that supplies the value when the config does not."""
    required: bool = False
    default: Any = None
    secret: bool = False
    """Secrets may come only from the environment or ``{ env = ... }`` / ``{ file = ... }``."""
    json_schema: dict[str, Any] | None = None
    """Optional JSON Schema for a finer check than ``type`` (for arrays of tables, say)."""


class Annotations(_Frozen):
    """Behaviour hints, as in MCP's tool annotations."""

    read_only: bool = False
    """The tool does not change its environment."""
    destructive: bool = False
    """The tool may destroy or overwrite data (meaningful only when not read-only)."""
    idempotent: bool = False
    """Calling it again with the same arguments has no further effect."""
    open_world: bool = True
    """The tool reaches an open world, such as the web, rather than a closed domain."""


TRUST_ANNOTATIONS: Final = "io.modelcontextprotocol/trust-annotations"
"""The ``_meta`` key of MCP's experimental trust annotations extension, where a result says
whether it is ``untrusted`` and ``sensitive`` (toolplug's ``output`` and ``private``)."""


class Trust(_Frozen):
    """What a tool's output may be trusted with, and which of its arguments leave the machine.

    The labels a flow guard needs: an ``untrusted`` output is text anyone outside could have
    written (a web page, a search result, a feed, a mail, an issue); a ``private`` output is
    the user's own data (files, calendar, private repositories); a sink is a parameter whose
    value leaves the machine or changes the world (a URL fetched, a query sent, a post
    published, a file written). A ref is a sink whose value names something the service
    already holds (a channel, a user, a file id): passing back, whole, a name a result
    listed is a choice among what exists, not text carried out. A destination is a sink
    whose value says where the call goes (an address, a URL, a recipient): sent to a place
    the user's own data names, the data reaches only that place. A tool that declares no
    labels gets ``Trust.cautious``.
    """

    output: Literal["trusted", "untrusted"]
    """Whether the result's text could have been written by someone outside."""
    private: bool = False
    """Whether the result holds the user's own data."""
    sinks: tuple[str, ...] = ()
    """Top-level parameters whose values leave the machine or change the world."""
    refs: tuple[str, ...] = ()
    """Sinks whose values name something the service already holds (a channel, a user, a
    file or event id): the service resolves the name, it sends the text nowhere. A value
    equal to a whole string of an earlier result's ``data`` is not checked by the flow
    guard; anything else is, as for any sink. Each must be among ``sinks``."""
    destinations: tuple[str, ...] = ()
    """Sinks whose values say where the call goes (a mail's recipients, a URL fetched, an
    address invited), not what it carries. A destination whose every string is, whole, a
    token of trusted private output this conversation read (an address from the user's
    contacts, a link a colleague posted) goes where the user's own data points: the
    trifecta rule does not read it. The flow rule does, as for any sink. Each must be
    among ``sinks``."""
    url_sinks: tuple[str, ...] = ()
    """Sinks whose values are URLs: the flow guard reads them by host and path prefix, path
    segments and query values only, and a policy sees the URL's real host. A sink of no
    declared kind is read every way (``toolplug.trust._values``). Each must be among
    ``sinks``."""
    address_sinks: tuple[str, ...] = ()
    """Sinks whose values are addresses, or lists of them: each address is read on its own
    (split on ``,`` ``;`` and blanks, display names and ``mailto:`` dropped), by the flow
    guard and by a policy. Each must be among ``sinks``."""
    path_sinks: tuple[str, ...] = ()
    """Sinks whose values are file paths: the flow guard and the policies read them
    resolved (``..``, ``.``, ``//``). Each must be among ``sinks``."""

    @property
    def untrusted(self) -> bool:
        """True when the output could have been written by anyone outside."""
        return self.output == "untrusted"

    @classmethod
    def cautious(cls, parameters: dict[str, Any]) -> Trust:
        """The labels of a tool that declares none: untrusted, private, every parameter a sink."""
        names = tuple(sorted((parameters.get("properties") or {}).keys()))
        return cls(output="untrusted", private=True, sinks=names)


def _empty_object_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


class ToolMetadata(_Frozen):
    """Everything a tool declares about itself."""

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    """Unique tool name; fits OpenAI, Anthropic, Gemini and MCP alike."""
    description: str = Field(min_length=1)
    """One sentence: what the tool does."""
    category: str = Field(pattern=_CATEGORY_PATTERN)
    """One of the built-in categories or one a plugin declares."""
    title: str | None = None
    """A human-readable title (MCP ``title``); defaults to the name."""
    optionality: Literal["required", "optional"] = "optional"
    usage_hint: str = ""
    """When an agent should reach for the tool: short and imperative."""
    guidelines: Guidelines = Guidelines()
    requires_capabilities: tuple[str, ...] = ()
    """Capabilities that must all be present for the tool to be offered."""
    produces: tuple[str, ...] = ()
    """Kinds of output, such as ``search_results`` or ``citations``."""
    parameters: dict[str, Any] = Field(default_factory=_empty_object_schema)
    """JSON Schema (2020-12) of the arguments; its top level is an object."""
    returns: dict[str, Any] | None = None
    """JSON Schema of ``data`` in a successful result."""
    parts: tuple[PartKind, ...] = ()
    """The kinds of content part a successful result may hold besides its text (``image``,
    ``audio``, ``file``, ``resource_link``, ``resource``, ``text``): shown by ``toolplug
    info`` and the reference docs, and checked by the contract kit against what the
    tool's examples return."""
    errors: tuple[ErrorSpec, ...] = ()
    examples: tuple[Example, ...] = ()
    config_fields: tuple[ConfigField, ...] = ()
    required_packages: tuple[str, ...] = ()
    """Distributions a user must install to enable the tool."""
    setup_instructions: str = ""
    annotations: Annotations = Annotations()
    annotations_assumed: str | None = None
    """Set by a source whose ``annotations`` are toolplug's assumption, not the tool's own
    word: why (a mounted MCP server's tools while its ``trust_annotations`` is off). An
    approval reason built on them says so. Plugins leave it unset."""
    timeout_seconds: float = Field(default=30.0, gt=0)
    """Default time limit of one call; configuration may override it."""
    max_output_chars: int | None = Field(default=None, ge=1000)
    """The most characters a result may hand the model (None: ``[calls] max_output_chars``)."""
    long_running: bool = False
    """Calls usually take long (minutes, not seconds): over MCP, a client that declared the
    Tasks extension gets each call as a task at once, without waiting first."""
    trust: Trust | None = None
    """Trust labels; None means unlabelled, treated as ``Trust.cautious(parameters)``."""

    @property
    def labels(self) -> Trust:
        """The trust labels in force: the declared ones, else the cautious default."""
        return self.trust if self.trust is not None else Trust.cautious(self.parameters)

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value.strip():
            raise ValueError("the description is one sentence on one line")
        return value.strip()

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type") != "object":
            raise ValueError('the parameters schema must have "type": "object" at its top level')
        return value

    @field_validator("requires_capabilities", "produces")
    @classmethod
    def _identifiers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            if not re.fullmatch(r"[a-z][a-z0-9_]*", item):
                raise ValueError(f"{item!r} is not a lower-case identifier")
        return value


_vouched: set[str] = set()
"""Digests of schemas that passed the meta-schema in an earlier process (``vouch``)."""


def schema_digest(schema: Any) -> str:
    """A digest of a JSON Schema's content, keys in their order (the same schema read from
    the same source gives the same digest; another order only costs a check)."""
    try:
        data = marshal.dumps(schema, 2)  # version 2: no references, so no reference counts
    except ValueError:  # not plain JSON data: never vouched for
        return ""
    return hashlib.sha256(data).hexdigest()


def vouch(digests: Iterable[str]) -> None:
    """Skip the meta-schema check of schemas with these digests (``schema_digest``).

    Checking a schema against JSON Schema 2020-12's meta-schema costs about a millisecond
    per kilobyte; a source that registers a thousand definitions it generated (OpenAPI
    descriptions) records the digests of those that passed, beside its cache, and vouches
    for them in later processes. A schema whose content changed has another digest and is
    checked again.
    """
    _vouched.update(d for d in digests if d)


def validate_tool_metadata(  # noqa: C901 - one check per metadata field, flat
    metadata: ToolMetadata, *, known_categories: set[str], plugin: str | None = None
) -> None:
    """Run the checks that need a JSON Schema validator; raise ``MetadataError`` on the first.

    Args:
        metadata: The metadata to check.
        known_categories: Built-in categories plus those declared by plugins.
        plugin: The plugin registering the tool, named in errors.
    """
    def fail(message: str, field: str) -> MetadataError:
        return MetadataError(message, tool=metadata.name, field=field, plugin=plugin)

    if metadata.category not in known_categories:
        raise fail(
            f"unknown category {metadata.category!r}; use one of {sorted(known_categories)} "
            "or declare it with register(Category(name=..., description=...))",
            "category",
        )
    for field in ("parameters", "returns"):
        schema = getattr(metadata, field)
        if schema is None or (_vouched and schema_digest(schema) in _vouched):
            continue
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
            raise fail(
                f"not a valid JSON Schema 2020-12 at {where}: {exc.message}", field
            ) from None
    validator = Draft202012Validator(metadata.parameters)
    for index, example in enumerate(metadata.examples):
        problems = sorted(validator.iter_errors(example.input), key=lambda e: list(e.path))
        if problems:
            first = problems[0]
            where = "/".join(str(p) for p in first.absolute_path) or "(top level)"
            raise fail(
                f"example {index} ({example.description!r}) does not match the parameters "
                f"schema at {where}: {first.message}",
                f"examples[{index}].input",
            )
    if metadata.trust is not None:
        known = set((metadata.parameters.get("properties") or {}).keys())
        unknown = sorted(set(metadata.trust.sinks) - known)
        if unknown:
            raise fail(
                f"trust.sinks names {', '.join(unknown)}, not a top-level parameter; "
                f"sinks must be among {sorted(known)}",
                "trust.sinks",
            )
        for key in SINK_KINDS:
            named = getattr(metadata.trust, key)
            unknown = sorted(set(named) - known)
            if unknown:
                raise fail(
                    f"trust.{key} names {', '.join(unknown)}, not a top-level parameter; "
                    f"{key} must be among {sorted(known)}",
                    f"trust.{key}",
                )
            unsunk = sorted(set(named) - set(metadata.trust.sinks))
            if unsunk:
                raise fail(
                    f"trust.{key} names {', '.join(unsunk)}, not among trust.sinks "
                    f"{sorted(metadata.trust.sinks)}; {SINK_KINDS[key].meaning}: "
                    "add it to sinks too",
                    f"trust.{key}",
                )
    names = [f.name for f in metadata.config_fields]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise fail(f"config field(s) declared twice: {', '.join(duplicates)}", "config_fields")
    reserved = sorted(set(names) & set(POLICY_KEYS))
    if reserved:
        raise fail(
            f"{', '.join(reserved)} is reserved for every tool's call policy "
            f"({', '.join(sorted(POLICY_KEYS))}); choose another name",
            "config_fields",
        )
    for spec in metadata.config_fields:
        if spec.json_schema is not None:
            try:
                Draft202012Validator.check_schema(spec.json_schema)
            except SchemaError as exc:
                raise fail(
                    f"{spec.name}: invalid json_schema: {exc.message}", "config_fields"
                ) from None
