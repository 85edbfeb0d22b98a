"""Reference docs: docs/tools/ is current, tables render safely, output is deterministic.

When ``test_docs_tools_is_current`` fails, regenerate the pages with::

    uv run python tests/render/test_reference_docs.py
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolplug
from toolplug import (
    Availability,
    Capability,
    Category,
    ConfigField,
    EnvVar,
    ErrorSpec,
    Example,
    Guidelines,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
    hookimpl,
)
from toolplug.render._docs import (
    GENERATED_MARKER,
    escape_cell,
    markdown_table,
    reference_pages,
    render_page,
    schema_type,
    write_reference,
)

WORKSPACE = Path(__file__).resolve().parents[2]
DOCS = WORKSPACE / "docs" / "tools"
REGENERATE = "uv run python tests/render/test_reference_docs.py"


def workspace_distributions() -> list[str]:
    """The distribution names of the workspace's plugins, sorted."""
    names = []
    for pyproject in sorted(WORKSPACE.glob("plugins/*/pyproject.toml")):
        names.append(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"])
    return sorted(names)


def catalog_pages() -> dict[str, str]:
    """The reference of the workspace's plugins, rendered in this process."""
    env = {"TOOLPLUG_PLUGINS": ",".join(workspace_distributions())}
    registry = toolplug.load({}, env=env)
    try:
        return reference_pages(registry)
    finally:
        registry.close()


# -- docs/tools/ -------------------------------------------------------------------------


def test_docs_tools_is_current() -> None:
    expected = catalog_pages()
    found = {p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}
    missing = sorted(set(expected) - set(found))
    extra = sorted(n for n in set(found) - set(expected) if GENERATED_MARKER in found[n])
    changed = sorted(n for n in set(expected) & set(found) if expected[n] != found[n])
    problems = (
        [f"missing: {n}" for n in missing]
        + [f"no longer generated: {n}" for n in extra]
        + [f"out of date: {n}" for n in changed]
    )
    assert not problems, (
        "docs/tools/ does not match the installed plugins' metadata ("
        + "; ".join(problems)
        + f"). Regenerate it with: {REGENERATE}"
    )


def test_every_catalog_tool_has_a_page() -> None:
    pages = catalog_pages()
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ",".join(workspace_distributions())})
    assert set(pages) == {"index.md"} | {f"{name}.md" for name in registry.tools}
    for name in registry.tools:
        assert f"[{name}]({name}.md)" in pages["index.md"]


def test_pages_do_not_depend_on_environment_or_configuration() -> None:
    selection = {"TOOLPLUG_PLUGINS": ",".join(workspace_distributions())}
    plain = toolplug.load({}, env=selection)
    configured = toolplug.load(
        {
            "offline": True,
            "tools": {
                "static_links": {"links": [{"name": "gh", "url": "https://github.com/x"}]},
                "web_search": {"enabled": False},
            },
        },
        env={**selection, "GITHUB_TOKEN": "ghp_docs_must_not_show_this"},
    )
    assert reference_pages(plain) == reference_pages(configured)
    assert "ghp_docs_must_not_show_this" not in "".join(reference_pages(configured).values())


_HASH_SCRIPT = """
import hashlib, json, sys
import toolplug
from toolplug.render._docs import reference_pages
registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": sys.argv[1]})
pages = reference_pages(registry)
print(hashlib.sha256(json.dumps(pages, sort_keys=False).encode()).hexdigest())
"""


@pytest.mark.slow
def test_byte_identical_across_processes() -> None:
    selection = ",".join(workspace_distributions())
    digests = set()
    for seed in ("0", "1", "12345"):
        done = subprocess.run(
            [sys.executable, "-c", _HASH_SCRIPT, selection],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        digests.add(done.stdout.strip())
    here = hashlib.sha256(json.dumps(catalog_pages(), sort_keys=False).encode()).hexdigest()
    assert digests == {here}


_IMPORTS_SCRIPT = """
import json, sys
import toolplug
from toolplug.render._docs import reference_pages
reference_pages(toolplug.load({}, env={"TOOLPLUG_PLUGINS": sys.argv[1]}))
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_rendering_imports_no_tool_dependencies() -> None:
    heavy = {"httpx", "httpcore", "feedparser", "ddgs", "icalendar", "recurring_ical_events"}
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS_SCRIPT, ",".join(workspace_distributions())],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(heavy & set(json.loads(done.stdout))) == []


# -- a test plugin, registered from code -----------------------------------------------------


class Measure(Tool):
    """A tool whose metadata uses every feature the pages render."""

    metadata = ToolMetadata(
        name="measure",
        title="Measure | things",
        description="Measure things, with a pipe | in the description.",
        category="gauges",
        usage_hint="Use when a number is needed.\nNot for estimates.",
        guidelines=Guidelines(
            do=("The user asks how much",),
            do_not=("A guess is enough",),
            common_mistakes=("Passing units in the value",),
        ),
        requires_capabilities=("ruler",),
        produces=("measurements",),
        parameters={
            "type": "object",
            "properties": {
                "unit": {
                    "type": "string",
                    "enum": ["cm", "in|ch"],
                    "default": "cm",
                    "description": "The unit\nof the result",
                },
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "label": {"type": "string", "description": "What it is"},
                            "size": {"type": ["number", "null"], "minimum": 0},
                        },
                        "required": ["label"],
                    },
                    "minItems": 1,
                    "description": "The things to measure",
                },
                "tags": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Free labels",
                },
            },
            "required": ["items"],
            "additionalProperties": False,
        },
        errors=(
            ErrorSpec(type="NotFoundError", when="no ruler | tape is at hand", retry_possible=True),
        ),
        examples=(
            Example(
                description="One thing",
                input={"items": [{"label": "desk"}]},
                output={"total": 120},
            ),
        ),
        config_fields=(
            ConfigField(
                name="token",
                type="string",
                description="Ruler API token",
                env_var="RULER_TOKEN",
                secret=True,
            ),
            ConfigField(name="precision", type="integer", description="Digits", default=2),
        ),
        required_packages=("ruler-sdk",),
        setup_instructions="Buy a ruler.",
        timeout_seconds=7.5,
        trust=Trust(output="untrusted", private=True, sinks=("items", "tags")),
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("120", {"total": 120})


class Bare(Tool):
    """A tool with as little metadata as the contract allows."""

    metadata = ToolMetadata(name="bare", description="Do nothing.", category="utility")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("")


RULER = Capability(
    name="ruler",
    description="A ruler is at hand.",
    detectors=(EnvVar("RULER_TOKEN"),),
    setup="Export the token:\nexport RULER_TOKEN=...",
)


class _Plugin:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(Category(name="gauges", description="Measure things"))
        register(Measure)
        register(Bare)

    @hookimpl
    def register_capabilities(self, register: Callable[[Capability], None]) -> None:
        register(RULER)


@pytest.fixture
def registry() -> Iterator[toolplug.Registry]:
    loaded = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("test-docs", _Plugin())])
    assert loaded.problems == []
    yield loaded
    loaded.close()


def section(page: str, heading: str) -> str:
    """The text of one ``## heading`` section of a page."""
    start = page.index(f"## {heading}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else len(page)]


# -- tables --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("plain", "plain"),  # nothing to do
        ("a | b", "a \\| b"),  # a pipe would split the cell
        ("`x|y`", "`x\\|y`"),  # also inside a code span: GitHub tables need the escape
        ("one\ntwo", "one<br>two"),  # a newline would end the row
        ("  one \r\n  two  \n", "one<br>two"),  # CRLF and surrounding space
        ("", ""),  # empty stays empty (the table shows a dash)
        ("dir/<path>", "dir/&lt;path&gt;"),  # a renderer would drop <path> as an HTML tag
        ("`a<b>` <c>", "`a<b>` &lt;c&gt;"),  # but code spans show their text as it is
    ],
)
def test_escape_cell(text: str, cell: str) -> None:
    assert escape_cell(text) == cell


@given(st.text())
def test_escaped_cell_never_breaks_a_row(text: str) -> None:
    cell = escape_cell(text)
    assert "\n" not in cell
    assert "\r" not in cell
    assert cell.count("|") == cell.count("\\|")


def test_markdown_table_shape_and_empty_cells() -> None:
    assert markdown_table(["A", "B"], [["x|y", ""], ["1\n2", "z"]]) == [
        "| A | B |",
        "|---|---|",
        "| x\\|y | — |",
        "| 1<br>2 | z |",
    ]


@pytest.mark.parametrize(
    ("schema", "shown"),
    [
        ({"type": "string"}, "string"),  # plain
        ({"type": "string", "format": "uri"}, "string (uri)"),  # format is worth a glance
        ({"type": ["string", "null"]}, "string | null"),  # nullable
        ({"type": "array", "items": {"type": "integer"}}, "array<integer>"),  # typed array
        ({"type": "array"}, "array"),  # untyped array
        # items of any kind read as a plain array
        ({"type": "array", "items": {"type": "array", "items": {}}}, "array<array>"),
        ({"type": "object", "additionalProperties": {"type": "number"}}, "object<string, number>"),
        ({"type": "object", "properties": {"a": {}}}, "object"),  # fields get their own rows
        ({"enum": ["a", "b"]}, "string"),  # enum without a type: the values' type
        ({"enum": [1, None]}, "integer | null"),
        ({"const": "get"}, '"get"'),
        (
            {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "string"}]},
            "string | integer",
        ),  # repeated variants shown once
        ({"anyOf": [{"$ref": "#/$defs/Link"}, {"type": "null"}]}, "Link | null"),
        ({"items": {"type": "string"}}, "array<string>"),  # type implied by items
        ({}, "any"),
        (True, "any"),
    ],
)
def test_schema_type(schema: Any, shown: str) -> None:
    assert schema_type(schema) == shown


# -- one page ----------------------------------------------------------------------------


def test_parameter_table(registry: toolplug.Registry) -> None:
    page = render_page(registry.get("measure").metadata)
    table = section(page, "Parameters")
    assert (
        '| `unit` | `string` | no | `"cm"` | The unit<br>of the result. One of: `cm`, `in\\|ch`. |'
    ) in table
    assert (
        "| `items` | `array<object>` | yes | — | The things to measure. Limits: at least 1 item. |"
        in table
    )
    assert "| `items[].label` | `string` | yes | — | What it is. |" in table
    assert "| `items[].size` | `number \\| null` | no | — | Limits: at least 0. |" in table
    assert "| `tags` | `object<string, string>` | no | — | Free labels. |" in table
    assert "Parameters not listed here are rejected." in table
    assert table.index("`unit`") < table.index("`items`") < table.index("`tags`")


def test_page_sections_in_the_seeds_order(registry: toolplug.Registry) -> None:
    page = render_page(registry.get("measure").metadata, capabilities=registry.capabilities)
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == [
        "## When to use",
        "## Common mistakes",
        "## Parameters",
        "## Returns",
        "## Errors",
        "## Examples",
        "## Constraints",
        "## Trust labels",
        "## Capabilities and setup",
    ]
    assert page.startswith(GENERATED_MARKER + "\n\n# measure: Measure | things\n")
    assert "**Purpose:** Measure things, with a pipe | in the description." in page
    assert page.endswith("Buy a ruler.\n")


def test_guidance_errors_examples_and_setup(registry: toolplug.Registry) -> None:
    page = render_page(registry.get("measure").metadata, capabilities=registry.capabilities)
    usage = section(page, "When to use")
    assert "Use when a number is needed.\nNot for estimates." in usage
    assert "**DO use when:**\n\n- The user asks how much\n" in usage
    assert "**DO NOT use when:**\n\n- A guess is enough\n" in usage
    assert "- Passing units in the value" in section(page, "Common mistakes")
    assert "Not declared" in section(page, "Returns")
    errors = section(page, "Errors")
    assert "| `NotFoundError` | no ruler \\| tape is at hand | yes |" in errors
    assert '"error_type": "NotFoundError"' in errors
    assert '"retry_possible": true' in errors
    examples = section(page, "Examples")
    assert '### 1. One thing\n\n```json\n{\n  "items": [' in examples
    assert 'Returns `data` like:\n\n```json\n{\n  "total": 120\n}\n```' in examples
    constraints = section(page, "Constraints")
    assert "- Read-only: no" in constraints
    assert "- Destructive: no" in constraints
    assert "- Time limit: 7.5 s per call" in constraints
    assert "- Produces: `measurements`" in constraints
    trust = section(page, "Trust labels")
    assert "- Output: untrusted, anyone outside could have written it\n" in trust
    assert "- Private: yes, it returns the user's own data\n" in trust
    assert "- Sinks: `items`, `tags` (their values leave the machine" in trust
    assert "set `[tools.measure] trust` to change them" in trust
    assert "cautious default" not in trust
    setup = section(page, "Capabilities and setup")
    assert "- `ruler`: A ruler is at hand." in setup
    assert "  ```text\n  Export the token:\n  export RULER_TOKEN=...\n  ```" in setup
    assert "| `token` | `string` | no | — | `RULER_TOKEN` | yes | Ruler API token |" in setup
    assert "| `precision` | `integer` | no | `2` | — | no | Digits |" in setup
    assert "never as a literal value" in setup
    assert "- `ruler-sdk`" in setup


def test_refs_are_shown_only_when_a_tool_has_them(registry: toolplug.Registry) -> None:
    own = registry.get("measure").metadata
    assert "- Refs:" not in render_page(own)  # the page it had before refs existed
    labels = Trust(output="untrusted", private=True, sinks=("items", "tags"), refs=("tags",))
    trust = section(render_page(own.model_copy(update={"trust": labels})), "Trust labels")
    assert (
        "- Sinks: `items`, `tags` (their values leave the machine or change the world)\n"
        "- Refs: `tags` (sinks whose values name something the service holds: a name an "
        "earlier result listed, passed back whole, is not checked by the flow guard)\n"
    ) in trust
    assert "- Destinations:" not in trust


def test_destinations_are_shown_only_when_a_tool_has_them(registry: toolplug.Registry) -> None:
    own = registry.get("measure").metadata
    assert "- Destinations:" not in render_page(own)
    labels = Trust(output="untrusted", sinks=("items", "tags"), destinations=("items",))
    trust = section(render_page(own.model_copy(update={"trust": labels})), "Trust labels")
    assert (
        "- Destinations: `items` (sinks whose values say where the call goes: a place the "
        "user's own data names, whole, is not read by the trifecta rule)\n"
    ) in trust


def test_bare_tool_says_what_is_missing(registry: toolplug.Registry) -> None:
    page = render_page(registry.get("bare").metadata)
    assert "No usage guidance is declared." in page
    assert "The tool takes no parameters: call it with `{}`." in page
    assert "Not declared" in section(page, "Returns")
    assert "The tool declares no errors of its own." in page
    assert "## Examples" not in page
    assert "Requires no capability" in page
    assert "The tool has no settings of its own." in page
    trust = section(page, "Trust labels")
    assert "declares no trust labels, so it gets the cautious default" in trust
    assert "- Output: untrusted" in trust
    assert "- Sinks: none" in trust  # it takes no parameters


def test_returns_table_and_variants() -> None:
    meta = ToolMetadata(
        name="shaped",
        description="Return shaped data.",
        category="utility",
        returns={
            "oneOf": [
                {
                    "description": "when found",
                    "type": "object",
                    "properties": {"hits": {"type": "array", "items": {"type": "string"}}},
                    "required": ["hits"],
                },
                {
                    "description": "when empty",
                    "type": "object",
                    "properties": {"reason": {"type": "string", "description": "Why"}},
                },
            ]
        },
    )
    returns = section(render_page(meta), "Returns")
    assert "**Variant 1: when found**" in returns
    assert "| `hits` | `array<string>` | yes | — |" in returns
    assert "**Variant 2: when empty**" in returns
    assert "| `reason` | `string` | no | Why. |" in returns
    scalar = meta.model_copy(update={"returns": {"type": "string", "description": "The text"}})
    assert "`data` is `string`. The text." in render_page(scalar)


def test_parts_are_shown_only_when_a_tool_declares_them() -> None:
    meta = ToolMetadata(name="chart", description="Draw a chart.", category="utility",
                        returns={"type": "object", "properties": {"month": {"type": "string"}}})
    assert "content parts" not in render_page(meta)
    drawn = section(render_page(meta.model_copy(update={"parts": ("image", "file")})), "Returns")
    assert "| `month` | `string` | no | — |" in drawn  # the data as before
    assert drawn.rstrip().endswith(
        "Besides its text, a success may carry content parts (`parts`): `image` (a picture), "
        "`file` (a document or other file)."
    )
    undeclared = meta.model_copy(update={"returns": None, "parts": ("audio",)})
    assert "`audio` (a recording)" in render_page(undeclared)  # with no data shape too


def test_availability_is_shown_only_when_given(registry: toolplug.Registry) -> None:
    meta = registry.get("measure").metadata
    assert "Availability here" not in render_page(meta)
    missing = Availability(False, ("capability 'ruler' is missing",), ("export RULER_TOKEN=x",))
    page = render_page(meta, availability=missing)
    assert "## Availability here" in page
    assert "- capability 'ruler' is missing" in page
    assert "export RULER_TOKEN=x" in page
    assert "Available: the tool is offered" in render_page(meta, availability=Availability(True))


# -- the whole reference -------------------------------------------------------------------


def test_index_groups_by_category_in_the_fixed_order(registry: toolplug.Registry) -> None:
    index = reference_pages(registry)["index.md"]
    headings = [line for line in index.splitlines() if line.startswith("## ")]
    assert headings == ["## Utility", "## Gauges"]  # built-in first, declared after
    assert "Measure things." in index
    assert (
        "| [measure](measure.md) | Measure things, with a pipe \\| in the description. |" in index
    )
    assert "2 tools from the installed plugins" in index


def test_unavailable_tools_are_documented_too(registry: toolplug.Registry) -> None:
    assert not registry.availability("measure").available  # RULER_TOKEN is not set
    assert "measure.md" in reference_pages(registry)


def test_toolset_limits_the_pages() -> None:
    loaded = toolplug.load(
        {"toolsets": {"small": {"include": ["bare"]}}},
        env={"TOOLPLUG_PLUGINS": ""},
        plugins=[("test-docs", _Plugin())],
    )
    assert list(reference_pages(loaded, toolset="small")) == ["index.md", "bare.md"]


def test_write_reference_writes_and_prunes_only_generated_pages(
    registry: toolplug.Registry, tmp_path: Path
) -> None:
    out = tmp_path / "reference"
    out.mkdir()
    (out / "gone.md").write_text(GENERATED_MARKER + "\n\n# gone\n", encoding="utf-8")
    (out / "notes.md").write_text("# hand-written\n", encoding="utf-8")
    written = write_reference(registry, out)
    assert [p.name for p in written] == ["index.md", "bare.md", "measure.md"]
    assert sorted(p.name for p in out.iterdir()) == [
        "bare.md",
        "index.md",
        "measure.md",
        "notes.md",
    ]
    pages = reference_pages(registry)
    for path in written:
        assert path.read_bytes() == pages[path.name].encode("utf-8")
    first = {p.name: p.read_bytes() for p in written}
    again = write_reference(registry, out)
    assert {p.name: p.read_bytes() for p in again} == first


def test_output_does_not_depend_on_registration_order() -> None:
    class Reversed(_Plugin):
        @hookimpl
        def register_tools(self, register: Callable[[Any], None]) -> None:
            register(Bare)
            register(Measure)
            register(Category(name="gauges", description="Measure things"))

    one = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("a", _Plugin())])
    other = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("b", Reversed())])
    assert reference_pages(one) == reference_pages(other)


def regenerate() -> None:
    """Write docs/tools/ from the workspace's plugins.

    Run as ``python tests/render/test_reference_docs.py``.
    """
    env = {"TOOLPLUG_PLUGINS": ",".join(workspace_distributions())}
    registry = toolplug.load({}, env=env)
    for problem in registry.problems:
        print(f"warning: {problem.describe()}", file=sys.stderr)
    for path in write_reference(registry, DOCS):
        print(path.relative_to(WORKSPACE))


if __name__ == "__main__":
    regenerate()


def test_a_tool_that_refines_its_annotations_per_call_says_so() -> None:
    # url_fetch's GET runs unasked: "each call waits" would be false on its page
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": "toolplug-url-fetch,toolplug-files"})
    try:
        pages = reference_pages(registry)
    finally:
        registry.close()
    fetch = pages["url_fetch.md"]
    assert "by default each call waits" not in fetch
    assert (
        "**Approval:** decided per call from the annotations that hold for its arguments; the "
        "declared ones, the worst a call can do, ask because it may destroy or overwrite data "
        "(annotated destructive)." in fetch
    )
    assert "A GET only reads: read-only, so it runs unasked" in fetch
    assert "an append runs unasked and an overwrite waits" in pages["write_file.md"]
    assert "**Approval:**" not in pages["read_file.md"]  # reads, whatever the arguments
