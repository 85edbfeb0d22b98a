"""``serve --http`` checks Host and Origin on every bind address (no DNS rebinding): the
rules case by case, then real requests (httpx) against real ``toolplug serve`` processes
bound to 127.0.0.1, 127.0.0.2, 0.0.0.0 and ::."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.helpers.serve import CONFIG, TIMEOUT, child_env, free_port, stop
from toolplug.serve._hosts import HostRules

ALLOWING = CONFIG + """
[serve]
allowed_hosts = ["mcp.test", "*.internal.test", "proxy.test:8443"]
allowed_origins = ["https://app.test"]
"""


@pytest.mark.parametrize(
    ("rules", "host", "ok"),
    [
        # bound to loopback: the whole loopback range and localhost, never another name
        (HostRules("127.0.0.1"), "127.0.0.1:8000", True),
        (HostRules("127.0.0.1"), "127.0.0.2:8000", True),
        (HostRules("127.0.0.1"), "[::1]:8000", True),
        (HostRules("127.0.0.1"), "localhost:8000", True),
        (HostRules("127.0.0.1"), "LOCALHOST.", True),  # case and a trailing dot do not matter
        (HostRules("127.0.0.2"), "evil.example:8000", False),
        (HostRules("127.0.0.1"), "192.0.2.7:8000", False),  # not an address it listens on
        (HostRules("::1"), "[::1]:8000", True),
        # bound to every address: any address (a rebinding page's Host is a name), localhost
        (HostRules("0.0.0.0"), "192.0.2.7:8000", True),
        (HostRules("::"), "[2001:db8::7]:8000", True),
        (HostRules("0.0.0.0"), "localhost", True),
        (HostRules("0.0.0.0"), "evil.example", False),
        # bound to one address: that one
        (HostRules("192.0.2.7"), "192.0.2.7:8000", True),
        (HostRules("192.0.2.7"), "127.0.0.1:8000", False),
        (HostRules("192.0.2.7"), "localhost:8000", False),
        # bound by name: that name
        (HostRules("192.0.2.7", name="mcp.lan"), "mcp.lan:8000", True),
        (HostRules("192.0.2.7", name="mcp.lan"), "evil.lan:8000", False),
        # the allow-list: names, globs, a name with its port, or everything
        (HostRules("0.0.0.0", allowed_hosts=["mcp.test"]), "mcp.test:9", True),
        (HostRules("0.0.0.0", allowed_hosts=["*.internal.test"]), "a.internal.test", True),
        (HostRules("0.0.0.0", allowed_hosts=["*.internal.test"]), "internal.test", False),
        (HostRules("0.0.0.0", allowed_hosts=["proxy.test:8443"]), "proxy.test:8443", True),
        (HostRules("0.0.0.0", allowed_hosts=["proxy.test:8443"]), "proxy.test:80", False),
        (HostRules("127.0.0.1", allowed_hosts=["*"]), "anything.example", True),
        # not a Host value at all
        (HostRules("0.0.0.0"), None, False),
        (HostRules("0.0.0.0"), "", False),
        (HostRules("0.0.0.0"), "::1", False),  # an IPv6 address needs its brackets
        (HostRules("0.0.0.0"), "127.0.0.1:port", False),
    ],
)
def test_host_rules(rules: HostRules, host: str | None, ok: bool) -> None:
    assert rules.host_ok(host) is ok


@pytest.mark.parametrize(
    ("rules", "origin", "ok"),
    [
        (HostRules("127.0.0.1"), None, True),  # no Origin: not a browser, Host decides
        (HostRules("127.0.0.1"), "http://127.0.0.1:3000", True),  # any port of its hosts
        (HostRules("127.0.0.1"), "https://localhost", True),
        (HostRules("127.0.0.1"), "http://evil.example:8000", False),
        (HostRules("127.0.0.1"), "null", False),  # a sandboxed page or a file
        (HostRules("127.0.0.1"), "chrome-extension://abc", False),
        (HostRules("0.0.0.0", allowed_origins=["https://app.test"]), "https://app.test", True),
        (HostRules("0.0.0.0", allowed_origins=["https://app.test"]), "http://app.test", False),
        (HostRules("0.0.0.0", allowed_hosts=["mcp.test"]), "https://mcp.test", True),
        (HostRules("0.0.0.0", allowed_origins=["*"]), "https://anyone.example", True),
    ],
)
def test_origin_rules(rules: HostRules, origin: str | None, ok: bool) -> None:
    assert rules.origin_ok(origin) is ok


@contextmanager
def server(tmp_path: Path, bind: str, config: str = CONFIG) -> Iterator[str]:
    """``toolplug serve --http BIND:PORT`` in a subprocess; yields the address to connect
    to (on loopback), always ended."""
    port = free_port()
    connect = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(bind, bind)
    shown = f"[{bind}]" if ":" in bind else bind
    errors = tmp_path / "http-stderr.txt"
    with errors.open("wb") as errlog:
        process = subprocess.Popen(
            # beyond loopback without [serve.auth] only on purpose: this test is about Host
            [sys.executable, "-m", "toolplug", "serve", "--http", f"{shown}:{port}", "--no-auth"],
            stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog,
            env={**os.environ, **child_env(tmp_path, config=config)}, cwd=tmp_path,
        )
        try:
            deadline = time.monotonic() + TIMEOUT
            while True:
                if process.poll() is not None:
                    raise AssertionError(errors.read_text(encoding="utf-8"))
                try:
                    socket.create_connection((connect, port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the server did not open its port"
                    time.sleep(0.05)
            yield f"[{connect}]:{port}" if ":" in connect else f"{connect}:{port}"
        finally:
            stop(process)


INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "hosts-test", "version": "1"}},
}


def post(address: str, *, host: str | None = None, origin: str | None = None,
         path: str = "/mcp") -> httpx.Response:
    """An MCP initialize request to ``address``, with a Host and Origin of our choosing."""
    headers = {"Accept": "application/json, text/event-stream"}
    if host is not None:
        headers["Host"] = host
    if origin is not None:
        headers["Origin"] = origin
    return httpx.post(f"http://{address}{path}", json=INITIALIZE, headers=headers,
                      timeout=TIMEOUT)


@pytest.mark.parametrize("bind", ["127.0.0.2", "0.0.0.0", "::", "127.0.0.1"])
def test_a_forged_host_or_origin_is_refused_on_every_bind_address(
    tmp_path: Path, bind: str
) -> None:
    with server(tmp_path, bind) as address:
        port = address.rsplit(":", 1)[1]
        assert post(address).status_code == 200  # the address it was reached at
        assert post(address, host=f"localhost:{port}").status_code == 200
        assert post(address, origin=f"http://{address}").status_code == 200
        forged = post(address, host=f"evil.example:{port}")
        assert forged.status_code == 421
        assert "[serve] allowed_hosts" in forged.json()["error"]["message"]
        refused = post(address, origin=f"http://evil.example:{port}")
        assert refused.status_code == 403
        assert "[serve] allowed_origins" in refused.json()["error"]["message"]
        # every path, not only the MCP endpoint
        assert post(address, host="evil.example", path="/anything").status_code == 421


def test_the_allow_list_admits_named_hosts_and_origins(tmp_path: Path) -> None:
    with server(tmp_path, "0.0.0.0", ALLOWING) as address:
        port = address.rsplit(":", 1)[1]
        assert post(address, host=f"mcp.test:{port}").status_code == 200
        assert post(address, host="a.internal.test").status_code == 200
        assert post(address, host="proxy.test:8443").status_code == 200
        assert post(address, host="proxy.test:80").status_code == 421
        assert post(address, host=f"other.test:{port}").status_code == 421
        assert post(address, origin="https://app.test").status_code == 200
        assert post(address, origin="https://mcp.test").status_code == 200
        assert post(address, origin="https://evil.test").status_code == 403
