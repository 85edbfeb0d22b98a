"""Secrets taken out of what leaves toolplug: ``Redactor`` holds the configured secret
values (``Config.redactor``); ``redacted_result`` takes them out of a result.

The engine redacts every result before anyone sees it or a cut output is kept
(``toolplug.engine._engine``); the pipeline redacts a result before the result cache keeps
it, since that cache may be a Redis server beyond this process (``toolplug.state._store``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._parts import Part, Text

if TYPE_CHECKING:
    from toolplug.contract._tool import Citation, ToolResult

__all__ = ["Redactor", "redacted_result"]

_MIN_SECRET_LEN: Final = 4



class Redactor:
    """Replaces known secret values with ``***`` in any text."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._longest_first: tuple[str, ...] = ()
        self._as_json: tuple[str, ...] = ()

    def add(self, secret: str) -> None:
        """Remember a secret value; values shorter than four characters are not redacted."""
        if len(secret) >= _MIN_SECRET_LEN:
            self._secrets.add(secret)
            self._longest_first = tuple(sorted(self._secrets, key=len, reverse=True))
            escaped = {json.dumps(s, ensure_ascii=False)[1:-1] for s in self._secrets}
            self._as_json = tuple(escaped | self._secrets)

    def in_json(self, text: str) -> bool:
        """Whether JSON text (``ensure_ascii=False``) holds a secret: as it is, or as a JSON
        string writes it (quotes, backslashes and control characters escaped). False means
        ``redact_data`` would find none in the data the text encodes (its strings and keys)."""
        return any(secret in text for secret in self._as_json)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def redact(self, text: str) -> str:
        """The text with every known secret replaced by ``***`` (longest first)."""
        for secret in self._longest_first:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    def redact_data(self, value: Any) -> Any:
        """JSON-like data (a result's ``data``) with every string, keys included, redacted;
        the same object when nothing in it holds a secret."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            items = [(self.redact_data(k), self.redact_data(v)) for k, v in value.items()]
            pairs = zip(items, value.items(), strict=True)
            if all(k is k0 and v is v0 for (k, v), (k0, v0) in pairs):
                return value
            return dict(items)
        if isinstance(value, list | tuple):
            redacted = [self.redact_data(v) for v in value]
            if all(a is b for a, b in zip(redacted, value, strict=True)):
                return value
            return tuple(redacted) if isinstance(value, tuple) else redacted
        return value



def redacted_result(result: ToolResult, redactor: Redactor) -> ToolResult:
    """``result`` with ``***`` for every configured secret in its output, ``data`` (keys and
    values, at any depth), citations, warnings, error (message and details) and the text of
    its parts (``_PART_STRINGS``; never their bytes); the same object when it holds none."""
    if not redactor:
        return result
    output = redactor.redact(result.output)
    data = redactor.redact_data(result.data)
    error = result.error
    if error is not None:
        message, details = redactor.redact(error.message), redactor.redact_data(error.details)
        if message is not error.message or details is not error.details:
            error = dataclasses.replace(error, message=message, details=details)
    warnings = tuple(redactor.redact(w) for w in result.warnings)
    citations = tuple(_citation(c, redactor) for c in result.citations)
    parts = tuple(_part(p, redactor) for p in result.parts) if result.parts else result.parts
    if (
        output is result.output and data is result.data and error is result.error
        and warnings == result.warnings and citations == result.citations
        and all(a is b for a, b in zip(parts, result.parts, strict=True))
    ):
        return result
    return dataclasses.replace(
        result, output=output, data=data, error=error, warnings=warnings, citations=citations,
        parts=parts,
    )


_PART_STRINGS: Final = ("text", "uri", "name", "description")
"""The fields of a part that hold text (a text part's, an embedded resource's text and URI,
a link's URI, name and description, a file's name). Bytes are never searched: a secret in
a picture's pixels or a file's bytes is not found."""


def _part(part: Part, redactor: Redactor) -> Part:
    changed: dict[str, str] = {}
    for name in _PART_STRINGS:
        value = getattr(part, name, None)
        if isinstance(value, str):
            redacted = redactor.redact(value)
            if redacted != value:
                changed[name] = redacted
    if not changed:
        return part
    try:
        return dataclasses.replace(part, **changed)  # type: ignore[type-var]
    except ValueError:  # a URI whose scheme was the secret: no longer a URI, a word instead
        return Text(redactor.redact(part.describe()))


def _citation(citation: Citation, redactor: Redactor) -> Citation:
    title, url = redactor.redact(citation.title), redactor.redact(citation.url)
    if title is citation.title and url is citation.url:
        return citation
    return dataclasses.replace(citation, title=title, url=url)
