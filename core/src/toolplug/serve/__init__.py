"""The MCP server behind ``toolplug serve`` (the ``mcp`` extra)."""

from toolplug.serve._server import INSTALL_LINE, build_server, parse_address, serve

__all__ = ["INSTALL_LINE", "build_server", "parse_address", "serve"]
