"""JSON Schema rewriting shared by the provider exports and the call path.

The exports rewrite a tool's ``parameters`` for what a provider accepts; the call path undoes
what a rewrite asks of the model (``restore_strict_arguments``). Both sides live here, below
``render`` and ``engine``, so that each direction is written once. Every rewrite can say what
it did to each keyword (``strict_losses``, ``gemini_losses``). Pure functions of JSON data:
no toolplug types, no provider SDK.
"""

from toolplug.schema._gemini import gemini_losses, gemini_schema
from toolplug.schema._losses import SchemaLoss
from toolplug.schema._strict import (
    JSON_TEXT,
    drop_strict_nulls,
    restore_strict_arguments,
    strict_arguments,
    strict_losses,
    strict_schema,
)

__all__ = [
    "JSON_TEXT",
    "SchemaLoss",
    "drop_strict_nulls",
    "gemini_losses",
    "gemini_schema",
    "restore_strict_arguments",
    "strict_arguments",
    "strict_losses",
    "strict_schema",
]
