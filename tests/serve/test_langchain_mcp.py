"""``toolplug serve`` from LangChain: langchain-mcp-adapters' ``get_prompt`` and an agent's
tool calls, over stdio and streamable HTTP.

langchain-mcp-adapters needs the 1.x MCP SDK and the workspace has 2.x, so the client runs
in a fresh virtual environment of its own (built with uv, as a user would install it) and
talks to the real server of this workspace. Its model is LangChain's own
``GenericFakeChatModel``, taught ``bind_tools``; the script prints what the prompt said and
what the model was handed as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.serve import child_env, free_port, http_server
from tests.helpers.venv import clean_env, run, uv_command

CONFIG = """
[tools.static_links]
links = [{ name = "github", url = "https://github.com/example" }]

[tools.read_file]
cache_dir = "files"

[toolsets.math]
include = ["add"]
"""

PLUGINS = "toolplug-static-links,toolplug-files,mcp-test-tools"
NOTES = "0123456789abcdefghijklmnopqrstuvwxyz"

CLIENT = r'''
import asyncio
import json
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient


class Model(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


CALLS = AIMessage("", tool_calls=[
    {"name": "read_file", "id": "read",
     "args": {"path": "file_cache_dir/notes.txt", "max_chars": 10}},
    {"name": "add", "id": "bad", "args": {"a": "two", "b": 1}},
])


async def main() -> None:
    connection = json.loads(sys.argv[1])
    client = MultiServerMCPClient({"toolplug": connection})
    seen: dict[str, Any] = {}
    prompt = await client.get_prompt(
        "toolplug", "optional_tools",
        arguments={"task": "configured links to pages", "max_tools": "1"},
    )
    seen["prompt"] = [m.content for m in prompt]
    try:
        await client.get_prompt("toolplug", "optional_tools", arguments={"toolset": "nope"})
    except Exception as exc:  # the session's task group wraps the McpError
        while isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0]
        seen["refused"] = f"{type(exc).__name__}: {exc}"
    model = Model(messages=iter([CALLS, AIMessage("done")]))
    agent = create_agent(model, await client.get_tools())
    state = await agent.ainvoke({"messages": [{"role": "user", "content": "go"}]})
    seen["tools"] = {
        m.tool_call_id: {"content": m.content, "status": m.status}
        for m in state["messages"] if isinstance(m, ToolMessage)
    }
    print(json.dumps(seen))


asyncio.run(main())
'''


@pytest.fixture(scope="module")
def client_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with langchain-mcp-adapters (and its MCP SDK 1.x)."""
    uv = uv_command("tests/serve/test_langchain_mcp.py")
    where = tmp_path_factory.mktemp("langchain-client")
    env = clean_env(where)
    venv = where / "venv"
    run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=where, env=env)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run(
        [*uv, "pip", "install", "--quiet", "--python", str(python),
         "langchain-mcp-adapters>=0.3.2", "langchain>=1.5"],
        cwd=where,
        env=env,
    )
    (where / "client.py").write_text(CLIENT, encoding="utf-8")
    return python


def server_env(tmp_path: Path) -> dict[str, str]:
    env = child_env(tmp_path, config=CONFIG)
    (tmp_path / "files").mkdir(exist_ok=True)
    (tmp_path / "files" / "notes.txt").write_text(NOTES, encoding="utf-8")
    return {**os.environ, **env, "TOOLPLUG_PLUGINS": PLUGINS}


def converse(python: Path, tmp_path: Path, connection: dict[str, Any]) -> dict[str, Any]:
    script = python.parent.parent.parent / "client.py"
    command = [str(python), str(script), json.dumps(connection)]
    out = run(command, cwd=tmp_path, env=clean_env(tmp_path))
    seen: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return seen


def check(seen: dict[str, Any]) -> None:
    # The prompt: the section of the one tool most relevant to the task.
    (text,) = seen["prompt"]
    assert text.startswith("# Optional Tools")
    assert "static_links" in text
    assert "echo" not in text
    assert seen["refused"].startswith("McpError: unknown toolset 'nope' (known: math)")
    # The warning reaches the model in the text it reads.
    read = seen["tools"]["read"]
    assert read["status"] == "success"
    assert "call read_file again with offset 10 for the rest" in str(read["content"])
    # The error, once: toolplug's prose is the content of an error ToolMessage.
    bad = seen["tools"]["bad"]
    assert bad["status"] == "error"
    content = bad["content"] if isinstance(bad["content"], str) else bad["content"][0]["text"]
    assert content.startswith("ValidationError: invalid arguments for add: a: expected type")
    assert "retry_possible: false" in content


@pytest.mark.slow
def test_langchain_over_stdio(client_python: Path, tmp_path: Path) -> None:
    connection = {
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-m", "toolplug", "serve"],
        "env": server_env(tmp_path),
        "cwd": str(tmp_path),
    }
    check(converse(client_python, tmp_path, connection))


@pytest.mark.slow
def test_langchain_over_http(client_python: Path, tmp_path: Path) -> None:
    port = free_port()
    with http_server(tmp_path, port, env=server_env(tmp_path)):
        connection = {"transport": "streamable_http", "url": f"http://127.0.0.1:{port}/mcp"}
        check(converse(client_python, tmp_path, connection))
