"""Two ``toolplug serve --http`` replicas (real processes) under ``[serve.auth]`` with
``console_scope``, sharing a real Redis (the calls store and the inbox) and a real
PostgreSQL (the record), trusting one issuer's JWTs for one audience, as two replicas
behind a load balancer do.

A person signed in on A's page is signed in on B's, and a form taken on one posts on the
other (the console's key is kept in Redis). Alice's call, made over MCP on replica A, waits
for approval. On replica B's ``/console/``
page Bob's token neither sees nor decides it (refused, and the refusal recorded), and
Alice's decides it through the page's form with its CSRF token: the call resumes on A and
its result comes back to her MCP client; a replay is refused. Then one of her calls waits
on A and one on B, and A is killed with SIGKILL: once A's lease lapses B's page no longer
lists A's request and refuses to approve it, saying it failed, as the command line does;
B's request, whose holder lives, is still decided and B's call resumes. In the record, each
request is decided once. The leases last a second."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import types

from tests.helpers.auth import READ, WRITE, Key, auth_config, issuer_server
from tests.helpers.console import SCOPE, bearer, call_as, csrf, shown_requests
from tests.helpers.postgres import Postgres, postgres_server
from tests.helpers.posting import POST_TOOLS, approvals_cli
from tests.helpers.redis import redis_server
from tests.helpers.serve import TIMEOUT, child_env, free_port, stop, text_of, wait_for_port
from toolplug.config._config import load_config
from toolplug.engine._inbox import open_approvals
from toolplug.state._inbox import STOPPED


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with postgres_server() as running:
        yield running


AUDIENCE = "https://tools.replicas.test/mcp"
"""The one resource both replicas are (a load balancer's address): the tokens' audience."""


def _setup(
    tmp_path: Path, redis: str, record: str, issuer: str
) -> tuple[Path, dict[str, str]]:
    """The one configuration both replicas read, and their env."""
    config = tmp_path / "replicas.toml"
    config.write_text(
        f'[calls]\nstore = "{redis}"\n'
        "[approvals]\ninbox = true\nwait_seconds = 60\nlease_seconds = 1\n"
        f'[record]\nenabled = true\nstore = "{record}"\n'
        + auth_config(issuer, AUDIENCE, extra=f'console_scope = "{SCOPE}"\n'
                      f'jwks_uri = "{issuer}/jwks"'),
        encoding="utf-8",
    )
    env = {**os.environ, **child_env(tmp_path, ("replica_post_tool", POST_TOOLS))}
    return config, {**env, "TOOLPLUG_CONFIG": str(config)}


async def _waiting(config: Path, count: int) -> list[dict[str, Any]]:
    """The pending requests, once there are ``count``, as ``toolplug approvals list`` reads
    them (here, in this process: the command takes seconds to start)."""
    approvals = open_approvals(load_config(config))
    try:
        for _ in range(400):
            found = await approvals.apending(every_owner=True)
            if len(found) >= count:
                return [r.to_dict() for r in found]
            await asyncio.sleep(0.025)
    finally:
        await approvals.aclose()
    raise AssertionError("no request came")


def _rows(address: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg  # the postgres extra: the fixture skipped where it is missing

    with psycopg.connect(address) as db:
        return [tuple(row) for row in db.execute(sql).fetchall()]


async def _recorded(address: str, replica: str, kind: str) -> None:
    """Return once the record in PostgreSQL has a ``kind`` event of ``replica``."""
    sql = f"SELECT id FROM toolplug_events WHERE replica = '{replica}' AND kind = '{kind}'"
    for _ in range(200):
        if await asyncio.to_thread(_rows, address, sql):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"replica {replica} recorded no {kind}")


@contextlib.contextmanager
def _replicas(
    tmp_path: Path, env: dict[str, str], *names: str
) -> Iterator[dict[str, tuple[int, subprocess.Popen[bytes]]]]:
    """``toolplug serve --http`` once per name (``TOOLPLUG_REPLICA``), started at once: each
    one's port and process; always ended."""
    started: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}
    with contextlib.ExitStack() as stack:
        for name in names:
            port, log = free_port(), tmp_path / f"replica-{name}.txt"
            errors = stack.enter_context(log.open("wb"))
            process = subprocess.Popen(
                [sys.executable, "-m", "toolplug", "serve", "--http", f"127.0.0.1:{port}"],
                stdin=subprocess.DEVNULL, stdout=errors, stderr=errors,
                env={**env, "TOOLPLUG_REPLICA": name}, cwd=tmp_path,
            )
            stack.callback(stop, process)
            started[name] = port, process
        for name, (port, process) in started.items():
            wait_for_port(process, port, (tmp_path / f"replica-{name}.txt").read_text)
        yield started


def test_a_call_waits_on_one_replica_is_decided_on_the_others_console(
    tmp_path: Path, postgres: Postgres
) -> None:
    with redis_server(tmp_path) as redis, issuer_server(Key.rsa("replicas")) as issuer:
        config, env = _setup(tmp_path, redis, postgres.address, issuer.url)
        alice, bob = (issuer.token(AUDIENCE, subject=who, scopes=(READ, WRITE, SCOPE))
                      for who in ("alice", "bob"))
        with _replicas(tmp_path, env, "a", "b") as replicas:
            (a_port, a_process), (b_port, _) = replicas["a"], replicas["b"]

            def post(port: int, text: str) -> asyncio.Task[types.CallToolResult]:
                url = f"http://127.0.0.1:{port}/mcp"
                return asyncio.create_task(call_as(url, alice, "post", {"text": text}))

            async def one_key(browser: httpx.AsyncClient) -> None:
                # behind a load balancer a person's pages and forms go to either replica:
                # a sign-in form taken on A is posted to B, B's cookie opens A's pages, and
                # A's form signs out on B
                a, b = (f"http://127.0.0.1:{p}/console" for p in (a_port, b_port))
                asked = await browser.get(f"{a}/sign-in")
                signed = await browser.post(f"{b}/sign-in", data={
                    "csrf": csrf(asked.text), "token": alice})
                assert signed.status_code == 303, signed.text
                on_a = await browser.get(f"{a}/")
                assert on_a.status_code == 200, on_a.text
                out = await browser.post(f"{b}/sign-out", data={"csrf": csrf(on_a.text)})
                assert out.status_code == 303, out.text
                assert (await browser.get(f"{a}/")).status_code == 401

            async def scenario(on_b: httpx.AsyncClient, bobs: httpx.AsyncClient) -> None:
                async with httpx.AsyncClient(timeout=TIMEOUT) as browser:
                    await one_key(browser)
                call = post(a_port, "hello")
                (request,), shown = await shown_requests(on_b)  # on B's page, as alice
                approve = f"/approvals/{request}/approve"
                theirs = (await bobs.get("/")).text
                assert request not in theirs
                assert "Waiting for a decision (0)" in theirs
                taken = await bobs.post(approve, data={"csrf": csrf(theirs)})
                assert taken.status_code == 409
                assert "belongs to another owner" in taken.text
                assert not call.done()
                done = await on_b.post(approve, data={"csrf": csrf(shown)})
                assert done.status_code == 200, done.text
                result = await asyncio.wait_for(call, TIMEOUT)
                assert text_of(result) == "posted: hello"  # resumed on A, for alice's client
                again = await on_b.post(approve, data={"csrf": csrf(shown)})
                assert again.status_code == 409
                assert "already approved" in again.text

                doomed, kept = post(a_port, "doomed"), post(b_port, "kept")
                lost, other = sorted(
                    await _waiting(config, 2), key=lambda r: r["arguments"]["text"] != "doomed"
                )
                await _recorded(postgres.address, "a", "call")  # A's record is written
                a_process.send_signal(signal.SIGKILL)
                await asyncio.to_thread(a_process.wait, TIMEOUT)
                with contextlib.suppress(Exception):  # its server went away
                    await asyncio.wait_for(doomed, TIMEOUT)
                await asyncio.sleep(1.5)  # longer than the lease

                cli = asyncio.create_task(  # it takes seconds to start: meanwhile, the page
                    approvals_cli(config, "approve", lost["id"], "--as", lost["owner"])
                )
                refused = await on_b.post(f"/approvals/{lost['id']}/approve",
                                          data={"csrf": csrf(shown)})
                assert refused.status_code == 409
                assert STOPPED in refused.text
                assert (await shown_requests(on_b))[0] == [other["id"]]
                done = await on_b.post(f"/approvals/{other['id']}/approve",
                                       data={"csrf": csrf(shown)})
                assert done.status_code == 200, done.text
                result = await asyncio.wait_for(kept, TIMEOUT)
                assert text_of(result) == "posted: kept"  # B's holder lives on

                code, _, err = await cli
                assert code == 1
                assert f"approval request {lost['id']} failed" in err
                assert STOPPED in err
                assert "no decision counts now" in err

            async def run() -> None:
                console = f"http://127.0.0.1:{b_port}/console"
                async with (
                    httpx.AsyncClient(base_url=console, headers=bearer(alice),
                                      timeout=TIMEOUT) as on_b,
                    httpx.AsyncClient(base_url=console, headers=bearer(bob),
                                      timeout=TIMEOUT) as bobs,
                ):
                    await asyncio.wait_for(scenario(on_b, bobs), 3 * TIMEOUT)

            asyncio.run(run())
    # the record, shared in PostgreSQL: each request decided once, by alice, recorded by the
    # replica holding it; bob's refusal, the replay's and the failed request's on B (and the
    # command line's); the failed request itself once
    rows = _rows(postgres.address, "SELECT replica, kind, status, principal, detail FROM "
                 "toolplug_events WHERE tool = 'post' AND kind IN ('call', 'approval.decision') "
                 "ORDER BY id")
    refused = [(r, json.loads(d)) for r, _, s, _, d in rows if s == "refused"]
    assert [d["why"] for r, d in refused if r == "b"] == ["owner", "decided", "failed"]
    assert [d["why"] for r, d in refused if r != "b"] == ["failed"]  # the command line's
    bobs, alices = refused[0][1]["by"], refused[0][1]["owner"]
    assert bobs != alices  # bob tried alice's request
    failed = [(p, json.loads(d)) for _, _, s, p, d in rows if s == "failed"]
    assert len(failed) == 1  # recorded once, by B's console or the command line: who swept it
    assert failed[0][0] == failed[0][1]["owner"] == alices
    assert failed[0][1]["request"].startswith("apr_")
    assert [(r, k, s, p, json.loads(d).get("by")) for r, k, s, p, d in rows
            if s not in ("refused", "failed")] == [
        ("a", "approval.decision", "approved", alices, alices), ("a", "call", "ok", alices, None),
        ("b", "approval.decision", "approved", alices, alices), ("b", "call", "ok", alices, None),
    ]
