"""The optional-tools prompt section: format, order and byte-for-byte determinism."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import toolplug
from toolplug import Guidelines, ToolMetadata
from toolplug.contract._metadata import BUILTIN_CATEGORIES
from toolplug.render._prompt import render_optional_tools


def tool(name: str, category: str, **extra: Any) -> ToolMetadata:
    return ToolMetadata(name=name, description=f"{name} does things.", category=category, **extra)


def test_rendering_format() -> None:
    tools = [
        tool("web_search", "research", usage_hint="Use for current facts.",
             guidelines=Guidelines(do=("news",), do_not=("known facts",),
                                   common_mistakes=("vague queries",))),
        tool("link_validator", "reference", usage_hint="Line one\n- line two"),
        tool("aardvark", "research"),
    ]
    text = render_optional_tools(tools)
    assert text == "\n".join([
        "# Optional Tools",
        "",
        "The tools below are available in this session but never required. Call one when it "
        "clearly improves your answer, and follow its guidance; otherwise answer without it.",
        "",
        "## Research Tools",
        "",
        "### aardvark",
        "",
        "aardvark does things.",
        "",
        "### web_search",
        "",
        "web_search does things.",
        "",
        "**When to use:** Use for current facts.",
        "",
        "**DO use when:**",
        "",
        "- news",
        "",
        "**DO NOT use when:**",
        "",
        "- known facts",
        "",
        "**Common mistakes:**",
        "",
        "- vague queries",
        "",
        "## Reference Tools",
        "",
        "### link_validator",
        "",
        "link_validator does things.",
        "",
        "**When to use:**",
        "",
        "Line one",
        "- line two",
        "",
    ])
    bare = render_optional_tools(tools, include_guidelines=False)
    assert "DO use when" not in bare
    assert "**When to use:** Use for current facts." in bare


def test_declared_categories_follow_the_builtin_ones_by_name() -> None:
    text = render_optional_tools(
        [tool("x", "chat"), tool("y", "utility"), tool("z", "art"), tool("w", "research")]
    )
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## Research Tools", "## Utility Tools", "## Art Tools", "## Chat Tools"]


def test_empty_section_says_so() -> None:
    assert "No optional tools are available" in render_optional_tools([])


names = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
categories = st.sampled_from([c.name for c in BUILTIN_CATEGORIES])


@given(st.lists(st.tuples(names, categories), unique_by=lambda t: t[0], max_size=12), st.randoms())
def test_output_does_not_depend_on_input_order(pairs: list[tuple[str, str]], rnd: Any) -> None:
    tools = [tool(n, c) for n, c in pairs]
    shuffled = list(tools)
    rnd.shuffle(shuffled)
    assert render_optional_tools(tools) == render_optional_tools(shuffled)


def test_only_available_optional_tools_appear() -> None:
    links = {"links": [{"name": "gh", "url": "https://github.com/x"}]}
    without = toolplug.optional_tools_section(toolplug.load({}))
    assert "### static_links" not in without
    with_links = toolplug.optional_tools_section(toolplug.load({"tools": {"static_links": links}}))
    assert "### static_links" in with_links
    assert "Inventing profile URLs" in with_links


def test_byte_identical_across_processes(cli: Callable[..., Any]) -> None:
    Path("toolplug.toml").write_text(
        '[tools.static_links]\nlinks = [{ name = "gh", url = "https://github.com/x" }]\n',
        encoding="utf-8",
    )
    outputs = set()
    for seed in ("1", "2", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "TOOLPLUG_NO_CACHE": "1"}
        result = cli("prompt", env=env, cwd=Path.cwd())
        assert result.code == 0, result.err
        outputs.add(result.out)
    assert len(outputs) == 1
    assert "### static_links" in outputs.pop()


def test_guidance_that_names_an_unavailable_tool_is_left_out() -> None:
    from toolplug import Tool, ToolResult, hookimpl

    def make(name: str, **extra: Any) -> type[Tool]:
        class Made(Tool):
            metadata = tool(name, "utility", usage_hint="Use it.", **extra)

            def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
                return ToolResult.success("ok")

        return Made

    unit = make(
        "unit_convert",
        guidelines=Guidelines(
            do=("Units of measure.", "Money: use currency_convert instead."),
            do_not=("Exchange rates: call currency_convert.",),
            common_mistakes=("Naming currency_converter units.",),  # another word: kept
        ),
    )
    currency = make("currency_convert", requires_capabilities=("fx_key",))

    class Plugin:
        @staticmethod
        @hookimpl
        def register_tools(register: Callable[[Any], None]) -> None:
            register(unit)
            register(currency)

    def section(**grant: Any) -> str:
        registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("p", Plugin)], **grant)
        return toolplug.optional_tools_section(registry)

    without = section()
    assert "### currency_convert" not in without
    assert "use currency_convert" not in without
    assert "- Units of measure." in without
    assert "**DO NOT use when:**" not in without  # its only item named the absent tool
    assert "- Naming currency_converter units." in without
    with_fx = section(grant=["fx_key"])
    assert "- Money: use currency_convert instead." in with_fx
    assert "- Exchange rates: call currency_convert." in with_fx
    # Available, but outside the toolset the model is given: left out the same way.
    registry = toolplug.load(
        {"toolsets": {"units": {"include": ["unit_convert"]}}},
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("p", Plugin)], grant=["fx_key"],
    )
    units = toolplug.optional_tools_section(registry, toolset="units")
    assert "### unit_convert" in units
    assert "use currency_convert" not in units
    assert "call currency_convert" not in units
