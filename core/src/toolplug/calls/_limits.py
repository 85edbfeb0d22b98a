"""Bounds on what goes into a call and what comes out of it.

In: an argument document nested deeper than ``MAX_ARGUMENT_DEPTH`` or holding more than
``MAX_ARGUMENT_CHARS`` characters (keys and strings counted, every other value as one) is
refused with a ``ValidationError`` before any tool runs, whoever sent it (API, CLI, MCP,
plans). Out: a result's text, error message and structured data are cut to the call's
output budget (``max_output_chars``), and the cut says so; an error message never quotes
more than a short prefix of a long argument.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Final

from toolplug.contract._tool import ErrorType, ToolResult

__all__ = [
    "DEFAULT_OUTPUT_CHARS",
    "MAX_ARGUMENT_CHARS",
    "MAX_ARGUMENT_DEPTH",
    "TooLarge",
    "argument_problem",
    "bounded",
    "loads_bounded",
]

MAX_ARGUMENT_DEPTH: Final = 32
"""Levels of nested objects and arrays an argument document may have."""
MAX_ARGUMENT_CHARS: Final = 1_000_000
"""Characters of keys and strings an argument document may hold."""
DEFAULT_OUTPUT_CHARS: Final = 50_000
"""The output budget of a call unless the tool or the configuration sets another."""
QUOTED_CHARS: Final = 80
"""The longest part of one argument an error message may quote."""
_ERROR_CHARS: Final = 2_000
"""An error message is for a model to act on: never longer than this."""
_LONG_ARGUMENT: Final = 200


def argument_problem(value: Any) -> str | None:
    """Why an argument document is over the limits, or None. Iterative: no recursion."""
    chars = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, Mapping | list | tuple):
            if depth > MAX_ARGUMENT_DEPTH:
                return (
                    f"the arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels of objects "
                    "and arrays (the limit); send a flatter document"
                )
            if isinstance(item, Mapping):
                for key, inner in item.items():
                    chars += len(key) if isinstance(key, str) else 1
                    stack.append((inner, depth + 1))
            else:
                stack.extend((inner, depth + 1) for inner in item)
        else:
            chars += 1
        if chars > MAX_ARGUMENT_CHARS:
            return (
                f"the arguments hold more than {MAX_ARGUMENT_CHARS:,} characters (the limit); "
                "send less, or point the tool at a file or URL instead"
            )
    return None


class TooLarge(ValueError):
    """Valid JSON, but over the limits on arguments."""


def loads_bounded(text: str | bytes) -> Any:
    """``json.loads`` that raises ``TooLarge`` for a document over the limits (and
    ``ValueError`` for text that is not JSON)."""
    if len(text) > 4 * MAX_ARGUMENT_CHARS:
        raise TooLarge(f"{len(text):,} characters of JSON; the limit is {MAX_ARGUMENT_CHARS:,}")
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooLarge(
            f"nested deeper than {MAX_ARGUMENT_DEPTH} levels of objects and arrays (the limit)"
        ) from None
    problem = argument_problem(value)
    if problem is not None:
        raise TooLarge(problem.removeprefix("the arguments "))
    return value


def bounded(
    result: ToolResult, arguments: Mapping[str, Any], budget: int, *, pages: bool = False
) -> ToolResult:
    """The result within ``budget`` characters of text and of JSON data, cut where needed.

    ``pages``: the tool takes an ``offset``, so the cut notice says how to read on.
    """
    error = result.error
    if error is not None:
        message = _unquoted(error.message, arguments)
        if len(message) > min(budget, _ERROR_CHARS):
            keep = min(budget, _ERROR_CHARS)
            message = message[:keep] + f"... [{len(message) - keep:,} characters cut]"
        if message != error.message:
            result = dataclasses.replace(result, error=dataclasses.replace(error, message=message))
        return result
    changes: dict[str, Any] = {}
    output = result.output
    if len(output) > budget:
        dropped = len(output) - budget
        how = (
            "call the tool again with a larger offset for the rest"
            if pages
            else "ask for less (narrower arguments) to see the rest"
        )
        changes["output"] = (
            output[:budget]
            + f"\n[output cut by toolplug: {dropped:,} of {len(output):,} characters dropped "
            f"(the limit is {budget:,}); {how}]"
        )
    if result.data is not None:
        data, cut = _shrunk(result.data, budget)
        if cut:
            changes["data"] = data
            changes["warnings"] = (
                *result.warnings,
                f"the structured data was cut to fit {budget:,} characters: {cut}",
            )
    return dataclasses.replace(result, **changes) if changes else result


def _unquoted(message: str, arguments: Mapping[str, Any]) -> str:
    """The message with each long string argument it repeats shortened to a prefix."""
    for value in _strings(arguments):
        if len(value) > _LONG_ARGUMENT and value in message:
            shown = value[:QUOTED_CHARS] + f"... ({len(value):,} characters)"
            message = message.replace(value, shown)
    return message


def _strings(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def _shrunk(data: Any, budget: int) -> tuple[Any, str]:
    """Data whose JSON text fits ``budget``: the longest strings shortened first, then
    array tails dropped. Returns the data and what was cut ("" when nothing was)."""
    try:
        size = len(json.dumps(data, ensure_ascii=False, default=str))
    except (TypeError, ValueError, RecursionError):
        return data, ""
    if size <= budget:
        return data, ""
    data = json.loads(json.dumps(data, ensure_ascii=False, default=str))  # a copy to cut
    strings = 0
    for _ in range(64):  # each round at least halves the longest strings
        longest = max(map(len, _strings(data)), default=0)
        if longest <= QUOTED_CHARS + 3:  # short strings stay whole: items go instead
            break
        limit = max(longest // 2, QUOTED_CHARS)
        data = _cut_strings(data, limit)
        strings += 1
        if len(json.dumps(data, ensure_ascii=False)) <= budget:
            return data, "long strings were shortened"
    items = 0
    while len(json.dumps(data, ensure_ascii=False)) > budget:
        dropped = _halve_longest_array(data)
        if not dropped:
            return None, "the data did not fit and was left out"
        items += dropped
    what = "long strings were shortened and " if strings else ""
    return data, f"{what}{items:,} trailing array items were left out"


def _cut_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "..."
    if isinstance(value, dict):
        return {k: _cut_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_strings(v, limit) for v in value]
    return value


def _halve_longest_array(value: Any) -> int:
    """Drop the second half of the array with the most items; how many were dropped."""
    longest: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            if len(item) > len(longest):
                longest = item
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    if not longest:
        return 0
    keep = len(longest) // 2
    dropped = len(longest) - keep
    del longest[keep:]
    return dropped


def too_big(problem: str) -> ToolResult:
    """The ``ValidationError`` for arguments over the limits."""
    return ToolResult.failure(ErrorType.VALIDATION, problem, details={"limit": True})

