"""Bounds on what goes into a call and what comes out of it.

In: an argument document nested deeper than ``MAX_ARGUMENT_DEPTH`` or holding more than
``MAX_ARGUMENT_CHARS`` characters (keys and strings counted, every other value as one) is
refused with a ``ValidationError`` before any tool runs, whoever sent it (API, CLI, MCP,
plans). Out: the whole reply a model sees fits the call's output budget
(``max_output_chars``): the text with its warnings (``ToolResult.for_model``), the structured
data as JSON with the warnings beside it (as MCP's ``structuredContent`` carries them) and the
citations, counted together by ``reply_chars``. Warnings and citations
get a small share, the text and the data split the rest; each cut says so in the reply, and
the cut data stays valid JSON. An error message never quotes more than a short prefix of a
long argument.

A result's parts (``ToolResult.parts``) are bounded too. Each is checked when the tool
returns (``malformed_part``): a part that is not what it says, or one binary part over
``[calls] max_part_bytes``, fails the call. Text parts (and an embedded resource's text)
are text in the character budget, read after the output; binary parts have a byte budget
of their own (``[calls] max_result_bytes``), their base64 never counted as characters.
Parts over either budget are cut or left out, and a warning names each (``PARTS_CUT``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeVar

from toolplug.contract._parts import Part
from toolplug.contract._tool import Citation, ErrorType, ToolResult

__all__ = [
    "DATA_CUT",
    "DEFAULT_OUTPUT_CHARS",
    "DEFAULT_PART_BYTES",
    "DEFAULT_RESULT_BYTES",
    "MAX_ARGUMENT_CHARS",
    "MAX_ARGUMENT_DEPTH",
    "PARTS_CUT",
    "SMALLEST_BUDGET",
    "TooLarge",
    "argument_problem",
    "bounded",
    "data_cut",
    "fits",
    "heavy",
    "in_slices",
    "json_text",
    "loads_bounded",
    "malformed_part",
    "paging_argument",
    "part_bytes",
    "part_label",
    "part_text",
    "reply_chars",
    "spillable_parts",
]

DEFAULT_OUTPUT_CHARS: Final = 50_000
"""The output budget of a call whose tool and ``[calls]`` table set none."""
DEFAULT_PART_BYTES: Final = 20_000_000
"""The most bytes one binary part may carry when ``[calls] max_part_bytes`` sets none:
more than any provider takes in one image or file today."""
DEFAULT_RESULT_BYTES: Final = 50_000_000
"""The byte budget of a result's binary parts together when ``[calls] max_result_bytes``
sets none."""
PARTS_CUT: Final = "to fit the result's budget, toolplug "
"""How the warning that the budget cut or left out parts begins."""
_PART_TEXT_MIN: Final = 200
"""A text part cut to fewer characters than this is left out instead."""
_PARTS_NOTE: Final = 400
"""Kept free for the warning naming the parts cut (at most this long)."""
_NAMED_PARTS: Final = 4
"""The parts the warning names one by one; it counts the others."""

MAX_ARGUMENT_DEPTH: Final = 32
"""Levels of nested objects and arrays an argument document may have."""
MAX_ARGUMENT_CHARS: Final = 1_000_000
"""Characters of keys and strings an argument document may hold."""
QUOTED_CHARS: Final = 80
"""The longest part of one argument an error message may quote."""
SMALLEST_BUDGET: Final = 1_000
"""The smallest output budget: room for a useful prefix and the notices of what was cut."""
DATA_CUT: Final = "the structured data was cut to fit "
"""How the warning that the budget cut a result's data begins (see ``data_cut``)."""
_ERROR_CHARS: Final = 2_000
"""An error message is for a model to act on: never longer than this."""
_ERROR_TYPE_CHARS: Final = 100
_LONG_ARGUMENT: Final = 200
_WARNING_CHARS: Final = 500
"""The longest one warning may be in a reply that had to be cut."""
_SIDE_SHARE: Final = 8
"""Warnings, and citations, each take at most this fraction (1/8) of a cut reply."""
_TITLE_CHARS: Final = 200
_URL_CHARS: Final = 2_000
"""A citation with a longer URL is left out of a cut reply: half a URL points nowhere."""
_NOTICE_ROOM: Final = 500
"""Kept free for toolplug's two notice lines (at most about 470 characters together) when
the text and the data share a budget."""
_WRAPPING: Final = len(json.dumps({"result": None})) - len("null")
"""MCP may carry the data wrapped as ``{"result": ...}`` (``toolplug.render._mcp``)."""
_UNMEASURABLE: Final = sys.maxsize


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


def reply_chars(result: ToolResult) -> int:
    """The characters a result takes of its budget: the text a model reads
    (``for_model``), and for a success the data and the citations as JSON (data that cannot
    be written as JSON counts as more than any budget)."""
    size = len(result.for_model())
    if result.error is None:
        size += _data_chars(result.data) + _citations_chars(result.citations)
        if result.data is not None:  # the warnings go beside the data too (MCP's structure)
            size += _warnings_json_chars(result.warnings)
    return size


def fits(result: ToolResult, budget: int, max_bytes: int = DEFAULT_RESULT_BYTES) -> bool:
    """Whether ``bounded`` would hand the result back unchanged."""
    if result.parts and sum(map(part_bytes, result.parts)) > max_bytes:
        return False
    return reply_chars(result) <= max(budget, SMALLEST_BUDGET)


# -- parts ------------------------------------------------------------------------------


def part_bytes(part: Part) -> int:
    """The bytes a binary part carries (an image's, an embedded resource's), else 0."""
    data = getattr(part, "data", None)
    return len(data) if isinstance(data, bytes) else 0


def part_text(part: Part) -> str | None:
    """The text a part carries for the model (a text part's, an embedded resource's)."""
    text = getattr(part, "text", None)
    return text if isinstance(text, str) else None


def part_label(index: int, part: Any) -> str:
    """How messages name a part: ``parts[1] (image/png)``, ``parts[0] (text)``."""
    if not isinstance(part, Part):
        return f"parts[{index}] ({type(part).__name__})"
    mime = getattr(part, "mime_type", None)
    return f"parts[{index}] ({mime or part.kind})"


def malformed_part(result: ToolResult, tool: str, max_part_bytes: int) -> ToolResult | None:
    """The ``ExecutionError`` for a result whose parts cannot be passed on (one is not a
    part, is not what its MIME type says, or carries more than ``max_part_bytes``), or
    None. Reads each part's length and first bytes only: a large part is never copied."""
    parts: Any = result.parts
    if not isinstance(parts, tuple | list):
        problem = (
            f"parts is a {type(parts).__name__}, not a list of parts "
            "(toolplug.Image, Audio, File, Text, ResourceLink, EmbeddedResource)"
        )
        return ToolResult.failure(
            ErrorType.EXECUTION, f"{tool} returned a result that cannot be passed on: {problem}",
            details={"part": None, "problem": problem},
        )
    for index, part in enumerate(parts):
        if not isinstance(part, Part):
            problem = (
                f"a {type(part).__name__} is not a part: use toolplug.Image, Audio, File, "
                "Text, ResourceLink or EmbeddedResource"
            )
        elif (size := part_bytes(part)) > max_part_bytes:
            problem = (
                f"it holds {size:,} bytes, over the {max_part_bytes:,} one part may hold "
                "([calls] max_part_bytes)"
            )
        else:
            found = part.problem()
            if found is None:
                continue
            problem = found
        label = part_label(index, part)
        return ToolResult.failure(
            ErrorType.EXECUTION,
            f"{tool} returned a part that cannot be passed on: {label}: {problem}",
            details={
                "part": index,
                "kind": getattr(part, "kind", None),
                "mime_type": getattr(part, "mime_type", None),
                "problem": problem,
            },
        )
    return None


def _within_bytes(parts: tuple[Part, ...], max_bytes: int) -> set[int]:
    """The indices of the binary parts past the byte budget (those before it fit)."""
    used = 0
    over: set[int] = set()
    for index, part in enumerate(parts):
        size = part_bytes(part)
        if not size:
            continue
        if over or used + size > max_bytes:
            over.add(index)
        else:
            used += size
    return over


def spillable_parts(result: ToolResult, max_bytes: int) -> dict[int, Part]:
    """The parts ``bounded`` may cut, by index: the binary parts past the byte budget and
    every part with text (a spill keeps them whole before the cut)."""
    over = _within_bytes(result.parts, max_bytes)
    return {
        index: part for index, part in enumerate(result.parts)
        if index in over or part_text(part) is not None
    }


def _size_of(part: Part) -> str:
    text = part_text(part)
    if text is not None:
        return f"{len(text):,} characters"
    size = part_bytes(part)
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size:,} bytes"


def _parts_note(
    cut: list[tuple[int, Part, str]], over: set[int], budget: int, max_bytes: int,
    kept_at: str | None,
) -> str:
    """The warning naming the parts the budgets cut (``how``: "cut" or "left out");
    ``over``: those past the byte budget (kept whole with the text parts)."""
    said: list[str] = []
    for how in ("cut", "left out"):
        named = [(i, p) for i, p, h in cut if h == how]
        if not named:
            continue
        shown = [f"{part_label(i, p)[:-1]}, {_size_of(p)})" for i, p in named[:_NAMED_PARTS]]
        more = len(named) - len(shown)
        said.append(
            f"{how} " + "; ".join(shown) + (f"; and {more:,} more" if more else "")
        )
    spilled = all(how == "cut" or part_text(p) is not None or i in over for i, p, how in cut)
    if not kept_at:
        where = "; ask for less to see all of it"
    elif spilled:
        where = f"; each is kept whole at {kept_at}/parts/N (N its index)"
    else:  # a link (or a file with a long name) left out for characters is not kept
        where = (
            f"; the text parts and those past the byte budget are kept whole at "
            f"{kept_at}/parts/N (N its index)"
        )
    note = (  # where they are first: a long list is what the end cuts
        f"{PARTS_CUT}cut or left out parts (the budgets are {budget:,} characters and "
        f"{max_bytes:,} bytes of parts){where}: {' and '.join(said)}"
    )
    return note if len(note) <= _PARTS_NOTE else note[: _PARTS_NOTE - 3] + "..."


def _with_text(part: Part, text: str) -> Part:
    return dataclasses.replace(part, text=text)  # type: ignore[type-var]


def _cut_part_text(
    text: str, space: int, budget: int, index: int, kept_at: str | None
) -> str:
    """A text part's text within ``space`` characters, its notice included."""
    where = (
        f"the whole part is kept at {kept_at}/parts/{index}" if kept_at
        else "ask for less to see the rest"
    )

    def notice(kept: int) -> str:
        return (
            f"\n[part cut by toolplug: {len(text) - kept:,} of {len(text):,} characters not "
            f"shown (the limit is {budget:,}); {where}]"
        )

    keep = max(space - len(notice(0)), 0)
    return text[:keep] + notice(keep)


def data_cut(result: ToolResult) -> bool:
    """True when ``bounded`` cut the result's structured data, or left it out."""
    return any(warning.startswith(DATA_CUT) for warning in result.warnings)


def bounded(
    result: ToolResult,
    arguments: Mapping[str, Any],
    budget: int,
    *,
    pages: bool | str = False,
    kept_at: str | None = None,
    max_bytes: int = DEFAULT_RESULT_BYTES,
) -> ToolResult:
    """The result cut so that ``reply_chars(result) <= budget``, saying what was cut.

    Each warning is cut to 500 characters and the warnings to an eighth of the budget, the
    citations likewise; the text and the data split what is left, each getting at least
    half of it when both need more. Long data strings are shortened first, then the tails
    of the longest arrays and objects go. ``pages``: the argument the tool is read on with
    (``True``: ``offset``; ``paging_argument`` finds it), which the cut notice names.
    ``kept_at``: where the whole output is kept (a spill URI), which the notices name
    instead. A budget under ``SMALLEST_BUDGET`` counts as that.

    Parts: the binary parts past ``max_bytes`` (their bytes together) are left out; the
    text of text parts comes after the output in the text's share, cut where the share
    ends (a part that would keep less than a few lines is left out). One warning names
    every part cut or left out; with ``kept_at``, the spill holds each whole
    (``spillable_parts``) at ``kept_at/parts/N``.
    """
    budget = max(budget, SMALLEST_BUDGET)
    if result.error is not None:
        return _bounded_error(result, arguments, budget)
    if fits(result, budget, max_bytes):
        return result
    warnings, fewer_warnings = _fewer_warnings(result.warnings, budget // _SIDE_SHARE)
    citations, fewer_citations = _fewer_citations(result.citations, budget // _SIDE_SHARE)
    notes: list[str] = []
    data = result.data
    rest = budget - _warnings_chars(warnings) - _citations_chars(citations) - _NOTICE_ROOM
    if data is not None:  # the warnings, and the notices, are in the structure as well
        rest -= _warnings_json_chars(warnings) + _NOTICE_ROOM
    room = max(rest // 2, rest - len(result.output))
    if _data_chars(data) > room:
        data, cut = _shrunk(data, room - _WRAPPING)
        whole = f"read all of it at {kept_at}/data" if kept_at else "ask for less to see all of it"
        notes.append(
            f"{DATA_CUT}{budget:,} characters: {cut}; the call itself succeeded, {whole}"
        )
    fewer = " and ".join(part for part in (fewer_warnings, fewer_citations) if part)
    if fewer:
        notes.append(f"to fit {budget:,} characters, toolplug left out {fewer}")
    if not result.parts:
        shortened = dataclasses.replace(
            result, output="", data=data, citations=citations,
            warnings=(*warnings, *notes),
        )
        # The text takes whatever the rest left: two characters go to the blank line before
        # the warnings.
        space = budget - reply_chars(shortened) - (2 if shortened.warnings else 0)
        output = _cut_output(result.output, space, budget, pages, kept_at)
        return dataclasses.replace(shortened, output=output, spill=kept_at)
    return _bounded_parts(
        result, budget, data=data, citations=citations, warnings=(*warnings, *notes),
        pages=pages, kept_at=kept_at, max_bytes=max_bytes,
    )


def _bounded_parts(
    result: ToolResult, budget: int, *, data: Any, citations: tuple[Citation, ...],
    warnings: tuple[str, ...], pages: bool | str, kept_at: str | None, max_bytes: int,
) -> ToolResult:
    """``bounded``'s last step for a result with parts: the binary parts past the byte
    budget left out, then the output and the parts' texts, in order, in what is left."""
    over = _within_bytes(result.parts, max_bytes)
    cut: list[tuple[int, Part, str]] = [(i, result.parts[i], "left out") for i in sorted(over)]
    kept = [(i, p) for i, p in enumerate(result.parts) if i not in over]
    # Measured without the text and the parts, room held for the warning naming the cuts
    # and for the blank line before the warnings; each part costs its words for the model
    # and the blank line before it.
    shortened = dataclasses.replace(
        result, output="", data=data, citations=citations, parts=(),
        warnings=(*warnings, "w" * _PARTS_NOTE),
    )
    left = budget - reply_chars(shortened) - 2
    stays: set[int] = set()
    for index, part in kept:  # first the few words in a picture's or a link's place
        if part_text(part) is None:
            cost = len(part.describe()) + 2
            if cost <= left:
                left -= cost
                stays.add(index)
            else:
                cut.append((index, part, "left out"))
    output = result.output
    if len(output) > left:
        output = _cut_output(output, max(left, 0), budget, pages, kept_at)
        left = 0
    else:
        left -= len(output)
    parts: list[Part] = []
    for index, part in kept:
        text = part_text(part)
        if text is None:
            if index in stays:
                parts.append(part)
        elif len(text) + 2 <= left:
            parts.append(part)
            left -= len(text) + 2
        elif left - 2 >= _PART_TEXT_MIN:
            parts.append(_with_text(part, _cut_part_text(text, left - 2, budget, index, kept_at)))
            cut.append((index, part, "cut"))
            left = 0
        else:
            cut.append((index, part, "left out"))
            left = 0
    cut.sort(key=lambda item: item[0])
    notes = (_parts_note(cut, over, budget, max_bytes, kept_at),) if cut else ()
    return dataclasses.replace(
        result, output=output, data=data, citations=citations, parts=tuple(parts),
        warnings=(*warnings, *notes),
        spill=kept_at,
    )


def _bounded_error(result: ToolResult, arguments: Mapping[str, Any], budget: int) -> ToolResult:
    """The error with its message (and type) short enough for its JSON to fit ``budget``."""
    error = result.error
    assert error is not None
    message = _unquoted(error.message, arguments)
    kind = error.type
    if len(kind) > _ERROR_TYPE_CHARS:
        kind = kind[:_ERROR_TYPE_CHARS] + "..."
    keep = min(budget, _ERROR_CHARS)
    while True:
        shown = message if len(message) <= keep else _cut_message(message, keep)
        cut = result
        if (shown, kind) != (error.message, error.type):
            cut = dataclasses.replace(
                result, error=dataclasses.replace(error, message=shown, type=kind)
            )
        excess = reply_chars(cut) - budget
        if excess <= 0 or keep == 0:
            return cut
        # The rest of the JSON, or escapes in it, took more room than the message's share.
        keep = max(min(keep, len(message)) - excess, 0)


def _cut_message(message: str, keep: int) -> str:
    return message[:keep] + f"... [{len(message) - keep:,} characters cut]"


def _cut_output(
    output: str, space: int, budget: int, pages: bool | str, rest: str | None
) -> str:
    """The output within ``space`` characters, its notice included."""
    if len(output) <= space:
        return output
    how = (
        f"call the tool again with a larger {'offset' if pages is True else pages} for the rest"
        if pages
        else "ask for less (narrower arguments) to see the rest"
    )

    def notice(kept: int) -> str:
        if rest:
            return (
                f"\n[output cut by toolplug: {len(output) - kept:,} of {len(output):,} "
                f"characters not shown (the limit is {budget:,}); the whole output is kept at "
                f"{rest}: read it from offset {kept}]"
            )
        return (
            f"\n[output cut by toolplug: {len(output) - kept:,} of {len(output):,} characters "
            f"dropped (the limit is {budget:,}); {how}]"
        )

    # The notice is never longer than with 0 kept, plus the offset's digits when it names one.
    margin = len(f"{len(output):,}") if rest else 0
    keep = max(space - len(notice(0)) - margin, 0)
    text = output[:keep] + notice(keep)
    return text if len(text) <= space else text[:max(space, 0)]


def paging_argument(tool: Any, metadata: Any) -> str | None:
    """The argument a model reads a tool's output on with: ``offset``, under the name the
    model sees it by (a transform's ``rename_args`` records it as ``renamed_arguments``,
    original -> shown; a hidden ``offset`` is none the model can change)."""
    renamed = getattr(tool, "renamed_arguments", None)
    if renamed is not None:
        shown = renamed.get("offset")
        return str(shown) if shown is not None else None
    properties = metadata.parameters.get("properties") or {}
    return "offset" if "offset" in properties else None


def _warnings_chars(warnings: tuple[str, ...]) -> int:
    return len(ToolResult(warnings=warnings).for_model())


def _warnings_json_chars(warnings: tuple[str, ...]) -> int:
    if not warnings:
        return 0
    return len(json.dumps({"warnings": list(warnings)}, ensure_ascii=False)) - 2


def _fewer_warnings(warnings: tuple[str, ...], room: int) -> tuple[tuple[str, ...], str]:
    """The first warnings that fit ``room``, long ones cut; and what was left out."""

    def shorten(warning: str) -> str:
        return warning if len(warning) <= _WARNING_CHARS else warning[:_WARNING_CHARS] + "..."

    def cost(warning: str, _after: bool) -> int:
        return _warnings_chars((warning,)) + 1  # and the line break between two

    return _first_that_fit(
        warnings, room, 0, shorten=shorten, cost=cost, nouns=("warning", "long warning")
    )


def _citations_chars(citations: tuple[Citation, ...]) -> int:
    if not citations:
        return 0
    return len(json.dumps([c.to_dict() for c in citations], ensure_ascii=False))


def _fewer_citations(
    citations: tuple[Citation, ...], room: int
) -> tuple[tuple[Citation, ...], str]:
    """The first citations that fit ``room``, long titles cut (a URL over 2,000 characters
    leaves its citation out: half a URL points nowhere); and what was left out."""

    def shorten(citation: Citation) -> Citation | None:
        if len(citation.url) > _URL_CHARS:
            return None
        if len(citation.title) > _TITLE_CHARS:
            return dataclasses.replace(citation, title=citation.title[:_TITLE_CHARS] + "...")
        return citation

    def cost(citation: Citation, after: bool) -> int:
        return len(json.dumps(citation.to_dict(), ensure_ascii=False)) + (2 if after else 0)

    return _first_that_fit(
        citations, room, len("[]"), shorten=shorten, cost=cost,
        nouns=("citation", "long citation title"),
    )


_Item = TypeVar("_Item")
_T = TypeVar("_T")


def _first_that_fit(
    items: tuple[_Item, ...],
    room: int,
    used: int,
    *,
    shorten: Callable[[_Item], _Item | None],
    cost: Callable[[_Item, bool], int],
    nouns: tuple[str, str],
) -> tuple[tuple[_Item, ...], str]:
    """The first ``items`` (each shortened; None leaves it out) whose ``cost`` fits ``room``
    after ``used``; and what was left out, in words (``nouns``: an item, a shortened one)."""
    kept: list[_Item] = []
    shortened = 0
    for item in items:
        short = shorten(item)
        if short is None:
            continue
        spent = cost(short, bool(kept))
        if used + spent > room:
            break
        kept.append(short)
        used += spent
        shortened += short is not item
    dropped = len(items) - len(kept)
    what = [f"{dropped:,} of {_count(len(items), nouns[0])}"] if dropped else []
    what += [f"the end of {_count(shortened, nouns[1])}"] if shortened else []
    return tuple(kept), " and ".join(what)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def _data_chars(data: Any) -> int:
    if data is None:
        return 0
    try:
        if getattr(_SLICED, "on", False):
            return sum(map(len, _json_pieces(data, _plain_json, 0))) + _WRAPPING
        return len(json.dumps(data, ensure_ascii=False, default=str)) + _WRAPPING
    except (TypeError, ValueError, RecursionError):
        return _UNMEASURABLE


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
    """Data whose JSON text fits ``budget``, and what was cut to make it fit: the longest
    strings shortened first, then the second half of the largest array or object dropped,
    again and again; None when not even the empty shell fits."""
    try:
        data = _plain_copy(data)  # a copy to cut
    except (TypeError, ValueError, RecursionError):
        return None, "it cannot be written as JSON and was left out"
    strings = False
    for _ in range(64):  # each round halves the longest strings, or cuts them enough
        excess = _json_chars(data) - budget
        if excess <= 0:
            break
        longest = max(map(len, _strings(data)), default=0)
        if longest <= QUOTED_CHARS + 3:  # short strings stay whole: items go instead
            break
        # Cut by the excess (and the "..."), or by half when that is more.
        limit = max(longest - excess - 3, longest // 2, QUOTED_CHARS)
        data = _cut_strings(data, limit)
        strings = True
    items = members = 0
    while _json_chars(data) > budget:
        dropped, in_array = _halve_largest(data)
        if not dropped:
            return None, "it did not fit and was left out"
        if in_array:
            items += dropped
        else:
            members += dropped
    gone = " and ".join(
        [f"{items:,} trailing array items"] * bool(items)
        + [f"{members:,} trailing object members"] * bool(members)
    )
    if strings:
        return data, f"long strings were shortened, and {gone} were left out" if gone else (
            "long strings were shortened"
        )
    return data, f"{gone} were left out" if gone else "it was made plain JSON"


def _json_chars(data: Any) -> int:
    if getattr(_SLICED, "on", False):
        return sum(map(len, _json_pieces(data, _strict_json, 0)))
    return len(json.dumps(data, ensure_ascii=False))


# -- large data off the loop ------------------------------------------------------------
#
# The engine measures, writes and cuts large data in a worker thread (``in_slices``). The C
# JSON encoder and decoder keep the GIL through a whole document, which would hold the event
# loop as long as doing it there; in slices, a large array or object is written (or read
# back) a batch of its items at a time, with the GIL handed over between batches. The text
# is the same as one ``json.dumps`` writes: the items of an array or the members of an
# object are written the same way alone as together, and joined with the same separators.
# A batch is not looked into: in an array of many items, one item that holds most of the
# data is written with its batch, in one go.

_SLICE_ITEMS: Final = 2_048
"""The items of a large array or object written in one go (under 0.1 ms of encoding for
short records), and the values a container may hold before it is written in parts."""
_SLICE_DEPTH: Final = 32
"""How deep slicing goes; below, a container is written whole (and the encoder finds a
reference cycle as it would)."""
_SLICE_SECONDS: Final = 0.0003
"""How long a worker writes before it hands the GIL over: what the event loop may wait."""
_SLICED = threading.local()
"""``on`` in a thread running ``in_slices``; ``handed``, when it last handed the GIL over."""


_HEAVY_VALUES: Final = 3_276
"""The values (in ``heavy``'s first levels) from which data is measured and cut off the
loop: as many as writing 64 Ki characters of text takes, about 1 ms inline."""
_HEAVY_LEVELS: Final = 3


def heavy(data: Any) -> bool:
    """Whether measuring ``data`` as JSON would hold an event loop long enough to do it in
    a worker thread (``in_slices``): its first ``_HEAVY_LEVELS`` levels of arrays and
    objects hold ``_HEAVY_VALUES`` items or more. Cheap for the common small result (it
    reads containers' lengths, and stops counting at the bound); data whose bulk sits
    deeper than that is measured inline."""
    count = 0
    level = [data]
    for depth in range(_HEAVY_LEVELS):
        deeper = depth < _HEAVY_LEVELS - 1  # the last level's items are not read
        below: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                count += len(item)
                if deeper:
                    below.extend(item.values())
            elif isinstance(item, list | tuple):
                count += len(item)
                if deeper:
                    below.extend(item)
            else:
                continue
            if count >= _HEAVY_VALUES:
                return True
        level = below
    return False


def in_slices(work: Callable[..., _T], *arguments: Any) -> _T:
    """``work(*arguments)`` with large data measured, written and copied a slice at a time
    (for a worker thread: each slice hands the GIL over)."""
    _SLICED.on = True
    try:
        return work(*arguments)
    finally:
        _SLICED.on = False


def json_text(data: Any) -> str:
    """``json.dumps(data, ensure_ascii=False)``, in slices inside ``in_slices``."""
    if getattr(_SLICED, "on", False):
        return "".join(_json_pieces(data, _strict_json, 0))
    return json.dumps(data, ensure_ascii=False)


def _plain_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _strict_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _plain_copy(data: Any) -> Any:
    """``data`` as plain JSON values (what ``json.loads`` gives for its text, others written
    as ``str`` gives them): a copy to cut."""
    if getattr(_SLICED, "on", False):
        return _copied(data, 0)
    return json.loads(_plain_json(data))


def _json_pieces(value: Any, encode: Callable[[Any], str], depth: int) -> Iterator[str]:
    """Texts whose concatenation is ``encode(value)``: a large array or object a batch of
    items (or, when it has few items holding much, an item) at a time."""
    how = _slicing(value, depth)
    if how is None:
        yield encode(value)
        return
    mapping = isinstance(value, dict)
    yield "{" if mapping else "["
    first = True
    for part, heavy in _parts(value, how):
        if not first:
            yield ", "
        first = False
        if heavy:  # one item holding much: its key alone, then its value in parts
            key, inner = part
            if mapping:
                yield encode({key: None})[1 : -len("null}")]
            yield from _json_pieces(inner, encode, depth + 1)
        else:
            yield encode(part)[1:-1]
            _hand_over()
    yield "}" if mapping else "]"


def _copied(value: Any, depth: int) -> Any:
    """``json.loads(_plain_json(value))``, built a batch of items at a time."""
    how = _slicing(value, depth)
    if how is None:
        return json.loads(_plain_json(value))
    if isinstance(value, dict):
        members: dict[str, Any] = {}
        for part, heavy in _parts(value, how):
            if heavy:
                key, inner = part
                [name] = json.loads(_plain_json({key: None}))
                members[name] = _copied(inner, depth + 1)
            else:
                members.update(json.loads(_plain_json(part)))
                _hand_over()
        return members
    items: list[Any] = []
    for part, heavy in _parts(value, how):
        if heavy:
            items.append(_copied(part[1], depth + 1))
        else:
            items.extend(json.loads(_plain_json(part)))
            _hand_over()
    return items


def _slicing(value: Any, depth: int) -> str | None:
    """How ``value`` is written in parts: "batches" (many items), "items" (few items
    holding many values), or None (whole: not an array or object as the encoder sees
    one, or a small one)."""
    if depth >= _SLICE_DEPTH or not isinstance(value, dict | list | tuple):
        return None
    if len(value) >= _SLICE_ITEMS:
        return "batches"
    return "items" if _values_at_least(value, _SLICE_ITEMS) else None


def _parts(value: dict[Any, Any] | list[Any] | tuple[Any, ...], how: str) -> Iterator[
    tuple[Any, bool]
]:
    """The parts of an array or object to write in turn: (a batch, False), a list or dict
    of ``_SLICE_ITEMS`` items; or item by item, (a light item as a batch of one, False) and
    ((key, value) of one holding many values, True)."""
    size = _SLICE_ITEMS
    if how == "batches":
        if isinstance(value, dict):
            members = list(value.items())
            for start in range(0, len(members), size):
                yield dict(members[start : start + size]), False
        else:
            for start in range(0, len(value), size):
                yield value[start : start + size], False
        return
    pairs = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in pairs:
        if isinstance(item, dict | list | tuple) and _values_at_least(item, size):
            yield (key, item), True
        elif isinstance(value, dict):
            yield {key: item}, False
        else:
            yield [item], False


def _values_at_least(value: Any, count: int) -> bool:
    """Whether ``value`` holds ``count`` values or more (itself, its items, theirs), read
    only until that many are counted."""
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen >= count:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _hand_over() -> None:
    """Let a thread waiting for the GIL take it (the event loop's), once a slice's time
    (``_SLICE_SECONDS``) has passed since this thread last did: a hand-over costs more than
    encoding a small batch."""
    now = time.perf_counter()
    if now - getattr(_SLICED, "handed", 0.0) >= _SLICE_SECONDS:
        time.sleep(0)
        _SLICED.handed = time.perf_counter()


def _cut_strings(value: Any, limit: int) -> Any:
    """The value (a copy that is cut in place) with every string over ``limit`` cut."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "..."
    if not isinstance(value, dict | list):
        return value
    stack = [value]
    while stack:
        item = stack.pop()
        keys = item.keys() if isinstance(item, dict) else range(len(item))
        for key in keys:
            inner = item[key]
            if isinstance(inner, str) and len(inner) > limit:
                item[key] = inner[:limit] + "..."
            elif isinstance(inner, dict | list):
                stack.append(inner)
    return value


def _halve_largest(value: Any) -> tuple[int, bool]:
    """Drop the second half of the array or object with the most items (an array on a
    tie); how many items went, and whether they were an array's."""
    largest: list[Any] | dict[str, Any] | None = None
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list | dict):
            if item and (largest is None or _outweighs(item, largest)):
                largest = item
            stack.extend(item.values() if isinstance(item, dict) else item)
    if largest is None:
        return 0, False
    keep = len(largest) // 2
    dropped = len(largest) - keep
    if isinstance(largest, list):
        del largest[keep:]
        return dropped, True
    for key in list(largest)[keep:]:
        del largest[key]
    return dropped, False


def _outweighs(item: list[Any] | dict[str, Any], other: list[Any] | dict[str, Any]) -> bool:
    if len(item) != len(other):
        return len(item) > len(other)
    return isinstance(item, list) and isinstance(other, dict)


def too_big(problem: str) -> ToolResult:
    """The ``ValidationError`` for arguments over the limits."""
    return ToolResult.failure(ErrorType.VALIDATION, problem, details={"limit": True})

