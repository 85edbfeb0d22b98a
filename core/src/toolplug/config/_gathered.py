"""What the tables of gathered tools share: a mounted server's tool and an OpenAPI
operation each take the same keys on top of ``[tools.NAME]`` (``GatheredToolSettings``),
guidelines among them (``GuidelinesTable``).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from toolplug.contract._metadata import Guidelines
from toolplug.contract._settings import POLICY_KEYS, StrictTable, ToolSettings
from toolplug.trust._scan import RULES, RuleId

__all__ = ["RULES_TEXT", "GatheredToolSettings", "GuidelinesTable"]

RULES_TEXT: Final = "a list of scan rule ids: " + ", ".join(f'"{r}"' for r in RULES)


class GuidelinesTable(StrictTable):
    """``guidelines = { do = [...], do_not = [...], common_mistakes = [...] }``."""

    do: list[str] = Field(default_factory=list, description="a list of strings")
    do_not: list[str] = Field(default_factory=list, description="a list of strings")
    common_mistakes: list[str] = Field(default_factory=list, description="a list of strings")

    def guidelines(self) -> Guidelines:
        """The table as a tool's ``Guidelines``."""
        return Guidelines(
            do=tuple(self.do), do_not=tuple(self.do_not),
            common_mistakes=tuple(self.common_mistakes),
        )


class GatheredToolSettings(ToolSettings):
    """What toolplug adds to one gathered tool (``[mcp_servers.NAME.tools.TOOL]``, and under
    ``OperationSettings`` ``[openapi.NAME.tools.OPERATION_ID]``), and its call settings
    (every key of ``[tools.NAME]``)."""

    category: str | None = Field(
        default=None, pattern=r"^[a-z][a-z0-9_]{0,31}$", description="a category name"
    )
    optionality: Literal["required", "optional"] | None = Field(
        default=None, description='"required" or "optional"'
    )
    usage_hint: str | None = Field(
        default=None, description="a short, imperative sentence: when to reach for the tool"
    )
    guidelines: GuidelinesTable | None = Field(
        default=None, description="a table: do, do_not, common_mistakes (lists of strings)"
    )
    accept_findings: list[RuleId] = Field(
        default_factory=list, description=RULES_TEXT
    )
    """Scan rules whose findings in this tool's definition the operator accepts."""

    def call_settings(self) -> ToolSettings:
        """The call settings alone, as ``[tools.NAME]`` would give them."""
        return ToolSettings.model_validate(
            {k: getattr(self, k) for k in POLICY_KEYS if k in self.model_fields_set}
        )
