"""Where tools come from, each on ``toolplug.ToolSource``: the installed entry-point
plugins (``_plugins``), mounted MCP servers (``mcp``), OpenAPI descriptions (``openapi``),
code mode (``_code``), and ``load()`` (``_load``), which gathers them into a registry.

Imports ``toolplug.engine`` (``load()`` only), ``toolplug.runtime`` and the rooms below.
"""
