"""Calls: validation, the error contract, time limits, retries, cache, rate limits, hooks."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Generator
from typing import Any, ClassVar

import pytest

import toolplug
from toolplug import (
    Annotations,
    ErrorSpec,
    Tool,
    ToolCall,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
    hookimpl,
)

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "q"},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5,
                        "description": "n"},
        "recency": {"type": "string", "enum": ["day", "week", "any"], "default": "any",
                    "description": "r"},
        "tags": {"type": "array", "items": {"type": "string"}, "description": "t"},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def meta(name: str, **extra: Any) -> ToolMetadata:
    base: dict[str, Any] = {"description": f"The {name} tool.", "category": "utility",
                            "parameters": SEARCH_SCHEMA}
    base.update(extra)
    return ToolMetadata(name=name, **base)


class Search(Tool):
    metadata = meta("search")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success(f"searched {arguments['query']}", dict(arguments))


class AsyncSearch(Tool):
    metadata = meta("asearch")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(0)
        return ToolResult.success("async", {"thread": threading.current_thread().name})


class Crash(Tool):
    metadata = meta("crash")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        raise KeyError("the secret internals")


class Fails(Tool):
    metadata = meta("fails", errors=(ErrorSpec(type="NotFoundError", when="never found"),))

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        raise ToolFailure("NotFoundError", f"nothing for {arguments['query']}")


class Slow(Tool):
    metadata = meta("slow", timeout_seconds=0.2)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(5)
        return ToolResult.success("too late")


class SlowSync(Tool):
    """Holds its worker thread until the test lets go, and says when it finished."""

    metadata = meta("slow_sync", timeout_seconds=0.2)
    release: ClassVar[threading.Event] = threading.Event()
    finished: ClassVar[threading.Event] = threading.Event()

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        SlowSync.release.wait(30)
        SlowSync.finished.set()
        return ToolResult.success("too late")


class Flaky(Tool):
    metadata = meta("flaky")
    attempts: ClassVar[list[float]] = []

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        Flaky.attempts.append(time.monotonic())
        if len(Flaky.attempts) < 3:
            return ToolResult.failure("NetworkError", "try again", retry_possible=True)
        return ToolResult.success("third time lucky")


class Permanent(Tool):
    metadata = meta("permanent")
    attempts = 0

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        Permanent.attempts += 1
        return ToolResult.failure("PermissionError", "never", retry_possible=False)


class Counted(Tool):
    metadata = meta("counted", annotations=Annotations(read_only=True, idempotent=True))
    runs = 0

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        Counted.runs += 1
        return ToolResult.success(f"run {Counted.runs}")


class NotAResult(Tool):
    metadata = meta("not_a_result")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        return {"oops": True}


class HostContext(Tool):
    metadata = meta("host_context")

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success(str(context.host.get("user")))


TOOLS = [Search, AsyncSearch, Crash, Fails, Slow, SlowSync, Flaky, Permanent, Counted,
         NotAResult, HostContext]


class TestPlugin:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        for cls in TOOLS:
            register(cls)


def load(config: dict[str, Any] | None = None, *plugins: tuple[str, object]) -> toolplug.Registry:
    return toolplug.load(config or {}, env={"TOOLPLUG_PLUGINS": ""},
                         plugins=[("tests", TestPlugin()), *plugins])


@pytest.fixture
def registry() -> Generator[toolplug.Registry, None, None]:
    reg = load()
    yield reg
    reg.close()


def test_success_with_defaults_filled(registry: toolplug.Registry) -> None:
    result = registry.call("search", {"query": "python"})
    assert result.ok
    assert result.data == {"query": "python", "max_results": 5, "recency": "any"}
    assert result.to_dict()["error"] is False


def test_null_for_an_optional_property_means_not_given(registry: toolplug.Registry) -> None:
    # what a model in OpenAI's strict mode sends for the properties it leaves out
    result = registry.call("search", {"query": "x", "max_results": None, "recency": None})
    assert result.data == {"query": "x", "max_results": 5, "recency": "any"}
    required_null = registry.call("search", {"query": None})
    assert required_null.error is not None
    assert "query: expected type string, received null" in required_null.error.message


def test_arguments_as_json_text(registry: toolplug.Registry) -> None:
    assert registry.call("search", '{"query": "x", "max_results": 2}').data["max_results"] == 2
    bad = registry.call("search", "{not json")
    assert bad.error is not None
    assert bad.error.type == "ValidationError"
    assert "not valid JSON" in bad.error.message


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        # a missing required field
        ({}, ["query: expected a value (required), received nothing"]),
        # wrong type, over the maximum, not in the enum, unknown key: all named at once
        ({"query": 3, "max_results": 50, "recency": "hour", "colour": "red"}, [
            "query: expected type string, received 3",
            "max_results: expected maximum 20, received 50",
            'recency: expected one of "day", "week", "any", received "hour"',
            "colour: expected only known properties (max_results, query, recency, tags), "
            'received "red"',
        ]),
        # a nested bad item has its path
        ({"query": "x", "tags": ["ok", 7]}, ["tags[1]: expected type string, received 7"]),
        # an empty string against minLength
        ({"query": ""}, ['query: expected minLength 1, received ""']),
        # a bool is not an integer
        ({"query": "x", "max_results": True}, ["max_results: expected type integer"]),
        # not an object at all
        ([1, 2], ["must be a JSON object, received [1, 2]"]),
    ],
)
def test_validation_names_every_bad_field(
    registry: toolplug.Registry, arguments: Any, fragments: list[str]
) -> None:
    result = registry.call("search", arguments)
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert result.error.retry_possible is False
    for fragment in fragments:
        assert fragment in result.error.message


def test_unknown_tool_lists_close_names(registry: toolplug.Registry) -> None:
    result = registry.call("serch", {"query": "x"})
    assert result.to_dict() == {
        "error": True, "error_type": "NotFoundError",
        "error_message": 'no tool named "serch"; did you mean search, asearch?',
        "retry_possible": False, "details": {"close_matches": ["search", "asearch"]},
    }


def test_unexpected_exception_is_an_execution_error_logged_with_traceback(
    registry: toolplug.Registry, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="toolplug"):
        result = registry.call("crash", {"query": "x"})
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert result.error.message == "crash failed: KeyError: 'the secret internals'"
    assert "Traceback" not in result.error.message
    assert caplog.records[0].exc_info is not None


def test_tool_failure_and_non_result(registry: toolplug.Registry) -> None:
    failed = registry.call("fails", {"query": "cats"})
    assert failed.error is not None
    assert (failed.error.type, failed.error.message) == ("NotFoundError", "nothing for cats")
    odd = registry.call("not_a_result", {"query": "x"})
    assert odd.error is not None
    assert odd.error.message == "not_a_result returned dict, not a ToolResult"


def test_async_tool_from_sync_and_async_callers(registry: toolplug.Registry) -> None:
    assert registry.call("asearch", {"query": "x"}).output == "async"

    async def main() -> tuple[ToolResult, ToolResult, str]:
        first = await registry.acall("asearch", {"query": "x"})
        second = await registry.acall("search", {"query": "x"})
        return first, second, threading.current_thread().name

    first, second, loop_thread = asyncio.run(main())
    assert first.ok
    assert first.data["thread"] == loop_thread  # async tools run on the caller's loop
    assert second.output == "searched x"


def test_sync_call_inside_a_running_loop_still_works(registry: toolplug.Registry) -> None:
    async def main() -> ToolResult:
        return registry.call("asearch", {"query": "x"})

    assert asyncio.run(main()).output == "async"


def test_timeouts(registry: toolplug.Registry) -> None:
    started = time.monotonic()
    result = registry.call("slow", {"query": "x"})
    assert time.monotonic() - started < 2
    assert result.to_dict() == {
        "error": True, "error_type": "TimeoutError",
        "error_message": "slow did not finish within 0.2 s", "retry_possible": True,
    }

    async def main() -> ToolResult:
        return await registry.acall("slow_sync", {"query": "x"})

    SlowSync.release.clear()
    SlowSync.finished.clear()
    try:
        result = asyncio.run(main())
        # The answer came while the tool's thread was still held: the caller did not wait.
        assert not SlowSync.finished.is_set()
    finally:
        SlowSync.release.set()
    assert result.to_dict() == {
        "error": True, "error_type": "TimeoutError",
        "error_message": "slow_sync did not finish within 0.2 s", "retry_possible": True,
    }
    assert SlowSync.finished.wait(30)  # and the thread, let go, ends


def test_timeout_from_config_overrides_metadata() -> None:
    registry = load({"tools": {"slow": {"timeout_seconds": 0.05}}})
    result = registry.call("slow", {"query": "x"})
    assert result.error is not None
    assert result.error.message == "slow did not finish within 0.05 s"


def test_retries_only_retryable_errors_with_backoff() -> None:
    Flaky.attempts = []
    registry = load({"tools": {"flaky": {"retries": 3, "retry_backoff_seconds": 0.05},
                               "permanent": {"retries": 3}}})
    assert registry.call("flaky", {"query": "x"}).output == "third time lucky"
    assert len(Flaky.attempts) == 3
    gaps = [b - a for a, b in zip(Flaky.attempts, Flaky.attempts[1:], strict=False)]
    assert gaps[0] >= 0.02  # 0.05 s with jitter of 0.5 to 1.5
    assert gaps[1] >= 0.05  # doubled
    Permanent.attempts = 0
    assert registry.call("permanent", {"query": "x"}).error is not None
    assert Permanent.attempts == 1
    Flaky.attempts = []
    no_retry = load({})
    assert no_retry.call("flaky", {"query": "x"}).error is not None
    assert len(Flaky.attempts) == 1


def test_result_cache_for_read_only_idempotent_tools() -> None:
    Counted.runs = 0
    registry = load({"tools": {"counted": {"cache_ttl_seconds": 0.3},
                               "search": {"cache_ttl_seconds": 60}}})
    assert registry.call("counted", {"query": "a"}).output == "run 1"
    assert registry.call("counted", {"query": "a", "max_results": 5}).output == "run 1"  # same
    assert registry.call("counted", {"query": "b"}).output == "run 2"  # other arguments
    time.sleep(0.35)
    assert registry.call("counted", {"query": "a"}).output == "run 3"  # expired
    Counted.runs = 0
    uncached = load({})
    uncached.call("counted", {"query": "a"})
    uncached.call("counted", {"query": "a"})
    assert Counted.runs == 2  # opt-in only


def test_rate_limit_answers_or_waits() -> None:
    answer = load({"tools": {"search": {"rate_limit": {"calls": 2, "per_seconds": 10,
                                                         "wait": False}}}})
    assert answer.call("search", {"query": "1"}).ok
    assert answer.call("search", {"query": "2"}).ok
    limited = answer.call("search", {"query": "3"})
    assert limited.error is not None
    assert limited.error.type == "RateLimitError"
    assert limited.error.retry_possible
    assert 9 < limited.error.details["retry_after_seconds"] <= 10
    wait = load({"tools": {"search": {"rate_limit": {"calls": 1, "per_seconds": 0.2}}}})
    started = time.monotonic()
    for _ in range(3):
        assert wait.call("search", {"query": "x"}).ok
    assert time.monotonic() - started >= 0.35


def test_a_rate_limit_per_client_gives_each_client_its_own_window() -> None:
    limits = {"calls": 1, "per_seconds": 60, "wait": False, "per": "client"}
    registry = load({"tools": {"search": {"rate_limit": limits}}})
    alice, bob = {"client": "principal:alice"}, {"client": "principal:bob"}
    assert registry.call("search", {"query": "1"}, context=alice).ok
    refused = registry.call("search", {"query": "2"}, context=alice)
    assert refused.error is not None
    assert refused.error.type == "RateLimitError"
    assert registry.call("search", {"query": "3"}, context=bob).ok  # bob's own window
    assert registry.call("search", {"query": "4"}).ok  # no client: the shared window
    assert not registry.call("search", {"query": "5"}).ok
    shared = load({"tools": {"search": {"rate_limit": {**limits, "per": "tool"}}}})
    assert shared.call("search", {"query": "1"}, context=alice).ok
    assert not shared.call("search", {"query": "2"}, context=bob).ok  # one window for all


def test_a_rate_limit_per_anything_else_names_the_choices() -> None:
    with pytest.raises(toolplug.ConfigError) as caught:
        load({"tools": {"search": {"rate_limit": {"calls": 1, "per": "user"}}}})
    assert "rate_limit.per" in str(caught.value)
    assert '"tool" (one window for every caller) or "client"' in str(caught.value)


def test_host_context_reaches_the_tool(registry: toolplug.Registry) -> None:
    assert registry.call("host_context", {"query": "x"}, context={"user": "ada"}).output == "ada"


def test_unavailable_tool_explains() -> None:
    class NeedsKey(Search):
        metadata = meta("needs_key", requires_capabilities=("some_key",))

    class P:
        @hookimpl
        def register_tools(self, register: Callable[[Any], None]) -> None:
            register(NeedsKey)

    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("p", P())])
    result = registry.call("needs_key", {"query": "x"})
    assert result.error is not None
    assert result.error.type == "UnavailableError"
    assert "capability 'some_key' is missing" in result.error.message


# -- interception -----------------------------------------------------------------------


class Timer:
    def __init__(self) -> None:
        self.seen: list[tuple[str, bool, str | None]] = []

    @hookimpl(wrapper=True)
    def tool_call(self, call: ToolCall) -> Generator[None, ToolResult, ToolResult]:
        result = yield
        self.seen.append((call.tool, result.ok, result.error.type if result.error else None))
        return result


class Answerer:
    def __init__(self) -> None:
        self.messages: list[str] = []

    @hookimpl(tryfirst=True)
    def tool_call(self, call: ToolCall) -> ToolResult | None:
        if call.tool == "search" and call.arguments.get("recency") == "day":
            self.messages.append(call.arguments["query"])
            return ToolResult.success("answered by the host")
        return None


class Redactor:
    @hookimpl(wrapper=True)
    def tool_call(self, call: ToolCall) -> Generator[None, ToolResult, ToolResult]:
        result = yield
        return ToolResult.success(result.output.replace("python", "[redacted]"), result.data)


class Broken:
    @hookimpl
    def tool_call(self, call: ToolCall) -> ToolResult | None:
        raise RuntimeError("interceptor bug")


def test_wrapper_sees_successes_and_error_results() -> None:
    timer = Timer()
    registry = load({}, ("timer", timer))
    registry.call("search", {"query": "x"})
    registry.call("fails", {"query": "x"})
    registry.call("search", {"max_results": 0})
    registry.call("nope", {})
    assert timer.seen == [
        ("search", True, None),
        ("fails", False, "NotFoundError"),
        ("search", False, "ValidationError"),
        ("nope", False, "NotFoundError"),
    ]


def test_interceptor_answers_without_running_the_tool() -> None:
    answerer = Answerer()
    timer = Timer()
    registry = load({}, ("answerer", answerer), ("timer", timer))
    result = registry.call("search", {"query": "status report", "recency": "day"})
    assert result.output == "answered by the host"
    assert answerer.messages == ["status report"]
    assert timer.seen == [("search", True, None)]
    assert registry.call("search", {"query": "x"}).output == "searched x"


def test_wrapper_replaces_the_result_in_sync_and_async_calls() -> None:
    registry = load({}, ("redactor", Redactor()))
    assert registry.call("search", {"query": "python"}).output == "searched [redacted]"
    result = asyncio.run(registry.acall("search", {"query": "python"}))
    assert result.output == "searched [redacted]"


def test_a_raising_interceptor_does_not_crash_the_host() -> None:
    registry = load({}, ("broken", Broken()))
    result = registry.call("search", {"query": "x"})
    assert result.error is not None
    assert result.error.type == "ExecutionError"
    assert "interceptor bug" in result.error.message
