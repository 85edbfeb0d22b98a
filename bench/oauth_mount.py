"""What signing in with OAuth costs a mounted server's calls, and a token expiring under load.

One upstream process on 127.0.0.1: the official MCP SDK's ``MCPServer`` over streamable
HTTP as a protected resource (its token verifier checks an HMAC-signed token and its
expiry; its protected resource metadata names the authorization server), and beside it,
on the same port, an authorization server with a metadata document and a client
credentials token endpoint that counts the tokens it issues.

Two toolplug registries mount it, side by side in one run:

* ``static bearer`` (the anchor): ``headers = { Authorization = "Bearer ..." }`` with a
  long-lived token;
* ``oauth``: ``auth = "oauth"`` with ``grant = "client_credentials"``, the token fetched,
  kept and attached by toolplug's OAuth client (the MCP SDK's provider under it).

Sequential awaited calls of ``add`` are timed in interleaved batches (medians of
``--rounds``), then, with tokens issued for ``--lifetime`` seconds, ``--calls`` concurrent
calls of a 0.2 s tool are sent, staggered over 0.4 s, so that the token expires while they
are in flight: the result says how many failed and how many tokens were issued for them
(goal: none failed, one refresh).

    uv run python bench/oauth_mount.py --rounds 7 --batch 200
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import toolplug

SECRET = "bench-oauth-secret"
CLIENT = ("bench-machine", "bench-machine-secret")

UPSTREAM = '''
import asyncio, hashlib, hmac, os, sys, time

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

port, lifetime = int(sys.argv[1]), float(sys.argv[2])
base = f"http://127.0.0.1:{port}"
key = os.environ["BENCH_SECRET"].encode()
client_id, client_secret = os.environ["BENCH_CLIENT"].split(":")
issued = [0]


def sign(body):
    return body + "." + hmac.new(key, body.encode(), hashlib.sha256).hexdigest()[:32]


class Verifier:
    async def verify_token(self, token):
        body, _, mac = token.rpartition(".")
        if not hmac.compare_digest(sign(body), token):
            return None
        expires = float(body.split(".")[2])
        if expires < time.time():
            return None
        return AccessToken(token=token, client_id=client_id, scopes=["tools"],
                           expires_at=int(expires), resource=f"{base}/mcp")


server = MCPServer(
    "upstream", token_verifier=Verifier(),
    auth=AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp",
                      required_scopes=["tools"], validate_token_resource=True),
)


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


@server.tool()
async def nap() -> str:
    await asyncio.sleep(0.2)
    return "rested"


async def metadata(request: Request) -> JSONResponse:
    return JSONResponse({
        "issuer": base, "token_endpoint": f"{base}/token",
        "authorization_endpoint": f"{base}/authorize", "response_types_supported": ["code"],
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
    })


async def token(request: Request) -> JSONResponse:
    form = await request.form()
    who, secret = form.get("client_id"), form.get("client_secret")
    header = request.headers.get("authorization", "")
    if header.startswith("Basic "):
        import base64, urllib.parse
        pair = base64.b64decode(header[6:]).decode()
        who, _, secret = (urllib.parse.unquote(p) for p in pair.partition(":"))
    if (who, secret) != (client_id, client_secret):
        return JSONResponse({"error": "invalid_client"}, status_code=401)
    issued[0] += 1
    expires = time.time() + lifetime
    return JSONResponse({"access_token": sign(f"t.{issued[0]}.{expires:.3f}"),
                         "token_type": "Bearer", "expires_in": int(lifetime) or 1,
                         "scope": "tools"})


async def count(request: Request) -> JSONResponse:
    return JSONResponse({"issued": issued[0]})


async def static(request: Request) -> JSONResponse:
    return JSONResponse({"token": sign(f"s.0.{time.time() + 86400:.3f}")})


app = server.streamable_http_app()
app.router.routes[:0] = [
    Route("/.well-known/oauth-authorization-server", metadata),
    Route("/token", token, methods=["POST"]),
    Route("/issued", count),
    Route("/static", static),
]
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
'''


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Upstream:
    """The upstream process on a free port, tokens issued for ``lifetime`` seconds."""

    def __init__(self, lifetime: float) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "BENCH_SECRET": SECRET, "BENCH_CLIENT": ":".join(CLIENT)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", UPSTREAM, str(self.port), str(lifetime)], env=env
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.base}/issued", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.close()
        raise RuntimeError("the upstream did not start")

    def issued(self) -> int:
        return int(httpx.get(f"{self.base}/issued", timeout=5).json()["issued"])

    def static_token(self) -> str:
        return str(httpx.get(f"{self.base}/static", timeout=5).json()["token"])

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def registry(home: Path, upstream: Upstream, way: str) -> toolplug.Registry:
    folder = home / way
    folder.mkdir(exist_ok=True)
    if way == "oauth":
        auth = (
            'auth = "oauth"\n[mcp_servers.up.oauth]\ngrant = "client_credentials"\n'
            f'client_id = "{CLIENT[0]}"\nclient_secret = {{ env = "BENCH_CLIENT_SECRET" }}\n'
            f'issuer = "{upstream.base}"\nscopes = ["tools"]\n'
        )
    else:
        auth = f'headers = {{ Authorization = "Bearer {upstream.static_token()}" }}\n'
    path = folder / "toolplug.toml"
    path.write_text(
        f'cache_dir = "{folder / "cache"}"\nstate_dir = "{folder / "state"}"\n'
        f'[mcp_servers.up]\nurl = "{upstream.base}/mcp"\napproval = "never"\n{auth}',
        encoding="utf-8",
    )
    return toolplug.load(path, env={**os.environ, "BENCH_CLIENT_SECRET": CLIENT[1]})


async def batch(reg: toolplug.Registry, size: int) -> float:
    started = time.perf_counter()
    for n in range(size):
        result = await reg.acall("up_add", {"a": n, "b": 1})
        if not result.ok:
            raise RuntimeError(f"a call failed: {result.error}")
    return (time.perf_counter() - started) / size


async def sequential(home: Path, rounds: int, size: int) -> dict[str, float]:
    upstream = Upstream(lifetime=3600)
    ways = {way: registry(home, upstream, way) for way in ("static bearer", "oauth")}
    try:
        for reg in ways.values():
            await batch(reg, 20)  # connect, initialize, the first token
        times: dict[str, list[float]] = {way: [] for way in ways}
        for round_ in range(rounds):
            order = list(ways) if round_ % 2 == 0 else list(reversed(ways))
            for way in order:
                times[way].append(await batch(ways[way], size))
        return {way: statistics.median(values) * 1e6 for way, values in times.items()}
    finally:
        for reg in ways.values():
            reg.close()
        upstream.close()


async def expiring(home: Path, calls: int, lifetime: float) -> tuple[int, int, float]:
    """Failed calls, tokens issued for them, and the seconds they took."""
    upstream = Upstream(lifetime=lifetime)
    reg = registry(home, upstream, "oauth")
    try:
        first = await reg.acall("up_add", {"a": 1, "b": 1})
        assert first.ok, first.error
        before = upstream.issued()
        started_at = time.time()
        # the token expires while the calls go out
        await asyncio.sleep(max(0.0, lifetime - 0.2 - (time.time() - started_at)))

        async def one(n: int) -> bool:
            await asyncio.sleep(0.4 * n / calls)
            return (await reg.acall("up_nap", {})).ok

        started = time.perf_counter()
        results = await asyncio.gather(*(one(n) for n in range(calls)))
        took = time.perf_counter() - started
        return results.count(False), upstream.issued() - before, took
    finally:
        reg.close()
        upstream.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--lifetime", type=float, default=3.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        median = asyncio.run(sequential(home, options.rounds, options.batch))
        failed, refreshed, took = asyncio.run(expiring(home, options.calls, options.lifetime))
    print(f"{options.rounds} interleaved rounds of {options.batch} awaited calls of up_add")
    print()
    print("| way | median us per call |")
    print("|---|---:|")
    for way, value in median.items():
        print(f"| {way} | {value:.1f} |")
    print()
    ratio = median["oauth"] / median["static bearer"]
    print(f"oauth / static bearer: {ratio:.3f}x (goal <= 1.05x)")
    print(
        f"{options.calls} concurrent calls while the token expired: {failed} failed, "
        f"{refreshed} token(s) issued, {took:.2f} s (goal: none failed, one refresh)"
    )


if __name__ == "__main__":
    main()
