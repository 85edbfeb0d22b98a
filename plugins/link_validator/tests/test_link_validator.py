"""link_validator against real servers on 127.0.0.1: statuses, redirects, failures, limits."""

from __future__ import annotations

import contextlib
import io
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import toolplug
from toolplug.testing import check_plugin
from toolplug_link_validator import LinkValidator, ProgressBar, progress_bar
from toolplug_link_validator._progress import render

Check = Callable[..., toolplug.ToolResult]
MakeRegistry = Callable[..., toolplug.Registry]


class ResettingServer:
    """Accepts each connection, reads the request, and answers with a TCP reset (RST)."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.05)
        self.port: int = self._sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/reset"

    def _serve(self) -> None:
        while not self._stop.is_set():  # bounded by close(), which every test reaches
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            with conn:
                conn.settimeout(1.0)
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                # Linger on, time 0: close() sends RST instead of FIN.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


@pytest.fixture
def resetting_server() -> Iterator[ResettingServer]:
    srv = ResettingServer()
    try:
        yield srv
    finally:
        srv.close()


def results(result: toolplug.ToolResult) -> list[dict[str, Any]]:
    assert result.ok, result.error
    rows: list[dict[str, Any]] = result.data["results"]
    return rows


def redirect(location: str, status: int) -> Response:
    return Response("", status=status, headers={"Location": location})


# --- wiring ------------------------------------------------------------------------------


def test_entry_point_is_discovered(make_registry: MakeRegistry) -> None:
    registry = make_registry()
    tool = registry.tools["link_validator"]
    assert tool.distribution == "toolplug-link-validator"
    assert tool.cls is LinkValidator
    assert not [p for p in registry.problems if p.distribution == "toolplug-link-validator"]


def test_contract() -> None:
    # Examples are not run: they name public hosts, and the tests stay on loopback.
    check_plugin("toolplug-link-validator", run_examples=False)


def test_available_with_network_and_explains_offline(make_registry: MakeRegistry) -> None:
    assert make_registry().availability("link_validator").available
    offline = toolplug.load(config={"offline": True}, env={})
    found = offline.availability("link_validator")
    assert not found.available
    assert any("network" in reason and "offline" in reason for reason in found.reasons)


def test_entry_module_imports_no_http_client() -> None:
    code = (
        "import sys, toolplug_link_validator\n"
        "heavy = [m for m in ('httpx', 'anyio', 'httpcore') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_examples_and_returns_schema_hold() -> None:
    meta = LinkValidator.metadata
    assert meta.guidelines.do
    assert meta.guidelines.do_not
    assert meta.guidelines.common_mistakes
    assert meta.parameters["properties"]["urls"]["maxItems"] == 100
    assert {e.type for e in meta.errors} >= {"ValidationError"}


# --- statuses ----------------------------------------------------------------------------


def test_status_codes(server: HTTPServer, check: Check) -> None:
    server.expect_request("/ok").respond_with_data("fine", content_type="text/html")
    server.expect_request("/missing").respond_with_data("no", status=404)
    server.expect_request("/broken").respond_with_data("oops", status=500)
    urls = [server.url_for(p) for p in ("/ok", "/missing", "/broken")]
    rows = results(check(urls))
    # Input order is kept.
    assert [r["url"] for r in rows] == urls
    ok, missing, broken = rows
    assert ok["ok"]
    assert ok["status"] == 200
    assert ok["error"] is None
    assert ok["content_type"] == "text/html"
    assert ok["final_url"] == urls[0]
    assert ok["method"] == "HEAD"
    assert ok["redirects"] == []
    assert (missing["ok"], missing["status"], missing["error"]) == (False, 404, "HTTP 404")
    assert (broken["ok"], broken["status"], broken["error"]) == (False, 500, "HTTP 500")
    assert all(r["elapsed_ms"] > 0 for r in rows)


def test_data_matches_the_returns_schema(server: HTTPServer, check: Check) -> None:
    from jsonschema import Draft202012Validator

    server.expect_request("/ok").respond_with_data("ok")
    server.expect_request("/moved").respond_with_response(redirect("/ok", 308))
    result = check([server.url_for("/ok"), server.url_for("/moved"), "nonsense"])
    schema = LinkValidator.metadata.returns
    assert schema is not None
    Draft202012Validator(schema).validate(result.data)


def test_redirect_chain_is_recorded(server: HTTPServer, check: Check) -> None:
    b, c = server.url_for("/b"), server.url_for("/c")
    server.expect_request("/a").respond_with_response(redirect("/b", 301))
    server.expect_request("/b").respond_with_response(redirect(c, 302))
    server.expect_request("/c").respond_with_data("here")
    (row,) = results(check([server.url_for("/a")]))
    assert row["ok"]
    assert row["status"] == 200
    assert row["redirects"] == [{"status": 301, "url": b}, {"status": 302, "url": c}]
    assert row["final_url"] == c


def test_head_refused_falls_back_to_get(server: HTTPServer, check: Check) -> None:
    def no_head(request: Request) -> Response:
        if request.method == "HEAD":
            return Response("", status=405, headers={"Allow": "GET"})
        return Response("x" * 100_000, content_type="text/plain")

    server.expect_request("/nohead").respond_with_handler(no_head)
    (row,) = results(check([server.url_for("/nohead")]))
    assert row["ok"]
    assert row["status"] == 200
    assert row["method"] == "GET"
    assert [entry[0].method for entry in server.log] == ["HEAD", "GET"]


def test_not_implemented_head_falls_back_to_get(server: HTTPServer, check: Check) -> None:
    server.expect_request("/x", method="HEAD").respond_with_data("", status=501)
    server.expect_request("/x", method="GET").respond_with_data("ok")
    (row,) = results(check([server.url_for("/x")]))
    assert (row["ok"], row["method"]) == (True, "GET")


def test_content_type_mismatch_and_parameters_ignored(server: HTTPServer, check: Check) -> None:
    server.expect_request("/api").respond_with_json({"a": 1})
    server.expect_request("/page").respond_with_data("<p>", content_type="Text/HTML; charset=utf-8")
    urls = [server.url_for("/api"), server.url_for("/page")]
    api, page = results(check(urls, expected_content_type="text/html; charset=iso-8859-1"))
    assert not api["ok"]
    assert api["status"] == 200
    assert api["error"] == "content type is application/json, expected text/html"
    assert page["ok"]
    assert page["content_type"] == "text/html"


# --- failures ----------------------------------------------------------------------------


def test_slow_endpoint_times_out(server: HTTPServer, check: Check) -> None:
    release, finished = threading.Event(), threading.Event()

    def slow(request: Request) -> Response:
        release.wait(5)
        finished.set()
        return Response("late")

    server.expect_request("/slow").respond_with_handler(slow)
    server.expect_request("/fast").respond_with_data("quick")
    started = time.perf_counter()
    try:
        rows = results(
            check(
                [server.url_for("/slow"), server.url_for("/fast")],
                config={"url_timeout_seconds": 0.5},
            )
        )
    finally:
        release.set()
        # The shared server must be idle (the late answer logged) before the next test.
        finished.wait(5)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(server.log) < 2:
            time.sleep(0.01)
    assert time.perf_counter() - started < 3
    slow_row, fast_row = rows
    assert slow_row["error"] == "timed out after 0.5 s"
    assert not slow_row["ok"]
    assert slow_row["status"] is None
    assert fast_row["ok"]


def test_redirect_loop_is_detected(server: HTTPServer, check: Check) -> None:
    server.expect_request("/one").respond_with_response(redirect("/two", 302))
    server.expect_request("/two").respond_with_response(redirect("/one", 302))
    (row,) = results(check([server.url_for("/one")]))
    assert not row["ok"]
    assert row["error"].startswith("redirect loop: ")
    assert [hop["url"] for hop in row["redirects"]] == [
        server.url_for("/two"),
        server.url_for("/one"),
    ]
    assert len(server.log) == 2  # stopped as soon as the loop showed, not at max_redirects


def test_too_many_redirects(server: HTTPServer, check: Check) -> None:
    for n in range(10):
        server.expect_request(f"/r{n}").respond_with_response(redirect(f"/r{n + 1}", 307))
    (row,) = results(check([server.url_for("/r0")]))
    assert row["error"] == "more than 5 redirects"  # the [network] default
    assert len(row["redirects"]) == 6


def test_connection_reset(resetting_server: ResettingServer, check: Check) -> None:
    (row,) = results(check([resetting_server.url]))
    assert not row["ok"]
    assert row["status"] is None
    assert row["error"] == "connection reset"
    assert resetting_server.accepted >= 1


def test_connection_refused(check: Check) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nobody listens on the port now.
    (row,) = results(check([f"http://127.0.0.1:{port}/"]))
    assert row["error"] == "connection refused"


def test_unresolvable_host(check: Check, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_dns(host: object, *args: object, **kwargs: object) -> object:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    # No real lookup: the tests never reach a resolver beyond this machine.
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    (row,) = results(check(["http://no-such-host.invalid/page"]))
    assert row["error"] == "could not resolve host no-such-host.invalid"


def test_redirect_to_refused_address_names_it(server: HTTPServer, check: Check) -> None:
    server.expect_request("/out").respond_with_response(redirect("http://10.0.0.1/admin", 302))
    started = time.perf_counter()
    (row,) = results(check([server.url_for("/out")]))
    assert not row["ok"]
    assert row["status"] is None
    assert row["error"].startswith("refused: 10.0.0.1 is a private address")
    assert row["redirects"] == [{"status": 302, "url": "http://10.0.0.1/admin"}]
    # The guard refuses before connecting: no connect timeout was waited for.
    assert time.perf_counter() - started < 2


def test_refused_address_in_the_list(check: Check) -> None:
    (row,) = results(check(["http://169.254.169.254/latest/meta-data/"]))
    assert row["error"].startswith("refused: 169.254.169.254 is a link-local address")


def test_malformed_urls_do_not_stop_the_others(server: HTTPServer, check: Check) -> None:
    server.expect_request("/good").respond_with_data("ok")
    good = server.url_for("/good")
    urls = ["not a url", good, "ftp://files.example/x", "http://", "http://exa mple.com/", good]
    rows = results(check(urls))
    assert [r["url"] for r in rows] == urls
    assert [r["ok"] for r in rows] == [False, True, False, False, False, True]
    for row in (rows[0], rows[2], rows[3], rows[4]):
        assert row["error"].startswith("malformed URL: "), row["error"]
        assert row["status"] is None
    assert "only http and https" in rows[2]["error"]


# --- limits ------------------------------------------------------------------------------


class ConcurrencyProbe:
    """A handler that counts requests in flight and remembers the most seen at once."""

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.current = 0
        self.peak = 0
        self.by_host: dict[str, int] = {}
        self.peak_by_host: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, request: Request) -> Response:
        host = request.host.split(":")[0]
        with self._lock:
            self.current += 1
            self.by_host[host] = self.by_host.get(host, 0) + 1
            self.peak = max(self.peak, self.current)
            self.peak_by_host[host] = max(self.peak_by_host.get(host, 0), self.by_host[host])
        time.sleep(self.delay)
        with self._lock:
            self.current -= 1
            self.by_host[host] -= 1
        return Response("ok")


def test_per_host_limit_is_honoured(server: HTTPServer, check: Check) -> None:
    probe = ConcurrencyProbe()
    server.expect_request("/p").respond_with_handler(probe)
    urls = [server.url_for(f"/p?n={n}") for n in range(24)]
    rows = results(check(urls, config={"per_host": 3, "concurrency": 20}))
    assert all(r["ok"] for r in rows)
    assert probe.peak <= 3
    assert probe.peak == 3  # the limit is reached, so requests do overlap


def test_global_limit_spans_hosts(server: HTTPServer, check: Check) -> None:
    probe = ConcurrencyProbe()
    server.expect_request("/p").respond_with_handler(probe)
    port = server.port
    urls = [f"http://{h}:{port}/p?n={n}" for n in range(12) for h in ("127.0.0.1", "localhost")]
    rows = results(check(urls, config={"per_host": 4, "concurrency": 5}))
    assert all(r["ok"] for r in rows), [r["error"] for r in rows if not r["ok"]]
    assert probe.peak <= 5
    assert max(probe.peak_by_host.values()) <= 4
    assert probe.peak == 5  # both hosts were served at once


def test_max_urls_is_enforced(server: HTTPServer, check: Check) -> None:
    result = check([server.url_for("/a")] * 3, config={"max_urls": 2})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "at most 2" in result.error.message
    assert len(server.log) == 0


def test_schema_caps_a_call_at_100_urls(check: Check) -> None:
    result = check([f"http://127.0.0.1:9/{n}" for n in range(101)], config={"max_urls": 500})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "urls" in result.error.message


def test_bad_expected_content_type(check: Check) -> None:
    result = check(["http://127.0.0.1:9/"], expected_content_type="pdf")
    assert result.error is not None
    assert result.error.type == "ValidationError"


# --- output and progress -----------------------------------------------------------------


def test_output_lists_broken_then_redirected_then_good(server: HTTPServer, check: Check) -> None:
    server.expect_request("/ok").respond_with_data("ok")
    server.expect_request("/moved").respond_with_response(redirect("/ok", 301))
    server.expect_request("/gone").respond_with_data("", status=410)
    urls = [server.url_for(p) for p in ("/ok", "/moved", "/gone", "/ok")]
    result = check(urls)
    text = result.output
    assert text.startswith("Checked 4 links: 1 broken, 1 redirected, 2 good.")
    assert text.index("Broken:") < text.index("Redirected") < text.index("2 links answered")
    assert f"- {urls[2]}: HTTP 410" in text
    assert f"- {urls[1]} -> {urls[0]} (301)" in text
    assert result.data["summary"] == {"total": 4, "ok": 3, "broken": 1, "redirected": 1}


def test_host_progress_callback_is_called(server: HTTPServer, check: Check) -> None:
    server.expect_request("/ok").respond_with_data("ok")
    calls: list[tuple[int, int]] = []
    urls = [server.url_for("/ok")] * 5
    results(check(urls, host={"progress": lambda done, total: calls.append((done, total))}))
    assert calls[0] == (0, 5)
    assert calls[-1] == (5, 5)
    assert [done for done, _ in calls] == list(range(6))


def test_failing_progress_callback_is_dropped_with_a_warning(
    server: HTTPServer, check: Check
) -> None:
    server.expect_request("/ok").respond_with_data("ok")

    def broken(done: int, total: int) -> None:
        raise RuntimeError("terminal gone")

    result = check([server.url_for("/ok")], host={"progress": broken})
    assert result.ok
    assert result.data["results"][0]["ok"]
    assert any("progress callback" in w for w in result.warnings)


def test_progress_bar_draws_only_on_a_terminal() -> None:
    quiet = io.StringIO()
    bar = progress_bar(quiet)
    assert not bar.enabled
    bar(1, 2)
    bar(2, 2)
    assert quiet.getvalue() == ""

    shown = io.StringIO()
    forced = ProgressBar(shown, width=10, force=True)
    forced(0, 4)
    forced(2, 4)  # within 0.1 s of the last draw: skipped
    forced(4, 4)  # the end is always drawn, and ends the line
    assert shown.getvalue() == (
        "\rchecking links [..........] 0/4\rchecking links [##########] 4/4\n"
    )


@pytest.mark.parametrize(
    ("done", "total", "expected"),
    [
        (0, 10, "x [....] 0/10"),  # nothing yet
        (5, 10, "x [##..] 5/10"),  # half, rounded down
        (10, 10, "x [####] 10/10"),  # all
        (12, 10, "x [####] 10/10"),  # more than total is clamped
        (0, 0, "x [####] 0/0"),  # an empty run is complete
    ],
)
def test_render(done: int, total: int, expected: str) -> None:
    assert render(done, total, label="x", width=4) == expected
