"""``toolplug history``, run as a user runs it (a subprocess), against a record that real
calls wrote: a guarded conversation, an approval denied, failures, secrets; filters, newest
first, JSON lines, and exports as JSON lines and CSV, paged past one page of the store."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import run_cli
from tests.helpers.guard import PLUGIN, POSTED
from toolplug import Approval
from toolplug.cli._history import PAGE

WRITER = Path(__file__).parents[1] / "helpers" / "record_writer.py"
SECRET = "sk-live-51b0c2d9e7"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A toolplug.toml with the record on, and what real calls left in it."""
    folder = tmp_path_factory.mktemp("history")
    config = folder / "toolplug.toml"
    config.write_text(
        'state_dir = "state"\n[record]\nenabled = true\n', encoding="utf-8",
    )
    POSTED.clear()
    registry = toolplug.load(config, plugins=[PLUGIN], env={})
    started = time.time()

    async def calls() -> str:
        async with registry.conversation("Summarize today's news for me") as conversation:
            assert (await registry.acall(
                "read_page", {"url": "https://news.example/today"},
                context={"client": "principal:ada", "call_id": "r1"},
            )).ok
            denied = await registry.acall(
                "post", {"text": "notes: https://collect.evil.example/drop?k=1"},
                approver=lambda request: Approval(False, "not that site"),
                context={"client": "principal:ada", "call_id": "p1"},
            )
            assert denied.error is not None
        await registry.acall("post", {"text": "hello"},
                             approver=lambda request: Approval(True),
                             context={"client": "principal:bo", "call_id": "p2"})
        await registry.acall("nowhere", {"api_key": SECRET, "user": "bo"},
                             context={"client": "principal:bo"})
        record = registry.record
        assert record is not None
        assert await record.aflush()
        return conversation.id

    conversation = asyncio.run(calls())
    registry.close()
    return {"config": config, "conversation": conversation, "started": started}


def history(recorded: dict[str, Any], *args: str) -> Any:
    done = run_cli("history", *args, "--config", str(recorded["config"]))
    assert done.code == 0, done.err
    return done


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_the_table_lists_the_newest_first_with_the_reasons(recorded: dict[str, Any]) -> None:
    done = history(recorded)
    header, *rows = done.out.splitlines()
    assert header.split() == ["TIME", "(UTC)", "KIND", "TOOL", "STATUS", "PRINCIPAL", "WHAT"]
    assert rows[0].split()[2:5] == ["call", "nowhere", "NotFoundError"]
    guard = next(r for r in rows if " guard " in r and "principal:ada" in r)
    assert "ask" in guard
    assert "flow.token" in guard
    assert "read_page" in guard  # the reason names where the text came from
    denial = next(r for r in rows if "approval.decision" in r and "denied" in r)
    assert "not that site" in denial
    assert SECRET not in done.out


def test_json_lines_are_the_events_newest_first_secrets_out(recorded: dict[str, Any]) -> None:
    events = lines(history(recorded, "--json").out)
    assert [e["id"] for e in events] == sorted((e["id"] for e in events), reverse=True)
    assert {e["kind"] for e in events} == {
        "call", "guard", "approval.request", "approval.decision",
    }
    [posted] = [e for e in events if e["call_id"] == "p2" and e["kind"] == "call"]
    assert posted["status"] == "ok"
    assert posted["arguments"] == {"text": "hello"}
    [nowhere] = [e for e in events if e["tool"] == "nowhere"]
    assert nowhere["arguments"] == {"api_key": "***", "user": "bo"}
    assert posted["principal"] == "principal:bo"
    assert posted["replica"]
    assert posted["duration_ms"] >= 0


def test_filters_narrow_the_events(recorded: dict[str, Any]) -> None:
    by_tool = lines(history(recorded, "--json", "--tool", "post").out)
    assert by_tool
    assert {e["tool"] for e in by_tool} == {"post"}
    ada = lines(history(recorded, "--json", "--principal", "principal:ada").out)
    assert {e["call_id"] for e in ada} == {"r1", "p1"}
    talk = lines(history(recorded, "--json", "--conversation", recorded["conversation"]).out)
    assert {e["call_id"] for e in talk} == {"r1", "p1"}
    kinds = lines(history(recorded, "--json", "--kind", "approval.decision").out)
    assert [(e["call_id"], e["status"]) for e in kinds] == [("p1", "denied")]
    one = lines(history(recorded, "--json", "--call-id", "p1", "--kind", "guard").out)
    assert [e["status"] for e in one] == ["ask"]
    failed = lines(history(recorded, "--json", "--status", "NotFoundError").out)
    assert [e["tool"] for e in failed] == ["nowhere"]
    assert len(lines(history(recorded, "--json", "--limit", "2").out)) == 2
    every = lines(history(recorded, "--json", "--since", "1h").out)
    assert len(every) == len(lines(history(recorded, "--json").out))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(recorded["started"] - 1))
    assert len(lines(history(recorded, "--json", "--since", stamp).out)) == len(every)
    assert lines(history(recorded, "--json", "--until", stamp).out) == []
    later = history(recorded, "--since", "2999-01-01")
    assert later.out == "no events recorded match\n"


def test_an_export_is_every_event_oldest_first_in_jsonl_and_csv(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    exported = lines(history(recorded, "export").out)
    listed = lines(history(recorded, "--json").out)
    assert exported == listed[::-1]
    target = tmp_path / "export" / "out.csv"
    target.parent.mkdir()
    done = history(recorded, "export", "--format", "csv", "--output", str(target))
    assert done.out == ""
    assert done.err == f"wrote {target}\n"
    rows = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
    assert [int(r["id"]) for r in rows] == [e["id"] for e in exported]
    guard = next(r for r in rows if r["kind"] == "guard")
    assert json.loads(guard["sources"])[0]["source"]["tool"] == "read_page"
    assert json.loads(guard["labels"]) == ["untrusted"]
    assert SECRET not in target.read_text(encoding="utf-8")
    assert [p.name for p in target.parent.iterdir()] == ["out.csv"]  # no partial file left


def test_an_export_pages_through_more_than_one_page(tmp_path: Path) -> None:
    store = tmp_path / "record.sqlite3"
    count = PAGE * 2 + 7
    writer = subprocess.run(
        [sys.executable, str(WRITER), str(store), str(count), "w1", "race"], timeout=300,
        check=False,
    )
    assert writer.returncode == 0
    done = run_cli("history", "export", "--store", str(store))
    assert done.code == 0, done.err
    events = lines(done.out)
    assert [e["arguments"]["n"] for e in events] == list(range(count))
    limited = run_cli("history", "export", "--store", str(store), "--limit", str(PAGE + 1))
    assert [e["arguments"]["n"] for e in lines(limited.out)] == list(range(PAGE + 1))
    newest = run_cli("history", "--store", str(store), "--json", "--limit", "3")
    assert [e["arguments"]["n"] for e in lines(newest.out)] == [count - 1, count - 2, count - 3]


def test_without_a_record_it_says_how_to_keep_one(tmp_path: Path) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text('state_dir = "state"\n', encoding="utf-8")
    done = run_cli("history", "--config", str(config))
    assert done.code == 0
    assert done.out == "no events recorded\n"
    assert "[record] enabled = true" in done.err
    assert str(tmp_path / "state" / "record.sqlite3") in done.err
    assert not (tmp_path / "state" / "record.sqlite3").exists()  # reading writes nothing


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--since", "yesterday"], "expected a time ago"),
        (["--kind", "calls"], "invalid choice"),
        (["--output", "x.jsonl"], "--output is for export"),
        (["export", "--format", "xml"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args: list[str], said: str, tmp_path: Path) -> None:
    done = run_cli("history", *args, "--store", str(tmp_path / "r.sqlite3"))
    assert done.code == 2
    assert said in done.err
    assert len(done.err.strip().splitlines()) == 1
