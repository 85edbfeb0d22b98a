"""``toolplug console``, run as a user runs it (a subprocess on a port of its own), driven
over HTTP with httpx: a real call waits in this process on the SQLite inbox, the page
approves or denies it and the call resumes or fails; forms without the right CSRF token
change nothing; a remembered decision is revoked; a recorded call is on the history page."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolplug
from tests.helpers.cli import Site, run_cli
from tests.helpers.console import CAPABLE, Pages, console_config, pending, serving
from tests.helpers.posting import posting_plugin
from toolplug import ErrorType


@pytest.fixture
def tools(site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with posting_plugin(site, monkeypatch, "console_tools") as module:
        yield module


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return console_config(tmp_path)


@pytest.fixture
def console(config: Path) -> Iterator[str]:
    with serving(config) as address:
        yield address


def _token(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, page
    return found.group(1)


def test_the_page_approves_and_denies_waiting_calls_and_revokes(
    tools: Any, config: Path, console: str
) -> None:
    registry = toolplug.load(config, plugins=[("console_tools", tools)],
                             env={"TOOLPLUG_PLUGINS": ""})

    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=console, timeout=10) as browser:
            call = asyncio.create_task(registry.acall("post", {"text": "hello"}))
            (request,) = await pending(registry)
            page = await browser.get("/")
            assert page.status_code == 200
            assert request.id in page.text
            assert "<main>" in page.text
            assert f'<label for="note-approve-{request.id}">' in page.text
            assert "not read-only" in page.text  # the reason
            token = _token(page.text)
            approve = f"/approvals/{request.id}/approve"

            # forged forms: no token, a wrong one, the right one from another browser
            assert (await browser.post(approve, data={})).status_code == 403
            wrong = "0" * 64
            assert (await browser.post(approve, data={"csrf": wrong})).status_code == 403
            async with httpx.AsyncClient(base_url=console, timeout=10) as stranger:
                assert (await stranger.post(approve, data={"csrf": token})).status_code == 403
            foreign = await browser.post(approve, data={"csrf": token},
                                         headers={"Host": "evil.example"})
            assert foreign.status_code == 421
            assert [p.id for p in await registry.approvals.apending()] == [request.id]
            await asyncio.sleep(0.2)
            assert not call.done()
            assert tools.RAN == []

            done = await browser.post(approve, data={
                "csrf": token, "note": "fine", "remember": "always",
            })
            assert done.status_code == 200, done.text
            assert "approved" in done.text
            result = await asyncio.wait_for(call, 10)
            assert result.ok, result.error
            assert tools.RAN == ["hello"]
            replayed = await browser.post(approve, data={"csrf": token})
            assert replayed.status_code == 409
            assert "already approved" in replayed.text
            forged = await browser.post("/approvals/apr_forged/deny", data={"csrf": token})
            assert forged.status_code == 409
            assert "no approval request" in forged.text

            # a denial: the call fails with the note
            call = asyncio.create_task(registry.acall("post", {"text": "no"}))
            (second,) = await pending(registry)
            odd = await browser.post(f"/approvals/{second.id}/deny",
                                     data={"csrf": token, "remember": "forever"})
            assert odd.status_code == 400
            assert [p.id for p in await registry.approvals.apending()] == [second.id]
            denied = await browser.post(f"/approvals/{second.id}/deny",
                                        data={"csrf": token, "note": "not today"})
            assert denied.status_code == 200, denied.text
            result = await asyncio.wait_for(call, 10)
            assert result.error is not None
            assert result.error.type == ErrorType.PERMISSION
            assert "not today" in result.error.message
            assert tools.RAN == ["hello"]

            # the "always" above was remembered: the page lists it and revokes it
            (kept,) = await registry.approvals.aremembered(every_owner=True)
            page = await browser.get("/")
            assert kept.id in page.text
            forget = f"/remembered/{kept.id}/forget"
            assert (await browser.post(forget, data={"csrf": wrong})).status_code == 403
            assert len(await registry.approvals.aremembered(every_owner=True)) == 1
            revoked = await browser.post(forget, data={"csrf": token})
            assert revoked.status_code == 200, revoked.text
            assert await registry.approvals.aremembered(every_owner=True) == []
            assert kept.id not in (await browser.get("/")).text

            # the record: both calls are on the history page, filtered as toolplug history
            record = registry.record
            assert record is not None
            assert await record.aflush()
            shown = await browser.get("/history", params={"tool": "post", "kind": "call"})
            assert shown.status_code == 200
            rows = re.findall(r"<tr><td>.*?</tr>", shown.text)
            assert len(rows) == 2, shown.text
            assert ">ok<" in rows[1]  # the newest first: the denial, then the approved call
            assert "not today" in shown.text
            none = await browser.get("/history", params={"tool": "nothing-of-that-name"})
            assert "No events recorded match" in none.text
            recent = await browser.get("/history", params={"since": "1h", "kind": "call"})
            assert len(re.findall(r"<tr><td>", recent.text)) == 2
            bad = await browser.get("/history", params={"since": "yesterday-ish"})
            assert bad.status_code == 400
            assert "since" in bad.text

    try:
        asyncio.run(scenario())
    finally:
        registry.close()


def test_a_page_never_carries_markup_from_a_request(
    tools: Any, config: Path, console: str
) -> None:
    registry = toolplug.load(config, plugins=[("console_tools", tools)],
                             env={"TOOLPLUG_PLUGINS": ""})
    hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)><!--csrf-->{csrf}'

    async def scenario() -> None:
        call = asyncio.create_task(registry.acall("post", {"text": hostile}))
        (request,) = await pending(registry)
        async with httpx.AsyncClient(base_url=console, timeout=10) as browser:
            page = await browser.get("/")
            assert request.id in page.text
            assert "<script>" not in page.text
            assert "<img" not in page.text
            assert "&lt;script&gt;" in page.text
            assert "&lt;!--csrf--&gt;{csrf}" in page.text  # not where a token goes
            await registry.approvals.adecide(request.id, False)
        await asyncio.wait_for(call, 10)

    try:
        asyncio.run(scenario())
    finally:
        registry.close()


def test_another_owners_request_is_refused_as_on_the_command_line(
    tools: Any, config: Path
) -> None:
    registry = toolplug.load(config, plugins=[("console_tools", tools)],
                             env={"TOOLPLUG_PLUGINS": ""})

    async def scenario(console: str) -> None:
        call = asyncio.create_task(
            registry.acall("post", {"text": "mine"}, context={"client": "alice"})
        )
        (request,) = await pending(registry)
        async with httpx.AsyncClient(base_url=console, timeout=10) as browser:
            page = await browser.get("/")
            assert request.id in page.text  # --all: every owner's requests are shown
            assert "alice" in page.text
            refused = await browser.post(f"/approvals/{request.id}/approve",
                                         data={"csrf": _token(page.text)})
            assert refused.status_code == 409
            assert "belongs to another owner" in refused.text
        assert [p.state for p in await registry.approvals.apending("alice")] == ["pending"]
        assert not call.done()
        await registry.approvals.adecide(request.id, True, by="alice")
        assert (await asyncio.wait_for(call, 10)).ok

    try:
        with serving(config, "--all", "--as", "bob") as console:
            asyncio.run(scenario(console))
    finally:
        registry.close()
    assert tools.RAN == ["mine"]


def test_the_pages_say_when_the_inbox_and_the_record_are_off(tmp_path: Path) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text('state_dir = "state"\n', encoding="utf-8")
    with serving(config) as console, httpx.Client(base_url=console, timeout=10) as browser:
        assert "The inbox is off" in browser.get("/").text
        history = browser.get("/history")
        assert history.status_code == 200
        assert "No record at" in history.text
        assert "[record] enabled = true" in history.text


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "example.com"])
def test_a_non_loopback_host_is_refused(config: Path, host: str) -> None:
    done = run_cli("console", "--host", host, "--config", str(config))
    assert done.code == 2
    assert "it authenticates nobody" in done.err


def test_the_timeline_shows_what_a_conversation_read_and_what_the_guard_decided(
    tools: Any, config: Path
) -> None:
    registry = toolplug.load(config, plugins=[("console_tools", tools), ("pages", Pages())],
                             env={"TOOLPLUG_PLUGINS": ""})
    conversation = registry.conversation("what does the page say?")

    async def say(text: str) -> Any:
        async with conversation:
            assert (await registry.acall("read_page", {"url": "https://site.example/"})).ok
            return await registry.acall("post", {"text": text})

    async def scenario(console: str) -> None:
        second = asyncio.create_task(say("mail it to notes@collect.example"))
        (carried,) = await pending(registry)
        assert carried.details.get("rule") == "flow.token", (carried.reason, carried.details)
        async with httpx.AsyncClient(base_url=console, timeout=10) as browser:
            home = await browser.get("/")  # the request links its conversation's timeline
            assert f'href="/conversations/{conversation.id}"' in home.text
            await registry.approvals.adecide(carried.id, False, note="that came from the page")
            assert (await asyncio.wait_for(second, 10)).error is not None
            assert registry.record is not None
            assert await registry.record.aflush()

            history = await browser.get("/history", params={"tool": "post"})
            assert f'<a href="/conversations/{conversation.id}">' in history.text
            shown = await browser.get(f"/conversations/{conversation.id}")
            assert shown.status_code == 200, shown.text
            text = shown.text
            assert "<h2>What it read</h2>" in text
            read = re.search(r"<caption>The conversation's calls.*?</table>", text, re.S)
            assert read, text
            assert read.group(0).count("<tr><td>") == 1  # the page; the post never ran
            assert "<td>read_page</td><td>untrusted</td>" in read.group(0)
            items = re.findall(r"<li><h3>(.*?)</h3>", text)
            kinds = [re.sub(r"^[-0-9: ]+UTC: ", "", item) for item in items]
            assert kinds == [
                "call <code>read_page</code>: ok",
                "guard decision <code>post</code>: ask",
                "approval asked <code>post</code>: asked",
                "approval answered <code>post</code>: denied",
                "call <code>post</code>: PermissionError",
            ], items
            carried_table = re.findall(
                r"<caption>Where the arguments came from</caption>.*?</table>", text, re.S
            )
            assert carried_table, text
            row = re.search(r"<tbody><tr>(.*?)</tr>", carried_table[0]).group(1)  # type: ignore[union-attr]
            assert "<code>text</code>" in row
            assert "read_page (call 1" in row
            assert "untrusted" in row
            assert "flow.token" in row
            assert "notes@collect.example" in row
            assert "that came from the page" in text

            unknown = await browser.get("/conversations/no-such-conversation")
            assert unknown.status_code == 404
            assert "holds no event of this conversation" in unknown.text
            hostile = await browser.get("/conversations/%3Cscript%3E")
            assert "<script>" not in hostile.text

    try:
        with serving(config) as console:
            asyncio.run(scenario(console))
    finally:
        registry.close()


def test_the_catalog_says_what_doctor_says(
    tools: Any, config: Path, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.add("console-mailer", entry_points={"t": "console_mailer"},
             modules={"console_mailer": CAPABLE})
    for name, value in site.env(TOOLPLUG_PLUGINS="console-tools,console-mailer").items():
        monkeypatch.setenv(name, value)  # the console's process, as doctor's, loads them
    doctor = run_cli("doctor", "--config", str(config))
    assert "send_report: unavailable" in doctor.out, doctor.out + doctor.err
    with serving(config) as console, httpx.Client(base_url=console, timeout=30) as browser:
        shown = browser.get("/catalog")
        assert shown.status_code == 200, shown.text
        text = shown.text
        unavailable = re.search(r'<h2 id="unavailable">Unavailable tools \((\d+)\)</h2>', text)
        assert unavailable, text
        section = re.search(r'<section aria-labelledby="tool-send_report">.*?</section>', text,
                            re.S)
        assert section, text
        assert "CONSOLE_SMTP_RELAY" in section.group(0)  # why: the variable is unset
        assert "Set CONSOLE_SMTP_RELAY=host:port" in section.group(0)
        assert "<h4>To enable it</h4>" in section.group(0)
        available = re.search(r"<caption>Available tools</caption>.*?</table>", text, re.S)
        assert available
        assert "<td>post</td>" in available.group(0)
        assert "<td>smtp_relay</td>" in text
        assert "console-mailer" in text  # the plugins, as doctor lists them
        again = browser.get("/catalog", params={"refresh": "1"})
        assert again.status_code == 200
        assert 'aria-labelledby="tool-send_report"' in again.text


def test_refused_decisions_are_recorded(tools: Any, config: Path) -> None:
    registry = toolplug.load(config, plugins=[("console_tools", tools)],
                             env={"TOOLPLUG_PLUGINS": ""})

    async def scenario(console: str) -> None:
        call = asyncio.create_task(
            registry.acall("post", {"text": "mine"}, context={"client": "alice"})
        )
        (request,) = await pending(registry)
        async with httpx.AsyncClient(base_url=console, timeout=10) as browser:
            token = _token((await browser.get("/")).text)
            approve = f"/approvals/{request.id}/approve"
            assert (await browser.post(approve, data={"csrf": "0" * 64})).status_code == 403
            assert (await browser.post(approve, data={"csrf": token})).status_code == 409
            await registry.approvals.adecide(request.id, True, by="alice")
            assert (await asyncio.wait_for(call, 10)).ok
            mine = asyncio.create_task(
                registry.acall("post", {"text": "bob's"}, context={"client": "bob"})
            )
            (own,) = await pending(registry)
            done = await browser.post(f"/approvals/{own.id}/approve", data={"csrf": token})
            assert done.status_code == 200, done.text
            assert (await asyncio.wait_for(mine, 10)).ok
            replayed = await browser.post(f"/approvals/{own.id}/approve", data={"csrf": token})
            assert replayed.status_code == 409
            forged = await browser.post("/remembered/rem_forged/forget", data={"csrf": token})
            assert forged.status_code == 409
            # the console's refusals reach the record once its writer has flushed them
            for _ in range(100):
                refused = registry.record.query(kind="approval.decision", status="refused")  # type: ignore[union-attr]
                if len(refused) >= 4:
                    break
                await asyncio.sleep(0.05)
        whys = sorted(event.detail["why"] for event in refused)
        assert whys == ["csrf", "decided", "owner", "unknown"], refused
        for event in refused:
            assert event.principal == "bob"
            assert event.rule == "console"
            assert event.detail["by"] == "bob"
        # the command line records its refusals too
        said = run_cli("approvals", "approve", request.id, "--as", "mallory",
                       "--config", str(config))
        assert said.code == 1
        assert "belongs to another owner" in said.err
        (typed,) = registry.record.query(kind="approval.decision", status="refused",  # type: ignore[union-attr]
                                         principal="mallory")
        assert typed.rule == "command line"
        assert typed.detail["why"] == "owner"
        assert typed.detail["owner"] == "alice"
        by_why = {event.detail["why"]: event for event in refused}
        assert by_why["owner"].tool == "post"
        assert by_why["owner"].detail["owner"] == "alice"
        assert "belongs to another owner" in (by_why["owner"].reason or "")
        assert by_why["csrf"].tool == "post", by_why["csrf"]
        assert by_why["decided"].detail["owner"] == "bob"
        assert by_why["unknown"].detail["target"] == "rem_forged"

    try:
        with serving(config, "--all", "--as", "bob") as console:
            asyncio.run(scenario(console))
    finally:
        registry.close()
