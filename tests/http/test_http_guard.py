"""Guarded HTTP against real servers on 127.0.0.1: redirects, refusals, timeouts, resets, caps.

Every test runs with a tripwire on ``socket.connect``: a connection to anything but loopback
fails the test, so "refused before connecting" is checked, not assumed.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from toolplug.http import (
    FetchResult,
    NetworkPolicy,
    NetworkRefused,
    NetworkTimeout,
    NetworkUnreachable,
    TooManyRedirects,
    fetch,
    fetch_sync,
    new_client,
)

LOOPBACK = NetworkPolicy(allow=("127.0.0.1/32",))
BIG = 10 * 1024 * 1024
CAP = 1_000_000


# --- the tripwire -------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def connects(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every address a socket connects to during the test; anything off loopback fails."""
    seen: list[str] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def check(address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else str(address)
        seen.append(host)
        if not (host.startswith("127.") or host == "::1" or isinstance(address, str)):
            raise AssertionError(f"test tried to connect beyond loopback: {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return seen


# --- the server ---------------------------------------------------------------------------


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Server(ThreadingHTTPServer):
    """A test server on 127.0.0.1 that records what it receives."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[Seen] = []
        self.stop = threading.Event()
        self.port = self.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def paths(self) -> list[str]:
        return [seen.path for seen in self.seen]


_GZIP_BOMB: list[bytes] = []


def gzip_bomb() -> bytes:
    """10 MB of zeros, gzip-compressed to about 10 KB (made once)."""
    if not _GZIP_BOMB:
        _GZIP_BOMB.append(gzip.compress(b"\0" * BIG))
    return _GZIP_BOMB[0]


class Handler(BaseHTTPRequestHandler):
    """Routes: /ok /echo /redirect?to=&status= /chain/N /loop/a|b /slow /drip /reset /big
    /gzip /gzip-bomb /latin1."""

    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests assert on what the server saw instead."""

    def do_GET(self) -> None:
        self.route()

    def do_POST(self) -> None:
        self.route()

    def do_PUT(self) -> None:
        self.route()

    def do_HEAD(self) -> None:
        self.route()

    def route(self) -> None:  # noqa: C901 - one branch per route of the test server
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        self.server.seen.append(
            Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        path = parts.path
        try:
            if path == "/ok":
                self.reply(200, b"hello", "text/plain; charset=utf-8")
            elif path == "/echo":
                echo = {
                    "method": self.command,
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body.decode("utf-8", "replace"),
                }
                self.reply(200, json.dumps(echo).encode(), "application/json")
            elif path == "/redirect":
                self.redirect(int(query.get("status", "302")), query["to"])
            elif path.startswith("/chain/"):
                left = int(path.rsplit("/", 1)[1])
                if left:
                    self.redirect(302, f"/chain/{left - 1}")
                else:
                    self.reply(200, b"end", "text/plain")
            elif path == "/loop/a":
                self.redirect(302, "/loop/b")
            elif path == "/loop/b":
                self.redirect(301, f"http://127.0.0.1:{self.server.port}/loop/a")
            elif path == "/slow":
                self.server.stop.wait(3)  # far longer than the client waits
                self.reply(200, b"late", "text/plain")
            elif path == "/drip":
                self.drip()
            elif path == "/reset":
                self.reset()
            elif path == "/big":
                self.big()
            elif path == "/gzip":
                self.reply(200, gzip.compress(b"hello gzip"), "text/plain", encoding="gzip")
            elif path == "/gzip-bomb":
                self.reply(200, gzip_bomb(), "application/octet-stream", encoding="gzip")
            elif path == "/latin1":
                self.reply(200, "café".encode("latin-1"), "text/plain; charset=ISO-8859-1")
            else:
                self.reply(404, b"no such route", "text/plain")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what several tests want

    def reply(self, status: int, body: bytes, content_type: str, encoding: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def drip(self) -> None:
        """One byte every 50 ms: no single read waits long, the whole takes 5 s."""
        self.send_response(200)
        self.send_header("Content-Length", "100")
        self.end_headers()
        for _ in range(100):
            if self.server.stop.wait(0.05):
                return
            self.wfile.write(b"x")
            self.wfile.flush()

    def reset(self) -> None:
        """Promise 1000 bytes, send 10, then abort the connection (RST)."""
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b"0123456789")
        self.wfile.flush()
        time.sleep(0.05)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def big(self) -> None:
        """10 MB in 64 KB writes, stopping as soon as the client goes away."""
        chunk = b"a" * 65536
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(BIG))
        self.end_headers()
        for _ in range(BIG // len(chunk)):
            if self.server.stop.is_set():
                return
            self.wfile.write(chunk)


@pytest.fixture
def server() -> Iterator[Server]:
    """A fresh server per test, shut down and joined afterwards."""
    httpd = Server()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield httpd
    finally:
        httpd.stop.set()
        httpd.shutdown()
        httpd.server_close()  # joins the request threads
        thread.join()


def echo(result: FetchResult) -> dict[str, Any]:
    data = result.json()
    assert isinstance(data, dict)
    return data


# --- plain requests -----------------------------------------------------------------------


def test_get_ok(server: Server) -> None:
    result = fetch_sync("GET", server.url("/ok"), policy=LOOPBACK)
    assert (result.status, result.content, result.truncated) == (200, b"hello", False)
    assert (result.url, result.final_url, result.redirects) == (
        server.url("/ok"),
        server.url("/ok"),
        [],
    )
    assert result.headers["content-type"] == "text/plain; charset=utf-8"
    assert result.headers["content-length"] == "5"
    assert (result.content_type, result.charset, result.text()) == ("text/plain", "utf-8", "hello")
    assert 0 < result.elapsed_ms < 5000
    seen = server.seen[0]
    assert seen.headers["host"] == f"127.0.0.1:{server.port}"
    assert seen.headers["user-agent"] == LOOPBACK.user_agent
    assert seen.headers["accept-encoding"] == "gzip, deflate"


def test_default_policy_refuses_loopback_before_connecting(
    server: Server, connects: list[str]
) -> None:
    with pytest.raises(NetworkRefused) as info:
        fetch_sync("GET", server.url("/ok"), policy=NetworkPolicy())
    assert info.value.rule == "loopback address"
    assert str(info.value) == (
        f"refused {server.url('/ok')}: 127.0.0.1 is a loopback address; "
        'allow it with [network] allow = ["127.0.0.1/32"]'
    )
    assert (server.seen, connects) == ([], [])


def test_async_fetch_with_json_body(server: Server) -> None:
    async def main() -> FetchResult:
        return await fetch(
            "post", server.url("/echo"), policy=LOOPBACK, json={"q": "café", "n": [1, 2]}
        )

    data = echo(asyncio.run(main()))
    assert data["method"] == "POST"
    assert json.loads(data["body"]) == {"q": "café", "n": [1, 2]}
    assert data["headers"]["content-type"] == "application/json"


def test_custom_headers_and_user_agent(server: Server) -> None:
    result = fetch_sync(
        "GET",
        server.url("/echo"),
        policy=LOOPBACK,
        headers={"User-Agent": "mine/2", "X-Trace": "abc", "Host": "evil.test"},
    )
    headers = echo(result)["headers"]
    assert (headers["user-agent"], headers["x-trace"]) == ("mine/2", "abc")
    assert headers["host"] == f"127.0.0.1:{server.port}"  # Host is the guard's, not the caller's


def test_text_uses_declared_charset(server: Server) -> None:
    result = fetch_sync("GET", server.url("/latin1"), policy=LOOPBACK)
    assert (result.content, result.charset, result.text()) == (b"caf\xe9", "iso8859-1", "café")


def test_gzip_body_is_decoded(server: Server) -> None:
    result = fetch_sync("GET", server.url("/gzip"), policy=LOOPBACK)
    assert (result.content, result.headers["content-encoding"]) == (b"hello gzip", "gzip")


# --- redirects ----------------------------------------------------------------------------


def test_redirect_chain_is_recorded(server: Server) -> None:
    result = fetch_sync("GET", server.url("/chain/3"), policy=LOOPBACK)
    assert (result.status, result.content) == (200, b"end")
    assert result.redirects == [
        (302, server.url("/chain/2")),
        (302, server.url("/chain/1")),
        (302, server.url("/chain/0")),
    ]
    assert result.url == server.url("/chain/3")
    assert result.final_url == server.url("/chain/0")
    assert server.paths() == ["/chain/3", "/chain/2", "/chain/1", "/chain/0"]


def test_max_redirects_is_inclusive(server: Server) -> None:
    policy = NetworkPolicy(allow=("127.0.0.1/32",), max_redirects=3)
    assert fetch_sync("GET", server.url("/chain/3"), policy=policy).status == 200


def test_too_many_redirects(server: Server) -> None:
    policy = NetworkPolicy(allow=("127.0.0.1/32",), max_redirects=2)
    with pytest.raises(TooManyRedirects) as info:
        fetch_sync("GET", server.url("/chain/5"), policy=policy)
    assert info.value.rule == "too many redirects"
    assert isinstance(info.value, NetworkRefused)
    assert [status for status, _ in info.value.redirects] == [302, 302, 302]
    assert "more than 2 redirects; raise [network] max_redirects" in str(info.value)
    assert server.paths() == ["/chain/5", "/chain/4", "/chain/3"]  # the 3rd is not followed


def test_redirect_loop_is_detected(server: Server) -> None:
    with pytest.raises(TooManyRedirects) as info:
        fetch_sync("GET", server.url("/loop/a"), policy=LOOPBACK)
    assert info.value.rule == "redirect loop"
    assert info.value.redirects == [(302, server.url("/loop/b")), (301, server.url("/loop/a"))]
    assert str(info.value) == (
        f"refused {server.url('/loop/a')}: redirect loop: {server.url('/loop/a')} -> "
        f"{server.url('/loop/b')} -> {server.url('/loop/a')}"
    )
    assert server.paths() == ["/loop/a", "/loop/b"]  # detected without asking again


def test_follow_redirects_false_returns_the_3xx(server: Server) -> None:
    result = fetch_sync("GET", server.url("/chain/1"), policy=LOOPBACK, follow_redirects=False)
    assert (result.status, result.headers["location"], result.redirects) == (302, "/chain/0", [])


@pytest.mark.parametrize(
    ("target", "rule", "address"),
    [
        ("http://10.0.0.1:{port}/x", "private address", "10.0.0.1"),  # private literal
        ("http://[::1]:{port}/x", "loopback address", "::1"),  # loopback not in allow
        ("http://169.254.169.254/latest/meta-data/", "link-local address", "169.254.169.254"),
        ("http://0x7f000002:{port}/", "loopback address", "127.0.0.2"),  # outside the /32
    ],
)
def test_redirect_to_refused_address_is_refused_before_connecting(
    server: Server, connects: list[str], target: str, rule: str, address: str
) -> None:
    location = target.format(port=server.port)
    with pytest.raises(NetworkRefused) as info:
        fetch_sync("GET", server.url(f"/redirect?to={location}"), policy=LOOPBACK)
    assert (info.value.rule, info.value.address) == (rule, address)
    assert f"{address} is a" in str(info.value)
    assert str(info.value).endswith("(reached by redirect 1)")
    assert connects == ["127.0.0.1"]  # only the first hop ever connected
    assert len(server.seen) == 1


def test_redirect_to_other_scheme_is_refused(server: Server) -> None:
    with pytest.raises(NetworkRefused) as info:
        fetch_sync("GET", server.url("/redirect?to=file:///etc/passwd"), policy=LOOPBACK)
    assert info.value.rule == "scheme not allowed"


@pytest.mark.parametrize(
    ("status", "method", "expected_method", "expected_body"),
    [
        (303, "POST", "GET", ""),  # See Other: GET, body dropped
        (302, "POST", "GET", ""),  # browsers turn POST into GET on 302 ...
        (301, "POST", "GET", ""),  # ... and on 301
        (307, "POST", "POST", "payload"),  # 307 keeps method and body
        (308, "PUT", "PUT", "payload"),  # 308 too
        (303, "HEAD", "HEAD", ""),  # HEAD stays HEAD
    ],
)
def test_redirect_methods(
    server: Server, status: int, method: str, expected_method: str, expected_body: str
) -> None:
    result = fetch_sync(
        method,
        server.url(f"/redirect?status={status}&to=/echo"),
        policy=LOOPBACK,
        content=b"payload",
        headers={"Content-Type": "text/plain"},
    )
    final = server.seen[-1]
    assert (result.status, final.method, final.path, final.body) == (
        200,
        expected_method,
        "/echo",
        expected_body.encode(),
    )
    assert ("content-type" in final.headers) == bool(expected_body)


SECRETS = {
    "Authorization": "Bearer top-secret",
    "Cookie": "session=abc",
    "Proxy-Authorization": "Basic cHJveHk6cHc=",
    "X-Trace": "kept",
}
BOTH_HOSTS = NetworkPolicy(allow=("127.0.0.1/32", "localhost"))


def test_sensitive_headers_dropped_on_cross_host_redirect(server: Server) -> None:
    other = server.url("/echo", host="localhost")
    result = fetch_sync(
        "GET", server.url(f"/redirect?to={other}"), policy=BOTH_HOSTS, headers=SECRETS
    )
    headers = echo(result)["headers"]
    assert "authorization" not in headers
    assert "cookie" not in headers
    assert "proxy-authorization" not in headers
    assert headers["x-trace"] == "kept"
    assert headers["host"] == f"localhost:{server.port}"
    assert server.seen[0].headers["authorization"] == "Bearer top-secret"  # first hop had it


def test_sensitive_headers_kept_on_same_host_redirect(server: Server) -> None:
    result = fetch_sync("GET", server.url("/redirect?to=/echo"), policy=BOTH_HOSTS, headers=SECRETS)
    headers = echo(result)["headers"]
    assert (headers["authorization"], headers["cookie"], headers["proxy-authorization"]) == (
        "Bearer top-secret",
        "session=abc",
        "Basic cHJveHk6cHc=",
    )


def test_port_change_is_a_cross_origin_redirect(server: Server) -> None:
    second = Server()
    thread = threading.Thread(target=second.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        result = fetch_sync(
            "GET",
            server.url(f"/redirect?to={second.url('/echo')}"),
            policy=LOOPBACK,
            headers=SECRETS,
        )
    finally:
        second.shutdown()
        second.server_close()
        thread.join()
    assert "authorization" not in echo(result)["headers"]


def test_on_redirect_decides_next_headers(server: Server) -> None:
    calls: list[tuple[str, str]] = []
    other = server.url("/echo", host="localhost")

    def on_redirect(old: str, new: str) -> dict[str, str] | None:
        calls.append((old, new))
        if urlsplit(new).hostname == "localhost":
            return {"Authorization": "Bearer for-localhost"}
        return None

    result = fetch_sync(
        "GET",
        server.url(f"/redirect?to={other}"),
        policy=BOTH_HOSTS,
        headers=SECRETS,
        on_redirect=on_redirect,
    )
    headers = echo(result)["headers"]
    assert headers["authorization"] == "Bearer for-localhost"
    assert "x-trace" not in headers  # the callback's mapping is the whole set
    assert calls == [(server.url(f"/redirect?to={other}"), other)]


def test_userinfo_becomes_basic_auth_and_stays_out_of_results(server: Server) -> None:
    url = f"http://alice:s3cret@127.0.0.1:{server.port}/echo"
    result = fetch_sync("GET", url, policy=LOOPBACK)
    assert echo(result)["headers"]["authorization"] == "Basic YWxpY2U6czNjcmV0"
    assert result.url == server.url("/echo")
    assert "s3cret" not in repr(result)


# --- pinning ------------------------------------------------------------------------------


def test_connection_is_pinned_to_the_checked_address(server: Server, connects: list[str]) -> None:
    answers = [["127.0.0.1"]]
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        # First answer passes the check; every later one would be a private address.
        calls.append(host)
        return answers.pop() if answers else ["10.0.0.1"]

    result = fetch_sync(
        "GET", f"http://rebind.test:{server.port}/echo", policy=LOOPBACK, resolve=rebinding
    )
    assert result.status == 200
    assert echo(result)["headers"]["host"] == f"rebind.test:{server.port}"
    assert calls == ["rebind.test"]  # looked up once, by the guard; httpx never resolved it
    assert connects == ["127.0.0.1"]


def test_every_hop_is_checked_again(server: Server, connects: list[str]) -> None:
    answers = [["127.0.0.1"]]

    def rebinding(host: str, port: int) -> list[str]:
        return answers.pop() if answers else ["10.0.0.1"]

    target = f"http://rebind.test:{server.port}/echo"
    with pytest.raises(NetworkRefused) as info:
        fetch_sync(
            "GET",
            f"http://rebind.test:{server.port}/redirect?to={target}",
            policy=LOOPBACK,
            resolve=rebinding,
        )
    assert (info.value.rule, info.value.address, info.value.host) == (
        "private address",
        "10.0.0.1",
        "rebind.test",
    )
    assert connects == ["127.0.0.1"]


def test_next_address_is_tried_when_one_refuses(server: Server) -> None:
    # 127.0.0.2 is loopback too, but nothing listens there on this port.
    policy = NetworkPolicy(allow=("127.0.0.0/8",))

    def two(host: str, port: int) -> list[str]:
        return ["127.0.0.2", "127.0.0.1"]

    result = fetch_sync("GET", f"http://two.test:{server.port}/ok", policy=policy, resolve=two)
    assert result.content == b"hello"


def test_https_request_carries_host_and_server_name() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, content=b"ok")

    async def main() -> FetchResult:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await fetch(
                "GET",
                "https://secure.test/a?b=1",
                policy=NetworkPolicy(),
                client=client,
                resolve=lambda host, port: ["93.184.216.34"],
            )

    assert asyncio.run(main()).content == b"ok"
    (request,) = sent
    assert str(request.url) == "https://93.184.216.34/a?b=1"
    assert request.headers["host"] == "secure.test"
    assert request.extensions["sni_hostname"] == "secure.test"
    assert request.extensions["timeout"] == {
        "connect": 15.0,
        "read": 15.0,
        "write": 15.0,
        "pool": 15.0,
    }
    # Someone else's client pools by address alone: no reuse across server names.
    assert request.headers["connection"] == "close"


def test_foreign_client_defaults_are_not_sent(server: Server) -> None:
    async def main() -> FetchResult:
        async with httpx.AsyncClient(
            headers={"Authorization": "Bearer leak"}, cookies={"sid": "leak"}
        ) as client:
            return await fetch("GET", server.url("/echo"), policy=LOOPBACK, client=client)

    headers = echo(asyncio.run(main()))["headers"]
    assert "authorization" not in headers
    assert "cookie" not in headers


def test_new_client_is_reusable(server: Server) -> None:
    async def main() -> list[int]:
        async with new_client() as client:
            first = await fetch("GET", server.url("/ok"), policy=LOOPBACK, client=client)
            second = await fetch("GET", server.url("/chain/1"), policy=LOOPBACK, client=client)
            return [first.status, second.status, len(second.redirects)]

    assert asyncio.run(main()) == [200, 200, 1]


@dataclass
class TLSServer:
    """A TLS server on 127.0.0.1 whose certificate is for ``secure.test`` only."""

    server: Server
    ca: Path
    names: list[str | None] = field(default_factory=list)


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[TLSServer]:
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "secure.test")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("secure.test")]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file = tmp_path / "cert.pem"
    key_file = tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    httpd = Server()
    names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)

    def remember(sock: Any, server_name: str | None, ctx: Any) -> None:
        names.append(server_name)

    context.sni_callback = remember
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield TLSServer(httpd, cert_file, names)
    finally:
        httpd.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_tls_is_verified_against_the_name_while_connecting_to_the_address(
    tls_server: TLSServer, connects: list[str]
) -> None:
    port = tls_server.server.port

    async def main(url: str) -> FetchResult:
        verify = ssl.create_default_context(cafile=str(tls_server.ca))
        async with new_client(verify=verify) as client:
            return await fetch(
                "GET",
                url,
                policy=LOOPBACK,
                client=client,
                resolve=lambda host, port: ["127.0.0.1"],
            )

    result = asyncio.run(main(f"https://secure.test:{port}/echo"))
    assert echo(result)["headers"]["host"] == f"secure.test:{port}"
    # new_client() pools per server name, so it may keep the connection open.
    assert tls_server.server.seen[0].headers.get("connection") != "close"
    assert tls_server.names == ["secure.test"]  # SNI carried the name, not the address
    assert connects == ["127.0.0.1"]
    # Same address, another name: the certificate does not match, so no connection is made.
    with pytest.raises(NetworkUnreachable) as info:
        asyncio.run(main(f"https://other.test:{port}/echo"))
    assert "could not connect to other.test (127.0.0.1)" in str(info.value)


# --- time, resets, size -------------------------------------------------------------------


def test_read_timeout(server: Server) -> None:
    started = time.monotonic()
    with pytest.raises(NetworkTimeout) as info:
        fetch_sync("GET", server.url("/slow"), policy=LOOPBACK, timeout=0.5)
    assert time.monotonic() - started < 2
    assert isinstance(info.value, TimeoutError)
    assert (info.value.phase, info.value.timeout) == ("read", 0.5)
    assert str(info.value).startswith(f"read timed out after 0.5 s fetching {server.url('/slow')}")


@pytest.mark.parametrize(("deadline", "expected"), [(None, 0.8), (0.3, 0.3)])
def test_overall_deadline(server: Server, deadline: float | None, expected: float) -> None:
    # Each byte comes quickly, so no single read times out; the whole would take 5 s.
    policy = NetworkPolicy(allow=("127.0.0.1/32",), timeout_seconds=0.4)
    started = time.monotonic()
    with pytest.raises(NetworkTimeout) as info:
        fetch_sync("GET", server.url("/drip"), policy=policy, deadline=deadline)
    assert expected <= time.monotonic() - started < expected + 1
    assert (info.value.phase, info.value.timeout) == ("total", expected)  # twice the timeout
    assert f"took longer than {expected:g} s in total" in str(info.value)


def test_connection_reset_mid_response(server: Server) -> None:
    with pytest.raises(NetworkUnreachable) as info:
        fetch_sync("GET", server.url("/reset"), policy=LOOPBACK)
    assert not isinstance(info.value, PermissionError | TimeoutError)
    assert (info.value.host, info.value.address) == ("127.0.0.1", "127.0.0.1")
    assert str(info.value).startswith(
        f"the connection to 127.0.0.1 (127.0.0.1) broke while reading {server.url('/reset')}"
    )


def test_connection_refused() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed: nothing listens there
    with pytest.raises(NetworkUnreachable) as info:
        fetch_sync("GET", f"http://127.0.0.1:{port}/", policy=LOOPBACK)
    assert str(info.value).startswith("could not connect to 127.0.0.1 (127.0.0.1) for http://")


def test_big_body_is_cut_at_the_cap_with_bounded_memory(server: Server) -> None:
    tracemalloc.start()
    try:
        result = fetch_sync("GET", server.url("/big"), policy=LOOPBACK, max_bytes=CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.truncated is True
    assert len(result.content) == CAP
    assert result.headers["content-length"] == str(BIG)
    assert peak < 4 * CAP  # holding the whole 10 MB would need more than 10 * CAP


class CountingStream(httpx.AsyncByteStream):
    """A response stream that counts the bytes taken off the socket."""

    def __init__(self, inner: httpx.AsyncByteStream, owner: CountingTransport) -> None:
        self.inner = inner
        self.owner = owner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.owner.received += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class CountingTransport(httpx.AsyncBaseTransport):
    """A real transport that counts how much of each response body was read."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.received = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=CountingStream(response.stream, self),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_big_body_stops_reading_at_the_cap(server: Server) -> None:
    transport = CountingTransport()

    async def main() -> FetchResult:
        async with httpx.AsyncClient(transport=transport) as client:
            return await fetch(
                "GET", server.url("/big"), policy=LOOPBACK, max_bytes=CAP, client=client
            )

    result = asyncio.run(main())
    assert (len(result.content), result.truncated) == (CAP, True)
    # Read up to the cap plus at most one network read (64 KB), not the 10 MB on offer.
    assert CAP < transport.received <= CAP + 65536


def test_gzip_bomb_is_cut_at_the_cap_with_bounded_memory(server: Server) -> None:
    gzip_bomb()  # built before measuring
    tracemalloc.start()
    try:
        result = fetch_sync("GET", server.url("/gzip-bomb"), policy=LOOPBACK, max_bytes=CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (result.truncated, len(result.content), result.content[:4]) == (True, CAP, b"\0" * 4)
    assert peak < 4 * CAP


@pytest.mark.parametrize(
    ("cap", "content", "truncated"), [(5, b"hello", False), (4, b"hell", True), (0, b"", True)]
)
def test_cap_boundaries(server: Server, cap: int, content: bytes, truncated: bool) -> None:
    result = fetch_sync("GET", server.url("/ok"), policy=LOOPBACK, max_bytes=cap)
    assert (result.content, result.truncated) == (content, truncated)


# --- the API ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": b"x", "json": {}}, "pass either content= or json=, not both"),
        ({"method": "GE T"}, "method: expected an HTTP method"),
        ({"headers": {"X-A": "one\r\nX-B: two"}}, "the value of 'X-A' must be a string on one"),
        ({"headers": {"Bad Name": "x"}}, "'Bad Name' is not a valid header name"),
        ({"timeout": 0}, "timeout: expected a finite number of seconds > 0, got 0"),
        ({"max_bytes": -1}, "max_bytes: expected a whole number >= 0, got -1"),
    ],
)
def test_wrong_arguments_raise_value_error(kwargs: dict[str, Any], message: str) -> None:
    method = kwargs.pop("method", "GET")
    with pytest.raises(ValueError, match=re.escape(message)):
        fetch_sync(method, "http://127.0.0.1:9/", policy=LOOPBACK, **kwargs)


def test_fetch_sync_refuses_a_running_loop() -> None:
    async def main() -> None:
        with pytest.raises(RuntimeError, match=r"use `await fetch\(...\)` there"):
            fetch_sync("GET", "http://127.0.0.1:9/", policy=LOOPBACK)

    asyncio.run(main())


def test_importing_the_module_does_not_import_httpx() -> None:
    code = (
        "import sys, toolplug.http, toolplug.http._netguard\n"
        "print(sorted(m for m in ('httpx', 'httpcore', 'anyio') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_a_missing_httpx_names_the_extra_to_install() -> None:
    # None in sys.modules is how Python reports a module that is not installed.
    code = (
        "import sys\nsys.modules['httpx'] = None\n"
        "import toolplug.http\ntoolplug.http.new_client()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: toolplug.http needs httpx and anyio")
    assert 'install them with: pip install "toolplug[http]"' in last


@pytest.mark.parametrize(
    ("content", "headers", "truncated", "text"),
    [
        (b"caf\xc3\xa9", {}, False, "café"),  # no charset: UTF-8
        (b"\xef\xbb\xbfhi", {}, False, "hi"),  # UTF-8 byte order mark dropped
        (b"caf\xe9", {}, False, "café"),  # not UTF-8: Windows-1252
        (b"caf\xc3", {}, True, "caf"),  # a character cut in half by the cap
        (b"caf\xe9", {"content-type": "text/plain; charset=latin-1"}, False, "café"),
        (b"caf\xe9", {"content-type": "text/plain; charset=nonsense"}, False, "café"),
    ],
)
def test_text_decoding(content: bytes, headers: dict[str, str], truncated: bool, text: str) -> None:
    result = FetchResult(
        url="http://x/",
        final_url="http://x/",
        status=200,
        headers=headers,
        content=content,
        truncated=truncated,
        redirects=[],
        elapsed_ms=1.0,
    )
    assert result.text() == text
