"""Deprecated: ``toolplug.sources.openapi`` holds the OpenAPI source.

Packages made by ``toolplug new --from-openapi`` in 0.1 import ``operation_tools`` from
here; this module keeps them working for one minor release, with a ``DeprecationWarning``
that names the new home (VERSIONING.md).
"""

from __future__ import annotations

import warnings

from toolplug.sources.openapi import operation_tools

__all__ = ["operation_tools"]

warnings.warn(
    "toolplug.openapi moved to toolplug.sources.openapi; import operation_tools from there",
    DeprecationWarning,
    stacklevel=2,
)
