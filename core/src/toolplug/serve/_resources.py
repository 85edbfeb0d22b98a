"""Outputs the budget cut, as MCP resources: each call's whole output, read in ranges.

A result cut to its output budget names where its whole output is kept
(``toolplug.state._spill``); the reply carries that URI as a ``resource_link``, and this
module answers ``resources/list`` (the spills this client may read), ``resources/templates/
list`` and ``resources/read`` with ``?offset=N&length=M``. A part the budget cut
(``.../ID/parts/N``) is read the same way: a text part as text, a binary part as a blob
in its own MIME type, its range counted in bytes. A spill belongs to the client
that made the call (``owner_of``): its verified principal, else its ``Mcp-Session-Id``,
else (stdio) the process's one client. A client with none of these has nothing listed,
and its spills are listed to nobody: it reads one by its URI alone, whose ID is 128 random
bits.

The plugins' resources and templates (``register_resources``) are listed beside them and
read by ``serve/_published.py``: a URI outside ``toolplug://results/`` is theirs.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from toolplug.contract._tool import ToolResult
    from toolplug.runtime._registry import Registry

from mcp import types
from mcp.shared.exceptions import MCPError

from toolplug.serve._auth import owner_of
from toolplug.serve._published import (
    Access,
    listed_resources,
    listed_templates,
    read_published,
)
from toolplug.state._spill import mime_of

__all__ = ["TEMPLATE", "handlers", "links"]

TEMPLATE: Final = "toolplug://results/{id}{?offset,length}"
_MIME = {"output": "text/plain", "data": "application/json"}
_SPILLS: Final = "toolplug://results/"


def links(result: ToolResult, tool: str) -> list[Any]:
    """``resource_link`` blocks for the parts of a result that were kept whole."""
    if not result.spill:
        return []
    found = [
        types.ResourceLink(
            type="resource_link", uri=result.spill, name=f"{tool} output",
            description="The whole output of the call; read it in ranges with ?offset=N&length=M.",
            mime_type=_MIME["output"],
        )
    ]
    if any(result.spill + "/data" in warning for warning in result.warnings):
        found.append(
            types.ResourceLink(
                type="resource_link", uri=result.spill + "/data", name=f"{tool} data",
                description="The whole structured data of the call, as JSON.",
                mime_type=_MIME["data"],
            )
        )
    return found


def handlers(registry: Registry, access: Access) -> dict[str, Any]:
    """The ``on_...`` resource handlers of the low-level ``Server``; ``access`` says which
    of the plugins' resources a request's token allows (the kept outputs go by owner)."""
    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources: list[types.Resource] = listed_resources(registry, ctx, access)
        owner = owner_of(ctx)
        if owner is None:  # nobody to list for: what such clients keep is listed to none
            return types.ListResourcesResult(resources=resources)
        for entry in await registry.aspills(owner=owner):
            for part, size in sorted(entry.sizes.items()):
                suffix = "" if part == "output" else f"/{part}"
                resources.append(
                    types.Resource(
                        uri=f"toolplug://results/{entry.id}{suffix}",
                        name=f"{entry.tool} {part}",
                        mime_type=mime_of(part, entry.types),
                        size=size,
                    )
                )
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=TEMPLATE,
            name="call output",
            description="The whole output of a call that its output budget cut (the call's "
            "reply links it); offset and length choose a range of characters (of bytes, for "
            "a part that is a picture, a recording or a file: .../ID/parts/N).",
            mime_type=_MIME["output"],
        )
        return types.ListResourceTemplatesResult(
            resource_templates=[template, *listed_templates(registry, ctx, access)]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if not uri.startswith(_SPILLS):  # a plugin's, or not found (-32002)
            return await read_published(registry, ctx, uri, access)
        query = parse_qs(urlsplit(uri).query)
        try:
            offset = int(query.get("offset", ["0"])[0])
            length = int(query["length"][0]) if "length" in query else None
        except ValueError:
            raise MCPError(
                types.INVALID_PARAMS, "offset and length are whole numbers of characters"
            ) from None
        base = uri.split("?", 1)[0]
        page = await registry.aread(base, offset=offset, length=length, owner=owner_of(ctx))
        if page is None:
            # Resource not found: -32602 with the URI in data (SEP-2164, the 2026-07-28
            # revision, which retired -32002). The same words for a URI never kept, one that
            # expired and another owner's, so that no answer tells that another owner has it.
            raise MCPError(
                types.INVALID_PARAMS,
                f"resource not found: {base}. A call's whole output is kept for a while after "
                "the reply that links it; if this URI came from such a reply, call the tool "
                "again",
                data={"uri": base},
            )
        meta = {"toolplug/offset": page.offset, "toolplug/total": page.total}
        if page.next_offset is not None:
            meta["toolplug/next_offset"] = page.next_offset
        mime = page.mime_type or _MIME["output"]
        if page.data is not None:  # a part's bytes: a blob, in the part's own type
            return types.ReadResourceResult(
                contents=[
                    types.BlobResourceContents(
                        uri=uri, mime_type=mime, _meta=meta,
                        blob=base64.b64encode(page.data).decode("ascii"),
                    )
                ]
            )
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=uri, mime_type=mime, text=page.text, _meta=meta)
            ]
        )

    return {
        "on_list_resources": list_resources,
        "on_list_resource_templates": list_templates,
        "on_read_resource": read_resource,
    }
