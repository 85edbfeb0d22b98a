"""An authenticated call over HTTP against the same call without auth, in one run.

Two ``toolplug serve --http`` processes serve the same tools, one under ``[serve.auth]``
(JWTs signed RS256 by an issuer on 127.0.0.1 whose JWKS it fetches once and caches; the
token carries the scopes the tools need), one without. The official SDK client calls
each, the rounds alternating which goes first:

- sequential calls of an instant tool (``add``), both clients open, interleaved batch by
  batch: the median time of one call;
- 200 concurrent calls of a tool that waits 0.5 s, timed from the first call sent to the
  last result, with a client pool that admits all 200 at once;
- and, in this process, what auth adds to each request: the verifier checking the JWT
  with its cached key (``Verifier.verify_token``), the median of many.

    uv run python bench/auth.py --calls 300 --concurrent 200 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

PLUGIN = '''
import asyncio
from typing import Any

from toolplug import Annotations, Tool, ToolMetadata, ToolResult, hookimpl


class Add(Tool):
    metadata = ToolMetadata(
        name="add", description="Add two integers.", category="utility",
        parameters={"type": "object", "properties": {"a": {"type": "integer"},
                    "b": {"type": "integer"}}, "required": ["a", "b"]},
        annotations=Annotations(read_only=True, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success(str(arguments["a"] + arguments["b"]))


class Nap(Tool):
    metadata = ToolMetadata(
        name="nap", description="Wait half a second, then answer.", category="utility",
        annotations=Annotations(read_only=True, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        await asyncio.sleep(0.5)
        return ToolResult.success("rested")


@hookimpl
def register_tools(register: Any) -> None:
    register(Add)
    register(Nap)
'''


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def issuer(key: Any) -> Iterator[str]:
    """The issuer's JWKS on 127.0.0.1 (the server finds it from ``jwks_uri``)."""
    public = json.loads(jwt.get_algorithm_by_name("RS256").to_jwk(key.public_key()))
    body = json.dumps({"keys": [{**public, "kid": "bench", "use": "sig", "alg": "RS256"}]})

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@contextmanager
def serving(folder: Path, port: int, config: str) -> Iterator[str]:
    (folder / f"{port}.toml").write_text(config, encoding="utf-8")
    env = {
        **os.environ, "PYTHONPATH": str(folder), "TOOLPLUG_PLUGINS": "bench-auth",
        "TOOLPLUG_CONFIG": str(folder / f"{port}.toml"),
        "TOOLPLUG_CACHE_DIR": str(folder / "cache"),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "toolplug", "serve", "--http", f"127.0.0.1:{port}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(30)


async def sequential(ways: list[tuple[str, str, str | None]], calls: int) -> dict[str, float]:
    """The median seconds of one call of ``add``, each way's client open at once and the
    ways interleaved batch by batch (20 calls), so drift on a busy machine hits all alike."""
    async with AsyncExitStack() as stack:
        clients = {}
        for name, url, token in ways:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers))
            clients[name] = await stack.enter_async_context(
                Client(streamable_http_client(url, http_client=http))
            )
            await clients[name].call_tool("add", {"a": 1, "b": 2})  # warm
        times: dict[str, list[float]] = {name: [] for name in clients}
        for batch in range(max(1, calls // 20)):
            order = list(clients.items())
            for name, client in order if batch % 2 == 0 else order[::-1]:
                for n in range(20):
                    started = time.perf_counter()
                    result = await client.call_tool("add", {"a": n, "b": 1})
                    times[name].append(time.perf_counter() - started)
                    assert not result.is_error, result
        return {name: statistics.median(spent) for name, spent in times.items()}


async def verifying(issued_by: str, audience: str, token: str, times: int) -> float:
    """The median seconds of one ``verify_token`` of a JWT whose key is cached."""
    from toolplug.config._settings import AuthSettings
    from toolplug.serve._auth import Verifier

    settings = AuthSettings.model_validate(
        {"issuer": issued_by, "audience": audience, "jwks_uri": f"{issued_by}/jwks"}
    )
    verifier = Verifier(settings)
    try:
        assert await verifier.verify_token(token) is not None  # fetches the keys once
        spent = []
        for _ in range(times):
            started = time.perf_counter()
            await verifier.verify_token(token)
            spent.append(time.perf_counter() - started)
        return statistics.median(spent)
    finally:
        await verifier.aclose()


async def concurrent(url: str, token: str | None, calls: int) -> float:
    """Seconds from the first of ``calls`` concurrent ``nap`` calls to the last result."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx2.Limits(max_connections=calls, max_keepalive_connections=calls)
    async with (
        httpx2.AsyncClient(headers=headers, limits=limits, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        await client.call_tool("nap", {})  # warm
        started = time.perf_counter()
        results = await asyncio.gather(*(client.call_tool("nap", {}) for _ in range(calls)))
        elapsed = time.perf_counter() - started
        assert not any(r.is_error for r in results)
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with tempfile.TemporaryDirectory() as tmp, issuer(key) as issued_by:
        folder = Path(tmp)
        dist = folder / "bench_auth-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bench-auth\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text("[toolplug]\nbench_auth = bench_auth\n")
        (folder / "bench_auth.py").write_text(PLUGIN)
        with_port, without_port = free_port(), free_port()
        audience = f"http://127.0.0.1:{with_port}/mcp"
        auth = (
            f'[serve.auth]\nissuer = "{issued_by}"\naudience = "{audience}"\n'
            f'jwks_uri = "{issued_by}/jwks"\n'
        )
        now = int(time.time())
        token = jwt.encode(
            {"iss": issued_by, "sub": "bench", "aud": audience, "client_id": "bench",
             "scope": "tools:read tools:write", "iat": now, "exp": now + 3600},
            key, algorithm="RS256", headers={"kid": "bench"},
        )
        results: dict[str, list[float]] = {}
        verify = asyncio.run(verifying(issued_by, audience, token, 2000))
        with serving(folder, with_port, auth) as authed, serving(folder, without_port, "") as bare:
            ways = [("with auth", authed, token), ("without auth", bare, None)]
            for round_ in range(args.rounds):
                ordered = ways if round_ % 2 == 0 else ways[::-1]
                for name, one in asyncio.run(sequential(ordered, args.calls)).items():
                    results.setdefault(f"one call, {name}", []).append(one)
                for name, url, bearer in ordered:
                    many = asyncio.run(concurrent(url, bearer, args.concurrent))
                    results.setdefault(f"{args.concurrent} concurrent, {name}", []).append(many)
    print("| way | median | rounds |\n|---|---:|---|")
    for name, values in results.items():
        unit = ("ms", 1000) if name.startswith("one") else ("s", 1)
        rounds = ", ".join(f"{v * unit[1]:.3g}" for v in values)
        print(f"| {name} | {statistics.median(values) * unit[1]:.3f} {unit[0]} | {rounds} |")
    for kind in ("one call", f"{args.concurrent} concurrent"):
        ratio = statistics.median(results[f"{kind}, with auth"]) / statistics.median(
            results[f"{kind}, without auth"]
        )
        print(f"{kind}: with auth / without = {ratio:.3f}x")
    print(f"verify_token, JWT RS256, key cached: {verify * 1e6:.1f} us per request")


if __name__ == "__main__":
    main()
