"""The MCP server under test: ``python -m toolplug serve`` in a subprocess, with test tools.

The test tools are installed as a real distribution (``mcp-test-tools``) in a site directory
beside the real static_links plugin; ``child_env`` builds that site and the environment
the server runs with, ``stdio_params`` and ``http_server`` start it on either transport.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters, types

from tests.helpers.measured import measured

TIMEOUT = 60  # seconds for one whole client session, start-up included

# The test tools, installed as a real distribution (``mcp-test-tools``) beside the
# static_links plugin; the server is the real command: ``python -m toolplug serve``.
TEST_TOOLS = r"""
import sys
from typing import Any

import toolplug
from toolplug import Annotations, Tool, ToolMetadata, ToolResult, hookimpl


class Add(Tool):
    metadata = ToolMetadata(
        name="add",
        description="Add two integers.",
        category="utility",
        optionality="required",
        usage_hint="Use for exact integer sums.",
        parameters={
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "First addend"},
                "b": {"type": "integer", "description": "Second addend"},
            },
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {"sum": {"type": "integer"}},
            "required": ["sum"],
        },
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        total = arguments["a"] + arguments["b"]
        return ToolResult.success(f"{arguments['a']} + {arguments['b']} = {total}", {"sum": total})


class Echo(Tool):
    metadata = ToolMetadata(
        name="echo",
        description="Repeat the text.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1}},
            "required": ["text"],
        },
        returns={"type": "string"},
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success(arguments["text"], arguments["text"])


class Liar(Tool):
    metadata = ToolMetadata(
        name="liar",
        description="Return data that breaks its own returns schema.",
        category="utility",
        returns={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )

    def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success("done", {"n": "not a number"})


@hookimpl
def register_tools(register: Any) -> None:
    register(Add)
    register(Echo)
    register(Liar)
"""

CONFIG = """
[tools.static_links]
links = [{ name = "github", url = "https://github.com/example" }]

[tools.add]
trust = { output = "trusted", private = false, sinks = [] }

[toolsets.math]
include = ["add"]
"""

def child_env(
    tmp_path: Path, extra: tuple[str, str] | None = None, config: str = CONFIG
) -> dict[str, str]:
    """What the server needs beyond the SDK's small default environment: the test tools
    installed in a site directory on PYTHONPATH, a configuration file, and coverage's
    variables when the run is measured (tests/helpers/measured.py). ``extra`` is
    one more tool module, ``(module name, source)``, installed as its own distribution; the
    first call for a ``tmp_path`` decides what is installed there."""
    site = tmp_path / "site"
    modules = [("mcp_test_tools", TEST_TOOLS), *([extra] if extra else [])]
    if not site.exists():
        for module, source in modules:
            dist_info = site / f"{module}-1.0.dist-info"
            dist_info.mkdir(parents=True)
            name = module.replace("_", "-")
            (dist_info / "METADATA").write_text(
                f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8"
            )
            (dist_info / "entry_points.txt").write_text(
                f"[toolplug]\n{module} = {module}\n", encoding="utf-8"
            )
            (site / f"{module}.py").write_text(source, encoding="utf-8")
        (tmp_path / "toolplug.toml").write_text(config, encoding="utf-8")
    installed = sorted(path.name.split("-")[0] for path in site.glob("*.dist-info"))
    plugins = ",".join(["toolplug-static-links", *(m.replace("_", "-") for m in installed)])
    return measured({
        "PYTHONPATH": str(site),
        "TOOLPLUG_CONFIG": str(tmp_path / "toolplug.toml"),
        "TOOLPLUG_PLUGINS": plugins,
        "TOOLPLUG_CACHE_DIR": str(tmp_path / "cache"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
    })


def text_of(result: types.CallToolResult) -> str:
    """The one text block of a reply (a cut reply also links its whole output)."""
    texts = [b for b in result.content if isinstance(b, types.TextContent)]
    links = [b for b in result.content if isinstance(b, types.ResourceLink)]
    assert len(texts) == 1
    assert len(texts) + len(links) == len(result.content)
    return texts[0].text


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    """The structured error of an error result (its ``_meta``), checked against its text:
    one encoding, prose the model reads, never JSON inside JSON."""
    assert result.is_error
    assert result.structured_content is None
    assert result.meta is not None
    error: dict[str, Any] = result.meta["toolplug/error"]
    text = text_of(result)
    first, _, advice = text.partition("\n")
    assert first == f"{error['error_type']}: {error['error_message']}", text
    assert advice.startswith(f"retry_possible: {str(error['retry_possible']).lower()} ("), text
    return error


def stdio_params(tmp_path: Path, *options: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolplug", "serve", *options],
        env=child_env(tmp_path),
        cwd=str(tmp_path),
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def http_server(
    tmp_path: Path, port: int, *options: str, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """The server in a subprocess on 127.0.0.1:port, ready to answer; always ended. Its
    output goes to ``tmp_path / "http-stderr.txt"``; ``env`` replaces the test's default."""
    errors = tmp_path / "http-stderr.txt"
    with errors.open("wb") as errlog:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolplug", "serve", "--http", f"127.0.0.1:{port}", *options],
            stdin=subprocess.DEVNULL,
            stdout=errlog,  # a traceback printed to stdout must show too
            stderr=errlog,
            env=measured(env) if env is not None else {**os.environ, **child_env(tmp_path)},
            cwd=tmp_path,
        )
        try:
            wait_for_port(process, port, lambda: errors.read_text(encoding="utf-8"))
            yield process
        finally:
            stop(process)


def wait_for_port(
    process: subprocess.Popen[bytes], port: int, output: Callable[[], str]
) -> None:
    """Return once the process listens on 127.0.0.1:port; fail with ``output()`` when it
    exits first, or after ``TIMEOUT`` seconds."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}: {output()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError("the server did not open its port") from None
            time.sleep(0.05)


def stop(process: subprocess.Popen[bytes], seconds: float = 15) -> None:
    """End the process: SIGTERM, then SIGKILL if it has not exited within ``seconds``."""
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=seconds)
