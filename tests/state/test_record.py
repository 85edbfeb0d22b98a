"""The record (SQLite): every call, approval and guard decision kept durably, in batches off
the loop; acknowledged events survive kill -9; two processes share one file; retention;
secrets never recorded."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.guard import PLUGIN, POSTED
from toolplug import Approval, ConfigError, ConfigField, Tool, ToolContext, ToolMetadata, ToolResult
from toolplug.config._record import RecordSettings
from toolplug.state._events import RecordEvent, RecordFilters, recorded_arguments
from toolplug.state._record import Recorder, SqliteStore

pytestmark = pytest.mark.anyio

WRITER = Path(__file__).parents[1] / "helpers" / "record_writer.py"
SECRET = "sk-live-7c1e9a55b2"


class Login(Tool):
    metadata = ToolMetadata(
        name="login",
        description="Sign in to a service.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {
                "user": {"type": "string"}, "password": {"type": "string"},
                "note": {"type": "string"},
            },
            "required": ["user"],
        },
        config_fields=(
            ConfigField(name="key", type="string", description="API key", secret=True,
                        env_var="LOGIN_KEY"),
        ),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success(f"signed in {arguments['user']}", data={"ok": True})


class LoginPlugin:
    @toolplug.hookimpl
    def register_tools(self, register: Any) -> None:
        register(Login)


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "record.sqlite3")


@pytest.fixture
def registry(store: str) -> Iterator[toolplug.Registry]:
    loaded = toolplug.load(
        {"record": {"enabled": True, "store": store}},
        env={"TOOLPLUG_PLUGINS": "", "LOGIN_KEY": SECRET},
        plugins=[("login", LoginPlugin())],
    )
    yield loaded
    loaded.close()


async def test_a_call_is_recorded_with_who_what_and_when(
    registry: toolplug.Registry, store: str
) -> None:
    before = time.time()
    result = await registry.acall(
        "login", {"user": "ada", "password": "hunter22", "note": f"key {SECRET}"},
        context={"client": "principal:ada", "session": "s-1", "call_id": "c-9"},
    )
    assert result.ok
    record = registry.record
    assert record is not None
    assert await record.aflush()
    [event] = await record.aquery(tool="login")
    assert event.kind == "call"
    assert (event.principal, event.session, event.call_id) == ("principal:ada", "s-1", "c-9")
    assert event.status == "ok"
    assert event.size == len("signed in ada") + len('{"ok": true}')
    assert before <= event.time <= time.time()
    assert event.duration_ms is not None
    assert event.duration_ms >= 0
    assert event.replica  # host name and pid by default
    # secrets: the configured one replaced, a password-named argument's value never kept
    assert event.arguments == {"user": "ada", "password": "***", "note": "key ***"}
    raw = Path(store).read_bytes() + Path(store + "-wal").read_bytes()
    assert SECRET.encode() not in raw
    assert b"hunter22" not in raw


async def test_failures_and_unknown_tools_are_recorded_with_their_status(
    registry: toolplug.Registry,
) -> None:
    await registry.acall("login", {})  # no user: a validation error
    await registry.acall("logout", {})
    record = registry.record
    assert record is not None
    assert await record.aflush()
    statuses = {(e.tool, e.status) for e in await record.aquery()}
    assert statuses == {("login", "ValidationError"), ("logout", "NotFoundError")}
    assert [e.tool for e in await record.aquery(status="NotFoundError")] == ["logout"]


def test_a_sync_call_is_recorded_too(registry: toolplug.Registry) -> None:
    assert registry.call("login", {"user": "bo"}).ok
    record = registry.record
    assert record is not None
    assert record.flush()
    assert [e.arguments for e in record.query()] == [{"user": "bo"}]


async def test_the_guard_and_an_approval_are_recorded_with_their_reasons(store: str) -> None:
    POSTED.clear()
    registry = toolplug.load(
        {"record": {"enabled": True, "store": store}}, plugins=[PLUGIN], env={}
    )
    try:
        async with registry.conversation("Summarize today's news for me") as conversation:
            page = await registry.acall(
                "read_page", {"url": "https://news.example/today"}, context={"call_id": "r1"}
            )
            assert page.ok
            denied = await registry.acall(
                "post", {"text": "notes: https://collect.evil.example/drop?k=1"},
                approver=lambda request: Approval(False, "not that site"),
                context={"call_id": "p1", "client": "principal:ada"},
            )
        assert denied.error is not None
        record = registry.record
        assert record is not None
        assert await record.aflush()
        events = await record.aquery(call_id="p1", oldest_first=True)
        assert [e.kind for e in events] == [
            "guard", "approval.request", "approval.decision", "call",
        ]
        guard, asked, answer, call = events
        assert guard.status == "ask"
        assert guard.rule == "flow.token"
        assert guard.labels == ["untrusted"]
        assert guard.sources[0]["argument"] == "text"
        assert guard.sources[0]["source"]["tool"] == "read_page"
        assert asked.rule == "flow.token"
        assert asked.reason is not None
        assert "read_page" in asked.reason
        assert answer.status == "denied"
        assert answer.reason == "not that site"
        assert call.status == "PermissionError"
        assert {e.conversation for e in events} == {conversation.id}
        assert {e.principal for e in events} == {"principal:ada"}
    finally:
        registry.close()


async def test_a_call_nobody_could_approve_is_recorded_unanswered(store: str) -> None:
    registry = toolplug.load(
        {"record": {"enabled": True, "store": store}, "tools": {"post": {"approval": "always"}}},
        plugins=[PLUGIN], env={},
    )
    try:
        await registry.acall("post", {"text": "hello"})
        record = registry.record
        assert record is not None
        assert await record.aflush()
        kinds = [(e.kind, e.status, e.rule) for e in await record.aquery(oldest_first=True)]
        assert kinds == [
            ("approval.request", "asked", "approval"),
            ("approval.decision", "unanswered", "approval"),
            ("call", "ApprovalRequiredError", None),
        ]
    finally:
        registry.close()


def test_an_acknowledged_record_survives_kill_9(store: str) -> None:
    with subprocess.Popen(
        [sys.executable, str(WRITER), store, "300", "killed", "ack"],
        stdout=subprocess.PIPE, text=True,
    ) as writer:
        try:
            assert writer.stdout is not None
            assert writer.stdout.readline().strip() == "acked"
            os.kill(writer.pid, signal.SIGKILL)
            assert writer.wait(10) == -signal.SIGKILL
        finally:
            if writer.poll() is None:
                writer.kill()
    events = SqliteStore(store).query(RecordFilters(limit=None, oldest_first=True))
    assert [e.arguments for e in events] == [{"n": n} for n in range(300)]
    assert {e.replica for e in events} == {"killed"}


def test_two_processes_write_one_file_at_once(store: str) -> None:
    writers = [
        subprocess.Popen([sys.executable, str(WRITER), store, "600", name, "race"])
        for name in ("left", "right")
    ]
    for writer in writers:
        assert writer.wait(120) == 0
    events = SqliteStore(store).query(RecordFilters(limit=None, oldest_first=True))
    assert len(events) == 1200
    assert len({e.id for e in events}) == 1200
    for name in ("left", "right"):
        mine = [e.arguments["n"] for e in events if e.replica == name]
        assert mine == list(range(600))  # each process's own order kept
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_events_past_keep_days_are_deleted(store: str) -> None:
    old = SqliteStore(store)
    old.open()
    now = time.time()
    old.write([
        RecordEvent("call", now - 3 * 86_400, "old"), RecordEvent("call", now - 3600, "recent"),
    ])
    old.close()
    recorder = Recorder(SqliteStore(store), RecordSettings(enabled=True, keep_days=2))
    recorder.add(RecordEvent("call", now, "new"))
    assert recorder.flush()
    recorder.close()
    assert sorted(e.tool for e in SqliteStore(store).query(RecordFilters())) == ["new", "recent"]


def test_a_store_that_cannot_be_written_keeps_the_events_queued(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the record's folder should be")
    recorder = Recorder(SqliteStore(blocker / "r.sqlite3"), RecordSettings(enabled=True))
    recorder.add(RecordEvent("call", time.time(), "x"))
    assert not recorder.flush(timeout=0.5)
    assert recorder.failed is not None
    recorder.close(timeout=0.1)


def test_a_closed_recorder_answers_at_once(tmp_path: Path) -> None:
    # a second close (a registry closed by its user, then by whoever held it) once waited
    # its whole timeout for a writer that had stopped, and then said the events were lost
    recorder = Recorder(SqliteStore(tmp_path / "r.sqlite3"), RecordSettings(enabled=True))
    recorder.add(RecordEvent("call", time.time(), "x"))
    recorder.close()
    assert recorder.flush()  # nothing left unwritten: True, not a timeout's False
    assert asyncio.run(recorder.aflush())
    recorder.close()
    assert len(recorder.query(tool="x")) == 1


def test_a_full_queue_drops_and_counts(tmp_path: Path) -> None:
    settings = RecordSettings(enabled=True, max_pending=100, flush_seconds=60)
    recorder = Recorder(SqliteStore(tmp_path / "r.sqlite3"), settings)
    recorder._thread = object()  # type: ignore[assignment]  # no writer: nothing drains
    for n in range(150):
        recorder.add(RecordEvent("call", time.time(), f"t{n}"))
    assert recorder.dropped == 50


def test_bad_record_settings_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"record\.keep_days"):
        toolplug.load({"record": {"keep_days": -1}}, env={"TOOLPLUG_PLUGINS": ""})
    with pytest.raises(ConfigError, match=r"record\.flush_second.*unknown key"):
        toolplug.load({"record": {"flush_second": 1}}, env={"TOOLPLUG_PLUGINS": ""})


async def test_recording_holds_no_thread_per_call(registry: toolplug.Registry) -> None:
    import threading

    await registry.acall("login", {"user": "warm"})
    before = set(threading.enumerate())
    await asyncio.gather(*(registry.acall("login", {"user": f"u{n}"}) for n in range(200)))
    # none started (an earlier test's idle pool thread may end meanwhile, when collected)
    assert set(threading.enumerate()) <= before
    record = registry.record
    assert record is not None
    assert await record.aflush()
    assert len(await record.aquery(limit=None)) == 201


def test_a_file_written_before_arguments_were_encoded_once_still_reads(store: str) -> None:
    # A row as the record wrote it before (every JSON column by json.dumps): read back whole.
    arguments = {"query": "naïve", "n": [1, 2.5, None, True], "api_key": "***"}
    settings = RecordSettings(enabled=True, store=store)
    recorder = Recorder(SqliteStore(store), settings)
    recorder.add(RecordEvent("call", time.time(), "warm"))  # the table made
    assert recorder.flush()
    recorder.close()
    old = [json.dumps(v, ensure_ascii=False, default=str, separators=(",", ":"))
           for v in (["untrusted"], [], arguments, {"parts": 2})]
    with sqlite3.connect(store) as db:
        db.execute(
            "INSERT INTO events (time, kind, tool, replica, labels, sources, arguments, detail) "
            "VALUES (?, 'call', 'old', 'r', ?, ?, ?, ?)", (time.time(), *old),
        )
    (event,) = SqliteStore(store).query(RecordFilters(tool="old"))
    assert (event.labels, event.sources, event.arguments, event.detail) == (
        ["untrusted"], [], arguments, {"parts": 2}
    )
    assert event.row()[13:16] == tuple(old[:3])  # written again, the same text
    assert "arguments_text" not in event.to_dict()


def test_arguments_are_encoded_once_and_stored_as_before() -> None:
    arguments = {"user": "ann", "password": "hunter2", "deep": [{"token": "t"}, ("x", 1)]}
    value, text = recorded_arguments(arguments, lambda v: v, 4000)
    masked = {"user": "ann", "password": "***", "deep": [{"token": "***"}, ["x", 1]]}
    assert value == masked
    assert text == json.dumps(masked, ensure_ascii=False, separators=(",", ":"))
    event = RecordEvent("call", 0.0, "t", arguments=value, arguments_text=text)
    assert event.row()[15] == text
    assert RecordEvent("call", 0.0, "t", arguments=value).row()[15] == text  # encoded by row
    cut, cut_text = recorded_arguments(arguments, lambda v: v, 20)
    assert cut == text[:17] + "..."
    assert cut_text == json.dumps(cut)  # a cut one is stored as a JSON string, as before
    assert recorded_arguments(arguments, lambda v: v, 0) == (None, None)


def test_missing_values_are_null_and_empty_ones_kept_in_every_statement_size(store: str) -> None:
    # The writer binds a missing value as an empty blob (NULLIF makes it NULL) and writes
    # 64, 32, ... 1 rows a statement: every size, None and "" told apart, order kept.
    db = SqliteStore(store)
    db.open()
    events = [
        RecordEvent("call", float(n), "t", call_id=None if n % 2 else "", reason="",
                    session=None if n % 3 else f"s{n}", arguments={"n": n})
        for n in range(127)
    ]
    db.write(events)
    db.close()
    back = SqliteStore(store).query(RecordFilters(limit=None, oldest_first=True))
    assert [(e.call_id, e.reason, e.session, e.arguments) for e in back] == [
        (e.call_id, e.reason, e.session, e.arguments) for e in events
    ]
    with sqlite3.connect(store) as raw:
        assert raw.execute("SELECT count(*) FROM events WHERE typeof(call_id) = 'blob' "
                           "OR typeof(rule) = 'blob'").fetchone() == (0,)
        assert raw.execute("SELECT count(*) FROM events WHERE rule IS NULL").fetchone() == (127,)
