"""``[serve.auth]``: ``toolplug serve --http`` as an OAuth 2.1 resource server.

The verifier against a real issuer on 127.0.0.1 (tests/helpers/auth.py: its metadata, its
JWKS, JWTs signed with its keys), then the real ``toolplug serve`` in a subprocess: the
protected resource metadata, 401 and its challenge, tokens for another audience, expired
or badly signed, the static tokens, and the refusal to serve beyond loopback without auth.
The end-to-end OAuth flow with a real authorization server is tests/serve/test_oauth.py.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
import pytest
from mcp import Client

import toolplug
from tests.helpers.auth import READ, WRITE, Issuer, Key, auth_config, issuer_server
from tests.helpers.mcp_servers import http_server as mcp_http_server
from tests.helpers.mcp_servers import stdio_table, write_server
from tests.helpers.serve import CONFIG, TIMEOUT, child_env, free_port, http_server
from toolplug.config._settings import AuthSettings
from toolplug.serve._auth import Verifier, scopes_for

AUDIENCE = "http://127.0.0.1:8000/mcp"


def settings(issuer: Issuer, **extra: Any) -> AuthSettings:
    return AuthSettings.model_validate({"issuer": issuer.url, "audience": AUDIENCE, **extra})


async def verify(verifier: Verifier, *tokens: str) -> list[Any]:
    try:
        return [await verifier.verify_token(token) for token in tokens]
    finally:
        await verifier.aclose()


# -- the verifier ------------------------------------------------------------------


def test_a_jwt_for_this_server_names_its_principal_and_scopes() -> None:
    with issuer_server(Key.rsa("one")) as issuer:
        token = issuer.token(AUDIENCE, subject="alice", client_id="cli", scopes=(READ,))
        [found] = asyncio.run(verify(Verifier(settings(issuer)), token))
        paths = list(issuer.requests)
    assert found is not None
    assert (found.subject, found.client_id, found.scopes) == ("alice", "cli", [READ])
    assert found.resource == AUDIENCE
    assert found.claims == {"iss": issuer.url}
    # no jwks_uri configured: found in the issuer's metadata, then fetched once
    assert paths == ["/.well-known/oauth-authorization-server", "/jwks"]


@pytest.mark.parametrize(
    ("case", "make"),
    [
        # issued for another resource (RFC 8707): refused
        ("another audience", lambda i, k: i.token("http://127.0.0.1:9999/mcp")),
        # an audience list that does not name this server
        ("no audience of ours", lambda i, k: i.token(["https://other.example/mcp"])),
        # expired an hour ago (well past the 30 s leeway)
        ("expired", lambda i, k: i.token(AUDIENCE, lifetime=-3600)),
        # not valid for another hour
        ("not yet valid", lambda i, k: i.token(AUDIENCE, not_before=time.time() + 3600)),
        # signed by a key that is not the issuer's, under the issuer's kid
        ("badly signed", lambda i, k: i.token(AUDIENCE, key=Key("one", k.private))),
        # issued by someone else
        ("another issuer", lambda i, k: i.token(AUDIENCE, issuer="http://127.0.0.1:1")),
        # an algorithm off the allow-list, by a key the issuer does publish
        ("algorithm not allowed", lambda i, k: i.token(AUDIENCE, key=i.keys[1])),
        # not a JWT at all
        ("not a jwt", lambda i, k: "made-up"),
    ],
)
def test_a_token_not_for_this_server_is_refused(case: str, make: Any) -> None:
    stranger = Key.rsa("stranger")
    with issuer_server(Key.rsa("one"), Key.ec("es384", "ES384")) as issuer:
        good, bad = issuer.token(AUDIENCE), make(issuer, stranger)
        accepted, refused = asyncio.run(verify(Verifier(settings(issuer)), good, bad))
    assert accepted is not None
    assert refused is None, case


def test_an_unknown_kid_fetches_the_keys_again() -> None:
    with issuer_server(Key.rsa("old")) as issuer:
        verifier = Verifier(settings(issuer, jwks_uri=f"{issuer.url}/jwks"))
        verifier.refresh_seconds = 0  # a rotation right after the first fetch

        async def run() -> list[Any]:
            first = await verifier.verify_token(issuer.token(AUDIENCE))
            issuer.keys.append(Key.rsa("new"))  # the issuer rotates its keys
            second = await verifier.verify_token(issuer.token(AUDIENCE, key=issuer.keys[1]))
            again = await verifier.verify_token(issuer.token(AUDIENCE, key=issuer.keys[1]))
            return await verify(verifier) + [first, second, again]

        first, second, again = asyncio.run(run())
    assert None not in (first, second, again)
    assert issuer.requests == ["/jwks", "/jwks"]  # fetched again once, then cached


def test_a_verified_token_is_kept_only_until_it_expires() -> None:
    with issuer_server(Key.rsa("one")) as issuer:
        verifier = Verifier(settings(issuer, leeway_seconds=0))
        # long enough to be verified first on a busy machine (the first check fetches keys)
        token = issuer.token(AUDIENCE, lifetime=5)
        expires = jwt.decode(token, options={"verify_signature": False})["exp"]

        async def run() -> list[Any]:
            first = await verifier.verify_token(token)
            while time.time() <= expires + 1:  # until it has expired
                await asyncio.sleep(0.2)
            return [first, *await verify(verifier, token)]

        first, later = asyncio.run(run())
    assert first is not None
    assert later is None  # the kept verification went with the token's expiry


@pytest.mark.parametrize(
    ("case", "claims"),
    [
        # a NumericDate written as a string: PyJWT's int() takes it, and the kept
        # verification had no expiry at all
        ("exp a numeric string", lambda now: {"exp": str(int(now + 300))}),
        # true is no number of seconds either
        ("exp a boolean", lambda now: {"exp": True}),
        ("nbf a numeric string", lambda now: {"nbf": str(int(now - 10))}),
        ("iat a numeric string", lambda now: {"iat": str(int(now))}),
    ],
)
def test_a_time_claim_that_is_not_a_json_number_is_refused(case: str, claims: Any) -> None:
    with issuer_server(Key.rsa("one")) as issuer:
        token = issuer.token(AUDIENCE, claims=claims(time.time()))
        good = issuer.token(AUDIENCE)
        accepted, refused, again = asyncio.run(
            verify(Verifier(settings(issuer)), good, token, token)
        )
    assert accepted is not None
    assert (refused, again) == (None, None), case


def test_the_leeway_is_in_the_expiry_a_verification_is_given() -> None:
    """The SDK's bearer middleware refuses a token past ``expires_at``: it is the token's
    ``exp`` and ``leeway_seconds``, or a token 20 s past its ``exp`` would be refused
    with a 30 s leeway (the end-to-end case is below)."""
    with issuer_server(Key.rsa("one")) as issuer:
        token = issuer.token(AUDIENCE, lifetime=-20)
        exp = jwt.decode(token, options={"verify_signature": False})["exp"]
        [found] = asyncio.run(verify(Verifier(settings(issuer, leeway_seconds=30)), token))
    assert found is not None
    assert found.expires_at == exp + 30


def test_a_key_gone_from_the_jwks_takes_its_kept_verifications_along() -> None:
    """The issuer withdraws a key (compromised, or rotated out): the next fetch of its
    keys, for a new kid here, forgets what that key verified, though those tokens have not
    expired; a token of a key still published stays verified."""
    with issuer_server(Key.rsa("old"), Key.rsa("kept")) as issuer:
        verifier = Verifier(settings(issuer, jwks_uri=f"{issuer.url}/jwks"))
        verifier.refresh_seconds = 0
        old, kept = issuer.token(AUDIENCE), issuer.token(AUDIENCE, key=issuer.keys[1])

        async def run() -> list[Any]:
            first = [await verifier.verify_token(old), await verifier.verify_token(kept)]
            issuer.keys = [issuer.keys[1], Key.rsa("new")]  # "old" withdrawn, "new" added
            new = await verifier.verify_token(issuer.token(AUDIENCE, key=issuer.keys[1]))
            return [*first, new, *await verify(verifier, old, kept)]

        first_old, first_kept, new, old_later, kept_later = asyncio.run(run())
    assert None not in (first_old, first_kept, new, kept_later)
    assert old_later is None
    # the first fetch, the one for "new", and one more for "old", now an unknown kid
    assert issuer.requests == ["/jwks", "/jwks", "/jwks"]


def test_keys_are_fetched_again_when_old_so_a_withdrawn_key_stops_verifying() -> None:
    """No new kid need come along: keys ``keys_max_age`` old are fetched again before the
    next token, so a withdrawn key's tokens, kept or not, are refused within that long."""
    with issuer_server(Key.rsa("old"), Key.rsa("kept")) as issuer:
        verifier = Verifier(settings(issuer, jwks_uri=f"{issuer.url}/jwks"))
        old, kept = issuer.token(AUDIENCE), issuer.token(AUDIENCE, key=issuer.keys[1])
        unseen = issuer.token(AUDIENCE, subject="bob")  # signed by "old", not yet verified

        async def run() -> list[Any]:
            first = await verifier.verify_token(old)
            issuer.keys = [issuer.keys[1]]
            verifier.keys_max_age = 0  # as if five minutes had gone by
            return [first, *await verify(verifier, old, unseen, kept)]

        first, old_later, unseen_later, kept_later = asyncio.run(run())
    assert first is not None
    assert (old_later, unseen_later) == (None, None)
    assert kept_later is not None


def test_keys_that_cannot_be_fetched_again_keep_serving() -> None:
    with issuer_server(Key.rsa("one")) as issuer:
        verifier = Verifier(settings(issuer, jwks_uri=f"{issuer.url}/jwks"))
        token = issuer.token(AUDIENCE)

        async def run() -> list[Any]:
            first = await verifier.verify_token(token)
            verifier._jwks_uri = "http://127.0.0.1:1/jwks"  # the issuer is out of reach
            verifier.keys_max_age = 0
            return [first, *await verify(verifier, token)]

        first, later = asyncio.run(run())
    assert None not in (first, later)


def test_made_up_kids_do_not_flood_the_issuer() -> None:
    with issuer_server(Key.rsa("one")) as issuer:
        verifier = Verifier(settings(issuer, jwks_uri=f"{issuer.url}/jwks"))
        forged = [issuer.token(AUDIENCE, header={"kid": f"kid{n}"}) for n in range(5)]
        found = asyncio.run(verify(verifier, issuer.token(AUDIENCE), *forged))
    assert found[0] is not None
    assert found[1:] == [None] * 5
    assert issuer.requests == ["/jwks"]


def test_static_tokens_come_from_the_environment_only(tmp_path: Path) -> None:
    (tmp_path / "bob.token").write_text("bob-secret\n", encoding="utf-8")
    auth = AuthSettings.model_validate({
        "issuer": "http://127.0.0.1:1", "audience": AUDIENCE,
        "tokens": {
            "alice": {"token": {"env": "ALICE"}, "scopes": [READ]},
            "bob": {"token": {"file": "bob.token"}, "scopes": [READ, WRITE]},
        },
    })
    verifier = Verifier(auth, env={"ALICE": "alice-secret"}, base=tmp_path)
    alice, bob, nobody = asyncio.run(verify(verifier, "alice-secret", "bob-secret", "carol"))
    assert (alice.subject, alice.scopes) == ("alice", [READ])
    assert (bob.subject, bob.scopes) == ("bob", [READ, WRITE])
    assert nobody is None
    with pytest.raises(Exception, match="ALICE is not set"):
        Verifier(auth, env={}, base=tmp_path)


# -- the server --------------------------------------------------------------------


def _env(tmp_path: Path, config: str, **extra: str) -> dict[str, str]:
    return {**os.environ, **child_env(tmp_path, config=CONFIG + config), **extra}


def _post(url: str, token: str | None, body: dict[str, Any]) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(url, json=body, headers=headers, timeout=TIMEOUT)


LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def test_the_server_publishes_its_metadata_and_refuses_without_a_valid_token(
    tmp_path: Path,
) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with issuer_server(Key.rsa("one")) as issuer:
        env = _env(tmp_path, auth_config(issuer.url, audience))
        with http_server(tmp_path, port, env=env):
            base = f"http://127.0.0.1:{port}"
            bare = httpx.get(f"{base}/.well-known/oauth-protected-resource").json()
            suffixed = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
            without = _post(audience, None, LIST)
            made_up = _post(audience, "alice", LIST)
            expired = _post(audience, issuer.token(audience, lifetime=-3600), LIST)
            elsewhere = _post(audience, issuer.token("http://127.0.0.1:1/mcp"), LIST)
            good = issuer.token(audience, scopes=(READ, WRITE))

            async def call() -> Any:
                async with (
                    httpx2.AsyncClient(headers={"Authorization": f"Bearer {good}"}) as http,
                    Client(_transport(audience, http)) as client,
                ):
                    return await client.call_tool("add", {"a": 2, "b": 3})

            added = asyncio.run(asyncio.wait_for(call(), TIMEOUT))
    assert bare == suffixed
    assert bare["resource"] == audience
    assert bare["authorization_servers"] == [issuer.url]
    assert bare["scopes_supported"] == [READ, WRITE]
    challenge = f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
    for refused in (without, made_up, expired, elsewhere):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer ")
        assert challenge in refused.headers["www-authenticate"]
    # no credentials: told where to get them, with no error code (RFC 6750, 3.1) ...
    assert without.headers["www-authenticate"] == f"Bearer {challenge}"
    assert "error" not in without.json()
    assert without.json()["resource_metadata"] in challenge
    # ... a bad token: told it is invalid
    for refused in (made_up, expired, elsewhere):
        assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert added.structured_content == {"sum": 5}


def test_clocks_may_differ_by_the_leeway_at_a_tokens_expiry(tmp_path: Path) -> None:
    """docs/mcp.md: clocks may disagree by ``leeway_seconds`` (30). A token 20 s past its
    ``exp`` is still served; one 60 s past is not (the SDK's middleware refused both)."""
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with issuer_server(Key.rsa("one")) as issuer:
        env = _env(tmp_path, auth_config(issuer.url, audience))
        with http_server(tmp_path, port, env=env):
            late = issuer.token(audience, lifetime=-20)
            listed = asyncio.run(asyncio.wait_for(names(audience, late), TIMEOUT))
            again = asyncio.run(asyncio.wait_for(names(audience, late), TIMEOUT))  # kept
            too_late = _post(audience, issuer.token(audience, lifetime=-60), LIST)
    assert listed == again == ["add", "echo", "liar", "static_links"]
    assert too_late.status_code == 401


def test_static_tokens_serve_their_holders(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    config = auth_config("http://127.0.0.1:1", audience, tokens={"alice": (READ, WRITE)})
    env = _env(tmp_path, config, TOKEN_ALICE="alice-secret-token")
    with http_server(tmp_path, port, env=env):
        listed = asyncio.run(asyncio.wait_for(names(audience, "alice-secret-token"), TIMEOUT))
        refused = _post(audience, "alice", LIST)

        async def echo() -> Any:
            async with (
                httpx2.AsyncClient(headers={"Authorization": "Bearer alice-secret-token"}) as h,
                Client(_transport(audience, h)) as client,
            ):
                return await client.call_tool("echo", {"text": "alice-secret-token"})

        echoed = asyncio.run(asyncio.wait_for(echo(), TIMEOUT))
    assert listed == ["add", "echo", "liar", "static_links"]
    assert refused.status_code == 401
    assert echoed.content[0].text == "***"  # a configured token is a secret: redacted


def test_beyond_loopback_without_auth_it_refuses_to_start(tmp_path: Path) -> None:
    env = _env(tmp_path, "")
    command = [sys.executable, "-m", "toolplug", "serve", "--http", "0.0.0.0:0"]
    ran = subprocess.run(
        command, check=False, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert ran.returncode != 0
    assert "--no-auth" in ran.stderr
    assert "[serve.auth]" in ran.stderr


async def names(url: str, token: str) -> list[str]:
    """The tools the holder of ``token`` is listed, through the official SDK client."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(_transport(url, http)) as client,
    ):
        return sorted(tool.name for tool in (await client.list_tools()).tools)


def _transport(url: str, http: httpx2.AsyncClient) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(url, http_client=http)


# -- scopes per tool ---------------------------------------------------------------

SCOPED = '[tools.echo]\nscopes = ["echo:run"]\n'


def _call(name: str) -> dict[str, Any]:
    arguments = {"text": "hi"} if name == "echo" else {"a": 1, "b": 2}
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}


def test_a_principal_is_listed_and_may_call_only_what_its_scopes_allow(
    tmp_path: Path,
) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    tokens = {"reader": (READ,), "writer": (READ, WRITE), "echoer": (READ, "echo:run")}
    config = SCOPED + auth_config("http://127.0.0.1:1", audience, tokens=tokens)
    env = _env(
        tmp_path, config, TOKEN_READER="r-token", TOKEN_WRITER="w-token", TOKEN_ECHOER="e-token"
    )
    with http_server(tmp_path, port, env=env):
        listed = {
            who: asyncio.run(asyncio.wait_for(names(audience, token), TIMEOUT))
            for who, token in (("reader", "r-token"), ("writer", "w-token"), ("echoer", "e-token"))
        }
        reader_echo = _post(audience, "r-token", _call("echo"))
        writer_echo = _post(audience, "w-token", _call("echo"))
        reader_liar = _post(audience, "r-token", _call("liar"))
        reader_add = _post(audience, "r-token", _call("add"))
        metadata = httpx.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource")
    # add and static_links are read-only (tools:read); liar is not (tools:write); echo
    # needs what [tools.echo] scopes says
    assert listed == {
        "reader": ["add", "static_links"],
        "writer": ["add", "liar", "static_links"],
        "echoer": ["add", "echo", "static_links"],
    }
    for refused, scope in ((reader_echo, "echo:run"), (writer_echo, "echo:run"),
                           (reader_liar, WRITE)):
        assert refused.status_code == 403
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge
        assert f'scope="{scope}"' in challenge
        assert "resource_metadata=" in challenge
        assert refused.json()["error"] == "insufficient_scope"
    assert reader_add.status_code != 403  # the gate lets it through to the server
    assert metadata.json()["scopes_supported"] == ["echo:run", READ, WRITE]


def test_required_scopes_are_needed_for_every_request(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    tokens = {"member": ("mcp", READ), "outsider": (READ, WRITE)}
    extra = 'required_scopes = ["mcp"]'
    config = auth_config("http://127.0.0.1:1", audience, extra=extra, tokens=tokens)
    env = _env(tmp_path, config, TOKEN_MEMBER="m-token", TOKEN_OUTSIDER="o-token")
    with http_server(tmp_path, port, env=env):
        member = asyncio.run(asyncio.wait_for(names(audience, "m-token"), TIMEOUT))
        outsider = _post(audience, "o-token", LIST)
    assert member == ["add", "static_links"]
    assert outsider.status_code == 403
    assert 'scope="mcp"' in outsider.headers["www-authenticate"]


# -- a client's token is not passed on ---------------------------------------------


def test_a_clients_token_never_reaches_a_mounted_server(tmp_path: Path) -> None:
    """Both mounts reach a server that takes only alice's own token: the one configured
    with it works, the one without is refused, though alice's calls carry that token."""
    script = write_server(tmp_path)
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    accepted = 'accept_findings = ["shadowing"]\ntrust_annotations = true\n'
    with mcp_http_server(script, "--token", "alice-token") as mounted:
        config = auth_config("http://127.0.0.1:1", audience, tokens={"alice": (READ, WRITE)})
        config += (
            # the mounted add has an installed tool's name (a scan finding, accepted here), and
            # its annotations are trusted, so neither hides what this test is about
            f'[mcp_servers.own]\nurl = "{mounted}"\n{accepted}'
            'headers = { Authorization = { env = "MOUNT_AUTH" } }\n'
            f'[mcp_servers.bare]\nurl = "{mounted}"\n{accepted}'
        )
        env = _env(tmp_path, config, TOKEN_ALICE="alice-token", MOUNT_AUTH="Bearer alice-token")
        with http_server(tmp_path, port, env=env):

            async def run() -> tuple[list[str], Any, Any]:
                async with (
                    httpx2.AsyncClient(headers={"Authorization": "Bearer alice-token"}) as http,
                    Client(_transport(audience, http)) as client,
                ):
                    listed = sorted(t.name for t in (await client.list_tools()).tools)
                    own = await client.call_tool("own_add", {"a": 1, "b": 2})
                    bare = await client.call_tool("bare_add", {"a": 1, "b": 2})
                    return listed, own, bare

            listed, own, bare = asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert "own_add" in listed
    assert "bare_add" not in listed  # its server refused toolplug, which sent no token
    assert not own.is_error
    assert bare.is_error


def test_run_code_needs_the_scopes_of_every_tool_a_program_may_call(tmp_path: Path) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    tokens = {"writer": (READ, WRITE), "all": (READ, WRITE, "echo:run")}
    config = SCOPED + "[code]\nenabled = true\n" + auth_config(
        "http://127.0.0.1:1", audience, tokens=tokens
    )
    env = _env(tmp_path, config, TOKEN_WRITER="w-token", TOKEN_ALL="a-token")
    program = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "run_code", "arguments": {"code": "echo(text='hi')"}}}
    with http_server(tmp_path, port, env=env):
        writer = asyncio.run(asyncio.wait_for(names(audience, "w-token"), TIMEOUT))
        everything = asyncio.run(asyncio.wait_for(names(audience, "a-token"), TIMEOUT))
        refused = _post(audience, "w-token", program)
    # the writer may call every tool but echo; a program could call echo, so no run_code
    assert "run_code" not in writer
    assert "run_code" in everything
    assert refused.status_code == 403
    assert "echo:run" in refused.headers["www-authenticate"]


def test_the_scope_gate_reads_any_body_without_failing() -> None:
    from toolplug.serve._auth import _called_tools

    batch = b'[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}},'
    batch += b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}]'
    assert _called_tools(batch) == ["echo"]  # a batch: each call is gated
    assert _called_tools(b"[" * 100_000 + b"]" * 100_000) == []  # too deep to parse
    assert _called_tools(b"not json") == []


def test_a_mounted_servers_scopes_are_its_tools_default(tmp_path: Path) -> None:
    script = write_server(tmp_path)
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        + stdio_table("calc", script, extra='scopes = ["calc:use"]')
        + '[tools.calc_erase]\nscopes = ["calc:admin"]\n',
        encoding="utf-8",
    )
    registry = toolplug.load(config)
    try:
        auth = AuthSettings.model_validate({"issuer": "http://127.0.0.1:1", "audience": AUDIENCE})
        needed = {
            name: scopes_for(name, registry.tools[name].metadata, registry, auth)
            for name in ("calc_add", "calc_erase")
        }
    finally:
        registry.close()
    assert needed == {"calc_add": ["calc:use"], "calc_erase": ["calc:admin"]}
