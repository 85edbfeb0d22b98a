"""What a rewrite did to a schema, one line per keyword: the loss report behind ``--explain``.

Every rewrite in this package records, for each keyword it does not pass through as it
is, one ``SchemaLoss``: where the keyword is (a JSON Pointer into the original schema),
which keyword, and what happened to it. A rewrite that changes a schema without a line
here is a bug (tests/schema/test_losses.py compares originals and exports to find one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["ACTIONS", "LossAction", "SchemaLoss", "pointer"]

LossAction = Literal["dropped", "described", "rewritten", "added"]
ACTIONS: Final[tuple[LossAction, ...]] = ("dropped", "described", "rewritten", "added")
"""``dropped``: gone from the export; ``described``: moved into a description, so the model
reads it but the provider does not enforce it; ``rewritten``: expressed another way (the
call path undoes what the model is asked to do differently); ``added``: a field an export
option adds to the tool's definition (``allowed_callers`` for code execution)."""


@dataclass(frozen=True)
class SchemaLoss:
    """One keyword a provider export did not pass through unchanged."""

    path: str
    """A JSON Pointer into the tool's original schema ("" is the top). A ``$ref`` is
    followed in place: what a definition holds is reported where it is referenced."""
    keyword: str
    """The keyword, such as ``pattern``, ``additionalProperties`` or ``$ref``."""
    action: LossAction
    """What happened to it: ``dropped``, ``described``, ``rewritten`` or ``added``."""
    detail: str
    """What the export says instead, in a few words."""

    def line(self) -> str:
        """``/properties/q  pattern  described: ...`` for the command line."""
        return f"{self.path or '/'}  {self.keyword}  {self.action}: {self.detail}"


def pointer(path: str, *parts: str | int) -> str:
    """``path`` extended by JSON Pointer segments (``~`` and ``/`` escaped)."""
    for part in parts:
        text = str(part).replace("~", "~0").replace("/", "~1")
        path = f"{path}/{text}"
    return path


class Report:
    """The losses of one rewrite, in the order found, each once."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], SchemaLoss] = {}

    def add(self, path: str, keyword: str, action: LossAction, detail: str) -> None:
        key = (path, keyword, action)
        if key not in self._seen:
            self._seen[key] = SchemaLoss(path, keyword, action, detail)

    def losses(self) -> list[SchemaLoss]:
        return list(self._seen.values())
