"""A fourth source of tools, written in this file alone: ``load(sources=[...])``.

Its tools come from a dict of Python functions; it brings a capability, a secret the
registry redacts, a file the command line's cache watches, a line for ``doctor``, and a
``close`` that ``Registry.close`` calls. Nothing in toolplug knows it: it is registered,
offered, exported, described to code mode and served over MCP like any installed tool.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import toolplug
from toolplug import (
    Annotations,
    Capability,
    Check,
    DetectContext,
    RegisteredTool,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    ToolSource,
)
from toolplug.serve import build_server

TOKEN = "fn-token-5bd0c1e7"  # the secret the source holds


class FunctionSource(ToolSource):
    """Each function of a dict is a tool: its docstring the description, its ``str``
    parameters the schema; every tool needs the capability ``functions_ready``."""

    name = "functions"
    version = "1.2"
    title = "Functions"

    def __init__(self, functions: Mapping[str, Callable[..., str]], *, ready: bool) -> None:
        self.functions = dict(functions)
        self.ready = ready
        self.closed = 0

    def tools(self) -> Sequence[type[Tool]]:
        return [self._tool(name, fn) for name, fn in sorted(self.functions.items())]

    def _tool(self, name: str, fn: Callable[..., str]) -> type[Tool]:
        parameters = list(inspect.signature(fn).parameters)
        metadata = ToolMetadata(
            name=name,
            description=inspect.getdoc(fn) or name,
            category="utility",
            parameters={
                "type": "object",
                "properties": {p: {"type": "string", "description": p} for p in parameters},
                "required": parameters,
                "additionalProperties": False,
            },
            annotations=Annotations(read_only=True, idempotent=True, open_world=False),
            requires_capabilities=("functions_ready",),
        )

        def run(self: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            return ToolResult.success(fn(**arguments))

        return type(f"Fn_{name}", (Tool,), {"metadata": metadata, "run": run})

    def capabilities(self) -> Sequence[Capability]:
        def ready(_ctx: DetectContext) -> str | None:
            return None if self.ready else "the functions are not ready"

        return [Capability(name="functions_ready", description="The functions can run.",
                           detectors=(Check(ready),), setup="Make them ready.")]

    def secrets(self) -> Sequence[str]:
        return [TOKEN]

    def files(self) -> Sequence[str]:
        return ["/nonexistent/functions.json"]

    def report(self) -> Sequence[str]:
        return [f"  {len(self.functions)} function(s)"]

    def close(self) -> None:
        self.closed += 1


def shout(text: str) -> str:
    """Repeat the text in capitals."""
    return text.upper()


def leak(text: str) -> str:
    """Say the text beside the source's token."""
    return f"{text} with {TOKEN}"


def functions(*, ready: bool = True) -> FunctionSource:
    return FunctionSource({"shout": shout, "leak": leak}, ready=ready)


def test_a_source_registers_its_tools_and_the_registry_calls_them() -> None:
    source = functions()
    registry = toolplug.load({}, sources=[source])
    try:
        entry = registry.get("shout")
        where = (entry.plugin, entry.distribution, entry.version)
        assert where == ("functions", "functions", "1.2")
        assert registry.sources == (source,)
        assert registry.availability("shout").available
        result = registry.call("shout", {"text": "hi"})
        assert result.ok
        assert result.output == "HI"
        leaked = registry.call("leak", {"text": "hi"})
        assert leaked.output == "hi with ***"  # the source's secret, redacted
        assert "/nonexistent/functions.json" in registry.files_read
        names = [s["function"]["name"] for s in toolplug.export_tools(registry, "openai")]
        assert {"shout", "leak"} <= set(names)
    finally:
        registry.close()
    registry.close()  # twice: the source is closed once
    assert source.closed == 1


def test_the_capability_of_a_source_gates_its_tools() -> None:
    registry = toolplug.load({}, sources=[functions(ready=False)])
    availability = registry.availability("shout")
    assert not availability.available
    assert "the functions are not ready" in " ".join(availability.reasons)
    assert "shout" not in registry.select().names
    assert not registry.call("shout", {"text": "hi"}).ok


def test_code_mode_gathered_last_describes_the_source_tools() -> None:
    registry = toolplug.load({"code": {"enabled": True}}, sources=[functions()])
    guide = registry.get("run_code").metadata.parameters["properties"]["code"]["description"]
    assert "async def shout(" in guide
    assert "Repeat the text in capitals." in guide


def test_a_source_tool_is_served_over_mcp() -> None:
    registry = toolplug.load({}, sources=[functions()])

    async def session() -> tuple[list[str], str]:
        with anyio.fail_after(60):
            async with Client(build_server(registry)) as client:
                listed = [t.name for t in (await client.list_tools()).tools]
                answer = await client.call_tool("leak", {"text": "hi"})
                return listed, answer.content[0].text  # type: ignore[union-attr]

    try:
        listed, text = anyio.run(session)
    finally:
        registry.close()
    assert {"shout", "leak"} <= set(listed)
    assert text == "hi with ***"


def test_the_built_registry_has_no_writer() -> None:
    registry = toolplug.load({}, sources=[functions()])
    with pytest.raises(TypeError):
        registry.tools["shout"] = registry.tools["leak"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        registry.config = registry.config  # type: ignore[misc]
    with pytest.raises(AttributeError):
        registry.files_read.append("x")  # type: ignore[attr-defined]
    assert not hasattr(registry, "on_close")


def test_a_source_completes_only_its_own_tools() -> None:
    class Grabby(FunctionSource):
        name = "grabby"

        def complete(self, registry: toolplug.Registry) -> Mapping[str, RegisteredTool]:
            return {"static_links": registry.tools["shout"]}

    first = functions()
    with pytest.raises(toolplug.PluginError, match="not one of its registered tools"):
        toolplug.load({}, sources=[first, Grabby({}, ready=True)])
    assert first.closed == 1  # no registry was built to close it: load() did


def test_a_load_that_fails_in_strict_mode_closes_the_sources() -> None:
    source = functions()
    with pytest.raises(toolplug.PluginError, match=r"\[tools\.nope\]"):
        toolplug.load({"tools": {"nope": {}}}, sources=[source], strict=True)
    assert source.closed == 1


def test_two_sources_of_one_name_are_refused() -> None:
    with pytest.raises(toolplug.UsageError, match="two sources are named 'functions'"):
        toolplug.load({}, sources=[functions(), functions()])
    with pytest.raises(toolplug.UsageError, match=r"expected a toolplug\.ToolSource"):
        toolplug.load({}, sources=[object()])  # type: ignore[list-item]


def test_the_servers_own_secrets_are_known_when_the_registry_is_built(
    tmp_path: Path,
) -> None:
    """``[serve.auth]`` tokens are redacted from the start: ``serve`` adds nothing later."""
    (tmp_path / "introspect.txt").write_text("introspect-secret-77c1\n", encoding="utf-8")
    config = tmp_path / "toolplug.toml"
    config.write_text(
        '[serve.auth]\nissuer = "https://id.example"\naudience = "https://mcp.example/mcp"\n'
        'client_secret = { file = "introspect.txt" }\n'
        'tokens.dev = { token = { env = "DEV_TOKEN" }, scopes = [] }\n',
        encoding="utf-8",
    )
    registry = toolplug.load(
        config, env={"DEV_TOKEN": "dev-token-3f9e"}, sources=[functions()]
    )
    assert registry.redact("dev-token-3f9e and introspect-secret-77c1") == "*** and ***"
    assert registry.call("leak", {"text": "dev-token-3f9e"}).output == "*** with ***"
