"""The client under test of the harness's client scenarios: toolplug's mount.

The harness starts its scenario's server and runs ``python mount_client.py URL`` (the
scenario's name in ``MCP_CONFORMANCE_SCENARIO``, what the client is given in
``MCP_CONFORMANCE_CONTEXT``). This mounts the URL as a user would, with
``[mcp_servers.NAME]``, and calls each tool the server offers through the public API, with
a host that accepts every question as it stands (its defaults filled in).

An ``auth/*`` scenario's server wants an OAuth sign-in: the mount is configured with
``auth = "oauth"`` (a pre-registered client or client credentials when the context gives
one, toolplug's Client ID Metadata Document URL for CIMD) and signed in first as a user
would (``toolplug login``), the browser being one that follows the authorization server's
redirect (the harness's approves at once) to toolplug's loopback port.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

import toolplug
from toolplug import Answer, Channel, Question
from toolplug.config._config import load_config
from toolplug.sources.mcp import SignInError, mounted, sign_in

CIMD_URL = "https://conformance-test.local/client-metadata.json"


class Accepting(Channel):
    """A host whose user accepts every question, leaving each field at its default."""

    can_ask = True

    async def ask(self, question: Question) -> Answer:
        print(f"asked: {question.message}", flush=True)
        return Answer("accept", {})


def _oauth_table(scenario: str, context: dict[str, Any]) -> str:
    """The ``auth = "oauth"`` lines of an ``auth/*`` scenario's server ("" for any other)."""
    if not scenario.startswith("auth/"):
        return ""
    lines = ['auth = "oauth"', "[mcp_servers.conformance.oauth]"]
    if "client_secret" in context:
        os.environ["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        lines += [f'client_id = "{context["client_id"]}"',
                  'client_secret = { env = "CONFORMANCE_CLIENT_SECRET" }']
        if scenario.startswith("auth/client-credentials"):
            lines.append('grant = "client_credentials"')
    elif "private_key_pem" in context:  # client credentials with private_key_jwt
        os.environ["CONFORMANCE_CLIENT_KEY"] = context["private_key_pem"]
        lines += [f'client_id = "{context["client_id"]}"', 'grant = "client_credentials"',
                  'token_endpoint_auth = "private_key_jwt"',
                  'client_assertion_key = { env = "CONFORMANCE_CLIENT_KEY" }',
                  f'client_assertion_algorithm = "{context.get("signing_algorithm", "RS256")}"']
    elif "client_id" in context:
        lines.append(f'client_id = "{context["client_id"]}"')
    if scenario == "auth/basic-cimd":
        lines.append(f'client_metadata_url = "{CIMD_URL}"')
    return "\n".join(lines) + "\n"


async def _browser(url: str) -> None:
    """A browser that follows the authorization server's redirects (it approves at once)."""
    async with httpx.AsyncClient(timeout=30, follow_redirects=True) as browser:
        await browser.get(url)


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory() as home:
        config = Path(home) / "toolplug.toml"
        config.write_text(
            f'cache_dir = "{Path(home) / "cache"}"\nstate_dir = "{Path(home) / "state"}"\n'
            f'[mcp_servers.conformance]\nurl = "{url}"\napproval = "never"\n'
            + _oauth_table(scenario, context),
            encoding="utf-8",
        )
        if scenario.startswith("auth/") and "client_credentials" not in config.read_text():
            try:
                said = await asyncio.to_thread(
                    sign_in, load_config(config), "conformance", env=os.environ,
                    open_url=_browser, timeout=60,
                )
            except SignInError as exc:
                print(f"sign-in failed: {exc}", file=sys.stderr)
                return 1
            print(said, flush=True)
        registry = toolplug.load(config)
        try:
            names = [name for name in registry.tools if name.startswith("conformance_")]
            if not names:
                mounts = mounted(registry)
                why = mounts.servers["conformance"].problem if mounts is not None else None
                print(f"no tools mounted from {url}: {why}", file=sys.stderr)
                return 1
            for name in names:
                result = await registry.acall(name, {}, channel=Accepting())
                if result.error is not None and "toolplug login conformance" in (
                    result.error.message
                ):
                    # a step-up a person must approve: sign in again as the reason says,
                    # then call again
                    print(f"{name}: {result.error.message}", flush=True)
                    said = await asyncio.to_thread(
                        sign_in, load_config(config), "conformance", env=os.environ,
                        open_url=_browser, timeout=60,
                    )
                    print(said, flush=True)
                    result = await registry.acall(name, {}, channel=Accepting())
                print(f"{name}: {result.output or result.error}", flush=True)
        finally:
            registry.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
