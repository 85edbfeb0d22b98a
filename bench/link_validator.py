"""Benchmark: link_validator against a sequential ``httpx.get`` loop, on loopback only.

Run from the workspace root::

    uv run python bench/link_validator.py            # 1,000 URLs, 20 ms per response
    uv run python bench/link_validator.py --urls 200 --sample 50

A server process (asyncio, keep-alive, one listening socket per loopback address
127.0.0.1 ... 127.0.0.N) answers every request after a fixed delay. It runs in its own process
so that it does not share the benchmark's interpreter lock, and it exits by itself when this
script ends or after ``--server-lifetime`` seconds. Nothing leaves 127.0.0.0/8.

Measured, in this order, in one run:

1. the tool's ``run`` on all URLs (defaults: concurrency 20, per_host 4), peak RSS read after it;
2. the same call again under ``tracemalloc`` (its peak Python allocation);
3. the anchors, on a sample of the URLs, scaled to the full count: a plain sequential
   ``httpx.get`` loop, and a sequential loop over one shared ``httpx.Client``.

The output is a Markdown table (see bench/link_validator.md for the latest figures).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# --- the server (runs in a child process) --------------------------------------------------


_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 15\r\n\r\n"
)
_BODY = b"<html>ok</html>"


class _DelayedOK(asyncio.Protocol):
    """Answers each request on a keep-alive connection with 200, ``delay`` seconds later.

    A bare protocol with a timer per request, no coroutine and no stream objects: it costs a
    few microseconds per request, so the server stays far from being the bottleneck.
    """

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        loop = asyncio.get_running_loop()
        while b"\r\n\r\n" in self.buffer:
            head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
            answer = _RESPONSE if head.startswith(b"HEAD ") else _RESPONSE + _BODY
            loop.call_later(self.delay, self._answer, answer)

    def _answer(self, answer: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(answer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def _serve(hosts: list[str], delay: float, lifetime: float) -> None:
    loop = asyncio.get_running_loop()
    servers = []
    port = 0
    for host in hosts:
        server = await loop.create_server(lambda: _DelayedOK(delay), host, port, backlog=1024)
        port = server.sockets[0].getsockname()[1]  # the same port on every address
        servers.append(server)
    print(port, flush=True)
    stdin_closed = loop.create_future()

    def on_stdin() -> None:
        if not os.read(sys.stdin.fileno(), 1024) and not stdin_closed.done():
            stdin_closed.set_result(None)

    loop.add_reader(sys.stdin.fileno(), on_stdin)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stdin_closed, timeout=lifetime)
    loop.remove_reader(sys.stdin.fileno())
    for server in servers:
        server.close()


def _loopback_hosts(count: int) -> list[str]:
    """127.0.0.1 ... 127.0.0.N, keeping only the addresses this system lets us bind."""
    import socket

    hosts = []
    for n in range(1, count + 1):
        host = f"127.0.0.{n}"
        with socket.socket() as sock:
            try:
                sock.bind((host, 0))
            except OSError:
                continue
        hosts.append(host)
    return hosts


@contextlib.contextmanager
def loopback_server(hosts: list[str], delay: float, lifetime: float) -> Iterator[int]:
    """Start the server process; yield its port; stop it (closing its stdin ends it)."""
    command = [
        sys.executable,
        __file__,
        "--serve",
        ",".join(hosts),
        "--delay",
        str(delay),
        "--server-lifetime",
        str(lifetime),
    ]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"the benchmark server did not start (said {line!r})")
        yield int(line)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


# --- the measurements -----------------------------------------------------------------------


@dataclass
class Row:
    what: str
    urls: int
    seconds: float
    cpu: float
    note: str = ""


def run_tool(urls: list[str], tool_config: dict[str, Any]) -> tuple[float, float]:
    """Wall and CPU seconds of one ``run`` of the tool over ``urls``; every URL must be good."""
    import toolplug
    from toolplug_link_validator import LinkValidator

    registry = toolplug.load(
        config={"network": {"allow": ["127.0.0.0/8"]}, "tools": {"link_validator": tool_config}},
        env={},
    )
    context = registry.context_for("link_validator")
    started, cpu = time.perf_counter(), time.process_time()
    # run() directly: the advertised schema caps a model's call at 100 URLs; max_urls lifts
    # the tool's own limit for this host-side call.
    result = asyncio.run(LinkValidator().run({"urls": urls}, context))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if not result.ok:
        raise RuntimeError(f"the tool failed: {result.error}")
    summary: dict[str, Any] = result.data["summary"]
    if summary["ok"] != len(urls):
        bad = [r for r in result.data["results"] if not r["ok"]][:3]
        raise RuntimeError(f"not every URL was good: {summary}; e.g. {bad}")
    return seconds, cpu


def sequential_get(urls: list[str]) -> tuple[float, float]:
    """The naive anchor: ``httpx.get`` per URL (a new client, and connection, each time)."""
    import httpx

    started, cpu = time.perf_counter(), time.process_time()
    for url in urls:
        httpx.get(url).raise_for_status()
    return time.perf_counter() - started, time.process_time() - cpu


def sequential_client(urls: list[str]) -> tuple[float, float]:
    """A fairer sequential anchor: one ``httpx.Client`` (keep-alive) for every URL."""
    import httpx

    started, cpu = time.perf_counter(), time.process_time()
    with httpx.Client() as client:
        for url in urls:
            client.get(url).raise_for_status()
    return time.perf_counter() - started, time.process_time() - cpu


def peak_rss_mib() -> float:
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="link_validator vs a sequential httpx loop")
    parser.add_argument("--urls", type=int, default=1000, help="URLs to check (default 1000)")
    parser.add_argument("--delay", type=float, default=0.02, help="server delay per response, s")
    parser.add_argument("--hosts", type=int, default=10, help="loopback addresses to spread over")
    parser.add_argument("--sample", type=int, default=100, help="URLs timed for the anchors")
    parser.add_argument("--server-lifetime", type=float, default=600.0, help=argparse.SUPPRESS)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(_serve(args.serve.split(","), args.delay, args.server_lifetime))
        return 0
    if not 1 <= args.urls <= 10_000 or not 1 <= args.sample <= args.urls:
        parser.error("--urls must be 1..10000 and --sample 1..--urls")

    hosts = _loopback_hosts(max(1, args.hosts))
    if not hosts:
        parser.error("cannot bind any 127.0.0.x address")
    defaults = {"max_urls": args.urls}
    rows: list[Row] = []
    with loopback_server(hosts, args.delay, args.server_lifetime) as port:
        urls = [f"http://{hosts[i % len(hosts)]}:{port}/page/{i}" for i in range(args.urls)]
        # Warm-up: imports, first connections, so that none of them is timed.
        run_tool(urls[: len(hosts) * 2], defaults)
        sequential_get(urls[:2])

        seconds, cpu = run_tool(urls, defaults)
        rss = peak_rss_mib()
        rows.append(
            Row("link_validator, defaults (concurrency 20, per_host 4)", len(urls), seconds, cpu)
        )

        tracemalloc.start()
        traced_seconds, _ = run_tool(urls, defaults)
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

        wide = {"max_urls": args.urls, "concurrency": 50, "per_host": 10}
        seconds, cpu = run_tool(urls, wide)
        rows.append(Row("link_validator, concurrency 50, per_host 10", len(urls), seconds, cpu))

        sample = urls[: args.sample]
        scale = len(urls) / len(sample)
        note = f"{len(sample)} timed, x{scale:g}" if scale != 1 else ""
        anchors = [
            ("sequential `httpx.get` loop", sequential_get(sample)),
            ("sequential loop, one `httpx.Client`", sequential_client(sample)),
        ]
        rows[:0] = [
            Row(what, len(urls), wall * scale, cpu * scale, note) for what, (wall, cpu) in anchors
        ]

    anchor = rows[0].seconds
    print(
        f"link_validator benchmark: {len(urls)} URLs over {len(hosts)} loopback address(es), "
        f"{args.delay * 1000:g} ms per response; Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs\n"
    )
    print("| run | URLs | wall time (s) | client CPU (s) | URLs/s | vs `httpx.get` loop |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        what = f"{row.what} ({row.note})" if row.note else row.what
        print(
            f"| {what} | {row.urls} | {row.seconds:.2f} | {row.cpu:.2f} "
            f"| {row.urls / row.seconds:.0f} | {anchor / row.seconds:.1f}x |"
        )
    print()
    load = ", ".join(f"{n:.2f}" for n in os.getloadavg())
    print(f"Load average when done (1, 5, 15 min): {load}")
    print(f"Peak RSS of the benchmark process after the defaults run (ru_maxrss): {rss:.1f} MiB")
    print(
        f"tracemalloc peak during a second defaults run: {traced_peak / 2**20:.1f} MiB "
        f"(that run took {traced_seconds:.2f} s under tracing)"
    )
    speedup = anchor / rows[2].seconds
    ok = speedup >= 20 and rss < 150
    print(f"\nGoal (>= 20x at defaults, peak RSS < 150 MiB): {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
