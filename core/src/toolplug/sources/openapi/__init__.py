"""HTTP APIs described by OpenAPI as toolplug tools: ``[openapi.NAME]`` in the configuration.

``toolplug.load()`` reads what the configuration names (docs/openapi.md). Each operation
becomes a governed tool: GET and HEAD read-only, other methods asked for approval, every
request through the network guard (``toolplug.http``), errors structured. A description's
parsed form is cached on disk, so listing a thousand operations does not read it again.
"""

from toolplug.sources.openapi._api import Api, Described, describe, described, report
from toolplug.sources.openapi._login import sign_in, sign_out
from toolplug.sources.openapi._package import operation_tools, package
from toolplug.sources.openapi._spec import SpecError

__all__ = [
    "Api",
    "Described",
    "SpecError",
    "describe",
    "described",
    "operation_tools",
    "package",
    "report",
    "sign_in",
    "sign_out",
]
