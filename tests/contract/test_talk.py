"""A tool's talking back through a host's ``Channel``: checked, redacted, bounded, guarded."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import toolplug
from toolplug import (
    Answer,
    AskError,
    Channel,
    Question,
    Sampled,
    SamplingRequest,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    hookimpl,
)
from toolplug.contract._talk import form_problem

NAME_FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 1},
        "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
    },
    "required": ["name"],
}


class Asking(Tool):
    metadata = ToolMetadata(
        name="asking", description="Asks its user a name, and reports as it goes.",
        category="utility", parameters={"type": "object", "properties": {}},
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        context.report_progress(1, 3, "asking")
        secret = "sk-SECRET1234"
        context.log("info", f"asking for a name with token {secret}", {"token": secret})
        answer = await context.ask("What is your name? (sk-SECRET1234)", NAME_FORM)
        context.report_progress(3, 3)
        if not answer.accepted:
            return ToolResult.success(f"not answered: {answer.action}")
        return ToolResult.success(f"hello {answer.content['name']} ({answer.content['size']})")


class Summing(Tool):
    metadata = ToolMetadata(
        name="summing", description="Asks the host's model to summarise a text.",
        category="utility", parameters={"type": "object", "properties": {}},
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        if not context.can_sample:
            return ToolResult.success("no model here")
        done = await context.sample("Summarise: toolplug", system="Be short.", max_tokens=20)
        return ToolResult.success(done.text)


class Hosting(Channel):
    """A host that answers from a script and keeps what it saw."""

    can_ask = True
    can_sample = True

    def __init__(self, answer: Any = None, delay: float = 0.0) -> None:
        self.answer = answer if answer is not None else Answer("accept", {"name": "Ada"})
        self.delay = delay
        self.seen: list[Any] = []

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        self.seen.append(("progress", done, total, message))

    def log(self, level: str, message: str, data: Any) -> None:
        self.seen.append(("log", level, message, data))

    async def ask(self, question: Question) -> Answer:
        self.seen.append(("ask", question))
        await asyncio.sleep(self.delay)
        return self.answer

    async def sample(self, request: SamplingRequest) -> Sampled:
        self.seen.append(("sample", request))
        return Sampled("a short summary", model="test-model")


class Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Asking)
        register(Summing)


def registry(**calls: Any) -> toolplug.Registry:
    loaded = toolplug.load(
        {"calls": calls}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("talk", Plugin())]
    )
    loaded.redactor.add("sk-SECRET1234")  # as a resolved secret of the configuration is
    return loaded


def run(registry: toolplug.Registry, name: str, **options: Any) -> ToolResult:
    return asyncio.run(registry.acall(name, {}, **options))


def test_a_tool_asks_reports_and_logs_through_the_hosts_channel() -> None:
    host = Hosting()
    result = run(registry(), "asking", channel=host)
    assert result.output == "hello Ada (small)", result  # the default filled in
    kinds = [entry[0] for entry in host.seen]
    assert kinds == ["progress", "log", "ask", "progress"]
    assert host.seen[0] == ("progress", 1.0, 3.0, "asking")
    _, level, message, data = host.seen[1]
    assert level == "info"
    assert "sk-SECRET1234" not in message
    assert data == {"token": "***"}
    question = host.seen[2][1]
    assert "SECRET" not in question.message
    assert question.tool == "asking"


def test_without_a_channel_ask_is_a_structured_error_and_logs_reach_python(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="toolplug.tools"):
        result = run(registry(), "asking")
    assert result.error is not None
    assert result.error.type == "UnavailableError"
    assert result.error.details["reason"] == "unavailable"
    assert "cannot ask the user" in result.error.message
    assert any("asking for a name" in r.getMessage() for r in caplog.records)
    assert all("SECRET" not in r.getMessage() for r in caplog.records)


def test_an_answer_that_breaks_the_form_is_refused() -> None:
    host = Hosting(Answer("accept", {"name": ""}))
    result = run(registry(), "asking", channel=host)
    assert result.error is not None
    assert result.error.details["reason"] == "invalid_answer"
    assert "name" in result.error.message


def test_a_decline_reaches_the_tool() -> None:
    result = run(registry(), "asking", channel=Hosting(Answer("decline")))
    assert result.output == "not answered: decline"


def test_nobody_answering_ends_in_a_timeout_the_tool_can_handle() -> None:
    host = Hosting(delay=5)
    result = run(registry(ask_timeout_seconds=0.2), "asking", channel=host)
    assert result.error is not None
    assert result.error.type == "TimeoutError"
    assert "ask_timeout_seconds" in result.error.message
    assert result.error.retry_possible


def test_the_older_progress_entry_still_hears_reports() -> None:
    heard: list[tuple[float, float | None]] = []
    host = Hosting()
    run(registry(), "asking", context={"progress": lambda d, t: heard.append((d, t))}, channel=host)
    assert heard == [(1.0, 3.0), (3.0, 3.0)]
    assert "progress" not in [entry[0] for entry in host.seen]


def test_a_sampled_completion_is_untrusted_and_an_answer_trusted() -> None:
    reg = registry()
    with reg.conversation("say hello") as conversation:
        run(reg, "summing", channel=Hosting())
        run(reg, "asking", channel=Hosting(Answer("accept", {"name": "Grace Hopper"})))
    sources = conversation.sources
    sampled = [s for s in sources if s.tool == "summing (sampled)"]
    assert sampled
    assert sampled[0].trust.output == "untrusted"
    assert "grace hopper" in conversation.request  # the user's answer is their words


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ([], "JSON Schema object"),
        ({"type": "array"}, "top level"),
        ({"type": "object", "properties": {"a": {"type": "object"}}}, "no objects"),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}, "format"),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}, "pattern"),
        ({"type": "object", "properties": {}, "required": ["a"]}, "not a field"),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {}}}}, "enum or anyOf"),
    ],
)
def test_forms_mcp_elicitation_does_not_allow_are_named(schema: Any, problem: str) -> None:
    found = form_problem(schema)
    assert found is not None
    assert problem in found


def test_the_forms_mcp_elicitation_allows_pass() -> None:
    assert form_problem(NAME_FORM) is None
    multi = {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1}
    titled = {"type": "string", "oneOf": [{"const": "a", "title": "A"}]}
    assert form_problem({"type": "object", "properties": {"m": multi, "t": titled}}) is None


def test_a_bad_form_is_the_tools_error() -> None:
    class BadForm(Tool):
        metadata = ToolMetadata(
            name="bad_form", description="Asks with a nested form.", category="utility",
            parameters={"type": "object", "properties": {}},
        )

        async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            try:
                await context.ask("?", {"type": "object", "properties": {"a": {"type": "object"}}})
            except AskError as exc:
                return ToolResult.success(f"caught {exc.reason}")
            return ToolResult.success("asked")

    class Bad:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(BadForm)

    reg = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bad", Bad())])
    assert run(reg, "bad_form", channel=Hosting()).output == "caught invalid_question"


class Paused(Exception):
    """A framework's pause, as LangGraph's interrupt or pydantic-ai's ApprovalRequired is."""


class Pausing(Hosting):
    pauses = (Paused,)

    async def ask(self, question: Question) -> Answer:
        raise Paused(question.message)


class Failing(Hosting):
    async def ask(self, question: Question) -> Answer:
        raise Paused("not declared a pause")


def test_a_pause_the_channel_declares_reaches_the_host_and_others_fail_the_ask() -> None:
    with pytest.raises(Paused, match="What is your name"):
        run(registry(), "asking", channel=Pausing(), passthrough=(Paused,))
    failed = run(registry(), "asking", channel=Failing())
    assert failed.error is not None
    assert failed.error.details["reason"] == "failed"
    assert "Paused: not declared a pause" in failed.error.message
