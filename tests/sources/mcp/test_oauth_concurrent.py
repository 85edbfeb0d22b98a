"""Calls of an OAuth-mounted server run at once, as a static bearer's do.

The MCP SDK's OAuth flow holds its lock across each request, so before toolplug sent a
valid token outside it, every call of a mounted server waited for the one before to be
answered (bench/oauth_mount.py: 50 calls of a 0.2 s tool took 10 s). Here the upstream's
tool is a barrier: it answers once ``N`` calls are inside it at the same moment, or after
20 s with how many there were. Serialised calls would each see one.

The upstream is the official MCP SDK's ``MCPServer`` as a protected resource, with a
client credentials token endpoint beside it on the same loopback port whose tokens live
``LIFETIME`` seconds, so that a second round of calls meets an expired token: those calls
wait for one new token and still meet inside the barrier.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

import toolplug
from tests.helpers.measured import measured
from tests.helpers.serve import free_port

N = 8
LIFETIME = 3

UPSTREAM = '''
import asyncio, secrets, sys, time

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.responses import JSONResponse
from starlette.routing import Route

port, n, lifetime = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
base = f"http://127.0.0.1:{port}"
tokens: dict[str, float] = {}
inside = [0]
arrived = asyncio.Event()


class Verifier:
    async def verify_token(self, token):
        expires = tokens.get(token)
        if expires is None or expires < time.time():
            return None
        return AccessToken(token=token, client_id="machine", scopes=["tools"],
                           expires_at=int(expires), resource=f"{base}/mcp")


server = MCPServer("upstream", token_verifier=Verifier(), auth=AuthSettings(
    issuer_url=base, resource_server_url=f"{base}/mcp", required_scopes=["tools"],
    validate_token_resource=True,
))


@server.tool()
async def meet() -> int:
    inside[0] += 1
    most = inside[0]
    if most >= n:
        arrived.set()
    try:
        await asyncio.wait_for(arrived.wait(), 20)
    except TimeoutError:
        pass
    inside[0] -= 1
    if inside[0] == 0:
        arrived.clear()
    return most


async def metadata(request):
    return JSONResponse({
        "issuer": base, "token_endpoint": f"{base}/token",
        "authorization_endpoint": f"{base}/authorize", "response_types_supported": ["code"],
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
    })


async def token(request):
    token = secrets.token_urlsafe(16)
    tokens[token] = time.time() + lifetime
    return JSONResponse({"access_token": token, "token_type": "Bearer",
                         "expires_in": int(lifetime), "scope": "tools"})


async def issued(request):
    return JSONResponse({"issued": len(tokens)})


app = server.streamable_http_app()
app.router.routes[:0] = [
    Route("/.well-known/oauth-authorization-server", metadata),
    Route("/token", token, methods=["POST"]),
    Route("/issued", issued),
]
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
'''


@contextmanager
def upstream() -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-c", UPSTREAM, str(port), str(N), str(LIFETIME)],
        env=measured(dict(os.environ)),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/issued", timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the upstream did not start") from None
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)


def test_calls_of_an_oauth_mount_meet_even_when_its_token_expires(tmp_path: Path) -> None:
    with upstream() as base:
        config = tmp_path / "toolplug.toml"
        config.write_text(
            f'cache_dir = "{tmp_path / "cache"}"\nstate_dir = "{tmp_path / "state"}"\n'
            f'[mcp_servers.up]\nurl = "{base}/mcp"\napproval = "never"\nauth = "oauth"\n'
            '[mcp_servers.up.oauth]\ngrant = "client_credentials"\nclient_id = "machine"\n'
            'client_secret = { env = "CONCURRENT_SECRET" }\n'
            f'issuer = "{base}"\nscopes = ["tools"]\n',
            encoding="utf-8",
        )
        registry = toolplug.load(config, env={**os.environ, "CONCURRENT_SECRET": "s3cret"})

        async def round_of_calls() -> list[int]:
            results = await asyncio.gather(*(registry.acall("up_meet", {}) for _ in range(N)))
            assert all(r.ok for r in results), [r.error for r in results if not r.ok]
            return sorted(int(str(r.output).strip()) for r in results)

        async def scenario() -> tuple[list[int], list[int], int, int]:
            first = await round_of_calls()
            before = httpx.get(f"{base}/issued", timeout=5).json()["issued"]
            await asyncio.sleep(LIFETIME + 0.5)  # the token has expired
            second = await round_of_calls()
            after = httpx.get(f"{base}/issued", timeout=5).json()["issued"]
            return first, second, before, after

        try:
            first, second, before, after = asyncio.run(scenario())
        finally:
            registry.close()
    # every call saw all N inside at once: none waited for another's answer
    assert max(first) == N, first
    assert max(second) == N, second
    assert after - before == 1  # the calls that met the expired token shared one new token
