"""The registry's plugins (runtime/_loaded.py): what every plugin registers is checked
alike, whoever offered it; these are plugins registered from code, in process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import toolplug
from toolplug import Category, Tool, ToolMetadata, ToolResult, hookimpl


class Echo(Tool):
    metadata = ToolMetadata(
        name="echo",
        description="Repeat the text.",
        category="chat",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )

    def run(self, arguments: dict[str, Any], context: toolplug.ToolContext) -> ToolResult:
        return ToolResult.success(str(arguments.get("text", "")))


class DeclaresChat:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(Category(name="chat", description="Talk to people"))
        register(Echo)


class UsesUnknownCategory:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        class Orphan(Echo):
            metadata = Echo.metadata.model_copy(update={"name": "orphan", "category": "nowhere"})

        register(Orphan)


class NoRun:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        class Lazy(Tool):
            metadata = ToolMetadata(name="lazy", description="Does nothing.", category="utility")

        register(Lazy)


class BadExample:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        class Picky(Echo):
            metadata = Echo.metadata.model_copy(
                update={
                    "name": "picky",
                    "category": "utility",
                    "examples": (toolplug.Example(description="wrong type", input={"text": 5}),),
                }
            )

        register(Picky)


@pytest.fixture
def no_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Load no installed distribution, only what the test registers."""
    monkeypatch.setenv("TOOLPLUG_PLUGINS", "")


@pytest.mark.usefixtures("no_installed")
def test_declared_category_and_per_item_problems() -> None:
    registry = toolplug.load(
        plugins=[
            ("chat", DeclaresChat()),
            ("orphan", UsesUnknownCategory()),
            ("norun", NoRun()),
            ("badexample", BadExample()),
        ]
    )
    assert list(registry.tools) == ["echo"]
    assert [c.name for c in registry.categories] == [
        "research",
        "reference",
        "enhance",
        "publish",
        "utility",
        "chat",
    ]
    kinds = {(p.plugin, p.kind): p.message for p in registry.problems}
    assert "unknown category 'nowhere'" in kinds[("orphan", "metadata")]
    assert "does not implement run()" in kinds[("norun", "metadata")]
    assert "example 0 ('wrong type')" in kinds[("badexample", "metadata")]
    assert "5 is not of type 'string'" in kinds[("badexample", "metadata")]


@pytest.mark.usefixtures("no_installed")
def test_strict_load_raises_with_every_problem() -> None:
    with pytest.raises(toolplug.PluginError, match=r"(?s)1 problem\(s\).*unknown category"):
        toolplug.load(plugins=[("orphan", UsesUnknownCategory())], strict=True)


@pytest.mark.usefixtures("no_installed")
def test_provides_registers_its_items_in_order_under_the_name_it_is_bound_to() -> None:
    chat = Category(name="chat", description="Talk to people")
    network = toolplug.Capability(name="pigeons", description="Birds are at hand.")

    class Declared:
        register_tools = staticmethod(toolplug.provides(chat, Echo))
        register_capabilities = staticmethod(toolplug.provides(network))

    registry = toolplug.load(plugins=[("declared", Declared())])
    assert list(registry.tools) == ["echo"]
    assert registry.tools["echo"].plugin == "declared"
    assert "pigeons" in registry.capabilities
    assert registry.problems == []


def test_strict_load_raises_for_another_contract() -> None:
    import types

    plugin = types.SimpleNamespace(TOOLPLUG_CONTRACT="9.0")
    with pytest.raises(toolplug.PluginError, match=r"\[contract\] old: written for toolplug"):
        toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("old", plugin)], strict=True)
    assert toolplug.CONTRACT_VERSION == "1.2"
