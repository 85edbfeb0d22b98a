"""The client under test of the harness's client scenarios: toolplug's mount.

The harness starts its scenario's server and runs ``python mount_client.py URL`` (the
scenario's name in ``MCP_CONFORMANCE_SCENARIO``). This mounts the URL as a user would,
with ``[mcp_servers.NAME]``, and calls each tool the server offers through the public API,
with a host that accepts every question as it stands (its defaults filled in).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import toolplug
from toolplug import Answer, Channel, Question


class Accepting(Channel):
    """A host whose user accepts every question, leaving each field at its default."""

    can_ask = True

    async def ask(self, question: Question) -> Answer:
        print(f"asked: {question.message}", flush=True)
        return Answer("accept", {})


async def main(url: str) -> int:
    with tempfile.TemporaryDirectory() as home:
        config = Path(home) / "toolplug.toml"
        config.write_text(
            f'cache_dir = "{Path(home) / "cache"}"\n'
            f'[mcp_servers.conformance]\nurl = "{url}"\napproval = "never"\n',
            encoding="utf-8",
        )
        registry = toolplug.load(config)
        try:
            names = [name for name in registry.tools if name.startswith("conformance_")]
            if not names:
                print(f"no tools mounted from {url}", file=sys.stderr)
                return 1
            for name in names:
                result = await registry.acall(name, {}, channel=Accepting())
                print(f"{name}: {result.output or result.error}", flush=True)
        finally:
            registry.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
