"""The ``[mcp_servers.NAME]`` tables: MCP servers whose tools toolplug mounts and governs.

Parsed once, with the rest of the configuration, into typed models; ``toolplug.sources.mcp``
starts the servers and turns their tools into toolplug tools. Values under ``env`` and
``headers`` may come from ``{ env = "VAR" }`` or ``{ file = "PATH" }``; they are resolved
when a server is mounted, against the environment the registry was loaded with.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, model_validator

from toolplug.config._gathered import RULES_TEXT, GatheredToolSettings
from toolplug.config._oauth import OAuthSettings
from toolplug.config._settings import Value, parse_named_tables
from toolplug.contract._settings import Scope, StrictTable, TrustOverlay
from toolplug.trust._scan import RuleId

__all__ = ["SERVER_NAME", "ServerSettings", "ServerTrust", "parse_mcp_servers"]

SERVER_NAME: Final = r"^[a-z][a-z0-9_]{0,31}$"


class ServerTrust(StrictTable):
    """``[mcp_servers.NAME] trust = { output = "trusted", private = false }``: labels for
    every tool of the server (sinks name one tool's parameters: its ``tools.TOOL`` table)."""

    output: Literal["trusted", "untrusted"] | None = Field(
        default=None, description='"trusted" or "untrusted"'
    )
    private: bool | None = Field(default=None, description="a boolean")

    def overlay(self) -> TrustOverlay:
        """The same labels as a tool's ``trust`` table."""
        return TrustOverlay(output=self.output, private=self.private)


class ServerSettings(StrictTable):
    """``[mcp_servers.NAME]``: one MCP server, over stdio (``command``) or HTTP (``url``)."""

    name: str = Field(pattern=SERVER_NAME, description="a lower-case name, a letter first")
    command: str | None = Field(default=None, min_length=1, description="the command to start")
    args: list[str] = Field(default_factory=list, description="a list of strings")
    env: dict[str, Value] = Field(
        default_factory=dict,
        description='a table of variables: "text", { env = "VAR" } or { file = "PATH" }',
    )
    cwd: str | None = Field(default=None, min_length=1, description="a directory path")
    url: str | None = Field(
        default=None, pattern=r"^https?://", description="the server's streamable HTTP URL"
    )
    headers: dict[str, Value] = Field(
        default_factory=dict,
        description='a table of headers: "text", { env = "VAR" } or { file = "PATH" }',
    )
    auth: Literal["oauth"] | None = Field(
        default=None,
        description='"oauth": sign in to the server with OAuth 2.1 (its table: oauth)',
    )
    oauth: OAuthSettings | None = Field(
        default=None,
        description="a table: grant, client_id, client_secret, scopes, client_metadata_url, "
        'redirect_port, on_behalf_of (with auth = "oauth")',
    )
    enabled: bool = Field(default=True, description="a boolean")
    category: str = Field(
        default="utility", pattern=r"^[a-z][a-z0-9_]{0,31}$", description="a category name"
    )
    include: list[str] = Field(
        default_factory=list, description="a list of the server's tool names or globs"
    )
    exclude: list[str] = Field(
        default_factory=list, description="a list of the server's tool names or globs"
    )
    include_resources: list[str] = Field(
        default_factory=list,
        description="a list of the server's resource URIs (or URI templates) or globs",
    )
    exclude_resources: list[str] = Field(
        default_factory=list,
        description="a list of the server's resource URIs (or URI templates) or globs",
    )
    prefix: str | None = Field(
        default=None,
        pattern=r"^([a-z][a-z0-9_]{0,31})?$",
        description='lower-case letters, digits and "_", a letter first, or "" for none',
    )
    approval: Literal["auto", "always", "never"] = Field(
        default="auto",
        description='one of "auto", "always", "never": the default of every tool of the server',
    )
    trust: ServerTrust | None = Field(
        default=None,
        description='a table: output = "trusted" or "untrusted", private = true or false, for '
        "every tool of the server (sinks go in [mcp_servers.NAME.tools.TOOL] trust)",
    )
    scopes: list[Scope] | None = Field(
        default=None,
        description="a list of OAuth scopes: the default of every tool of the server",
    )
    pin: Literal["first-use"] | bool = Field(
        default="first-use",
        description='"first-use" (record a definition when first seen, refuse a change), '
        "true (only what toolplug lock recorded) or false (no pinning)",
    )
    trust_annotations: bool = Field(
        default=False,
        description="a boolean: true lets the server's own annotations (readOnlyHint ...) "
        "lower approvals and its results' trust annotations raise trust",
    )
    accept_findings: list[RuleId] = Field(default_factory=list, description=RULES_TEXT)
    sampling: bool = Field(
        default=False,
        description="a boolean: true lets the server ask the host's model for completions "
        "(sampling) during a call of its tools",
    )
    list_ttl_seconds: float = Field(
        default=3600.0, ge=0, description="a number of seconds a tool list is trusted"
    )
    startup_timeout_seconds: float = Field(
        default=10.0, gt=0, description="a positive number of seconds"
    )
    tools: dict[str, GatheredToolSettings] = Field(
        default_factory=dict, description="a table of per-tool tables"
    )

    @model_validator(mode="after")
    def _one_transport(self) -> ServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("set either command (stdio) or url (streamable HTTP)")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd belong to a command, not to a url")
        if self.command is not None and self.headers:
            raise ValueError("headers belong to a url, not to a command")
        if self.auth is not None and self.url is None:
            raise ValueError('auth = "oauth" belongs to a url, not to a command')
        if self.oauth is not None and self.auth is None:
            raise ValueError('an oauth table needs auth = "oauth"')
        problem = self.oauth.problem() if self.oauth is not None else None
        if problem is not None:
            raise ValueError(f"oauth: {problem}")
        if self.auth is not None and any(k.lower() == "authorization" for k in self.headers):
            raise ValueError(
                'auth = "oauth" sends its own Authorization header: remove the one in headers'
            )
        return self

    @property
    def oauth_settings(self) -> OAuthSettings | None:
        """The OAuth client's settings (defaults when ``auth = "oauth"`` has no table)."""
        if self.auth is None:
            return None
        return self.oauth or OAuthSettings()

    @property
    def name_prefix(self) -> str:
        """What the server's tool names are prefixed with: ``prefix``, or ``NAME_``."""
        return f"{self.name}_" if self.prefix is None else self.prefix

    @property
    def pins(self) -> bool:
        """Whether a definition that differs from the recorded one is refused."""
        return self.pin is not False

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "stdio" if self.command is not None else "http"

    def settings_for(self, tool: str) -> GatheredToolSettings | None:
        """The ``[mcp_servers.NAME.tools.TOOL]`` table of a remote tool, if any."""
        return self.tools.get(tool)

    def accepts(self, tool: str, rule: str) -> bool:
        """Whether the configuration accepts findings of ``rule`` in a remote tool's
        definition (``accept_findings`` of the server, or of the tool)."""
        own = self.tools.get(tool)
        return rule in self.accept_findings or (own is not None and rule in own.accept_findings)


def parse_mcp_servers(
    table: Any, *, file: str, prefix: str = ""
) -> dict[str, ServerSettings]:
    """The ``[mcp_servers]`` table, checked: one ``ServerSettings`` per server.

    Raises:
        ConfigError: naming the file, the key and what is expected.
    """
    return parse_named_tables(
        table, ServerSettings, file=file, key=prefix + "mcp_servers",
        expected="[mcp_servers.NAME] tables",
        entry="command = ... (stdio) or url = ... (streamable HTTP)",
        what="server name", longest=32,
        rule=lambda problems: problems[0] if all(not p["loc"] for p in problems) else None,
    )
