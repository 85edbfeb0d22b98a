"""One side-effecting tool, ``post``, installed as a plugin into the test's site, and
``toolplug approvals`` run as another process.

Shared by the inbox and the remembered-decisions tests: each gets its own module name, so
the list of texts posted (``RAN``) starts empty and belongs to that test alone.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import Site

POST_TOOLS = '''
from typing import Any

from toolplug import Annotations, Tool, ToolMetadata, ToolResult, hookimpl

RAN: list[str] = []


class Post(Tool):
    metadata = ToolMetadata(
        name="post",
        description="Publish a short message.",
        category="publish",
        parameters={"type": "object", "properties": {"text": {"type": "string"}},
                    "required": ["text"]},
        annotations=Annotations(read_only=False, destructive=False, open_world=True),
    )

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        RAN.append(arguments["text"])
        return ToolResult.success(f"posted: {arguments['text']}")


@hookimpl
def register_tools(register: Any) -> None:
    register(Post)
'''


@contextmanager
def posting_plugin(site: Site, monkeypatch: pytest.MonkeyPatch, module: str) -> Iterator[Any]:
    """Install ``post`` as the plugin ``module`` and yield that module (its ``RAN`` empty)."""
    site.add(module.replace("_", "-"), entry_points={"t": module}, modules={module: POST_TOOLS})
    monkeypatch.syspath_prepend(str(site.path))
    loaded = importlib.import_module(module)
    loaded.RAN.clear()
    try:
        yield loaded
    finally:
        sys.modules.pop(module, None)


async def approvals_cli(config: Path, *args: str) -> tuple[int, str, str]:
    """``toolplug approvals ARGS --config CONFIG`` in a process of its own: exit code,
    standard output, standard error."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "toolplug", "approvals", *args, "--config", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()
