"""How calls of one tool run: the typed ``[tools.NAME]`` call settings, one list of keys.

Every ``[tools.NAME]`` table may hold these keys besides the tool's own config fields. The
configuration parses them once, into a ``ToolSettings``, when it loads
(``toolplug.runtime``); the call engine, the renderers and ``serve`` read its attributes.
The field descriptions are the "expected" text of the configuration's error messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from toolplug.contract._metadata import Trust

__all__ = [
    "POLICY_KEYS",
    "SCOPE_PATTERN",
    "SINK_KINDS",
    "RateLimit",
    "Scope",
    "StrictTable",
    "ToolSettings",
    "TrustOverlay",
]

SCOPE_PATTERN: Final = r"^[\x21\x23-\x5b\x5d-\x7e]+$"
"""An OAuth scope token (RFC 6749, section 3.3): printable ASCII, no space, quote or backslash."""

Scope = Annotated[
    str, Field(pattern=SCOPE_PATTERN, description="an OAuth scope: printable ASCII, no spaces")
]


class StrictTable(BaseModel):
    """The base of every table of ``toolplug.toml`` toolplug checks itself: frozen, strict
    (no coercion: ``"5"`` is not a number), no unknown keys, no infinities or NaN. Declared
    here, in the lowest layer, so ``trust`` and ``config`` stand on the same one."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class RateLimit(StrictTable):
    """``rate_limit = { calls = N, per_seconds = S, wait = true, per = "tool" }``."""

    calls: int = Field(default=1, ge=1, description="a whole number of calls, 1 or more")
    per_seconds: float = Field(default=1.0, gt=0, description="a positive number of seconds")
    wait: bool = Field(default=True, description="a boolean")
    per: Literal["tool", "client"] = Field(
        default="tool",
        description='"tool" (one window for every caller) or "client" (a window per client)',
    )
    """``client``: each client (the MCP server's owner of the call: its verified principal,
    else its session; in process, the ``client`` a call's ``context`` names) has its own
    window; calls that name no client share one."""


class SinkKind(NamedTuple):
    """One kind of sink a trust label names besides ``sinks`` (a row of ``SINK_KINDS``)."""

    title: str
    """Its heading in the reference docs (``Refs``)."""
    meaning: str
    """What it is, in one clause: error messages end with it."""
    spared: str
    """What the flow guard spares a value of it, for the reference docs."""


SINK_KINDS: Final[Mapping[str, SinkKind]] = {
    "refs": SinkKind(
        "Refs",
        "a ref is a sink whose value names something the service holds",
        "sinks whose values name something the service holds: a name an earlier result "
        "listed, passed back whole, is not checked by the flow guard",
    ),
    "destinations": SinkKind(
        "Destinations",
        "a destination is a sink whose value says where the call goes",
        "sinks whose values say where the call goes: a place the user's own data names, "
        "whole, is not read by the trifecta rule",
    ),
    "url_sinks": SinkKind(
        "URLs",
        "a URL sink is one whose value is a URL",
        "sinks whose values are URLs: read by host and path prefix, path segments and query "
        "values, and a policy sees the URL's real host",
    ),
    "address_sinks": SinkKind(
        "Addresses",
        "an address sink is one whose value is an address or a list of them",
        "sinks whose values are addresses: each address of a list (`,` `;`, display names, "
        "`mailto:`) is read, by the flow guard and by a policy, on its own",
    ),
    "path_sinks": SinkKind(
        "Paths",
        "a path sink is one whose value is a file path",
        "sinks whose values are file paths: read, and seen by a policy, resolved (`..`, `.`, "
        "`//`)",
    ),
}
"""The kinds of sink a trust label names besides ``sinks``: each is a field of ``Trust``,
``TrustOverlay`` and OpenAPI's ``ApiTrust`` (a test holds them equal) and a rule of the
flow guard; the command line, the reference docs, the MCP ``_meta``, transforms, OpenAPI
and the configuration's checks read this table."""


class TrustOverlay(StrictTable):
    """``trust = { output = "untrusted", private = true, sinks = ["url"] }``: the operator's
    word over a tool's own trust labels; a key left out keeps what the tool says."""

    output: Literal["trusted", "untrusted"] | None = Field(
        default=None, description='"trusted" or "untrusted"'
    )
    private: bool | None = Field(default=None, description="a boolean")
    sinks: tuple[str, ...] | None = Field(
        default=None, description="a list of the tool's top-level parameter names"
    )
    refs: tuple[str, ...] | None = Field(
        default=None,
        description="a list of the tool's sinks whose values name something the service holds",
    )
    destinations: tuple[str, ...] | None = Field(
        default=None,
        description="a list of the tool's sinks whose values say where the call goes",
    )
    url_sinks: tuple[str, ...] | None = Field(
        default=None, description="a list of the tool's sinks whose values are URLs"
    )
    address_sinks: tuple[str, ...] | None = Field(
        default=None,
        description="a list of the tool's sinks whose values are addresses or lists of them",
    )
    path_sinks: tuple[str, ...] | None = Field(
        default=None, description="a list of the tool's sinks whose values are file paths"
    )

    @field_validator("sinks", *SINK_KINDS, mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        # TOML has arrays, not tuples; strict mode would refuse a list as a tuple
        return tuple(value) if isinstance(value, list) else value

    def then(self, later: TrustOverlay | None) -> TrustOverlay:
        """This overlay with ``later`` on top: each key ``later`` sets wins."""
        if later is None:
            return self
        return TrustOverlay(
            **{
                key: getattr(later, key) if getattr(later, key) is not None else getattr(self, key)
                for key in type(self).model_fields
            }
        )

    def misnamed(
        self, parameters: Iterable[str], sinks: Iterable[str]
    ) -> tuple[str, list[str], str] | None:
        """What this table names that it may not: ``(key, names, "parameter")`` when its
        ``sinks``, ``refs`` or ``destinations`` name no parameter among ``parameters``,
        ``(key, names, "sink")`` when its refs or destinations are not among the sinks in
        force (its own, else ``sinks``); None when all is well."""
        known = set(parameters)
        for key in ("sinks", *SINK_KINDS):
            unknown = sorted(set(getattr(self, key) or ()) - known)
            if unknown:
                return key, unknown, "parameter"
        in_force = set(self.sinks if self.sinks is not None else sinks)
        for key in SINK_KINDS:
            outside = sorted(set(getattr(self, key) or ()) - in_force)
            if outside:
                return key, outside, "sink"
        return None

    def over(self, labels: Trust) -> Trust:
        """``labels`` with what this overlay sets put in their place (a ref or destination
        the sinks in force no longer name is none: each is a sink)."""
        sinks = self.sinks if self.sinks is not None else labels.sinks
        kinds = {}
        for kind in SINK_KINDS:
            named = getattr(self, kind)
            kinds[kind] = tuple(
                s for s in (named if named is not None else getattr(labels, kind)) if s in sinks
            )
        return type(labels)(
            output=self.output if self.output is not None else labels.output,
            private=self.private if self.private is not None else labels.private,
            sinks=sinks,
            **kinds,
        )


class ToolSettings(StrictTable):
    """The call settings of one tool (defaults: the tool's metadata, then ``[calls]``)."""

    enabled: bool = Field(default=True, description="a boolean")
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="a positive number of seconds"
    )
    retries: int = Field(default=0, ge=0, le=10, description="a whole number from 0 to 10")
    retry_backoff_seconds: float = Field(
        default=0.5, gt=0, description="a positive number of seconds"
    )
    cache_ttl_seconds: float = Field(
        default=0.0, ge=0, description="a number of seconds, 0 to turn the result cache off"
    )
    rate_limit: RateLimit | None = Field(
        default=None, description="a table: calls = N, per_seconds = S, wait = true|false"
    )
    max_concurrency: int | None = Field(
        default=None, ge=1, description="a whole number of calls at once, 1 or more"
    )
    max_output_chars: int | None = Field(
        default=None,
        ge=1000,
        description="a whole number of characters a result may hand back, 1,000 or more",
    )
    approval: Literal["auto", "always", "never"] = Field(
        default="auto", description='one of "auto", "always", "never"'
    )
    trust: TrustOverlay | None = Field(
        default=None,
        description='a table: output = "trusted" or "untrusted", private = true or false, '
        "sinks = [the tool's parameter names], refs = [sinks that name what the service holds], "
        "destinations = [sinks that say where the call goes], url_sinks, address_sinks, "
        "path_sinks = [sinks whose values are URLs, addresses, file paths]",
    )
    scopes: list[Scope] | None = Field(
        default=None,
        description="a list of OAuth scopes a client of serve --http needs to see and call it",
    )


POLICY_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in ToolSettings.model_fields.items()
}
"""Keys every ``[tools.<name>]`` table may hold besides the tool's own config fields, and
what each expects."""
