"""A configured secret (``{ env = "VAR" }``) never leaves a call: not in a result's data,
citations or error details, not in the spilled data read back, not in a log record or its
traceback. Exact-match redaction: what it cannot see is in docs/configuration.md."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import Site, run_cli
from tests.helpers.redis import redis_server
from toolplug import (
    Annotations,
    ConfigField,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    hookimpl,
)
from toolplug.engine import _engine
from toolplug.state import _store
from toolplug.trust import _redaction

SECRET = "sk-live-4f9a2c7e1b"


class Leaky(Tool):
    """A tool that puts its own token everywhere a result can carry it."""

    metadata = ToolMetadata(
        name="leaky",
        description="Echo the token back.",
        category="utility",
        parameters={"type": "object", "properties": {"how": {"type": "string"}}},
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        config_fields=(
            ConfigField(name="token", type="string", description="API token", secret=True),
        ),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        token = context.config["token"]
        how = arguments.get("how", "data")
        if how == "raise":
            raise RuntimeError(f"the service refused token {token}")
        if how == "fail":
            return ToolResult.failure(
                "ExecutionError", f"refused {token}", details={"sent": {"auth": token}}
            )
        if how == "cached":
            return ToolResult.success(f"used {token}", {"auth": token})
        if how == "big":
            return ToolResult.success("x" * 5_000, {"rows": [{"auth": token}] * 100})
        if how == "many":  # large data: redacted off the loop
            rows = [{"n": n, "auth": f"{token}-{n}"} for n in range(5_000)]
            return ToolResult.success("5000 rows", {"rows": rows})
        return ToolResult(
            output="done",
            data={"headers": {"Authorization": f"Bearer {token}"}, token: [token, 1]},
            citations=(toolplug.Citation(f"signed {token}", f"https://a.example/?k={token}"),),
        )


class _Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Leaky)


@pytest.fixture
def registry() -> Iterator[toolplug.Registry]:
    made = toolplug.load(
        {"tools": {"leaky": {"token": {"env": "LEAKY_TOKEN"}}},
         "calls": {"max_output_chars": 2_000}},
        env={"TOOLPLUG_PLUGINS": "", "LEAKY_TOKEN": SECRET},
        plugins=[("leaky", _Plugin())],
    )
    yield made
    made.close()


def test_the_data_and_citations_of_a_result_are_redacted(registry: toolplug.Registry) -> None:
    result = registry.call("leaky", {})
    assert result.ok
    assert result.data == {"headers": {"Authorization": "Bearer ***"}, "***": ["***", 1]}
    assert result.citations == (toolplug.Citation("signed ***", "https://a.example/?k=***"),)
    assert SECRET not in json.dumps(result.to_dict())


def test_large_data_is_redacted_in_a_worker_thread(
    registry: toolplug.Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # searching every string of 5,000 rows for each secret would hold the event loop
    where: list[str] = []
    redacted = _redaction.redacted_result

    def spied(result: ToolResult, redactor: Any) -> ToolResult:
        if result.data is not None:
            where.append(threading.current_thread().name)
        return redacted(result, redactor)

    monkeypatch.setattr(_engine, "redacted_result", spied)
    result = asyncio.run(registry.acall("leaky", {"how": "many"}))
    assert result.ok
    assert where
    assert all(name.startswith("toolplug-offload") for name in where), where
    assert SECRET not in json.dumps(result.to_dict())
    data = registry.read(str(result.spill) + "/data")  # the whole data, kept redacted
    assert data is not None
    rows = json.loads(data.text)["rows"]
    assert len(rows) == 5_000
    assert rows[4_999] == {"n": 4_999, "auth": "***-4999"}
    assert SECRET not in data.text
    # small data stays on the loop
    where.clear()
    assert asyncio.run(registry.acall("leaky", {})).ok
    assert where == [threading.current_thread().name]


def test_the_details_of_an_error_are_redacted(registry: toolplug.Registry) -> None:
    result = registry.call("leaky", {"how": "fail"})
    assert result.error is not None
    assert result.error.message == "refused ***"
    assert result.error.details == {"sent": {"auth": "***"}}


def test_spilled_data_read_back_is_redacted(registry: toolplug.Registry) -> None:
    result = registry.call("leaky", {"how": "big"})
    assert result.spill is not None
    data = registry.read(result.spill + "/data")
    assert data is not None
    assert SECRET not in data.text
    assert json.loads(data.text) == {"rows": [{"auth": "***"}] * 100}

    async def read_async() -> str:
        page = await registry.aread(result.spill + "/data")  # type: ignore[operator]
        assert page is not None
        return page.text

    assert SECRET not in asyncio.run(read_async())


def test_the_result_cache_in_redis_holds_no_secret(tmp_path: Path) -> None:
    # the store may be a server beyond this process: what it keeps is redacted
    import redis

    with redis_server(tmp_path) as url:
        registry = toolplug.load(
            {"tools": {"leaky": {"token": {"env": "LEAKY_TOKEN"}, "cache_ttl_seconds": 60}},
             "calls": {"store": url}},
            env={"TOOLPLUG_PLUGINS": "", "LEAKY_TOKEN": SECRET},
            plugins=[("leaky", _Plugin())],
        )
        try:
            first = registry.call("leaky", {"how": "cached"})
            again = registry.call("leaky", {"how": "cached"})  # from the cache
        finally:
            registry.close()
        client = redis.Redis.from_url(url)
        try:
            stored = [client.dump(key) or b"" for key in client.keys("*")]
        finally:
            client.close()
    assert first.output == again.output == "used ***"
    assert again.data == {"auth": "***"}
    assert stored  # the result was kept there
    assert not any(SECRET.encode() in value for value in stored)


def test_large_data_is_kept_in_the_cache_and_read_back_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # redacting and writing 5,000 rows for the cache, and reading them back, would hold
    # the event loop: both in toolplug's worker thread, the cached copy redacted
    where: list[tuple[str, str]] = []
    encoded, decoded = _store._encoded, _store.decode_result

    def encoding(*arguments: Any) -> Any:
        where.append(("kept", threading.current_thread().name))
        return encoded(*arguments)

    def decoding(raw: Any) -> Any:
        where.append(("read", threading.current_thread().name))
        return decoded(raw)

    monkeypatch.setattr(_store, "_encoded", encoding)
    monkeypatch.setattr(_store, "decode_result", decoding)
    registry = toolplug.load(
        {"tools": {"leaky": {"token": {"env": "LEAKY_TOKEN"}, "cache_ttl_seconds": 60}}},
        env={"TOOLPLUG_PLUGINS": "", "LEAKY_TOKEN": SECRET},
        plugins=[("leaky", _Plugin())],
    )

    async def twice() -> tuple[ToolResult, ToolResult]:
        first = await registry.acall("leaky", {"how": "many"})
        return first, await registry.acall("leaky", {"how": "many"})  # from the cache

    try:
        first, again = asyncio.run(twice())
    finally:
        registry.close()
    assert [step for step, _ in where] == ["kept", "read"]
    assert all(thread.startswith("toolplug-offload") for _, thread in where), where
    assert again.data == first.data
    assert SECRET not in json.dumps(again.to_dict())
    assert again.data["rows"][7] == {"n": 7, "auth": "***-7"}


def test_a_logged_traceback_is_redacted(
    registry: toolplug.Registry, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="toolplug"):
        result = registry.call("leaky", {"how": "raise"})
    assert result.error is not None
    assert SECRET not in result.error.message
    [record] = [r for r in caplog.records if r.name == "toolplug"]
    shown = logging.Formatter().format(record)
    assert "RuntimeError: the service refused token ***" in shown  # the traceback is there
    assert "Traceback (most recent call last)" in shown
    assert SECRET not in shown
    assert SECRET not in caplog.text


def test_a_plugin_logger_is_redacted_too(registry: toolplug.Registry) -> None:
    # the plugins log on toolplug.<name> loggers, which exist once they are loaded
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(self.format(record))

    plugin_logger = logging.getLogger("toolplug.citations")
    handler = Keep()
    plugin_logger.addHandler(handler)
    try:
        toolplug.load({"tools": {"leaky": {"token": {"env": "LEAKY_TOKEN"}}}},
                      env={"TOOLPLUG_PLUGINS": "", "LEAKY_TOKEN": SECRET},
                      plugins=[("leaky", _Plugin())])
        plugin_logger.warning("sent %s", SECRET)
    finally:
        plugin_logger.removeHandler(handler)
    assert seen == ["sent ***"]


RAISING = """
import logging
from typing import Any

from toolplug import ConfigField, Tool, ToolMetadata, ToolResult, hookimpl


class Raising(Tool):
    metadata = ToolMetadata(
        name="raising",
        description="Fail with the token in the message.",
        category="utility",
        config_fields=(
            ConfigField(name="token", type="string", description="API token", secret=True),
        ),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        # a library the tool uses logs on a logger of its own
        logging.getLogger("vendor.sdk").warning("sending token %s", context.config["token"])
        raise RuntimeError("the service refused token " + context.config["token"])


@hookimpl
def register_tools(register: Any) -> None:
    register(Raising)
"""


def test_the_command_line_logs_no_secret(tmp_path: Path) -> None:
    # No logging configured by anyone: Python's last-resort handler prints the traceback.
    site = Site(tmp_path / "site")
    site.add("raising-tool", entry_points={"raising": "raising_tool"},
             modules={"raising_tool": RAISING})
    (tmp_path / "toolplug.toml").write_text(
        '[tools.raising]\ntoken = { env = "RAISING_TOKEN" }\n', encoding="utf-8"
    )
    done = run_cli("call", "raising", cwd=tmp_path,
                   env=site.env(RAISING_TOKEN=SECRET, TOOLPLUG_NO_CACHE="1"))
    assert done.code == 1
    assert "Traceback (most recent call last)" in done.err  # the host still gets it
    assert "RuntimeError: the service refused token ***" in done.err
    assert "sending token ***" in done.err  # another library's logger, in our process
    assert SECRET not in done.err + done.out


# -- parts -------------------------------------------------------------------------------


def test_the_text_of_parts_is_redacted_and_their_bytes_are_not_searched() -> None:
    from tests.helpers.parts import Returns, ReturnsPlugin, png

    # the secret in a PNG's bytes (a tEXt-like tail) stays: bytes are never searched
    image = toolplug.Image(png() + SECRET.encode())
    Returns.RESULT = ToolResult.success(
        "",
        parts=[
            toolplug.Text(f"token {SECRET}"),
            image,
            toolplug.EmbeddedResource("file:///env", text=f"KEY={SECRET}", mime_type="text/plain"),
            toolplug.ResourceLink(
                f"https://a.example/r?k={SECRET}", f"r-{SECRET}", description=f"made with {SECRET}"
            ),
            toolplug.File(b"plain", "text/plain", name=f"{SECRET}.txt"),
        ],
    )
    registry = toolplug.load(
        {"tools": {"returns": {"cache_ttl_seconds": 60},
                   "leaky": {"token": {"env": "LEAKY_TOKEN"}}}},  # the secret configured
        env={"TOOLPLUG_PLUGINS": "", "LEAKY_TOKEN": SECRET},
        plugins=[("returns", ReturnsPlugin()), ("leaky", _Plugin())],
    )
    try:
        for result in (registry.call("returns", {}), registry.call("returns", {})):  # and cached
            text, kept, embedded, link, file = result.parts
            assert text == toolplug.Text("token ***")
            assert kept == image  # the bytes as they were, the secret in them too
            assert isinstance(embedded, toolplug.EmbeddedResource)
            assert embedded.text == "KEY=***"
            assert link == toolplug.ResourceLink(
                "https://a.example/r?k=***", "r-***", description="made with ***"
            )
            assert isinstance(file, toolplug.File)
            assert file.name == "***.txt"
            assert SECRET not in result.for_model()
    finally:
        registry.close()


def test_a_link_whose_scheme_was_the_secret_becomes_words() -> None:
    redactor = _redaction.Redactor()
    redactor.add(SECRET)
    link = toolplug.ResourceLink(f"{SECRET}:thing", "thing")
    [part] = _redaction.redacted_result(ToolResult.success("", parts=[link]), redactor).parts
    assert part == toolplug.Text("[resource: thing at ***:thing]")
