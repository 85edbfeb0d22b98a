"""JSON Schema rewriting shared by the provider exports and the call path.

The exports rewrite a tool's ``parameters`` for what a provider accepts; the call path undoes
what a rewrite asks of the model (``drop_strict_nulls``). Both sides live here, below
``render`` and ``calls``, so that each direction is written once. Pure functions of JSON
data: no toolplug types, no provider SDK.
"""

from toolplug.schema._gemini import gemini_schema
from toolplug.schema._strict import drop_strict_nulls, strict_problems, strict_schema

__all__ = ["drop_strict_nulls", "gemini_schema", "strict_problems", "strict_schema"]
