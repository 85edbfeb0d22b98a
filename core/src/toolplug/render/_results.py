"""Call results in a provider's own form: one entry point, one writer per provider.

A host that drives a provider's API itself hands each call's ``ToolResult`` back as that
provider's tool-result item; ``export_result`` writes it, ``explain_result`` says what the
provider could not carry. Every part of the result is sent natively where the provider
takes it, else as the text that says what it is (``Part.describe``, as ``for_model``
writes it), and each such part is a ``ResultLoss``. What each format carries::

    openai            a ``role: tool`` message; text only         (render/_openai.py)
    openai-responses  a ``function_call_output`` item: text, images, PDF and text files
    anthropic         a ``tool_result`` block: text, images, PDF and plain-text documents
                                                                    (render/_anthropic.py)
    gemini            a part with a ``functionResponse``: the text in ``response``,
    gemini-openapi    images, PDF and plain text as inline data     (render/_gemini.py)

A resource link is text everywhere: the provider cannot read what it points at. An error
is the error JSON of ``ToolResult.for_model``, marked as an error where the provider has a
mark for it. Pure functions of the result: no provider SDK is imported, and the same
result always gives the same item, byte for byte through ``dumps``.

A writer is named in its format's row of ``render/_formats.py`` (``result``); it takes the
result, ``call_id`` and ``name``, and returns the item and its losses together, so the two
cannot disagree.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Final, Literal

from toolplug.contract._parts import EmbeddedResource, File, Part, PartKind, Text, part_for
from toolplug.render._formats import BY_NAME, FORMATS, Format

if TYPE_CHECKING:
    from toolplug.contract._tool import ToolResult

__all__ = [
    "RESULT_FORMATS",
    "ResultLoss",
    "Sent",
    "data_url",
    "explain_result",
    "export_result",
    "file_name",
    "notes",
    "sent_parts",
]

ResultAction = Literal["described", "rewritten"]

ResultWriter = Callable[..., tuple[dict[str, Any], list["ResultLoss"]]]

RESULT_FORMATS: Final = tuple(name for name in FORMATS if BY_NAME[name].result)
"""The formats ``export_result`` writes, in ``TABLE``'s order (MCP results are what
``toolplug serve`` sends)."""


@dataclass(frozen=True)
class ResultLoss:
    """One part of a result that a provider's tool-result item does not carry as it is."""

    path: str
    """A JSON Pointer into ``ToolResult.to_dict()``: ``/parts/2`` is the third part."""
    kind: PartKind
    """The part's kind: ``image``, ``audio``, ``file``, ``resource_link``, ``resource``."""
    action: ResultAction
    """``described``: sent as text saying what it is; ``rewritten``: sent natively in
    another form, something of it left out (an embedded resource's URI)."""
    detail: str
    """Why, and what was sent instead, in a few words."""

    def line(self) -> str:
        """``/parts/1  audio  described: ...`` for the command line."""
        return f"{self.path}  {self.kind}  {self.action}: {self.detail}"


@dataclass(frozen=True)
class Sent:
    """One part as a writer sees it: an embedded resource's bytes unwrapped."""

    index: int
    """Its position in ``ToolResult.parts``."""
    original: Part
    """The part as the tool returned it."""
    part: Part
    """The part to send: ``original``, or what an embedded resource's bytes are (an
    ``Image``, ``Audio`` or ``File`` named after the URI's last segment)."""

    @property
    def path(self) -> str:
        """Where the part is in ``ToolResult.to_dict()``."""
        return f"/parts/{self.index}"

    @property
    def uri(self) -> str | None:
        """The URI of an embedded resource, else None."""
        return self.original.uri if isinstance(self.original, EmbeddedResource) else None

    @property
    def text(self) -> str:
        """What the part is sent as where it is not sent natively: a text part's text, else
        its description (as ``ToolResult.for_model`` writes it)."""
        return self.original.text if isinstance(self.original, Text) else self.original.describe()

    def described(self, why: str) -> ResultLoss:
        """The loss of a part sent as ``text``, ``why`` saying why."""
        original = self.original
        if isinstance(original, EmbeddedResource) and original.text is not None:
            instead = f"its text, without its URI {original.uri}"
        else:
            instead = f"the text {self.text!r}"
        return ResultLoss(self.path, original.kind, "described", f"{why}: sent as {instead}")

    def rewritten(self, sent_as: str) -> ResultLoss:
        """The loss of an embedded resource sent as ``sent_as``, its URI left out."""
        return ResultLoss(
            self.path, self.original.kind, "rewritten",
            f"sent as {sent_as}; its URI {self.uri} is not",
        )


def sent_parts(result: ToolResult) -> list[Sent]:
    """The result's parts in order, each embedded resource holding bytes unwrapped."""
    out: list[Sent] = []
    for index, part in enumerate(result.parts):
        sent: Part = part
        if isinstance(part, EmbeddedResource) and part.data is not None:
            name = part.uri.rstrip("/").rsplit("/", 1)[-1] or None
            sent = part_for(part.data, part.mime_type, name=name)
        out.append(Sent(index, part, sent))
    return out


def notes(result: ToolResult) -> str:
    """The result's warnings as ``for_model`` writes them after the parts ("" if none)."""
    return "\n".join(f"Warning: {w}" for w in result.warnings)


def data_url(mime_type: str, data: bytes) -> str:
    """``data:MIME;base64,...``, as OpenAI takes inline images and files."""
    return f"data:{mime_type};base64,{base64.b64encode(data).decode('ascii')}"


# The extension a nameless file is given, for providers that need a file name.
_EXTENSIONS: Final = {"application/pdf": ".pdf", "text/plain": ".txt", "text/csv": ".csv",
                      "text/markdown": ".md", "text/html": ".html"}


def file_name(sent: Sent) -> str:
    """The file's own name, else ``part-N`` with the extension of its MIME type."""
    part = sent.part
    if isinstance(part, File) and part.name:
        return part.name
    mime = getattr(part, "mime_type", None) or ""
    return f"part-{sent.index}{_EXTENSIONS.get(mime, '')}"


@cache
def _writer(fmt: str) -> ResultWriter:
    row: Format = BY_NAME[fmt]
    module = importlib.import_module(f"toolplug.render.{row.module}")
    found: ResultWriter = getattr(module, row.result or "")
    return found


def _written(
    result: ToolResult, fmt: str, call_id: str | None, name: str | None
) -> tuple[dict[str, Any], list[ResultLoss]]:
    if fmt not in BY_NAME:
        raise ValueError(
            f"unknown result format {fmt!r}; use one of: {', '.join(RESULT_FORMATS)}"
        )
    row = BY_NAME[fmt]
    if not row.result:
        raise ValueError(
            f"{fmt!r} has no result export (toolplug serve sends MCP results itself); "
            f"use one of: {', '.join(RESULT_FORMATS)}"
        )
    given = {"call_id": call_id, "name": name}
    missing = [key for key in row.result_needs if not given[key]]
    if missing:
        raise ValueError(
            f"{fmt!r} tool results need {' and '.join(f'{key}=' for key in missing)}: "
            + "; ".join(_NEEDS[key] for key in missing)
        )
    return _writer(fmt)(result, call_id=call_id, name=name)


_NEEDS: Final = {
    "call_id": "the id of the tool call it answers, as the provider sent it",
    "name": "the name of the function the model called",
}


def export_result(
    result: ToolResult, fmt: str, *, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """A call's result as the provider's tool-result item, ready to append to the request.

    Each part is sent natively where the provider takes it, else as the text that says what
    it is; ``explain_result`` lists those parts. An error is ``for_model``'s error JSON.

    Args:
        result: The result of the call (``Registry.call``).
        fmt: One of the formats of ``export_tools`` except ``mcp``: ``openai`` (a Chat
            Completions ``role: tool`` message), ``openai-responses`` (a
            ``function_call_output`` item), ``anthropic`` (a ``tool_result`` block),
            ``gemini`` or ``gemini-openapi`` (a part holding a ``functionResponse``).
        call_id: The id of the tool call answered: needed by ``openai``,
            ``openai-responses`` and ``anthropic``; Gemini's when its call had one.
        name: The function's name: needed by ``gemini`` and ``gemini-openapi``.

    Raises:
        ValueError: an unknown format, ``mcp``, or a ``call_id`` or ``name`` the format
            needs and was not given.
    """
    item, _ = _written(result, fmt, call_id, name)
    return item


def explain_result(result: ToolResult, fmt: str) -> list[ResultLoss]:
    """The parts of ``result`` that ``export_result`` does not send as they are, in order:
    each with its path, its kind, ``described`` or ``rewritten``, and what was sent
    instead. Empty when the provider carries every part.

    Raises:
        ValueError: an unknown format, or ``mcp``.
    """
    needs = BY_NAME[fmt].result_needs if fmt in BY_NAME else ()
    placeholder = {key: key for key in needs}
    _, losses = _written(result, fmt, placeholder.get("call_id"), placeholder.get("name"))
    return losses
