"""MCP servers mounted as toolplug tools: ``[mcp_servers.NAME]`` in the configuration.

``toolplug.load()`` mounts what the configuration names (docs/mcp.md, Mounting MCP
servers). The MCP SDK (the ``mcp`` extra) is imported only when a server is asked for its
tools or called, never to list tools whose list is cached.
"""

from toolplug.sources.mcp._catalog import LOCK_FILE
from toolplug.sources.mcp._doctor import lock, report_drift
from toolplug.sources.mcp._mount import Mounted, MountedServer, mount, mounted, report
from toolplug.sources.mcp._signin import SignInError, browser, sign_in, sign_out

__all__ = [
    "LOCK_FILE",
    "Mounted",
    "MountedServer",
    "SignInError",
    "browser",
    "lock",
    "mount",
    "mounted",
    "report",
    "report_drift",
    "sign_in",
    "sign_out",
]
