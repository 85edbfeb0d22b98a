"""Approvals: which calls need a person's yes, how one is asked for, and what a no means.

The rule, for ``[tools.NAME] approval = "auto"`` (the default): a call needs approval when
the tool is annotated ``destructive``, or when it is neither ``read_only`` nor closed-world
(``open_world`` true): it changes something outside toolplug. The rule reads the
annotations a tool declares; one that declares none is not gated by it. ``"always"``
asks for every call of the tool and ``"never"`` for none.

The request and decision types, and the asking, live with the call engine
(``toolplug.calls._approval``); the rule lives here, since the renderers state it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata

__all__ = ["APPROVAL_POLICIES", "approval_reason"]

APPROVAL_POLICIES: Final = ("auto", "always", "never")
"""The values of ``[tools.NAME] approval``."""


def approval_reason(metadata: ToolMetadata, policy: str | None = "auto") -> str | None:
    """Why a call of this tool needs approval under ``policy`` (None: ``"auto"``), or None
    when it does not."""
    if policy == "never":
        return None
    if policy == "always":
        return f"[tools.{metadata.name}] approval = \"always\""
    if "annotations" not in metadata.model_fields_set:
        return None  # nothing declared, nothing to act on: "always" gates such a tool
    hints = metadata.annotations
    if hints.destructive:
        return "it may destroy or overwrite data (annotated destructive)"
    if not hints.read_only and hints.open_world:
        return "it changes something outside this session (not read-only, open-world)"
    return None
