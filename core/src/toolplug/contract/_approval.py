"""Which calls need a person's approval: ``[tools.NAME] approval`` and the tool's annotations.

``"auto"`` (the default) asks when the declared annotations say the tool is destructive,
or neither read-only nor closed-world; a tool that declares none is not gated. ``"always"``
asks for every call, ``"never"`` for none. Who is asked: ``toolplug.calls._approval``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata

APPROVAL_POLICIES: Final = ("auto", "always", "never")


def approval_reason(metadata: ToolMetadata, policy: str | None = "auto") -> str | None:
    """Why a call of this tool needs approval under ``policy``, or None when it does not."""
    hints = metadata.annotations
    if policy == "always":
        return f'[tools.{metadata.name}] approval = "always"'
    if policy == "never" or "annotations" not in metadata.model_fields_set:
        return None
    if hints.destructive:
        return "it may destroy or overwrite data (annotated destructive)"
    if not hints.read_only and hints.open_world:
        return "it changes something outside this session (not read-only, open-world)"
    return None
