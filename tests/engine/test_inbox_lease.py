"""The holder's lease on a waiting call's request: a live process keeps its request pending
for as long as it waits, one killed with SIGKILL leaves a request that fails once the lease
lapses, and after that nobody decides it; two sweepers at once move it once, and the
record keeps one ``failed`` event for it. On the SQLite inbox, the holder a real process
of its own (the Redis side: tests/serve/test_approval_replicas.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import Site
from tests.helpers.posting import approvals_cli, posting_plugin
from toolplug import ErrorType
from toolplug.state._events import RecordEvent, RecordFilters
from toolplug.state._inbox import STOPPED, DecisionRefused, Inbox, PendingRequest
from toolplug.state._record import SqliteStore
from toolplug.state._sqlite_backend import SqliteBackend

MODULE = "lease_tools"
HOLDER = """
import asyncio, sys
import toolplug
import lease_tools
registry = toolplug.load(sys.argv[1], env={"TOOLPLUG_PLUGINS": ""},
                         plugins=[("lease_tools", lease_tools)])
asyncio.run(registry.acall("post", {"text": sys.argv[2]}))
"""


@pytest.fixture
def tools(site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with posting_plugin(site, monkeypatch, MODULE) as module:
        yield module


def _config(tmp_path: Path, lease: float = 1.0, *, record: bool = False) -> Path:
    path = tmp_path / "toolplug.toml"
    kept = f'[record]\nenabled = true\nstore = "{tmp_path / "record.sqlite3"}"\n'
    path.write_text(
        f'[approvals]\ninbox = true\nstore = "sqlite:{tmp_path / "approvals.db"}"\n'
        f"wait_seconds = 60\nlease_seconds = {lease}\n" + (kept if record else ""),
        encoding="utf-8",
    )
    return path


def _decisions(tmp_path: Path) -> list[RecordEvent]:
    """The approval decisions the record file keeps, oldest first."""
    return SqliteStore(tmp_path / "record.sqlite3").query(
        RecordFilters(kind="approval.decision", oldest_first=True)
    )


async def _listed(tmp_path: Path) -> list[PendingRequest]:
    """The pending requests, read (and swept) as another process would: the file's own."""
    backend = SqliteBackend(tmp_path / "approvals.db")
    try:
        return await Inbox(backend).listing(every_owner=True)
    finally:
        await backend.aclose()


async def _holder(config: Path, site: Site) -> asyncio.subprocess.Process:
    """A process whose call "doomed" waits for approval (``HOLDER``), to be killed."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, str(config), "doomed",
        env={**os.environ, "PYTHONPATH": str(site.path)},
        stderr=asyncio.subprocess.PIPE,
    )


async def _one_pending(tmp_path: Path, call: asyncio.Task[Any] | None = None) -> PendingRequest:
    for _ in range(400):
        found = await _listed(tmp_path)
        if found:
            (request,) = found
            return request
        if call is not None and call.done():  # it never waited: say how it ended instead
            raise AssertionError(f"the call ended without waiting: {call.result()!r}")
        await asyncio.sleep(0.025)
    raise AssertionError("no request came")


def test_a_killed_holder_leaves_a_failed_request_nobody_decides(
    tools: Any, site: Site, tmp_path: Path
) -> None:
    config = _config(tmp_path)

    async def scenario() -> None:
        holder = await _holder(config, site)
        try:
            request = await _one_pending(tmp_path)
            assert request.lease == 1.0
            await asyncio.sleep(1.5)  # longer than the lease: the live holder renewed it
            assert [r.id for r in await _listed(tmp_path)] == [request.id]
        finally:
            holder.send_signal(signal.SIGKILL)
            await holder.wait()
        await asyncio.sleep(1.2)  # the lease lapses
        code, _, err = await approvals_cli(config, "approve", request.id)
        assert code == 1
        assert "failed" in err
        assert STOPPED in err
        assert "no decision counts" in err
        assert await _listed(tmp_path) == []  # not waiting any more
        backend = SqliteBackend(tmp_path / "approvals.db")
        try:
            failed = await Inbox(backend).get(request.id)
        finally:
            await backend.aclose()
        assert failed is not None
        assert (failed.state, failed.note, failed.decided_by) == ("failed", STOPPED, None)
        code, _, err = await approvals_cli(config, "deny", request.id)  # and again
        assert code == 1
        assert STOPPED in err

    asyncio.run(scenario())
    assert tools.RAN == []


def test_a_live_holder_keeps_its_request_and_the_decision_resumes_it(
    tools: Any, tmp_path: Path
) -> None:
    config = _config(tmp_path, lease=0.3)
    registry = toolplug.load(config, env={"TOOLPLUG_PLUGINS": ""}, plugins=[(MODULE, tools)])

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "kept"}))
        request = await _one_pending(tmp_path)  # each listing sweeps: the lease held
        for _ in range(10):
            await asyncio.sleep(0.1)
            assert [r.id for r in await _listed(tmp_path)] == [request.id]
        decided = await registry.approvals.adecide(request.id, True)
        assert decided.state == "approved"
        assert (await asyncio.wait_for(call, 10)).ok

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert tools.RAN == ["kept"]


def test_two_sweepers_move_a_lapsed_request_once(tmp_path: Path) -> None:
    path = tmp_path / "approvals.db"

    async def scenario() -> None:
        one, two = SqliteBackend(path), SqliteBackend(path)
        try:
            inboxes = Inbox(one), Inbox(two)
            request = PendingRequest.new("post", {}, "why", wait_seconds=60, lease=0.3)
            await inboxes[0].put(request)
            await asyncio.sleep(0.5)
            moved: list[PendingRequest] = []
            for inbox in inboxes:
                inbox.swept = moved.append
            swept = await asyncio.gather(*(i.sweep([request]) for i in inboxes))
            ((first,), (second,)) = swept
            assert moved == [first]  # told once: only the compare-and-set that won
            assert first == second  # one record: the second read what the first wrote
            assert (first.state, first.note) == ("failed", STOPPED)
            with pytest.raises(DecisionRefused) as refused:
                await inboxes[1].decide(request.id, True, by=None)
            assert refused.value.why == "failed"
        finally:
            await one.aclose()
            await two.aclose()

    asyncio.run(scenario())


def test_a_holder_that_finds_its_request_failed_refuses_the_call(
    tools: Any, tmp_path: Path
) -> None:
    config = _config(tmp_path, lease=0.3)
    registry = toolplug.load(config, env={"TOOLPLUG_PLUGINS": ""}, plugins=[(MODULE, tools)])

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "lost"}))
        request = await _one_pending(tmp_path, call)
        approvals = registry.approvals
        await approvals.inbox.backend.delete("lease:" + request.id)  # as if it lapsed
        await approvals.inbox.close(request.id, "failed", STOPPED)
        result = await asyncio.wait_for(call, 10)
        assert result.error is not None
        assert result.error.type == ErrorType.APPROVAL_REQUIRED
        assert result.error.details["state"] == "failed"
        assert STOPPED in result.error.message

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert tools.RAN == []


def test_the_failure_of_a_killed_holder_is_recorded_once(
    tools: Any, site: Site, tmp_path: Path
) -> None:
    config = _config(tmp_path, record=True)

    async def scenario() -> str:
        holder = await _holder(config, site)
        try:
            request = await _one_pending(tmp_path)
            await asyncio.sleep(0.5)  # the holder's writer stores its "asked" event
        finally:
            holder.send_signal(signal.SIGKILL)
            await holder.wait()
        await asyncio.sleep(1.2)  # the lease lapses
        listed = await asyncio.gather(*(approvals_cli(config, "list") for _ in range(2)))
        assert [code for code, _, _ in listed] == [0, 0]
        assert all(request.id not in out for _, out, _ in listed)
        code, _, err = await approvals_cli(config, "approve", request.id)
        assert (code, STOPPED in err) == (1, True)
        return request.id

    request_id = asyncio.run(scenario())
    failed, refused = _decisions(tmp_path)
    assert (failed.status, failed.rule, failed.reason, failed.tool) == (
        "failed", "lease", STOPPED, "post"
    )
    assert failed.detail == {"request": request_id, "owner": None}
    assert (refused.status, refused.detail["why"]) == ("refused", "failed")
    asked = SqliteStore(tmp_path / "record.sqlite3").query(RecordFilters(kind="approval.request"))
    assert [e.status for e in asked] == ["asked"]
    assert tools.RAN == []


def test_a_live_holder_does_not_record_its_failed_request_twice(
    tools: Any, tmp_path: Path
) -> None:
    config = _config(tmp_path, lease=30, record=True)  # no renewal while the test runs
    registry = toolplug.load(config, env={"TOOLPLUG_PLUGINS": ""}, plugins=[(MODULE, tools)])

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": "lost"}))
        request = await _one_pending(tmp_path, call)
        approvals = registry.approvals
        await approvals.inbox.backend.delete("lease:" + request.id)  # as if it lapsed
        assert await approvals.apending(every_owner=True) == []  # this process sweeps it
        result = await asyncio.wait_for(call, 10)
        assert result.error is not None
        assert result.error.details["state"] == "failed"
        assert registry.record is not None
        assert await registry.record.aflush()

    try:
        asyncio.run(scenario())
    finally:
        registry.close()
    assert [(e.status, e.rule) for e in _decisions(tmp_path)] == [("failed", "lease")]
    assert tools.RAN == []
