"""The effects a served call may have: the operator's ``[serve] allow`` and the client's
``_meta["toolplug/allow"]``.

Who is trusted with what (docs/security.md, "Effects the user asked for"): the operator's
configuration bounds every served conversation (``[serve] allow``, the bound of the
conversation ``Conversations`` makes per session). The MCP client knows the user's request
the server never sees, so a call may carry the effects that request asked for in its
``_meta``; the call then runs in a conversation opened inside the session's with that bound
(``Conversation.child``), and the effects rule holds it to both: the client can narrow
what the operator allows, never widen it. Per call rather than per session, so a
stateless client and replicas behind a load balancer need nothing shared to apply it; a
count (``{"delete_file": 1}``) is spent by the session's calls of that tool.

A malformed value is the client's mistake, answered with a ``ValidationError`` result that
names the key, what was found and the shape expected; the call does not run.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._tool import ErrorType, ToolResult

if TYPE_CHECKING:
    from toolplug.trust._conversation import Conversation

__all__ = ["ALLOW_KEY", "call_bound", "within"]

ALLOW_KEY: Final = "toolplug/allow"
"""The ``_meta`` key of a call's effects (tools/call)."""

_MOST_EFFECTS: Final = 1000
"""The tools and categories one ``_meta`` value may name: far more than a server serves."""

_MOST_CHARS: Final = 256
"""The characters of one name."""

_SHAPE: Final = (
    'a list of tool names or tool categories (["read_page", "send_mail"], [] for none), or '
    'an object of counts ({"delete_file": 1, "read_page": null}: null for any number)'
)

Allow = list[str] | dict[str, int | None]
"""What ``toolplug/allow`` gives, checked."""


def call_bound(meta: Mapping[str, Any] | None) -> tuple[Allow | None, ToolResult | None]:
    """The effects a call's ``_meta`` asks for (None: it gives none), or the error result
    that says what is wrong with them."""
    if not meta or ALLOW_KEY not in meta:
        return None, None
    given = meta[ALLOW_KEY]
    try:
        return _checked(given), None
    except ValueError as bad:
        return None, ToolResult.failure(
            ErrorType.VALIDATION,
            f'_meta["{ALLOW_KEY}"] {bad}: give {_SHAPE}. The call did not run.',
            details={"meta": ALLOW_KEY, "got": _shown(given), "expected": _SHAPE},
        )


def _checked(given: Any) -> Allow:
    if isinstance(given, list):
        _sized(given)
        for item in given:
            _name(item)
        return list(given)
    if isinstance(given, dict):
        _sized(given)
        for name, count in given.items():
            _name(name)
            if count is not None and (
                isinstance(count, bool) or not isinstance(count, int) or count < 0
            ):
                raise ValueError(
                    f"gives {_shown(name)} the count {_shown(count)}: a count is a whole number, "
                    "0 or more, or null"
                )
        return dict(given)
    if isinstance(given, str):
        raise ValueError(
            f"is the string {_shown(given)}: the server does not see the user's request, so "
            "nothing can be inferred from it, and one name is a list of one"
        )
    raise ValueError(f"is {_shown(given)}")


def _sized(given: list[Any] | dict[str, Any]) -> None:
    if len(given) > _MOST_EFFECTS:
        raise ValueError(f"names {len(given)} effects, more than {_MOST_EFFECTS}")


def _name(item: Any) -> None:
    if not isinstance(item, str) or not item.strip():
        raise ValueError(
            f"holds {_shown(item)}: each effect is a tool's name or a tool category, a "
            "non-empty string"
        )
    if len(item) > _MOST_CHARS:
        raise ValueError(f"holds a name of {len(item)} characters, more than {_MOST_CHARS}")


def _shown(value: Any) -> str:
    """The value as the error names it: its JSON text, cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not from JSON: a Python caller's
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def within(
    conversation: Conversation | None, bound: Allow | None
) -> Conversation | contextlib.nullcontext[None]:
    """Around a served call: a conversation inside the session's bounded by what the call's
    ``_meta`` asked for, current while it runs; nothing when it asked for nothing (or the
    client has no conversation)."""
    if conversation is None or bound is None:
        return contextlib.nullcontext()
    return conversation.child(exact=False, allow=bound)
