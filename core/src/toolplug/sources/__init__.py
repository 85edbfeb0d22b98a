"""Where tools come from, each on ``toolplug.ToolSource``: mounted MCP servers (``mcp``),
OpenAPI descriptions (``openapi``), code mode (``_code``), and ``load()`` (``_load``),
which gathers them with the entry-point plugins into a registry.

Imports ``toolplug.engine`` (``load()`` only), ``toolplug.runtime`` and the rooms below.
"""
