"""The CLI output cache: used when nothing changed, invalidated by every input that matters.

Files the tests create are back-dated, because an answer that depends on a file modified
within two seconds of storing it is never trusted (see ``toolplug.cli._cache``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TOOL = '''
from toolplug import Tool, ToolMetadata, ToolResult, hookimpl, ErrorSpec, Guidelines

class Thing(Tool):
    metadata = ToolMetadata(name="{name}", description="{description}", category="utility",
                            usage_hint="Use it.", guidelines=Guidelines(do=("a",), do_not=("b",)))
    def run(self, arguments, context):
        return ToolResult.success("")

@hookimpl
def register_tools(register):
    register(Thing)
'''

HIT = "answered from the output cache"


def age(*paths: Path) -> None:
    """Back-date files and directories (recursively) by a minute."""
    past = time.time() - 60
    for path in paths:
        for item in [path, *path.rglob("*")] if path.is_dir() else [path]:
            os.utime(item, (past, past))


@pytest.fixture
def setup(site: Any, tmp_path: Path) -> Any:
    site.add("cache-probe", entry_points={"probe": "cache_probe_mod"},
             modules={"cache_probe_mod": TOOL.format(name="probe", description="First words.")})
    Path("toolplug.toml").write_text("[capabilities]\ngrant = []\n", encoding="utf-8")
    age(site.path, Path.cwd())
    return site


def run_twice(cli: Callable[..., Any], env: dict[str, str], *args: str) -> tuple[Any, Any]:
    # No byte code: writing __pycache__ into the site directory would change it "just now".
    env = {**env, "TOOLPLUG_CACHE_DEBUG": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return cli(*args, env=env), cli(*args, env=env)


def test_second_run_is_answered_from_the_cache(setup: Any, cli: Callable[..., Any]) -> None:
    first, second = run_twice(cli, setup.env(), "list", "--all")
    assert first.code == second.code == 0
    assert HIT not in first.err
    assert HIT in second.err
    assert first.out == second.out
    assert "probe" in second.out


MODULES = """
import json, sys
from toolplug.cli import main
code = main(sys.argv[1:])
print("@@MODULES@@" + json.dumps(sorted(sys.modules)))
raise SystemExit(code)
"""


def test_a_cached_answer_neither_builds_the_parser_nor_reads_its_spec(setup: Any) -> None:
    env = {**setup.env(), "PYTHONDONTWRITEBYTECODE": "1"}
    loaded = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", MODULES, "list", "--all"], env=env,
                              capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        loaded.append(set(json.loads(done.stdout.split("@@MODULES@@")[1])))
    # the first run parses its arguments; the second is answered before any parsing
    assert {"toolplug.cli._parser", "tomllib"} <= loaded[0]
    assert "toolplug.cli._parser" not in loaded[1]
    assert "toolplug.cli._commands" not in loaded[1]


def test_installing_a_plugin_invalidates(setup: Any, cli: Callable[..., Any]) -> None:
    run_twice(cli, setup.env(), "list")
    setup.add("cache-probe-two", entry_points={"two": "cache_probe_two"},
              modules={"cache_probe_two": TOOL.format(name="probe_two", description="Two.")})
    result = cli("list", env=setup.env(TOOLPLUG_CACHE_DEBUG="1"))
    assert HIT not in result.err
    assert "probe_two" in result.out


def test_uninstalling_a_plugin_invalidates(setup: Any, cli: Callable[..., Any]) -> None:
    run_twice(cli, setup.env(), "list")
    shutil.rmtree(next(setup.path.glob("cache_probe-*.dist-info")))
    result = cli("list", env=setup.env(TOOLPLUG_CACHE_DEBUG="1"))
    assert HIT not in result.err
    assert "probe" not in result.out


def test_editing_an_editable_plugin_invalidates(setup: Any, cli: Callable[..., Any]) -> None:
    _, cached = run_twice(cli, setup.env(), "info", "probe")
    assert "First words." in cached.out
    module = setup.path / "cache_probe_mod.py"
    module.write_text(TOOL.format(name="probe", description="Edited words."), encoding="utf-8")
    # even with the old modification time, the size differs
    result = cli("info", "probe", env=setup.env(TOOLPLUG_CACHE_DEBUG="1"))
    assert HIT not in result.err
    assert "Edited words." in result.out


def test_an_edit_just_now_is_never_trusted(setup: Any, cli: Callable[..., Any]) -> None:
    run_twice(cli, setup.env(), "info", "probe")
    module = setup.path / "cache_probe_mod.py"
    same_size = TOOL.format(name="probe", description="Firsd words.")
    module.write_text(same_size, encoding="utf-8")
    result = cli("info", "probe", env=setup.env(TOOLPLUG_CACHE_DEBUG="1"))
    assert "Firsd words." in result.out


def test_changing_the_config_invalidates(setup: Any, cli: Callable[..., Any]) -> None:
    run_twice(cli, setup.env(), "list")
    Path("toolplug.toml").write_text('[capabilities]\ndeny = ["network"]\n', encoding="utf-8")
    result = cli("list", "--all", "--json", env=setup.env(TOOLPLUG_CACHE_DEBUG="1"))
    assert HIT not in result.err
    assert '"capability \'network\' is missing: denied by the host"' in result.out


def test_an_environment_variable_a_detector_reads_invalidates(
    setup: Any, cli: Callable[..., Any]
) -> None:
    _, cached = run_twice(cli, setup.env(), "list", "--json")
    assert '"github_api"' not in cached.out
    result = cli("list", "--json", env=setup.env(TOOLPLUG_CACHE_DEBUG="1",
                                                 GITHUB_TOKEN="ghp_cache_probe_token"))
    assert HIT not in result.err
    assert '"github_api"' in result.out


def test_no_cache_and_strict_bypass_it(setup: Any, cli: Callable[..., Any]) -> None:
    run_twice(cli, setup.env(), "list")
    off = cli("list", env=setup.env(TOOLPLUG_CACHE_DEBUG="1", TOOLPLUG_NO_CACHE="1"))
    assert HIT not in off.err
    strict = cli("list", "--strict", env=setup.env(TOOLPLUG_CACHE_DEBUG="1"))
    assert HIT not in strict.err


def test_secrets_are_not_stored_in_clear(
    setup: Any, cli: Callable[..., Any], tmp_path: Path
) -> None:
    run_twice(cli, setup.env(GITHUB_TOKEN="ghp_should_never_be_stored"), "list")
    stored = b"".join(p.read_bytes() for p in (tmp_path / "metadata-cache").rglob("*.bin"))
    assert stored
    assert b"ghp_should_never_be_stored" not in stored
