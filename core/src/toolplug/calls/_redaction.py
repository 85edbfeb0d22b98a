"""A result with the configured secrets taken out of everything it carries.

The engine redacts every result before anyone sees it or a cut output is kept
(``toolplug.calls._engine``); the pipeline redacts a result before the result cache keeps
it, since that cache may be a Redis server beyond this process (``toolplug.calls._store``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolplug.contract._tool import Citation, ToolResult
    from toolplug.runtime._config import Redactor

__all__ = ["redacted_result"]


def redacted_result(result: ToolResult, redactor: Redactor) -> ToolResult:
    """``result`` with ``***`` for every configured secret in its output, ``data`` (keys and
    values, at any depth), citations, warnings and error (message and details); the same
    object when it holds none."""
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
    if (
        output is result.output and data is result.data and error is result.error
        and warnings == result.warnings and citations == result.citations
    ):
        return result
    return dataclasses.replace(
        result, output=output, data=data, error=error, warnings=warnings, citations=citations
    )


def _citation(citation: Citation, redactor: Redactor) -> Citation:
    title, url = redactor.redact(citation.title), redactor.redact(citation.url)
    if title is citation.title and url is citation.url:
        return citation
    return dataclasses.replace(citation, title=title, url=url)
