"""The optional-tools section as an MCP prompt: ``prompts/list`` and ``prompts/get``.

One prompt, ``optional_tools``, with the arguments ``toolset``, ``task`` and ``max_tools``:
the same section ``instructions`` carry and every renderer writes
(``optional_tools_section``, over ``Registry.select``). Arguments the client leaves out
take the server's own (``serve --toolset/--task/--max-tools``). A bad argument (a toolset
that is not configured or not served, a ``max_tools`` that is not a positive integer, an
argument the prompt does not take) is the client's error: JSON-RPC -32602 naming it.

The plugins' prompts (``register_prompts``) are listed after it and answered by
``serve/_published.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, NoReturn

from mcp import types
from mcp.shared.exceptions import MCPError

from toolplug.contract._errors import UsageError
from toolplug.render._prompt import optional_tools_section
from toolplug.serve._published import Access, listed_prompts
from toolplug.serve._published import get_prompt as plugin_prompt

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from toolplug.config._config import Toolset
    from toolplug.runtime._registry import Registry

__all__ = ["PROMPT", "prompt_handlers"]

PROMPT: Final = "optional_tools"
"""The prompt's name."""

_ARGUMENTS: Final = (
    ("toolset", "Describe only this configured toolset's tools."),
    ("task", "What the session is for: the tools most relevant to it come first."),
    ("max_tools", "Describe at most this many tools (a positive integer)."),
)


def prompt_handlers(
    registry: Registry,
    *,
    toolset: str | Toolset | None,
    task: str | None,
    max_tools: int | None,
    access: Access,
) -> dict[str, Any]:
    """``on_list_prompts`` and ``on_get_prompt`` for ``Server``: the optional-tools prompt
    of the tools served (``toolset``), with the server's ``task`` and ``max_tools`` as the
    defaults of its arguments."""
    prompt = types.Prompt(
        name=PROMPT,
        title="Optional tools",
        description=(
            "The system-prompt section that tells the model which optional tools it has, "
            "when to use each and when not to."
        ),
        arguments=[
            types.PromptArgument(name=name, description=text, required=False)
            for name, text in _ARGUMENTS
        ],
    )

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[prompt.model_copy(deep=True), *listed_prompts(registry, ctx, access)]
        )

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT:  # a plugin's, or unknown (-32602 naming it)
            return await plugin_prompt(registry, ctx, params, own=PROMPT, access=access)
        options = _options(registry, params.arguments or {}, toolset, task, max_tools)
        section = optional_tools_section(registry, **options)
        return types.GetPromptResult(
            description=prompt.description,
            messages=[
                types.PromptMessage(
                    role="user", content=types.TextContent(type="text", text=section)
                )
            ],
        )

    return {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt}


def _options(
    registry: Registry,
    arguments: Mapping[str, str],
    toolset: str | Toolset | None,
    task: str | None,
    max_tools: int | None,
) -> dict[str, Any]:
    """``optional_tools_section``'s options for these prompt arguments."""
    known = {name for name, _ in _ARGUMENTS}
    extra = sorted(set(arguments) - known)
    if extra:
        _invalid(
            f"the {PROMPT} prompt takes no argument {extra[0]!r}; its arguments are "
            "toolset, task and max_tools"
        )
    asked = (arguments.get("toolset") or "").strip()
    if asked:
        served = toolset if isinstance(toolset, str) else getattr(toolset, "name", None)
        if toolset is not None and asked != served:
            _invalid(
                f"toolset {asked!r} is not served here: this server offers toolset "
                f"{served!r}; leave toolset out, or name {served!r}"
            )
        try:
            registry.toolset(asked)
        except UsageError as exc:
            _invalid(str(exc))
        toolset = asked
    if (arguments.get("task") or "").strip():
        task = arguments["task"].strip()
    raw = (arguments.get("max_tools") or "").strip()
    if raw:
        if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
            _invalid(f"max_tools must be a positive integer such as 5; got {raw!r}")
        max_tools = int(raw)
    return {"toolset": toolset, "task": task, "max_tools": max_tools}


def _invalid(message: str) -> NoReturn:
    raise MCPError(types.INVALID_PARAMS, message)
