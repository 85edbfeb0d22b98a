"""Gemini function declarations: JSON Schema (``gemini``) or OpenAPI (``gemini-openapi``);
and function responses, the same for both."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._parts import Audio, EmbeddedResource, File, Image, Text
from toolplug.render._results import ResultLoss, sent_parts
from toolplug.schema import gemini_schema

if TYPE_CHECKING:
    from toolplug.contract._metadata import ToolMetadata, Trust
    from toolplug.contract._tool import ToolResult

__all__ = ["gemini_openapi_tool", "gemini_result", "gemini_tool"]

INLINE_TYPES: Final = frozenset(
    {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
)
"""The MIME types Gemini reads as the inline data of a function response."""
_CARRIES: Final = (
    "a functionResponse carries text, PNG, JPEG and WebP images, PDF and plain text"
)


def gemini_tool(
    metadata: ToolMetadata, *, strict: bool = False, defer_loading: bool = False,
    labels: Trust | None = None,
) -> dict[str, Any]:
    """A function declaration with the parameters as they are in ``parametersJsonSchema``,
    and ``returns`` (when declared) as ``responseJsonSchema``."""
    declaration: dict[str, Any] = {
        "name": metadata.name,
        "description": metadata.description,
        "parametersJsonSchema": copy.deepcopy(metadata.parameters),
    }
    if metadata.returns is not None:
        declaration["responseJsonSchema"] = copy.deepcopy(metadata.returns)
    return declaration


def gemini_openapi_tool(
    metadata: ToolMetadata, *, strict: bool = False, defer_loading: bool = False,
    labels: Trust | None = None,
) -> dict[str, Any]:
    """A function declaration whose ``parameters`` are the OpenAPI subset older SDKs read."""
    declaration: dict[str, Any] = {"name": metadata.name, "description": metadata.description}
    parameters = gemini_schema(metadata.parameters)
    # Gemini rejects an object without properties; a tool without arguments omits them.
    if parameters.get("properties"):
        declaration["parameters"] = parameters
    return declaration


def gemini_result(
    result: ToolResult, *, call_id: str | None = None, name: str | None
) -> tuple[dict[str, Any], list[ResultLoss]]:
    """A part holding a ``functionResponse`` (the REST names, bytes in base64, which the
    SDK's ``types.Part`` reads as well): ``response.output`` is the text of ``for_model``,
    each part in its place, and the parts Gemini reads follow as ``inlineData``. An error
    is ``response.error``, ``for_model``'s error JSON as an object."""
    response: dict[str, Any] = {"name": name}
    if call_id:
        response["id"] = call_id
    if result.error is not None:
        response["response"] = {"error": json.loads(result.for_model())}
        return {"functionResponse": response}, []
    response["response"] = {"output": result.for_model()}
    inline: list[dict[str, Any]] = []
    losses: list[ResultLoss] = []
    for sent in sent_parts(result):
        part = sent.part
        if isinstance(part, Text):
            continue  # in the output, in its place
        if isinstance(part, Image | Audio | File) and part.mime_type in INLINE_TYPES:
            # the output's description of the part says where it stands, URI included
            inline.append({"inlineData": {"mimeType": part.mime_type, "data": part.base64()}})
        elif isinstance(part, EmbeddedResource) and part.text is not None:
            losses.append(sent.rewritten("text in response.output"))
        else:
            losses.append(sent.described(_CARRIES))
    if inline:
        response["parts"] = inline
    return {"functionResponse": response}, losses
