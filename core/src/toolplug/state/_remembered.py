"""Remembered decisions: a person's approve or deny that holds for more than one call.

A decision may be remembered for the conversation the call was made in, or always for the
tool where the arguments match a pattern. The pattern is a ``[policies]`` rule's: an
argument (or the whole arguments object) and a JSON Schema its value matches. By default a
decision for a conversation holds for every call of the tool in it, and one for always holds
for the arguments as they were, each ``const`` (configured secrets stay ``***``: the
redacted arguments are what is compared). A value under a secret-named key (``password``,
``Authorization``, ``api_key``, ...: ``toolplug.state._events.masked_secrets``) is never
written into a pattern: the person saw it as ``***``, and the pattern holds for any value
there, while the rest of the arguments are matched exactly. Each decision belongs to one
owner (the principal or session that made the call; None: calls that named no client) and
is seen by that owner's calls only. Kept in the state backend beside the pending requests,
listed and revoked by id (``toolplug approvals remembered``, ``toolplug approvals forget
ID``).
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from jsonschema import Draft202012Validator

from toolplug.state._events import masked_secrets, names_secret
from toolplug.state._inbox import DecisionRefused

if TYPE_CHECKING:
    from toolplug.state._backend import Backend

__all__ = ["REMEMBER", "Remembered", "RememberedDecisions", "Scope", "pattern_of"]

Scope: TypeAlias = Literal["conversation", "always"]
REMEMBER: Final = ("once", "conversation", "always")
"""What a decision may ask to remember: this call only, this conversation, always."""
_INDEX: Final = "all"
_MOST: Final = 5_000


def pattern_of(arguments: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The default pattern of an ``always``: these arguments, exactly, but for the values
    under secret-named keys, which it leaves out (any value matches there)."""
    if len(arguments) == 1:
        (name, value), = arguments.items()
        if names_secret(name) and value not in (None, ""):
            return name, {}
        return name, _exactly(value)
    return None, _exactly(dict(arguments))


def _exactly(value: Any, depth: int = 0) -> dict[str, Any]:
    """A schema ``value`` matches: ``{"const": value}`` when no secret-named key is in it,
    else its structure with each such key's value unconstrained."""
    if masked_secrets(value) == value or depth > 32:
        return {"const": value}
    if isinstance(value, Mapping):
        return {
            "type": "object",
            "properties": {
                str(k): {} if names_secret(str(k)) and v not in (None, "") else
                _exactly(v, depth + 1)
                for k, v in value.items()
            },
            "required": [str(k) for k in value],
            "additionalProperties": False,
        }
    items = list(value)  # a list or a tuple: masked_secrets changes nothing else
    return {
        "type": "array", "prefixItems": [_exactly(v, depth + 1) for v in items],
        "minItems": len(items), "maxItems": len(items),
    }


@dataclass(frozen=True)
class Remembered:
    """One remembered decision: allow or deny the calls of a tool that match."""

    id: str
    tool: str
    action: Literal["allow", "deny"]
    scope: Scope
    owner: str | None = None
    """Whose calls it decides (None: calls that name no client)."""
    conversation: str | None = None
    """With ``scope = "conversation"``: the conversation it holds in."""
    argument: str | None = None
    """The argument the schema checks; the whole arguments object when None."""
    schema: Mapping[str, Any] = field(default_factory=dict)
    """The JSON Schema (2020-12) the value matches; ``{}`` matches every value."""
    reason: str = ""
    created: float = 0.0
    request: str | None = None
    """The approval request it was decided on, when there was one."""

    @staticmethod
    def new(
        tool: str, approved: bool, scope: Scope, *, owner: str | None,
        conversation: str | None = None, argument: str | None = None,
        schema: Mapping[str, Any] | None = None, reason: str = "", request: str | None = None,
    ) -> Remembered:
        if scope == "conversation" and conversation is None:
            raise ValueError("a decision for this conversation needs a conversation")
        Draft202012Validator.check_schema(dict(schema or {}))
        return Remembered(
            "rem_" + secrets.token_urlsafe(9), tool, "allow" if approved else "deny", scope,
            owner, conversation if scope == "conversation" else None, argument,
            dict(schema or {}), reason, time.time(), request,
        )

    def matches(
        self, tool: str, arguments: Mapping[str, Any], conversation: str | None
    ) -> bool:
        """Whether it decides this call (``arguments`` redacted, as it stored them)."""
        if tool != self.tool:
            return False
        if self.scope == "conversation" and conversation != self.conversation:
            return False
        if self.argument is None:
            value: Any = dict(arguments)
        elif self.argument in arguments:
            value = arguments[self.argument]
        else:
            return False
        return Draft202012Validator(dict(self.schema)).is_valid(value)

    def rule(self) -> str:
        """The decision as the ``[[policies.TOOL]]`` rule a person would write for it."""
        lines = [f"[[policies.{self.tool}]]  # {self.id}: {self._scope_words()}",
                 f'action = "{self.action}"']
        if self.argument is not None:
            lines.append(f"argument = {json.dumps(self.argument)}")
        lines.append(f"schema = {_inline(self.schema)}")
        if self.reason:
            lines.append(f"reason = {json.dumps(self.reason, ensure_ascii=False)}")
        return "\n".join(lines)

    def _scope_words(self) -> str:
        whose = f"owner {self.owner}" if self.owner is not None else "calls with no owner"
        where = f"in conversation {self.conversation}" if self.scope == "conversation" else (
            "always"
        )
        return f"{where}, {whose}"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "rule": self.rule()}

    def dumps(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True, default=str)

    @staticmethod
    def loads(raw: str) -> Remembered | None:
        try:
            body = json.loads(raw)
            names = {f.name for f in dataclasses.fields(Remembered)}
            return Remembered(**{k: v for k, v in body.items() if k in names})
        except (ValueError, TypeError):
            return None


def _inline(value: Any) -> str:
    """A TOML inline value (what a policy's ``schema`` holds is JSON: objects, lists,
    strings, numbers, booleans)."""
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(k)} = {_inline(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return '""'  # TOML has no null; a policy's schema never needs one
    return json.dumps(value, ensure_ascii=False)


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


class RememberedDecisions:
    """The remembered decisions of every owner, in one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend.part("remembered:", entries=_MOST)

    async def add(self, decision: Remembered) -> None:
        await self.backend.set("rule:" + decision.id, decision.dumps(), None)
        dropped = await self.backend.index_add(
            _INDEX, decision.id, decision.created, keep=_MOST, drop_below=0.0, ttl=None
        )
        if dropped:
            await self.backend.delete(*("rule:" + d for d in dropped))

    async def listing(
        self, *, owner: str | None = None, every_owner: bool = False
    ) -> list[Remembered]:
        """``owner``'s decisions (or everyone's), newest first."""
        ids = [m for m, _ in await self.backend.index_newest(_INDEX, drop_below=0.0)]
        raws = await self.backend.get_many(["rule:" + i for i in ids])
        found = [d for r in raws if r is not None and (d := Remembered.loads(r)) is not None]
        return [d for d in found if every_owner or d.owner == owner]

    async def match(
        self, owner: str | None, tool: str, arguments: Mapping[str, Any],
        conversation: str | None,
    ) -> Remembered | None:
        """The decision that holds for this call: a deny before an allow, the newest first."""
        hits = [
            d for d in await self.listing(owner=owner)
            if d.matches(tool, arguments, conversation)
        ]
        hits.sort(key=lambda d: d.action != "deny")
        return hits[0] if hits else None

    async def forget(self, decision_id: str, *, by: str | None) -> Remembered:
        """Revoke a decision: the one revoked. Only its owner may. Raises
        ``DecisionRefused``."""
        raw = await self.backend.get("rule:" + decision_id)
        found = None if raw is None else Remembered.loads(raw)
        if found is None:
            raise DecisionRefused(
                f"no remembered decision {decision_id!r}; list them with `toolplug approvals "
                "remembered`", why="unknown",
            )
        if found.owner != by:
            raise DecisionRefused(
                f"remembered decision {decision_id} belongs to another owner: only its owner "
                "may forget it (toolplug approvals forget ID --as OWNER)", why="owner",
            )
        await self.backend.delete("rule:" + decision_id)
        return found
