"""Cut outputs as MCP resources: the real ``toolplug serve`` (stdio and streamable HTTP) and
the official SDK client at its latest protocol version."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.helpers.auth import READ, WRITE, auth_config
from tests.helpers.redis import redis_server
from tests.helpers.serve import CONFIG, TIMEOUT, child_env, free_port, http_server, stdio_params

SMALL_BUDGET = CONFIG + "\n[calls]\nmax_output_chars = 2000\n"
TEXT = "".join(f"word{i:05d} " for i in range(1_000))  # 10,000 characters


async def _session(target: Any) -> dict[str, Any]:
    """Call echo with a text over the budget, then read the rest as the links say."""
    seen: dict[str, Any] = {}
    async with Client(target) as client:
        reply = await client.call_tool("echo", {"text": TEXT})
        seen["reply"] = reply
        link = next(b for b in reply.content if isinstance(b, types.ResourceLink))
        seen["link"] = link
        seen["listed"] = (await client.list_resources()).resources
        seen["templates"] = (await client.list_resource_templates()).resource_templates
        whole = await client.read_resource(str(link.uri))
        seen["whole"] = whole.contents[0]
        page = await client.read_resource(f"{link.uri}?offset=10&length=10")
        seen["page"] = page.contents[0]
        try:
            await client.read_resource("toolplug://results/00000000000000000000000000000000")
        except MCPError as exc:  # the SDK raises the server's error
            seen["missing"] = exc.error
    return seen


def _check(seen: dict[str, Any]) -> None:
    reply, link = seen["reply"], seen["link"]
    assert not reply.is_error
    text = reply.content[0].text
    assert f"the whole output is kept at {link.uri}" in text
    assert len(text) < 2_000
    assert link.mime_type == "text/plain"
    assert str(link.uri) in [str(r.uri) for r in seen["listed"]]
    assert seen["templates"][0].uri_template == "toolplug://results/{id}{?offset,length}"
    assert seen["whole"].text == TEXT
    assert seen["page"].text == "word00001 "
    meta = seen["page"].meta
    assert (meta["toolplug/offset"], meta["toolplug/total"]) == (10, len(TEXT))
    assert meta["toolplug/next_offset"] == 20
    # never kept: resource not found, -32602 with the URI in data (SEP-2164), in words that
    # suppose nothing about whose it might be
    missing = seen["missing"]
    assert missing.code == types.INVALID_PARAMS
    assert missing.data == {"uri": "toolplug://results/00000000000000000000000000000000"}
    assert missing.message.startswith("resource not found: toolplug://results/0000")
    assert "this client" not in missing.message


def test_over_stdio(tmp_path: Path) -> None:
    env = child_env(tmp_path, config=SMALL_BUDGET)  # first: it writes the configuration
    params = stdio_params(tmp_path)
    assert params.env == env

    async def run() -> dict[str, Any]:
        with anyio.fail_after(TIMEOUT):
            return await _session(params)

    _check(anyio.run(run))


def test_over_streamable_http(tmp_path: Path) -> None:
    """A stateless client lists its spills when it has an owner: a verified principal."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    auth = auth_config("http://127.0.0.1:1", url, tokens={"alice": (READ, WRITE)})
    env = {**os.environ, **child_env(tmp_path, config=SMALL_BUDGET + auth), "TOKEN_ALICE": "a-t"}
    with http_server(tmp_path, port, env=env):

        async def run() -> dict[str, Any]:
            with anyio.fail_after(TIMEOUT):
                async with httpx2.AsyncClient(headers={"Authorization": "Bearer a-t"}) as http:
                    return await _session(streamable_http_client(url, http_client=http))

        _check(anyio.run(run))


def test_any_replica_serves_the_read_through_redis(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        config = SMALL_BUDGET + f'store = "{url}"\n'
        env = {**os.environ, **child_env(tmp_path, config=config)}
        first, second = free_port(), free_port()
        for replica in ("one", "two"):
            (tmp_path / replica).mkdir()
        with (
            http_server(tmp_path / "one", first, env=env),
            http_server(tmp_path / "two", second, env=env),
        ):

            async def run() -> tuple[str, str]:
                with anyio.fail_after(TIMEOUT):
                    async with Client(f"http://127.0.0.1:{first}/mcp") as one:
                        reply = await one.call_tool("echo", {"text": TEXT})
                    link = next(b for b in reply.content if isinstance(b, types.ResourceLink))
                    async with Client(f"http://127.0.0.1:{second}/mcp") as two:
                        page = await two.read_resource(f"{link.uri}?offset=20&length=10")
                        content = page.contents[0]
                        assert isinstance(content, types.TextResourceContents)
                        return str(link.uri), content.text

            uri, text = anyio.run(run)
    assert uri.startswith("toolplug://results/")
    assert text == "word00002 "


SECRET = "sk-live-7d3e9a0c55"
LEAKY = r'''
from typing import Any

from toolplug import ConfigField, Tool, ToolMetadata, ToolResult, hookimpl


class Leaky(Tool):
    metadata = ToolMetadata(
        name="leaky",
        description="Return rows that hold the token.",
        category="utility",
        config_fields=(
            ConfigField(name="token", type="string", description="API token", secret=True),
        ),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        token = context.config["token"]
        return ToolResult.success("row " * 1_000, {"rows": [{"auth": token}] * 50})


@hookimpl
def register_tools(register: Any) -> None:
    register(Leaky)
'''


def test_spilled_data_read_over_mcp_holds_no_configured_secret(tmp_path: Path) -> None:
    config = SMALL_BUDGET + '\n[tools.leaky]\ntoken = { env = "LEAKY_TOKEN" }\n'
    env = child_env(tmp_path, ("mcp_leaky", LEAKY), config=config)
    params = stdio_params(tmp_path)
    params.env = {**env, "LEAKY_TOKEN": SECRET}

    async def run() -> tuple[Any, str]:
        with anyio.fail_after(TIMEOUT):
            async with Client(params) as client:
                reply = await client.call_tool("leaky", {})
                link = next(b for b in reply.content if isinstance(b, types.ResourceLink))
                data = (await client.read_resource(f"{link.uri}/data")).contents[0]
                assert isinstance(data, types.TextResourceContents)
                return reply, data.text

    reply, data = anyio.run(run)
    assert not reply.is_error
    assert '"auth": "***"' in data.replace('":"', '": "')
    assert SECRET not in data
    assert SECRET not in reply.model_dump_json()


def test_a_cut_part_is_read_as_a_blob_in_its_own_type() -> None:
    # the budget left the recording out: the client finds it listed, reads it whole as a
    # blob of audio/wav, and reads a range of its bytes
    import base64

    import toolplug
    from tests.helpers.parts import Returns, ReturnsPlugin, png, wav
    from toolplug.serve import build_server

    image, clip = toolplug.Image(png(8, 8)), toolplug.Audio(wav(50_000))
    Returns.RESULT = toolplug.ToolResult.success("a picture and a clip", parts=[image, clip])
    registry = toolplug.load(
        {"calls": {"max_result_bytes": image.size + 100}},
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("returns", ReturnsPlugin())],
    )

    async def session() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        with anyio.fail_after(TIMEOUT):
            async with Client(build_server(registry)) as client:
                seen["reply"] = await client.call_tool("returns", {})
                listed = (await client.list_resources()).resources
                [resource] = [r for r in listed if str(r.uri).endswith("/parts/1")]
                seen["resource"] = resource
                seen["whole"] = (await client.read_resource(str(resource.uri))).contents[0]
                seen["range"] = (
                    await client.read_resource(f"{resource.uri}?offset=44&length=100")
                ).contents[0]
        return seen

    try:
        seen = anyio.run(session)
    finally:
        registry.close()
    assert not seen["reply"].is_error
    resource = seen["resource"]
    assert resource.mime_type == "audio/wav"
    assert resource.size == clip.size
    whole = seen["whole"]
    assert isinstance(whole, types.BlobResourceContents)
    assert whole.mime_type == "audio/wav"
    assert base64.b64decode(whole.blob) == clip.data
    assert whole.meta is not None
    assert whole.meta["toolplug/total"] == clip.size
    ranged = seen["range"]
    assert isinstance(ranged, types.BlobResourceContents)
    assert base64.b64decode(ranged.blob) == clip.data[44:144]
    assert ranged.meta is not None
    assert ranged.meta["toolplug/next_offset"] == 144
