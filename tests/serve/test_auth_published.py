"""``[serve.auth]`` and the published prompts and resources: the real ``toolplug serve
--http`` with static tokens, the official SDK's client. A principal is listed only the
prompts, resources and templates its token allows, and getting, reading, subscribing to or
completing one it does not allow is refused naming the scopes it needs, with nothing of the
item in the answer; a mounted server's ``scopes`` are what its items need."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.helpers.auth import READ, auth_config
from tests.helpers.mcp_servers import stdio_table
from tests.helpers.serve import CONFIG, TIMEOUT, child_env, free_port, http_server
from tests.serve.test_mcp_published import NOTES
from tests.sources.mcp.test_published import SERVER, _png

REFUSED = types.INVALID_REQUEST


async def _refusal(call: Any) -> types.ErrorData:
    try:
        await call
    except MCPError as exc:
        return exc.error
    raise AssertionError("the server answered instead of refusing")


async def _session(url: str, token: str, run: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with anyio.fail_after(TIMEOUT):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            seen["prompts"] = [p.name for p in (await session.list_prompts()).prompts]
            seen["resources"] = [str(r.uri) for r in (await session.list_resources()).resources]
            templates = (await session.list_resource_templates()).resource_templates
            seen["templates"] = [t.uri_template for t in templates]
            await run(session, seen)
    return seen


async def _notes(session: ClientSession, seen: dict[str, Any]) -> None:
    """Each read of the notes plugin's items, answered or refused."""
    async def attempt(key: str, call: Any) -> None:
        try:
            seen[key] = await call
        except MCPError as exc:
            seen[key] = exc.error

    await attempt("brief", session.get_prompt("brief", {"topic": "tea"}))
    await attempt("today", session.read_resource("notes://today"))
    await attempt("summary", session.read_resource("notes://friday/summary"))
    await attempt("subscribe", session.subscribe_resource("notes://today"))
    await attempt("complete_prompt", session.complete(
        types.PromptReference(type="ref/prompt", name="brief"), {"name": "topic", "value": "t"}
    ))
    await attempt("complete_template", session.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="notes://{day}/summary"),
        {"name": "day", "value": ""},
    ))
    seen["unknown"] = await _refusal(session.get_prompt("nope"))


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_plugins_items_are_for_the_read_scope_only(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    tokens = {"reader": (READ,), "outsider": ("other",)}
    config = CONFIG + auth_config("http://127.0.0.1:1", url, tokens=tokens)
    env = {**os.environ, **child_env(tmp_path, ("notes_plugin", NOTES), config=config),
           "NOTES_TOKEN": "n0tes-s3cret", "TOKEN_READER": "r-token", "TOKEN_OUTSIDER": "o-token"}
    with http_server(tmp_path, port, env=env):
        reader = anyio.run(_session, url, "r-token", _notes)
        outsider = anyio.run(_session, url, "o-token", _notes)
    # the reader: listed and answered as without auth
    assert reader["prompts"] == ["optional_tools", "brief", "look"]
    assert reader["resources"] == ["notes://picture", "notes://today"]
    assert reader["templates"] == ["toolplug://results/{id}{?offset,length}",
                                   "notes://{day}/summary"]
    assert reader["brief"].messages[0].content.text == "Brief you on tea; token ***."
    assert reader["today"].contents[0].text == "Buy milk; token ***."
    assert reader["summary"].contents[0].text == "Summary of friday."
    assert isinstance(reader["subscribe"], types.EmptyResult)
    assert reader["complete_prompt"].completion.values == ["taxes", "tea", "trains"]
    assert reader["complete_template"].completion.values == ["monday", "tuesday"]
    # the outsider: none of the plugin's items listed (toolplug's own prompt and the kept
    # outputs' template are not the plugin's), each refused naming the scope it needs
    assert outsider["prompts"] == ["optional_tools"]
    assert outsider["resources"] == []
    assert outsider["templates"] == ["toolplug://results/{id}{?offset,length}"]
    expected = {
        "brief": "getting the prompt brief needs the scope tools:read",
        "today": "reading notes://today needs the scope tools:read",
        "summary": "reading notes://friday/summary needs the scope tools:read",
        "subscribe": "subscribing to notes://today needs the scope tools:read",
        "complete_prompt": "completing the prompt brief needs the scope tools:read",
        "complete_template": "completing notes://{day}/summary needs the scope tools:read",
    }
    for key, message in expected.items():
        refused = outsider[key]
        assert isinstance(refused, types.ErrorData), key
        assert (refused.code, refused.message) == (REFUSED, message)
        assert refused.data == {"error": "insufficient_scope", "scopes": [READ]}
        assert "Brief someone" not in str(refused)  # nothing of the item: not its description
    # an unknown prompt's answer names only what the outsider may get
    assert outsider["unknown"].message == (
        "unknown prompt 'nope'; this server offers 'optional_tools'"
    )


async def _library(session: ClientSession, seen: dict[str, Any]) -> None:
    for key, call in (
        ("review", session.get_prompt("lib_review", {"code": "x = 1"})),
        ("readme", session.read_resource("library://readme")),
        ("book", session.read_resource("library://books/978-1")),
    ):
        try:
            seen[key] = await call
        except MCPError as exc:
            seen[key] = exc.error


def test_a_mounted_servers_scopes_are_what_its_items_need(tmp_path: Path) -> None:
    script = tmp_path / "library_server.py"
    script.write_text(SERVER, encoding="utf-8")
    png = tmp_path / "logo.png"
    png.write_bytes(_png())
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    tokens = {"reader": (READ,), "librarian": ("lib:read",)}
    config = CONFIG + stdio_table("lib", script, "--png", str(png), extra='scopes = ["lib:read"]')
    config += auth_config("http://127.0.0.1:1", url, tokens=tokens)
    env = {**os.environ, **child_env(tmp_path, config=config),
           "TOKEN_READER": "r-token", "TOKEN_LIBRARIAN": "l-token"}
    with http_server(tmp_path, port, env=env):
        reader = anyio.run(_session, url, "r-token", _library)
        librarian = anyio.run(_session, url, "l-token", _library)
    # the read scope is not enough for the server's items: its scopes are what they need
    assert reader["prompts"] == ["optional_tools"]
    assert not any(uri.startswith("library://") for uri in reader["resources"])
    assert not any(t.startswith("library://") for t in reader["templates"])
    for key, what in (("review", "getting the prompt lib_review"),
                      ("readme", "reading library://readme"),
                      ("book", "reading library://books/978-1")):
        refused = reader[key]
        assert isinstance(refused, types.ErrorData), key
        assert refused.message == f"{what} needs the scope lib:read"
        assert refused.data == {"error": "insufficient_scope", "scopes": ["lib:read"]}
    assert {"lib_look", "lib_review", "lib_sneaky"} <= set(librarian["prompts"])
    assert "library://readme" in librarian["resources"]
    assert "library://books/{isbn}" in librarian["templates"]
    assert librarian["review"].messages[0].content.text.startswith("Review this python code")
    assert librarian["readme"].contents[0].text == "A small library."
    assert librarian["book"].contents[0].text == "the book 978-1"
