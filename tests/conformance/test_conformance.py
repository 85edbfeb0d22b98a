"""The official MCP conformance suite's server scenarios, against a real ``toolplug serve``,
and its client scenarios, against toolplug's mount (``mount_client.py``).

The harness (npm ``@modelcontextprotocol/conformance``, pinned in package.json; ``npm
install --no-package-lock`` here, as .ci/run does) runs its active server scenarios
against ``toolplug serve --http`` on 127.0.0.1, serving the tools of
``conformance_tools.py`` (a plugin written to toolplug's public names). Each scenario's
outcome is compared with ``expected-failures.yml``, the harness's own baseline format: a
scenario fails when any of its checks is a FAILURE or a WARNING, as the harness counts it.
A scenario that fails unlisted fails this test, and so does one that passes while listed,
so the list only shrinks.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.serve import child_env, free_port, http_server

HERE = Path(__file__).parent
HARNESS = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
EXPECTED = HERE / "expected-failures.yml"
# harness 0.1.16 needs fs.globSync (Node 22); globsync.mjs gives it one on Node 20
PRELOAD = HERE / "globsync.mjs"
# the scenarios of content parts: never allowed in the baseline
MUST_PASS = (
    "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
    "tools-call-mixed-content",
)
# the client scenarios toolplug's mount must pass (the harness's client mode runs
# mount_client.py with the URL of the scenario's server)
CLIENT_SCENARIOS = (
    "elicitation-sep1034-client-defaults",
    # OAuth (auth = "oauth", signed in first as `toolplug login` does): discovery and its
    # fallbacks, CIMD, scope selection, the retry limit, token endpoint authentication,
    # pre-registration, client credentials (a secret, or private_key_jwt), resource checks,
    # offline access and the step-up on 403 insufficient_scope (a mount never asks a person
    # mid-call: the call's reason names `toolplug login`, which asks for the wider scopes).
    # Not here: auth/cross-app-access-complete-flow (no token exchange, RFC 8693), and
    # auth/2025-03-26-oauth-metadata-backcompat (the SDK's own issuer check refuses the
    # harness's metadata: issuer .../oauth for a resource at the origin).
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
    "auth/basic-cimd", "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none", "auth/pre-registration", "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
    "auth/scope-step-up",
)
_CLIENT_DIR = re.compile(r"^(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def _missing() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed (the conformance harness comes from npm)"
    if not HARNESS.exists():
        return (
            f"the conformance harness is not installed: run `npm install --no-package-lock` "
            f"in {HERE} (.ci/run does)"
        )
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def _expected() -> set[str]:
    listed = yaml.safe_load(EXPECTED.read_text(encoding="utf-8")) or {}
    return set(listed.get("server") or ())


def _outcomes(results: Path, ran: list[str]) -> dict[str, list[str]]:
    """Each scenario run, and the checks of it that failed or warned (none: it passed). A
    scenario that left no checks (the harness could not run it) failed."""
    outcomes: dict[str, list[str]] = {name: ["it wrote no checks"] for name in ran}
    for folder in results.iterdir():
        found = _RESULT_DIR.match(folder.name)
        if found is None:
            continue
        checks = json.loads((folder / "checks.json").read_text(encoding="utf-8"))
        outcomes[found["scenario"]] = [
            f"{c['status']} {c['id']}: {c.get('errorMessage') or c.get('description')}"
            for c in checks
            if c["status"] in ("FAILURE", "WARNING")
        ]
    return outcomes


def test_the_server_scenarios_meet_the_baseline(tmp_path: Path) -> None:
    assert not _expected() & set(MUST_PASS), "content scenarios may not be expected to fail"
    source = (HERE / "conformance_tools.py").read_text(encoding="utf-8")
    env = {**os.environ, **child_env(tmp_path, ("conformance_tools", source), config="")}
    port = free_port()
    results = tmp_path / "results"
    with http_server(tmp_path, port, env=env):
        run = subprocess.run(
            ["node", str(HARNESS), "server", "--url", f"http://127.0.0.1:{port}/mcp",
             "-o", str(results)],
            env={**os.environ, "NODE_OPTIONS": f"--import={PRELOAD.as_uri()}"},
            capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
        )
    ran = re.findall(r"^=== Running scenario: (\S+) ===$", run.stdout, re.MULTILINE)
    assert ran, f"the harness ran no scenario:\n{run.stdout}\n{run.stderr}"
    outcomes = _outcomes(results, ran)
    expected = _expected()

    unexpected = {name: why for name, why in outcomes.items() if why and name not in expected}
    stale = sorted(name for name, why in outcomes.items() if not why and name in expected)
    unknown = sorted(expected - set(outcomes))
    assert not unexpected, "scenarios that fail and are not in expected-failures.yml:\n" + (
        "\n".join(f"{name}:\n  " + "\n  ".join(why) for name, why in sorted(unexpected.items()))
    )
    assert not stale, f"scenarios that pass now: take them out of expected-failures.yml: {stale}"
    assert not unknown, f"expected-failures.yml names scenarios the harness did not run: {unknown}"
    for name in MUST_PASS:
        assert outcomes.get(name) == [], name


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_the_mount_passes_the_client_scenarios(tmp_path: Path, scenario: str) -> None:
    results = tmp_path / "results"
    client = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'mount_client.py'))}"
    run = subprocess.run(
        ["node", str(HARNESS), "client", "--command", client, "--scenario", scenario,
         "-o", str(results)],
        env={**os.environ, "NODE_OPTIONS": f"--import={PRELOAD.as_uri()}"},
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )
    # an auth/* scenario's results are one folder deeper (results/auth/NAME-DATE)
    [folder] = [f.parent for f in results.rglob("checks.json") if _CLIENT_DIR.match(f.parent.name)]
    checks = json.loads((folder / "checks.json").read_text(encoding="utf-8"))
    passed = [c["id"] for c in checks if c["status"] == "SUCCESS"]
    failed = [
        f"{c['status']} {c['id']}: {c.get('errorMessage') or c.get('description')}"
        for c in checks if c["status"] in ("FAILURE", "WARNING")
    ]
    said = (folder / "stdout.txt").read_text(encoding="utf-8") + (
        folder / "stderr.txt"
    ).read_text(encoding="utf-8")
    assert not failed, "\n".join(failed) + f"\nthe client said:\n{said}\n{run.stdout[-2000:]}"
    assert passed, f"the scenario checked nothing:\n{said}"
