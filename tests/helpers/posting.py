"""One side-effecting tool, ``post``, installed as a plugin into the test's site.

Shared by the inbox and the remembered-decisions tests: each gets its own module name, so
the list of texts posted (``RAN``) starts empty and belongs to that test alone.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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
