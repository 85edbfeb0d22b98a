"""The record in PostgreSQL, against a real server the test starts (tests/helpers/postgres.py):
the engine's events land in the table; two replicas in one process and two processes at
once lose nothing; a server restarted mid-run loses no event, acknowledged or queued;
retention, filters, `toolplug history` reading it; the password never shown."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import run_cli
from tests.helpers.postgres import Postgres, postgres_server
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult
from toolplug.config._record import RecordSettings
from toolplug.state._events import RecordEvent, RecordFilters
from toolplug.state._record import Recorder

pytestmark = pytest.mark.anyio

WRITER = Path(__file__).parents[1] / "helpers" / "record_writer.py"


@pytest.fixture(scope="module")
def server() -> Iterator[Postgres]:
    with postgres_server() as running:
        yield running


def _rows(address: str, sql: str, *values: Any) -> list[tuple[Any, ...]]:
    import psycopg  # the postgres extra: the fixture skipped where it is missing

    with psycopg.connect(address) as db:
        return [tuple(row) for row in db.execute(sql, values).fetchall()]


class Ping(Tool):
    metadata = ToolMetadata(
        name="ping",
        description="Answer pong.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {"token": {"type": "string"}, "n": {"type": "integer"}},
        },
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("pong")


class Plugin:
    @toolplug.hookimpl
    def register_tools(self, register: Any) -> None:
        register(Ping)


def _replica(address: str, name: str, **record: Any) -> toolplug.Registry:
    return toolplug.load(
        {"record": {"enabled": True, "store": address, "replica": name, **record}},
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("ping", Plugin())],
    )


async def test_two_replicas_record_into_one_table(server: Postgres) -> None:
    left, right = _replica(server.address, "left"), _replica(server.address, "right")
    try:
        for n in range(20):
            replica = left if n % 2 else right
            await replica.acall(
                "ping", {"token": f"t{n}"},
                context={"client": "principal:ada", "call_id": f"two-{n}"},
            )
        for replica in (left, right):
            record = replica.record
            assert record is not None
            assert await record.aflush()
        stored = _rows(
            server.address,
            "SELECT replica, principal, status, arguments FROM toolplug_events "
            "WHERE call_id LIKE 'two-%%'",
        )
        assert len(stored) == 20
        assert {row[0] for row in stored} == {"left", "right"}
        assert {row[1:3] for row in stored} == {("principal:ada", "ok")}
        assert {json.loads(row[3])["token"] for row in stored} == {"***"}  # secret-named
        record = left.record
        assert record is not None
        [seven] = await record.aquery(call_id="two-7")
        assert (seven.replica, seven.kind, seven.tool) == ("left", "call", "ping")
    finally:
        left.close()
        right.close()


def test_an_acknowledged_event_is_committed(server: Postgres) -> None:
    from toolplug.state._record_pg import PostgresStore

    recorder = Recorder(PostgresStore(server.address), RecordSettings(flush_seconds=30))
    recorder.add(RecordEvent("call", time.time(), "acked", status="ok"))
    assert recorder.flush(timeout=20)  # long before flush_seconds: the flush wrote it
    assert _rows(server.address, "SELECT status FROM toolplug_events WHERE tool = 'acked'") == [
        ("ok",),
    ]
    recorder.close()


def test_two_processes_write_at_once_and_lose_nothing(server: Postgres) -> None:
    writers = [
        subprocess.Popen([sys.executable, str(WRITER), server.address, "400", name, "race"])
        for name in ("proc-a", "proc-b")
    ]
    for writer in writers:
        assert writer.wait(180) == 0
    for name in ("proc-a", "proc-b"):
        mine = _rows(
            server.address,
            "SELECT arguments FROM toolplug_events WHERE replica = %s ORDER BY id", name,
        )
        assert [json.loads(row[0])["n"] for row in mine] == list(range(400))  # order kept


async def test_a_restart_mid_run_loses_no_event(
    server: Postgres, caplog: pytest.LogCaptureFixture
) -> None:
    registry = _replica(server.address, "bounced", flush_seconds=0.05)
    record = registry.record
    assert record is not None
    acked: list[int] = []
    total = 300

    def bounce() -> None:
        server.stop("immediate")  # as a crash: clients cut off mid-batch
        time.sleep(1.0)  # calls go on meanwhile: their events wait queued
        server.start()

    try:
        restart: asyncio.Task[None] | None = None
        for n in range(total):
            await registry.acall("ping", {"n": n}, context={"call_id": f"b-{n}"})
            if n == 100:
                assert await record.aflush()
                acked = list(range(n + 1))
                restart = asyncio.create_task(asyncio.to_thread(bounce))
            await asyncio.sleep(0.002)
        assert restart is not None
        await restart
        assert await record.aflush(timeout=60)
        assert record.failed is None  # written since: the last batch succeeded
        assert record.dropped == 0
    finally:
        registry.close()
    stored = [
        json.loads(row[0])["n"]
        for row in _rows(
            server.address,
            "SELECT arguments FROM toolplug_events WHERE replica = 'bounced' ORDER BY id",
        )
    ]
    said = [r.getMessage() for r in caplog.records if r.name == "toolplug.record"]
    assert any("could not be written" in m and "retrying" in m for m in said), said
    assert set(acked) <= set(stored)  # every acknowledged event is there
    assert sorted(set(stored)) == list(range(total))  # and every queued one since
    # A batch the server committed as it died, before saying so, is written again: it may
    # be stored twice (never lost). Here: at most one batch's worth.
    assert len(stored) - total <= 512


def test_a_replica_started_while_the_database_is_down_writes_once_it_is_up(
    server: Postgres,
) -> None:
    from toolplug.state._record_pg import PostgresStore

    server.stop()
    try:
        recorder = Recorder(PostgresStore(server.address), RecordSettings(flush_seconds=0.05))
        for n in range(50):
            recorder.add(RecordEvent("call", time.time(), "early", arguments={"n": n}))
        assert not recorder.flush(timeout=0.5)  # nowhere to write yet: kept queued
        assert recorder.failed is not None
    finally:
        server.start()
    assert recorder.flush(timeout=30)
    recorder.close()
    stored = _rows(server.address, "SELECT arguments FROM toolplug_events WHERE tool = 'early'")
    assert sorted(json.loads(row[0])["n"] for row in stored) == list(range(50))


def test_retention_and_filters(server: Postgres) -> None:
    from toolplug.state._record_pg import PostgresStore

    old = Recorder(PostgresStore(server.address), RecordSettings())
    now = time.time()
    old.add(RecordEvent("call", now - 10 * 86_400, "ancient"))
    assert old.flush()
    old.close()
    pruning = Recorder(PostgresStore(server.address), RecordSettings(keep_days=1))
    pruning.add(RecordEvent("guard", now, "fresh", status="deny", rule="policies.fresh[0]"))
    assert pruning.flush()
    store = pruning.store
    assert store.query(RecordFilters(tool="ancient")) == []
    [found] = store.query(RecordFilters(kind="guard", since=now - 1, tool="fresh"))
    assert (found.status, found.rule) == ("deny", "policies.fresh[0]")
    pruning.close()


def test_history_reads_the_database(server: Postgres) -> None:
    registry = _replica(server.address, "cli")
    try:
        registry.call("ping", {"n": 1}, context={"call_id": "cli-1", "client": "principal:bo"})
        record = registry.record
        assert record is not None
        assert record.flush()
    finally:
        registry.close()
    done = run_cli("history", "--store", server.address, "--json", "--call-id", "cli-1")
    assert done.code == 0, done.err
    [event] = [json.loads(line) for line in done.out.splitlines()]
    assert (event["replica"], event["principal"], event["status"]) == ("cli", "principal:bo", "ok")


def test_the_address_is_shown_without_its_password() -> None:
    pytest.importorskip("psycopg")
    from toolplug.state._record_pg import PostgresStore

    store = PostgresStore("postgresql://ada:s3cret@db.internal:5433/record")
    assert store.where == "postgresql://ada@db.internal:5433/record"
