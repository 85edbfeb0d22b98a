"""What the flow guard and the policies read from ``toolplug.toml``: the ``[guard]`` table
and one rule of ``[[policies.TOOL]]``.

The configuration (``toolplug.config._settings``) parses and checks both tables; they are
declared here, beside the guard that reads them, so the guard needs nothing above it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from toolplug.contract._settings import StrictTable

__all__ = ["GuardSettings", "PolicyRule"]


class GuardSettings(StrictTable):
    """The ``[guard]`` table: the flow guard (docs/security.md)."""

    enabled: bool = Field(
        default=True, description="a boolean: false turns the flow guard off (policies still hold)"
    )
    """Check sink arguments against what the conversation read (``toolplug.trust._guard``)."""
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


class PolicyRule(StrictTable):
    """One rule of ``[[policies.TOOL]]``: when the value matches the schema, the action."""

    model_config = ConfigDict(populate_by_name=True)  # added to StrictTable's

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
