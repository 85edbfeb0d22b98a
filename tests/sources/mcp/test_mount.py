"""Mounted MCP servers, against real servers: the SDK's own server in a child process
(tests/helpers/mcp_servers.py), over stdio and streamable HTTP on 127.0.0.1, and the
reference time server installed from the package registry.

Assertions are about what toolplug says and does, never about how long it took.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import marshal
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.cli import run_cli
from tests.helpers.mcp_servers import (
    http_server,
    stdio_table,
    write_hanging_server,
    write_server,
)
from tests.helpers.measured import measured
from toolplug import ConfigError
from toolplug.cli import _cache as _clicache
from toolplug.cli._commands import _Session, run
from toolplug.sources.mcp import lock, mounted, report


@pytest.fixture
def script(tmp_path: Path) -> Path:
    return write_server(tmp_path)


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / "marks"
    path.mkdir()
    return path


# The test server annotates its tools; these tests take its word (test_screen.py tests
# that without this, a server's read-only claim lowers no approval).
TRUSTED = "trust_annotations = true"


def _load(tmp_path: Path, tables: str, **options: Any) -> toolplug.Registry:
    config = tmp_path / "toolplug.toml"
    config.write_text(f'cache_dir = "{tmp_path / "cache"}"\n' + tables, encoding="utf-8")
    return toolplug.load(config, **options)


@pytest.fixture
def loaded() -> Iterator[list[toolplug.Registry]]:
    """Registries a test made; closed after it, so no server outlives its test."""
    made: list[toolplug.Registry] = []
    yield made
    for registry in made:
        registry.close()


def _starts(marks: Path) -> list[int]:
    path = marks / "starts"
    return [int(n) for n in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for every purpose but its exit status
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_each_remote_tool_is_a_toolplug_tool(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(tmp_path, stdio_table("calc", script, extra=TRUSTED))
    loaded.append(registry)
    names = {n for n in registry.tools if n.startswith("calc_")}
    assert names == {
        "calc_add",
        "calc_big",
        "calc_crash",
        "calc_erase",
        "calc_fail",
        "calc_grow",
        "calc_mutate",
        "calc_slow",
    }
    add = registry.get("calc_add")
    # the description on one line, the schemas and annotations carried over
    assert add.metadata.description == "Add two integers. Exact, for integers of any size."
    assert add.metadata.parameters["required"] == ["a", "b"]
    assert add.metadata.returns is not None
    assert add.metadata.returns["properties"]["result"]["type"] == "integer"
    assert add.metadata.annotations.read_only
    assert add.metadata.annotations.idempotent
    assert (add.distribution, add.version) == ("mcp:calc", "3.1.4")
    assert add.metadata.requires_capabilities == ("mcp_calc",)
    # approvals follow the annotations: the read-only tool runs, the destructive one asks
    assert registry.needs_approval("calc_add") is None
    assert "destructive" in (registry.needs_approval("calc_erase") or "")
    # MCP's defaults for a tool without annotations: destructive, so it asks too
    assert registry.needs_approval("calc_grow") is not None

    result = registry.call("calc_add", {"a": 2, "b": 40})
    assert (result.output, result.data) == ("42", {"result": 42})
    bad = registry.call("calc_add", {"a": "two", "b": 40})
    assert bad.error is not None
    assert bad.error.type == "ValidationError"
    failed = registry.call("calc_fail", {})
    assert failed.error is not None
    assert (failed.error.type, failed.error.retry_possible) == ("ExecutionError", False)
    asked = registry.call("calc_erase", {"what": "the disk"})
    assert asked.error is not None
    assert asked.error.type == "ApprovalRequiredError"
    assert registry.call("calc_erase", {"what": "it"}, approved=True).output == "erased it"


def test_mounted_tools_reach_every_renderer(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(
        tmp_path,
        stdio_table("calc", script, extra='trust_annotations = true\ncategory = "research"')
        + textwrap.dedent("""
            [mcp_servers.calc.tools.add]
            usage_hint = "Use for exact sums."
            guidelines = { do = ["Add integers exactly."], do_not = ["Add floats."] }
        """),
    )
    loaded.append(registry)
    section = toolplug.optional_tools_section(registry)
    assert "### calc_add" in section
    assert "Use for exact sums." in section
    assert "Add floats." in section
    schemas = toolplug.export_tools(registry, "openai")
    assert "calc_add" in [s["function"]["name"] for s in schemas]
    assert "calc_add" in toolplug.tool_reference(registry, "calc_add")
    assert registry.search("add two integers")[0].name == "calc_add"


def test_many_calls_share_one_session(
    tmp_path: Path, script: Path, marks: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(tmp_path, stdio_table("calc", script, "--marks", str(marks), extra=TRUSTED))
    loaded.append(registry)

    async def many() -> list[toolplug.ToolResult]:
        return await asyncio.gather(
            *(registry.acall("calc_add", {"a": i, "b": 1}) for i in range(200))
        )

    results = asyncio.run(many())
    assert [r.data["result"] for r in results] == [i + 1 for i in range(200)]
    assert len(_starts(marks)) == 1  # listed and called through one process


def test_listing_is_cached_and_a_down_server_keeps_its_tools_with_the_reason(
    tmp_path: Path, script: Path, marks: Path, loaded: list[toolplug.Registry]
) -> None:
    table = stdio_table("calc", script, "--marks", str(marks), extra=TRUSTED)
    first = _load(tmp_path, table)
    first.close()
    assert len(_starts(marks)) == 1
    again = _load(tmp_path, table)
    loaded.append(again)
    assert again.availability("calc_add").available
    assert len(_starts(marks)) == 1  # the cached list answered; nothing was started

    script.write_text("import sys\nsys.stderr.write('cannot find my model\\n')\nsys.exit(4)\n")
    down = _load(tmp_path, table, refresh=True)
    loaded.append(down)
    availability = down.availability("calc_add")
    assert not availability.available
    reason = " ".join(availability.reasons)
    assert "cannot find my model" in reason
    assert "toolplug doctor" in " ".join(availability.setup)
    result = down.call("calc_add", {"a": 1, "b": 2})
    assert result.error is not None
    assert result.error.type == "UnavailableError"


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('[mcp_servers.gone]\ncommand = "no-such-command-here"\n', "command not found"),
        (None, "no answer within 1 s"),
    ],
)
def test_a_server_that_does_not_start_says_why(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry], table: str | None, expected: str
) -> None:
    table = table or stdio_table(
        "gone", script, "--slow-start", "30", extra="startup_timeout_seconds = 1"
    )
    registry = _load(tmp_path, table)
    loaded.append(registry)
    state = registry.checker.state("mcp_gone")
    assert not state.present
    assert state.reason is not None
    assert expected in state.reason
    lines = report(mounted(registry))  # type: ignore[arg-type]
    assert any("gone" in line and "DOWN" in line and expected in line for line in lines)


def test_a_crash_mid_call_is_an_error_and_the_next_call_restarts_it(
    tmp_path: Path, script: Path, marks: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(tmp_path, stdio_table("calc", script, "--marks", str(marks), extra=TRUSTED))
    loaded.append(registry)
    crashed = registry.call("calc_crash", {})
    assert crashed.error is not None
    assert (crashed.error.type, crashed.error.retry_possible) == ("NetworkError", True)
    assert registry.call("calc_add", {"a": 1, "b": 1}).data == {"result": 2}
    first, second = _starts(marks)
    assert first != second
    assert not _alive(first)


def test_time_limit_cancels_the_remote_call_and_progress_comes_back(
    tmp_path: Path, script: Path, marks: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(
        tmp_path,
        stdio_table("calc", script, "--marks", str(marks), extra=TRUSTED)
        + "[mcp_servers.calc.tools.slow]\ntimeout_seconds = 1\n",
    )
    loaded.append(registry)
    seen: list[tuple[float, float | None]] = []
    done = registry.call(
        "calc_slow", {"seconds": 0.1}, context={"progress": lambda d, t=None: seen.append((d, t))}
    )
    assert done.output == "done"
    assert seen == [(1, 2), (2, 2)]
    late = registry.call("calc_slow", {"seconds": 30})
    assert late.error is not None
    assert late.error.type == "TimeoutError"
    deadline = time.monotonic() + 10
    while not (marks / "cancelled").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (marks / "cancelled").read_text() == "slow"  # notifications/cancelled arrived


def test_a_huge_output_is_cut_to_the_budget(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(tmp_path, stdio_table("calc", script, extra=TRUSTED))
    loaded.append(registry)
    result = registry.call("calc_big", {"chars": 300_000})
    assert result.ok
    assert len(result.output) <= 50_000
    assert any("cut" in w or "characters" in w for w in result.warnings)


def test_an_invalid_schema_is_reported_and_the_other_tools_stay(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(tmp_path, stdio_table("calc", script, "--invalid-schema", extra=TRUSTED))
    loaded.append(registry)
    assert "calc_broken" not in registry.tools
    assert "calc_add" in registry.tools
    problems = [p for p in registry.problems if p.tool == "calc_broken"]
    assert problems
    assert problems[0].kind == "metadata"
    assert "parameters" in problems[0].message


def test_a_changed_tool_list_is_refreshed(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    table = stdio_table("calc", script, extra='trust_annotations = true\napproval = "never"')
    registry = _load(tmp_path, table)
    loaded.append(registry)
    assert registry.call("calc_grow", {}).output == "grown"
    listing = tmp_path / "cache" / "mcp" / "calc.json"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        names = [t["name"] for t in json.loads(listing.read_text())["tools"]]
        if "extra" in names:
            break
        time.sleep(0.05)
    assert "extra" in names
    later = _load(tmp_path, table)  # within the TTL: the refreshed list, from the cache
    loaded.append(later)
    assert later.get("calc_extra").metadata.description == "A tool that appeared later."


def test_http_with_a_secret_header(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    with http_server(script, "--token", "s3cret-token") as url:
        table = textwrap.dedent(f"""
            [mcp_servers.web]
            url = "{url}"
            trust_annotations = true
            headers = {{ Authorization = {{ env = "WEB_AUTH" }} }}
        """)
        registry = _load(tmp_path, table, env={"WEB_AUTH": "Bearer s3cret-token"})
        loaded.append(registry)
        assert registry.call("web_add", {"a": 3, "b": 4}).data == {"result": 7}
        assert registry.redact("sent Bearer s3cret-token") == "sent ***"

        unset = _load(tmp_path, table, env={}, refresh=True)
        loaded.append(unset)
        reason = unset.checker.state("mcp_web").reason or ""
        assert "WEB_AUTH is not set" in reason

        wrong = _load(tmp_path, table, env={"WEB_AUTH": "Bearer nope"}, refresh=True)
        loaded.append(wrong)
        assert "HTTP 401 from" in (wrong.checker.state("mcp_web").reason or "")
        for made in loaded:  # before the server stops, so that it stops at once
            made.close()


def test_names_two_servers_share_are_prefixed_and_installed_tools_win(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    tables = stdio_table("one", script, "--shadow", extra='prefix = ""') + stdio_table(
        "two", script, extra='prefix = ""\ninclude = ["add", "erase"]'
    )
    registry = _load(tmp_path, tables)
    loaded.append(registry)
    assert {"one_add", "two_add", "one_erase", "two_erase", "big", "slow"} <= set(registry.tools)
    assert "add" not in registry.tools
    assert "two_big" not in registry.tools  # include keeps only add and erase
    # the installed plugin keeps its name; the mounted one is reported, not merged
    assert registry.get("url_fetch").distribution == "toolplug-url-fetch"
    assert any(p.kind == "duplicate" and p.tool == "url_fetch" for p in registry.problems)
    notes = "\n".join(report(mounted(registry)))  # type: ignore[arg-type]
    assert "'add' is mounted as one_add: add is offered by two too" in notes


def test_a_pinned_tool_that_changed_is_refused_until_locked(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(
        tmp_path, stdio_table("calc", script, extra="trust_annotations = true\npin = true")
    )
    loaded.append(registry)
    assert not registry.availability("calc_add").available  # not in a lock file yet
    path, counts, down = lock(registry)
    assert (counts, down) == ({"calc": 8}, [])
    assert path == tmp_path / "toolplug.lock"

    locked = _load(
        tmp_path, stdio_table("calc", script, extra="trust_annotations = true\npin = true")
    )
    loaded.append(locked)
    assert locked.availability("calc_add").available

    changed_table = stdio_table(
        "calc", script, "--changed", extra="trust_annotations = true\npin = true"
    )
    changed = _load(tmp_path, changed_table)
    loaded.append(changed)
    availability = changed.availability("calc_add")
    assert not availability.available
    assert "differs from toolplug.lock" in " ".join(availability.reasons)
    assert changed.availability("calc_big").available  # only the changed tool
    refused = changed.call("calc_add", {"a": 1, "b": 2})
    assert refused.error is not None
    assert refused.error.type == "UnavailableError"
    lines = "\n".join(report(mounted(changed)))  # type: ignore[arg-type]
    assert (
        "drift: the server's definition of 'add' differs from toolplug.lock (its description"
        in lines
    )
    assert "(refused: pin = true)" in lines

    lock(changed)
    accepted = _load(tmp_path, changed_table)
    loaded.append(accepted)
    assert accepted.call("calc_add", {"a": 1, "b": 2}).data == {"result": 3}


def test_bad_configuration_names_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text('[mcp_servers.calc]\ncommand = "x"\nurl = "http://127.0.0.1:1/mcp"\n')
    with pytest.raises(ConfigError, match=r"toolplug.toml: mcp_servers.calc: set either command"):
        toolplug.load(config)
    config.write_text(
        '[mcp_servers.calc]\ncommand = "x"\n[mcp_servers.calc.tools.add]\nretry = 1\n'
    )
    with pytest.raises(ConfigError, match=r"mcp_servers.calc.tools.add.retry: unknown key"):
        toolplug.load(config)


_HOST = """
import sys, time, toolplug
registry = toolplug.load(sys.argv[1])
assert registry.call("calc_add", {"a": 1, "b": 2}).data == {"result": 3}
print("ready", flush=True)
if sys.argv[2] == "hang":
    time.sleep(60)
"""


@pytest.mark.parametrize("ending", ["exit", "kill"])
def test_no_server_outlives_its_host(
    tmp_path: Path, script: Path, marks: Path, ending: str
) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        + stdio_table("calc", script, "--marks", str(marks), extra=TRUSTED)
    )
    with subprocess.Popen(
        [sys.executable, "-c", _HOST, str(config), "hang" if ending == "kill" else "exit"],
        stdout=subprocess.PIPE,
        text=True,
    ) as host:
        try:
            assert host.stdout is not None
            assert host.stdout.readline().strip() == "ready"
            if ending == "kill":
                host.send_signal(signal.SIGKILL)
            assert host.wait(timeout=30) == (0 if ending == "exit" else -signal.SIGKILL)
        finally:
            if host.poll() is None:
                host.kill()
    (server,) = _starts(marks)
    deadline = time.monotonic() + 15
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(server)


def test_serve_offers_mounted_tools_to_an_mcp_client(tmp_path: Path, script: Path) -> None:
    from mcp import Client, StdioServerParameters

    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n' + stdio_table("calc", script, extra=TRUSTED)
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolplug", "serve"],
        env=measured({"TOOLPLUG_CONFIG": str(config), "TOOLPLUG_PLUGINS": "toolplug-files"}),
        cwd=str(tmp_path),
    )

    async def session() -> tuple[list[str], Any, Any]:
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            added = await client.call_tool("calc_add", {"a": 20, "b": 22})
            erased = await client.call_tool("calc_erase", {"what": "x"})
            return names, added, erased

    names, added, erased = asyncio.run(asyncio.wait_for(session(), 60))
    assert {"calc_add", "calc_erase", "read_file"} <= set(names)
    assert added.structured_content == {"result": 42}
    assert erased.is_error  # the destructive tool still asks; this client cannot answer


def test_the_reference_time_server(tmp_path: Path, loaded: list[toolplug.Registry]) -> None:
    pytest.importorskip("mcp_server_time")
    registry = _load(
        tmp_path,
        f'[mcp_servers.time]\ncommand = "{sys.executable}"\nargs = ["-m", "mcp_server_time"]\n',
    )
    loaded.append(registry)
    assert {"time_get_current_time", "time_convert_time"} <= set(registry.tools)
    result = registry.call("time_get_current_time", {"timezone": "UTC"}, approved=True)
    assert result.ok, result.error
    assert "UTC" in result.output


def test_without_the_mcp_sdk_the_reason_says_what_to_install(tmp_path: Path) -> None:
    program = textwrap.dedent(f"""
        import sys
        sys.modules["mcp"] = None  # as if the mcp extra were not installed
        import toolplug
        table = {{"command": sys.executable, "args": ["-c", "pass"]}}
        registry = toolplug.load({{"cache_dir": {str(tmp_path)!r}, "mcp_servers": {{"x": table}}}})
        print(registry.checker.state("mcp_x").reason)
    """)
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == 'the MCP SDK is not installed: pip install "toolplug[mcp]"'


@pytest.mark.parametrize("pin", ["pin = true", 'pin = "first-use"'])
def test_a_pinned_tool_the_server_changes_while_running_is_refused(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry], pin: str
) -> None:
    table = stdio_table("calc", script, extra=f'{TRUSTED}\n{pin}\napproval = "never"')
    first = _load(tmp_path, table)
    if pin == "pin = true":
        lock(first)  # first use records the definitions by itself
    first.close()
    registry = _load(tmp_path, table)
    loaded.append(registry)
    assert registry.call("calc_add", {"a": 1, "b": 2}).data == {"result": 3}
    assert registry.call("calc_mutate", {}).output == "changed"
    # the server said its list changed: the next call of add meets the new definition
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        refused = registry.call("calc_add", {"a": 1, "b": 2})
        if not refused.ok:
            break
        time.sleep(0.05)
    assert refused.error is not None
    assert refused.error.type == "PermissionError"
    assert "otherwise than toolplug.lock records" in refused.error.message
    assert registry.call("calc_big", {"chars": 3}).output == "xxx"  # unchanged: still runs


SECRET = "srv-tok-8e1f0b6a27"


def _leaky_table(script: Path) -> str:
    """A server whose configured secret (``{ env = }``) it may print."""
    return (
        f'[mcp_servers.leaky]\ncommand = "{sys.executable}"\nargs = ["{script}"]\n'
        'env = { TOKEN = { env = "LEAKY_TOKEN" } }\n'
    )


def test_a_server_printing_its_secret_leaves_it_out_of_reasons_and_the_cache(
    tmp_path: Path, loaded: list[toolplug.Registry]
) -> None:
    script = tmp_path / "leaky_server.py"
    script.write_text(
        "import os, sys\n"
        "sys.stderr.write('auth failed for ' + os.environ['TOKEN'] + '\\n')\n"
        "sys.exit(3)\n",
        encoding="utf-8",
    )
    registry = _load(tmp_path, _leaky_table(script), env={**os.environ, "LEAKY_TOKEN": SECRET})
    loaded.append(registry)
    state = registry.checker.state("mcp_leaky")
    assert state.reason is not None
    assert "auth failed for ***" in state.reason  # the stderr tail is quoted, redacted
    assert SECRET not in state.reason
    assert not any(SECRET in line for line in report(mounted(registry)))  # type: ignore[arg-type]
    cache = tmp_path / "cache" / "mcp" / "leaky.json"
    assert cache.stat().st_mode & 0o777 == 0o600  # the cache is the user's alone
    stored = cache.read_text(encoding="utf-8")
    assert "auth failed for ***" in stored
    assert SECRET not in stored


def test_an_error_message_from_a_mounted_server_is_redacted(
    tmp_path: Path, loaded: list[toolplug.Registry]
) -> None:
    script = tmp_path / "erring_server.py"
    script.write_text(textwrap.dedent("""
        import os
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import ToolAnnotations

        app = MCPServer("erring")

        @app.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
        def login() -> str:
            \"\"\"Log in.\"\"\"
            raise ToolError("rejected token " + os.environ["TOKEN"])

        app.run()
    """), encoding="utf-8")
    table = _leaky_table(script) + '[tools.leaky_login]\napproval = "never"\n'
    registry = _load(tmp_path, table, env={**os.environ, "LEAKY_TOKEN": SECRET})
    loaded.append(registry)
    result = registry.call("leaky_login", {})
    assert result.error is not None
    assert "rejected token ***" in result.error.message
    assert SECRET not in json.dumps(result.to_dict())


def test_the_cli_cache_watches_what_the_mounted_source_read_and_when_it_goes_stale(
    tmp_path: Path, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "toolplug.toml"
    table = stdio_table("calc", script, extra="list_ttl_seconds = 600")
    config.write_text(f'cache_dir = "{tmp_path / "cache"}"\n' + table, encoding="utf-8")
    monkeypatch.setenv("TOOLPLUG_CACHE_DIR", str(tmp_path / "cli"))
    argv = ["--config", str(config), "list"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert run(argv, cache=True) == 0
    registry = _Session.registry
    assert registry is not None
    try:
        mounts = mounted(registry)
        assert mounts is not None
        expires = mounts.expires()
        assert expires is not None
        entry = marshal.loads(Path(_clicache._entry_file(argv)).read_bytes())
        # asked of registry.sources: the listing's end of freshness, and its files watched
        assert entry["expires_ns"] == int(expires * 1e9)
        listing = str((tmp_path / "cache" / "mcp" / "calc.json").resolve())
        assert listing in {str(Path(p).resolve()) for p in entry["files"]}
    finally:
        registry.close()


@pytest.mark.parametrize("command", [["list", "--all"], ["doctor"]])
def test_a_server_given_up_on_is_ended_with_its_process_group(
    tmp_path: Path, command: list[str]
) -> None:
    script = write_hanging_server(tmp_path)
    pids = tmp_path / "pids"
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        + stdio_table("stuck", script, str(pids), extra="startup_timeout_seconds = 1"),
        encoding="utf-8",
    )
    env = {**os.environ, "TOOLPLUG_NO_CACHE": "1"}
    try:
        done = run_cli("--config", str(config), *command, env=env)
        assert done.code == 0, done.err
        assert "no answer within 1 s" in done.out  # the server is listed down, with why
        started = [int(n) for n in pids.read_text().split()]
        assert len(started) == 2  # the server and its child, both ignoring SIGTERM
        # the command has returned: nothing it started is left running
        assert [pid for pid in started if _alive(pid)] == []
    finally:
        for pid in [int(n) for n in pids.read_text().split()] if pids.exists() else []:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_a_down_server_with_no_known_tools_is_listed_as_one_unavailable_line(
    tmp_path: Path,
) -> None:
    script = tmp_path / "broken_server.py"
    script.write_text("import sys\nsys.stderr.write('no model file\\n')\nsys.exit(3)\n")
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n' + stdio_table("gone", script), encoding="utf-8"
    )
    env = {**os.environ, "TOOLPLUG_NO_CACHE": "1"}
    listed = run_cli("--config", str(config), "list", "--all", env=env)
    assert listed.code == 0, listed.err
    (line,) = [row for row in listed.out.splitlines() if row.startswith("mcp:gone ")]
    assert "no: capability 'mcp_gone' is missing" in line
    assert "no model file" in line  # the server's own words, as doctor gives them
    records = json.loads(run_cli("--config", str(config), "list", "--all", "--json",
                                 env=env).out)
    (record,) = [r for r in records if r["name"] == "mcp:gone"]
    assert (record["kind"], record["available"]) == ("mcp_server", False)
    assert "no model file" in record["reasons"][0]
    assert "toolplug doctor" in record["setup"][0]
    # without --all only available tools are listed, and a down server has none
    assert "mcp:gone" not in run_cli("--config", str(config), "list", env=env).out
    doctor = run_cli("--config", str(config), "doctor", env=env).out
    (plugin,) = [row for row in doctor.splitlines() if row.startswith("  mcp:gone")]
    assert plugin.startswith("  mcp:gone (MCP servers): unavailable: ")
    assert "no model file" in plugin


def test_a_pinned_tool_changed_since_its_list_was_cached_is_refused_at_the_first_call(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    switch = tmp_path / "changed"
    table = stdio_table(
        "calc", script, "--changed-if", str(switch), extra=f'{TRUSTED}\napproval = "never"'
    )
    first = _load(tmp_path, table)  # asks the server, records the definitions (first use)
    assert first.call("calc_add", {"a": 1, "b": 2}).data == {"result": 3}
    first.close()
    switch.touch()  # the server now describes add otherwise; the cached list does not know
    cached = _load(tmp_path, table)
    loaded.append(cached)
    assert cached.availability("calc_add").available  # the list is the cached one
    refused = cached.call("calc_add", {"a": 1, "b": 2})
    assert refused.error is not None, refused.output
    assert refused.error.type == "PermissionError"
    assert "otherwise than toolplug.lock records" in refused.error.message
    assert cached.call("calc_big", {"chars": 2}).output == "xx"  # unchanged: it runs
    # what the first call learnt is the cached list now: the next load sees the change
    later = _load(tmp_path, table)
    loaded.append(later)
    assert "differs from toolplug.lock" in " ".join(later.availability("calc_add").reasons)


# -- what a reason says of annotations the configuration does not believe -----------------


def test_an_untrusted_servers_tool_says_its_approval_is_assumed(
    tmp_path: Path, script: Path, loaded: list[toolplug.Registry]
) -> None:
    registry = _load(tmp_path, stdio_table("calc", script))
    loaded.append(registry)
    # add is annotated read-only, grow not at all; erase says destructive itself
    assert registry.needs_approval("calc_add") == (
        "toolplug assumes it may destroy or overwrite data: [mcp_servers.calc] "
        "trust_annotations is off (the server annotated it read-only, idempotent, not "
        "open-world, which is not believed)"
    )
    assert registry.needs_approval("calc_grow") == (
        "toolplug assumes it may destroy or overwrite data: [mcp_servers.calc] "
        "trust_annotations is off (the server annotated nothing)"
    )
    assert registry.needs_approval("calc_erase") == (
        "it may destroy or overwrite data (annotated destructive)"
    )
    asked: list[str] = []
    registry.call("calc_add", {"a": 1, "b": 2}, approver=lambda r: asked.append(r.describe()))
    [question] = asked
    assert question.endswith("approval is needed because toolplug assumes it may destroy or "
                             "overwrite data: [mcp_servers.calc] trust_annotations is off (the "
                             "server annotated it read-only, idempotent, not open-world, which "
                             "is not believed)")
    assert "(annotated destructive)" not in question

    trusting = tmp_path / "trusting"
    trusting.mkdir()
    trusted = _load(trusting, stdio_table("calc", script, extra=TRUSTED))
    loaded.append(trusted)
    assert trusted.needs_approval("calc_add") is None
    # trusted, but silent: MCP's default is an assumption, and the reason says whose
    assert trusted.needs_approval("calc_grow") == (
        "toolplug assumes it may destroy or overwrite data: the server did not say whether "
        "it is destructive (MCP's default: destructive)"
    )


def test_info_shows_what_the_server_said_and_the_approval_decision(
    tmp_path: Path, script: Path, cli: Any
) -> None:
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n' + stdio_table("calc", script), encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if k != "TOOLPLUG_PLUGINS"}
    env["TOOLPLUG_PLUGINS"] = ""  # the mounted server's tools alone
    shown = cli("--config", str(config), "info", "calc_add", "--json", env=env)
    assert shown.code == 0, shown.err
    record = json.loads(shown.out)
    # what toolplug goes by, as before: the assumption
    annotations = record["metadata"]["annotations"]
    assert (annotations["read_only"], annotations["destructive"]) == (False, True)
    assert record["metadata"]["annotations_assumed"].startswith(
        "[mcp_servers.calc] trust_annotations is off"
    )
    # what the server said, as it wrote it, and that it is not believed
    assert record["server_annotations"] == {
        "server": "calc",
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
        "trusted": False,
    }
    assert record["approval"] == {
        "policy": "auto",
        "required": True,
        "reason": "toolplug assumes it may destroy or overwrite data: [mcp_servers.calc] "
        "trust_annotations is off (the server annotated it read-only, idempotent, not "
        "open-world, which is not believed)",
        "per_call": False,
    }

    text = cli("--config", str(config), "info", "calc_add", env=env)
    assert text.code == 0, text.err
    lines = {line.split(None, 1)[0]: line for line in text.out.splitlines() if line[:2] == "  "}
    assert lines["annotations"].strip() == (
        "annotations   not read-only, destructive, not idempotent, open-world (assumed: "
        "[mcp_servers.calc] trust_annotations is off (the server annotated it read-only, "
        "idempotent, not open-world, which is not believed))"
    )
    assert "server said   read-only, idempotent, not open-world (not trusted: " \
        "[mcp_servers.calc] trust_annotations is off)" in text.out
    assert "approval      asked before each call, because toolplug assumes it may destroy" \
        in text.out
