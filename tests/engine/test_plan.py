"""Plans: checks before anything runs, references, concurrency, skipped dependents."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.media import pdf, png
from toolplug import PlanError, Tool, ToolContext, ToolMetadata, ToolResult, hookimpl, parse_plan

OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}


class Search(Tool):
    metadata = ToolMetadata(name="search_documents", description="Find documents.",
                            category="research", parameters=OBJECT)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(0.2)
        query = arguments.get("query", "")
        if query == "nothing":
            return ToolResult.failure("NotFoundError", "no documents", retry_possible=True)
        return ToolResult.success("found", {
            "doc_path": f"/docs/{query}.pdf",
            "metadata": {"pages": [1, 2]},
            "screenshot_paths": [f"/shots/{query}-1.png", f"/shots/{query}-2.png"],
        })


class Email(Tool):
    metadata = ToolMetadata(name="compose_email", description="Send an email.",
                            category="publish", parameters=OBJECT)

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("sent", {"received": arguments})


class P:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(Search)
        register(Email)


@pytest.fixture
def registry() -> toolplug.Registry:
    return toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("p", P())])


def test_references_resolve_and_lists_flatten(registry: toolplug.Registry) -> None:
    plan = [
        {"id": 1, "action": "search_documents", "parameters": {"query": "q3"}},
        {"id": 2, "action": "search_documents", "parameters": {"query": "q4"}},
        {"id": 3, "action": "compose_email", "dependencies": [1, 2], "parameters": {
            "attachments": ["$step1.screenshot_paths", "$step2.doc_path"],
            "pages": "$step1.metadata.pages",
            "first": "$step1.screenshot_paths.0",
            "subject": "not a $step1.reference",
        }},
    ]
    result = asyncio.run(toolplug.run_plan(registry, plan))
    assert result.ok
    received = result.steps[2].result.data["received"]  # type: ignore[union-attr]
    assert received == {
        "attachments": ["/shots/q3-1.png", "/shots/q3-2.png", "/docs/q4.pdf"],
        "pages": [1, 2],
        "first": "/shots/q3-1.png",
        "subject": "not a $step1.reference",
    }


def test_independent_steps_run_concurrently(registry: toolplug.Registry) -> None:
    plan = [{"action": "search_documents", "parameters": {"query": str(i)}} for i in range(5)]
    started = time.monotonic()
    result = asyncio.run(toolplug.run_plan(registry, plan))
    assert result.ok
    assert time.monotonic() - started < 0.8  # five 0.2 s steps, not one after another
    assert [s.id for s in result.steps] == [1, 2, 3, 4, 5]  # positions are ids


def test_failed_step_skips_dependents_and_reports_all(registry: toolplug.Registry) -> None:
    plan = {"steps": [
        {"id": 1, "action": "search_documents", "parameters": {"query": "nothing"}},
        {"id": 2, "action": "compose_email", "dependencies": [1],
         "parameters": {"to": "$step1.doc_path"}},
        {"id": 3, "action": "compose_email", "dependencies": [2], "parameters": {}},
        {"id": 4, "action": "compose_email", "parameters": {"x": 1}},
    ]}
    result = asyncio.run(toolplug.run_plan(registry, plan))
    assert not result.ok
    assert [s.status for s in result.steps] == ["failed", "skipped", "skipped", "ok"]
    assert result.steps[1].reason == "skipped because step 1 failed"
    assert result.steps[2].reason == "skipped because step 2 skipped"
    body = result.to_dict()
    assert body["steps"][0]["result"]["error_type"] == "NotFoundError"
    assert body["steps"][0]["elapsed_ms"] >= 150


def test_a_missing_field_fails_that_step(registry: toolplug.Registry) -> None:
    plan = [
        {"id": 1, "action": "search_documents", "parameters": {"query": "a"}},
        {"id": 2, "action": "compose_email", "dependencies": [1],
         "parameters": {"x": "$step1.nope"}},
    ]
    result = asyncio.run(toolplug.run_plan(registry, plan))
    error = result.steps[1].result.error  # type: ignore[union-attr]
    assert error is not None
    assert error.message == (
        "$step1.nope: the result has no 'nope' (a result has output, data, citations, "
        "warnings, spill, parts; any other first name is looked up in its data)"
    )


def test_a_missing_field_deeper_names_how_far_the_reference_got(
    registry: toolplug.Registry,
) -> None:
    plan = [
        {"id": 1, "action": "search_documents", "parameters": {"query": "a"}},
        {"id": 2, "action": "compose_email", "dependencies": [1],
         "parameters": {"x": "$step1.data.metadata.nope"}},
    ]
    result = asyncio.run(toolplug.run_plan(registry, plan))
    error = result.steps[1].result.error  # type: ignore[union-attr]
    assert error is not None
    assert error.message == "$step1.data.metadata.nope: $step1.data.metadata has no 'nope'"


class Cite(Tool):
    metadata = ToolMetadata(name="cite_sources", description="Find sources.",
                            category="research", parameters=OBJECT)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(
            output="two sources on tides",
            data={"count": 2, "output": "a data key named like a field"},
            citations=(toolplug.Citation("Tides", "https://a.example/tides"),
                       toolplug.Citation("Moon", "https://b.example/moon")),
            warnings=("one source is old",),
        )


class WithCite:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(Cite)
        register(Email)


def test_references_reach_every_field_of_a_result() -> None:
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("c", WithCite())])
    plan = [
        {"id": 1, "action": "cite_sources"},
        {"id": 2, "action": "compose_email", "dependencies": [1], "parameters": {
            # the result's own fields, as `toolplug run --result json` shows them
            "text": "$step1.output",
            "count": "$step1.data.count",
            "data_output": "$step1.data.output",  # data's key of that name, through data
            "sources": "$step1.citations",
            "first_url": "$step1.citations.0.url",
            "urls": ["https://c.example", "$step1.citations"],  # flattened into the list
            "warnings": "$step1.warnings",
            "spill": "$step1.spill",  # None: the output was not cut
            # a first name that is no field is looked up in data, as before
            "short": "$step1.count",
            "whole": "$step1",
        }},
    ]
    result = asyncio.run(toolplug.run_plan(registry, plan))
    assert result.ok, result.to_dict()
    received = result.steps[1].result.data["received"]  # type: ignore[union-attr]
    tides = {"title": "Tides", "url": "https://a.example/tides"}
    moon = {"title": "Moon", "url": "https://b.example/moon"}
    assert received == {
        "text": "two sources on tides",
        "count": 2,
        "data_output": "a data key named like a field",
        "sources": [tides, moon],
        "first_url": "https://a.example/tides",
        "urls": ["https://c.example", tides, moon],
        "warnings": ["one source is old"],
        "spill": None,
        "short": 2,
        "whole": {"count": 2, "output": "a data key named like a field"},
    }


@pytest.mark.parametrize(
    ("plan", "problem"),
    [
        ([], "a plan is a non-empty list of steps"),
        ([{"action": "teleport"}], "step 1: unknown tool 'teleport'"),
        ([{"action": "compose_email", "parameters": {"a": "$step2.x"}, "dependencies": [2]},
          {"action": "compose_email"}],
         "step 1 references $step2.x: step 2 does not come before it"),
        ([{"action": "compose_email", "parameters": {"a": "$step9.x"}}],
         "step 1 references $step9.x: there is no step 9"),
        ([{"action": "search_documents"},
          {"action": "compose_email", "parameters": {"a": "$step1.doc_path"}}],
         "step 2 references $step1.doc_path but does not list 1 in dependencies"),
        ([{"id": 1, "action": "compose_email", "dependencies": [2]},
          {"id": 2, "action": "compose_email", "dependencies": [1]}],
         "dependency cycle: step 1 -> step 2 -> step 1"),
        ([{"id": 1, "action": "compose_email", "dependencies": [7]}],
         "step 1 depends on step 7, which does not exist"),
        ([{"id": 1, "action": "compose_email"}, {"id": 1, "action": "compose_email"}],
         "step id 1 is used more than once"),
        ([{"action": "compose_email", "params": {}}], "has unknown keys: params"),
    ],
)
def test_invalid_plans_are_refused_before_running(
    registry: toolplug.Registry, plan: Any, problem: str
) -> None:
    with pytest.raises(PlanError) as caught:
        parse_plan(plan, registry)
    assert any(problem in found for found in caught.value.problems), caught.value.problems


def test_cli_run_and_call(cli: Callable[..., Any]) -> None:
    Path("toolplug.toml").write_text(
        '[tools.static_links]\nlinks = [{ name = "gh", url = "https://github.com/x" }]\n',
        encoding="utf-8",
    )
    Path("plan.json").write_text(json.dumps([
        {"id": 1, "action": "static_links", "parameters": {"action": "get", "name": "gh"}},
        {"id": 2, "action": "static_links", "parameters": {"action": "get", "name": "nope"}},
        {"id": 3, "action": "static_links", "dependencies": [2], "parameters": {}},
    ]), encoding="utf-8")
    ran = cli("run", "plan.json", "--result", "json", cwd=Path.cwd())
    assert ran.code == 1
    statuses = [s["status"] for s in json.loads(ran.out)["steps"]]
    assert statuses == ["ok", "failed", "skipped"]
    called = cli("call", "static_links", "action=get", "name=gh", cwd=Path.cwd())
    assert (called.code, called.out) == (0, "- gh: https://github.com/x\n")
    missing = cli("call", "static_links", "--json", '{"action": "get", "name": "x"}',
                  cwd=Path.cwd())
    assert missing.code == 1
    assert missing.err == "toolplug: NotFoundError: no link named 'x'; configured names: gh\n"
    bad = cli("run", "missing.json", cwd=Path.cwd())
    assert bad.code == 2
    assert bad.err.startswith("toolplug: error: cannot read missing.json")


class Chart(Tool):
    metadata = ToolMetadata(name="draw_chart", description="Draw a chart.", category="utility",
                            parameters=OBJECT, parts=("image", "text", "file", "resource_link"))

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("drawn", parts=[
            toolplug.Image(png(3, 2)), toolplug.Text("the legend"),
            toolplug.File(pdf("March"), "application/pdf", name="march.pdf"),
            toolplug.ResourceLink("https://charts.example/march", "march"),
        ])


class WithChart:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(Chart)
        register(Email)


def test_a_part_passes_on_as_its_text_its_uri_or_a_data_url_of_its_bytes() -> None:
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("c", WithChart())])
    plan = [
        {"id": 1, "action": "draw_chart"},
        {"id": 2, "action": "compose_email", "dependencies": [1], "parameters": {
            "picture": "$step1.parts.0",  # bytes: a data URL of the part's MIME type
            "legend": "$step1.parts.1",  # a text part: its text
            "report": "$step1.parts.2",
            "link": "$step1.parts.3",  # a resource link: its URI
            "kind": "$step1.parts.2.kind",  # a field of the part's JSON form
            "mime": "$step1.parts.0.mime_type",
            "name": "$step1.parts.2.name",
            "size": "$step1.parts.2.size",
            "every": ["$step1.parts"],  # all of them, flattened into the list
        }},
    ]
    result = asyncio.run(toolplug.run_plan(registry, plan))
    assert result.ok, result.to_dict()
    got = result.steps[1].result.data["received"]  # type: ignore[union-attr]
    head, _, body = got["picture"].partition(",")
    assert head == "data:image/png;base64"
    assert base64.b64decode(body) == png(3, 2)  # the very bytes
    head, _, body = got["report"].partition(",")
    assert head == "data:application/pdf;base64"
    assert base64.b64decode(body) == pdf("March")
    assert got["legend"] == "the legend"
    assert got["link"] == "https://charts.example/march"
    assert (got["kind"], got["mime"], got["name"]) == ("file", "image/png", "march.pdf")
    assert got["size"] == len(pdf("March"))
    assert got["every"] == [got["picture"], "the legend", got["report"], got["link"]]


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        # one part too far: how many there are, and how to write one
        ("$step1.parts.4", "$step1.parts.4: step 1's result holds 4 parts; write "
         "$step1.parts.K with K a number below that"),
        ("$step1.parts.first", "step 1's result holds 4 parts"),
        # a field a part does not have: those it has
        ("$step1.parts.0.width", "$step1.parts.0.width: part 0 of step 1 (image) has data, "
         "kind, mime_type, size; $step1.parts.0 alone passes the part itself"),
    ],
)
def test_a_part_reference_that_reaches_nothing_fails_its_step(reference: str, problem: str) -> None:
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("c", WithChart())])
    plan = [
        {"id": 1, "action": "draw_chart"},
        {"id": 2, "action": "compose_email", "dependencies": [1], "parameters": {"a": reference}},
    ]
    result = asyncio.run(toolplug.run_plan(registry, plan))
    step = result.steps[1]
    assert step.status == "failed"
    assert step.result is not None
    assert step.result.error is not None
    assert step.result.error.type == "ValidationError"
    assert problem in step.result.error.message
