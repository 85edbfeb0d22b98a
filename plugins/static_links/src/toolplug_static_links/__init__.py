"""toolplug-static-links: the configured social and community links, for an agent to cite.

The links live in configuration, so the tool is offered only when some are configured::

    [tools.static_links]
    links = [
      { name = "github", url = "https://github.com/example", description = "Source code" },
    ]
"""

from __future__ import annotations

from typing import Any

from toolplug import (
    Annotations,
    Capability,
    Citation,
    ConfigField,
    ConfigKey,
    ErrorSpec,
    Example,
    Guidelines,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
    provides,
)

__all__ = [
    "CAPABILITY",
    "TOOLPLUG_CONTRACT",
    "StaticLinksTool",
    "register_capabilities",
    "register_tools",
]

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

_LINK_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "url": {"type": "string", "pattern": "^https?://"},
            "description": {"type": "string"},
        },
        "required": ["name", "url"],
        "additionalProperties": False,
    },
}

CAPABILITY = Capability(
    name="static_links",
    description="Some social or community links are configured.",
    detectors=(ConfigKey("tools.static_links.links"),),
    setup=(
        "Add the links to the configuration (toolplug.toml):\n"
        "[tools.static_links]\n"
        'links = [{ name = "github", url = "https://github.com/you", '
        'description = "Source code" }]'
    ),
)


class StaticLinksTool(Tool):
    """Returns the links configured under ``[tools.static_links] links``."""

    metadata = ToolMetadata(
        name="static_links",
        title="Configured links",
        description="List or look up the author's configured social and community links.",
        category="reference",
        optionality="optional",
        usage_hint=(
            "Use when the content should point readers to the author's own channels: "
            "a sign-off, a 'find us on' section, or a request for a specific profile link."
        ),
        guidelines=Guidelines(
            do=(
                "The content ends with a call to follow, contact or join the author",
                "The user asks for the link to one of their own profiles or communities",
                "A newsletter or post needs a consistent footer of links",
            ),
            do_not=(
                "The link you need belongs to someone else (search or validate it instead)",
                "The content is not meant to promote the author's channels",
            ),
            common_mistakes=(
                "Inventing profile URLs instead of listing the configured ones",
                "Calling get with a name that is not configured; call list first",
            ),
        ),
        requires_capabilities=("static_links",),
        produces=("links", "citations"),
        parameters={
            "type": "object",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": ["list", "get"],
                    "description": "list returns every link; get returns the one named",
                    "default": "list",
                },
                "name": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The link's configured name (for get), such as 'github'",
                },
            },
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {"links": _LINK_SCHEMA},
            "required": ["links"],
        },
        errors=(
            ErrorSpec(type="ValidationError", when="get is called without a name"),
            ErrorSpec(
                type="NotFoundError",
                when="no configured link has that name; the message lists the names",
            ),
        ),
        examples=(
            Example(description="Every configured link", input={"action": "list"}),
            Example(
                description="The GitHub profile link", input={"action": "get", "name": "github"}
            ),
        ),
        config_fields=(
            ConfigField(
                name="links",
                type="array",
                description="The links: a list of { name, url, description }",
                json_schema=_LINK_SCHEMA,
            ),
        ),
        setup_instructions="Configure the links under [tools.static_links] links = [...].",
        # The links the author configured: trusted, public, and nothing leaves.
        trust=Trust(output="trusted"),
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        timeout_seconds=5,
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """List the links, or return the one named."""
        links: list[dict[str, str]] = [
            {"name": link["name"], "url": link["url"], "description": link.get("description", "")}
            for link in context.config.get("links", [])
        ]
        if arguments.get("action", "list") == "get":
            wanted = arguments.get("name")
            if not wanted:
                return ToolResult.failure(
                    "ValidationError", "name is required for action 'get' (or use action 'list')"
                )
            chosen = [link for link in links if link["name"].lower() == str(wanted).lower()]
            if not chosen:
                names = ", ".join(sorted(link["name"] for link in links)) or "none"
                return ToolResult.failure(
                    "NotFoundError", f"no link named {wanted!r}; configured names: {names}"
                )
            links = chosen
        lines = [
            f"- {link['name']}: {link['url']}"
            + (f" ({link['description']})" if link["description"] else "")
            for link in links
        ]
        return ToolResult.success(
            "\n".join(lines) if lines else "No links are configured.",
            {"links": links},
            citations=[Citation(title=link["name"], url=link["url"]) for link in links],
        )


register_tools = provides(StaticLinksTool)
register_capabilities = provides(CAPABILITY)
