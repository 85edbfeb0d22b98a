"""A program in code mode gets no configured secret: it has no environment or settings of
its own, and what its tool calls return is redacted before it sees it, so turning the
value around (a transformation exact-match redaction could not see) turns ``***`` around."""

from __future__ import annotations

from typing import Any

import toolplug
from toolplug import Annotations, ConfigField, Tool, ToolContext, ToolMetadata, ToolResult, hookimpl

SECRET = "sk-code-91c4e7a2f0"


class Credentials(Tool):
    metadata = ToolMetadata(
        name="credentials",
        description="Return the headers a request would carry.",
        category="utility",
        config_fields=(
            ConfigField(name="token", type="string", description="API token", secret=True),
        ),
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        token = context.config["token"]
        return ToolResult.success("headers ready", {"echo": token, "auth": f"Bearer {token}"})


class _Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Credentials)


def test_a_program_never_holds_a_configured_secret() -> None:
    registry = toolplug.load(
        {"code": {"enabled": True}, "tools": {"credentials": {"token": {"env": "CODE_TOKEN"}}}},
        env={"TOOLPLUG_PLUGINS": "", "CODE_TOKEN": SECRET},
        plugins=[("credentials", _Plugin())],
    )
    try:
        code = (
            "d = await credentials()\n"
            "print(d['auth'])\n"
            "d['echo'][::-1] + '|' + d['echo']\n"
        )
        result = registry.call("run_code", {"code": code})
    finally:
        registry.close()
    assert result.error is None, result.for_model()
    assert result.data == {"printed": "Bearer ***\n", "value": "***|***", "calls": 1}
    shown = result.for_model() + repr(result.data)
    assert SECRET not in shown
    assert SECRET[::-1] not in shown
