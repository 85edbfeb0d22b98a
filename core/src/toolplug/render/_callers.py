"""Tools the provider's own code-execution tool may call (programmatic tool calling).

With the export option ``code_execution``, each exported tool is marked callable from the
provider's sandbox as well as directly, and the provider's tool is added to the list:

``anthropic``         ``"allowed_callers": ["direct", "code_execution_20260521"]``, and the
                      ``code_execution_20260521`` tool: Claude's code calls the tools, each
                      call comes back to the host as a ``tool_use`` block to answer.
``openai-responses``  ``"allowed_callers": ["direct", "programmatic"]``, and the
                      ``programmatic_tool_calling`` tool.

The calls still reach the host one by one (through ``registry.call``), so every toolplug
policy holds; what stays in the provider's sandbox is the program and its intermediate
values. toolplug's own sandbox is the ``run_code`` tool (``toolplug.sources._code``).
"""

from __future__ import annotations

from typing import Any

from toolplug.render._formats import CODE_EXECUTION_FORMATS
from toolplug.schema._losses import SchemaLoss
from toolplug.schema._python import CODE_TOOL

__all__ = ["callable_from_code", "caller_losses", "check_callers"]


def check_callers(fmt: str) -> None:
    """Raise ``ValueError`` when ``fmt``'s provider has no code execution that calls tools."""
    if fmt not in CODE_EXECUTION_FORMATS:
        raise ValueError(
            f"code_execution applies to {' and '.join(sorted(CODE_EXECUTION_FORMATS))}, "
            f"not {fmt!r}; "
            "for any other provider offer toolplug's run_code tool ([code] enabled = true)"
        )


def callable_from_code(definitions: list[dict[str, Any]], fmt: str) -> list[dict[str, Any]]:
    """The definitions with every function tool callable from code, and the code tool."""
    check_callers(fmt)
    row = CODE_EXECUTION_FORMATS[fmt]
    callers, code_tool = row.allowed_callers, row.code_tool
    marked = []
    for definition in definitions:
        if definition.get("name") == CODE_TOOL:  # toolplug's own sandbox, not theirs
            marked.append(definition)
        elif _is_function(definition, fmt):
            marked.append({**definition, "allowed_callers": list(callers)})
        elif definition.get("type") == "namespace":  # OpenAI's deferred tools, by category
            inner = [{**t, "allowed_callers": list(callers)} for t in definition.get("tools", [])]
            marked.append({**definition, "tools": inner})
        else:
            marked.append(definition)
    return [*marked, dict(code_tool)]


def caller_losses(fmt: str) -> list[SchemaLoss]:
    """The line ``--explain`` shows for each tool the option marks."""
    check_callers(fmt)
    row = CODE_EXECUTION_FORMATS[fmt]
    callers, code_tool = list(row.allowed_callers), row.code_tool
    return [
        SchemaLoss(
            "",
            "allowed_callers",
            "added",
            f"{callers}: callable directly and from the provider's {code_tool['type']} tool",
        )
    ]


def _is_function(definition: dict[str, Any], fmt: str) -> bool:
    if fmt == "anthropic":
        return "input_schema" in definition  # server tools (tool search) have none
    return definition.get("type") == "function"
