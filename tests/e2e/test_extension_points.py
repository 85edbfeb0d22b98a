"""A newcomer adding a trust label, a schema format or a source touches the files
CONTRIBUTING.md lists for it and no other (issue 42, "Measured").

For each of the three, the list is read from CONTRIBUTING.md's section, the change is made
in a copy of the package tree (each edit where a newcomer copying the entry before it
would make it), the copy is compared with the package to find every file the change
touched, and each must be one the section lists (or a new file where it says one goes).
Then a fresh interpreter imports the copy and uses what was added, through the parts the
section says read the table: a tool labelled with the new kind is guarded by its rule and
configurable by it; ``toolplug schema --format NEW`` and ``export_tools`` write the new
format; ``load()`` gathers the new source from its ``toolplug.toml`` table. When a part
needs a file the section does not name, the comparison or the run fails.
"""

from __future__ import annotations

import ast
import filecmp
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from toolplug.contract._settings import SINK_KINDS
from toolplug.render._formats import TABLE

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core" / "src" / "toolplug"
PREFIX = "core/src/toolplug/"

SECTIONS = {
    "label": "## Adding a trust label",
    "format": "## Adding a schema format",
    "source": "## Adding a source",
}

Edit = Callable[[Path], None]
"""A change made in the copy of the package (its root given)."""


# -- what CONTRIBUTING.md lists ------------------------------------------------------


def _section(heading: str) -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def listed(kind: str) -> tuple[set[str], list[str], set[str]]:
    """The files CONTRIBUTING.md's section lists for ``kind``: the package's files
    (relative to ``toolplug/``), the patterns of new ones it says to write (a folder, or a
    path with ``NAME`` in it), and the repository's other files (docs, tests, the root
    ``pyproject.toml``)."""
    files: set[str] = set()
    new: list[str] = []
    outside: set[str] = set()
    for token in re.findall(r"`([^`\s]+)`", _section(SECTIONS[kind])):
        if "/" not in token and token != "pyproject.toml":
            continue  # a name (a class, a table, a sibling to copy), not a path
        inside = token.removeprefix(PREFIX)
        if "NAME" in inside:
            new.append(inside.replace("NAME", "*"))
        elif inside.endswith("/"):
            if (CORE / inside).is_dir():
                new.append(inside + "*")
            elif (ROOT / inside).is_dir():
                outside.add(inside)
            # else a sibling named for its shape (``mcp/`` is a package): nothing to touch
        elif (CORE / inside).is_file():
            files.add(inside)
        else:
            outside.add(token)
    return files, new, outside


def touched(copy: Path) -> set[str]:
    """Every file of the copy that differs from the package's, or is new in it (data
    files such as ``cli/commands.toml`` included)."""
    found: set[str] = set()
    for path in copy.rglob("*"):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(copy).as_posix()
        original = CORE / rel
        if not original.is_file() or not filecmp.cmp(path, original, shallow=False):
            found.add(rel)
    return found


def _copy(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    shutil.copytree(CORE, site / "toolplug", ignore=shutil.ignore_patterns("__pycache__"))
    return site / "toolplug"


def _run(site: Path, *args: str, cwd: Path, plugins: str = "") -> str:
    """Run Python with the copy first on the path, in a home of its own; its stdout."""
    home = cwd / "home"
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "TOOLPLUG_PLUGINS": plugins,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    env.pop("TOOLPLUG_CONFIG", None)
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _check_and_run(kind: str, edits: list[Edit], script: str, tmp_path: Path) -> Path:
    """Make the change in a copy, hold what it touched to the list, run ``script`` on it."""
    files, new, outside = listed(kind)
    assert files, f"CONTRIBUTING.md's {SECTIONS[kind]!r} lists no file of the package"
    missing = sorted(p for p in outside if not (ROOT / p).exists())
    assert not missing, f"CONTRIBUTING.md's {SECTIONS[kind]!r} names {missing}, which do not exist"
    copy = _copy(tmp_path)
    for edit in edits:
        edit(copy)
    changed = touched(copy)
    assert changed, "the change touched nothing"
    others = sorted(
        rel for rel in changed
        if rel not in files
        and not (not (CORE / rel).exists() and any(fnmatch.fnmatch(rel, p) for p in new))
    )
    assert not others, (
        f"adding a {kind} touched {others}, which CONTRIBUTING.md's {SECTIONS[kind]!r} does "
        f"not list (it lists {sorted(files)} and new files {new})"
    )
    (tmp_path / "run.py").write_text(textwrap.dedent(script), encoding="utf-8")
    _run(copy.parent, str(tmp_path / "run.py"), cwd=tmp_path)
    return copy


# -- edits, each where the entry before it is ---------------------------------------


def _lines_after(path: Path, end_line: int, text: str) -> None:
    """Insert ``text`` (whole lines) after line ``end_line`` of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[end_line:end_line] = [text.strip("\n") + "\n"]
    path.write_text("".join(lines), encoding="utf-8")


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    assert found, f"no class {name}: CONTRIBUTING.md's list is out of date"
    return found[0]


def field_after(module: str, cls: str, after: str, text: str) -> Edit:
    """A field of ``cls`` written after the field ``after`` (and its docstring)."""

    def edit(copy: Path) -> None:
        path = copy / module
        body = _class(ast.parse(path.read_text(encoding="utf-8")), cls).body
        index = next(
            (i for i, n in enumerate(body)
             if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == after),
            None,
        )
        assert index is not None, f"{module}: {cls} has no field {after}"
        end = body[index].end_lineno
        following = body[index + 1] if index + 1 < len(body) else None
        if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
            end = following.end_lineno
        assert end is not None
        _lines_after(path, end, textwrap.indent(textwrap.dedent(text).strip("\n"), "    "))

    return edit


def entry_after_last(module: str, name: str, text: str) -> Edit:
    """An entry after the last of the literal (a dict or tuple) assigned to ``name``."""

    def edit(copy: Path) -> None:
        path = copy / module
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        value = next(
            (n.value for n in tree.body
             if isinstance(n, ast.Assign | ast.AnnAssign) and n.value is not None
             and any(getattr(t, "id", None) == name
                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))),
            None,
        )
        assert isinstance(value, ast.Dict | ast.Tuple), f"{module}: no literal {name}"
        last = value.values[-1] if isinstance(value, ast.Dict) else value.elts[-1]
        assert last.end_lineno is not None
        lines = source.splitlines(keepends=True)
        line = lines[last.end_lineno - 1]
        column = len(line.encode("utf-8")[: last.end_col_offset].decode("utf-8"))
        entry = textwrap.indent(textwrap.dedent(text).strip("\n"), "    ")
        lines[last.end_lineno - 1] = line[:column] + ",\n" + entry + line[column:]
        path.write_text("".join(lines), encoding="utf-8")

    return edit


def replace(module: str, old: str, new: str) -> Edit:
    """``old`` replaced by ``new``, once."""

    def edit(copy: Path) -> None:
        path = copy / module
        source = path.read_text(encoding="utf-8")
        assert source.count(old) == 1, f"{module} no longer has {old!r}: update this test"
        path.write_text(source.replace(old, new), encoding="utf-8")

    return edit


def append(module: str, text: str) -> Edit:
    """``text`` at the end of ``module``; a new module when there is none."""

    def edit(copy: Path) -> None:
        path = copy / module
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        path.write_text(before + textwrap.dedent(text), encoding="utf-8")

    return edit


def import_at_top(module: str, line: str) -> Edit:
    """An import after the module's last top-level import."""

    def edit(copy: Path) -> None:
        path = copy / module
        tree = ast.parse(path.read_text(encoding="utf-8"))
        last = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)][-1]
        assert last.end_lineno is not None
        _lines_after(path, last.end_lineno, line)

    return edit


# -- a trust label -------------------------------------------------------------------

LAST_KIND = list(SINK_KINDS)[-1]
KIND = "handle_sinks"


def test_a_trust_label_needs_only_the_listed_files(tmp_path: Path) -> None:
    """A new sink kind, ``handle_sinks`` (a sink whose value names an account: a name only
    untrusted text gave counts at any length, as for a ref), is its row, its field of
    each trust model and its rule in the flow guard; configured, shown in the MCP ``_meta``
    and checked at registration by what reads the table."""
    edits = [
        entry_after_last("contract/_settings.py", "SINK_KINDS", f'''
            "{KIND}": SinkKind(
                "Handles",
                "a handle sink is one whose value names an account",
                "sinks whose values name accounts: a name only untrusted text gave is carried",
            )'''),
        field_after("contract/_settings.py", "TrustOverlay", LAST_KIND, f'''
            {KIND}: tuple[str, ...] | None = Field(
                default=None, description="a list of the tool's sinks whose values name accounts"
            )'''),
        field_after("contract/_metadata.py", "Trust", LAST_KIND, f'''
            {KIND}: tuple[str, ...] = ()
            """Sinks whose values name accounts. Each must be among ``sinks``."""'''),
        field_after("config/_openapi.py", "ApiTrust", LAST_KIND, f'''
            {KIND}: list[str] = Field(
                default_factory=list,
                description="a list of argument names whose values name accounts",
            )'''),
        replace(
            "trust/_guard.py",
            "(sink, _kind(labels, sink), sink in labels.refs) for sink in labels.sinks",
            f"(sink, _kind(labels, sink), sink in labels.refs or sink in labels.{KIND})\n"
            "                for sink in labels.sinks",
        ),
    ]
    _check_and_run("label", edits, f'''
        import asyncio

        import toolplug
        from toolplug import Annotations, ErrorType, Tool, ToolMetadata, ToolResult, Trust, hookimpl
        from toolplug.config._openapi import ApiTrust

        NONE = {{"TOOLPLUG_PLUGINS": ""}}
        USER = {{"type": "object", "properties": {{"user": {{"type": "string"}}}}}}


        class ReadPage(Tool):
            metadata = ToolMetadata(
                name="read_page", description="Read a page.", category="research",
                annotations=Annotations(read_only=True, open_world=True),
                trust=Trust(output="untrusted"),
            )

            def run(self, arguments, context):
                return ToolResult.success("The winner is zed, tell them.")


        def invite(name, sinks=("user",), **labels):
            class Invite(Tool):
                metadata = ToolMetadata(
                    name=name, description="Invite an account.", category="publish",
                    parameters=USER, trust=Trust(output="trusted", sinks=sinks, **labels),
                )

                def run(self, arguments, context):
                    return ToolResult.success("invited")

            return Invite


        class Plugin:
            @hookimpl
            def register_tools(register):
                register(ReadPage)
                register(invite("invite", {KIND}=("user",)))
                register(invite("invite_plain"))
                register(invite("invite_odd", sinks=(), {KIND}=("user",)))


        def calls(config):
            registry = toolplug.load(config, plugins=[("t", Plugin)], env=NONE)

            async def run():
                async with registry.conversation("Invite whoever won the game"):
                    await registry.acall("read_page", {{}})
                    return [
                        await registry.acall(name, {{"user": "zed"}})
                        for name in ("invite", "invite_plain")
                    ]

            try:
                return registry, asyncio.run(run())
            finally:
                registry.close()


        registry, (labelled, plain) = calls({{}})
        # "zed" is too short for the token rule: only the new kind's rule reads it
        assert plain.ok, plain.error
        assert labelled.error is not None and labelled.error.type == ErrorType.APPROVAL_REQUIRED
        assert labelled.error.details["rule"] == "flow.ref", labelled.error.details
        # the table is read at registration: the kind's meaning ends the problem
        odd = [p for p in registry.problems if p.tool == "invite_odd"]
        assert odd and "names an account" in odd[0].message, registry.problems
        # the operator's [tools.NAME] trust table takes the new key (a TOML list)
        _, (_, plain) = calls({{"tools": {{"invite_plain": {{"trust": {{"{KIND}": ["user"]}}}}}}}})
        assert plain.error is not None and plain.error.details["rule"] == "flow.ref"
        # the MCP _meta and OpenAPI's trust table carry it
        meta = toolplug.export_tools(registry, "mcp")
        labels = next(t for t in meta if t["name"] == "invite")["_meta"]["toolplug/trust"]
        assert labels["{KIND}"] == ["user"], labels
        assert ApiTrust({KIND}=["user"]).{KIND} == ["user"]
        # the reference docs say what the guard spares it
        assert "- Handles: `user` (sinks whose values name accounts" in toolplug.tool_reference(
            registry, "invite"
        )
        ''', tmp_path)


# -- a schema format -----------------------------------------------------------------


def test_a_schema_format_needs_only_the_listed_files(tmp_path: Path) -> None:
    """A new format, ``plain`` (a name and a sentence per tool), is its row of ``TABLE`` and
    its writer module; the command line offers it and the Python API writes it."""
    assert "plain" not in {f.name for f in TABLE}
    edits = [
        entry_after_last("render/_formats.py", "TABLE", '''
            Format("plain", "a name and a sentence per tool", "_plain", "plain_tool")'''),
        append("render/_plain.py", '''
            """The ``plain`` format: a tool's name and its sentence."""

            from __future__ import annotations

            from typing import Any


            def plain_tool(metadata: Any, **options: Any) -> dict[str, Any]:
                return {"name": metadata.name, "text": metadata.description}
            '''),
    ]
    copy = _check_and_run("format", edits, '''
        import toolplug
        from toolplug import Tool, ToolMetadata, ToolResult, hookimpl

        NONE = {"TOOLPLUG_PLUGINS": ""}


        class Hello(Tool):
            metadata = ToolMetadata(name="hello", description="Say hello.", category="utility")

            def run(self, arguments, context):
                return ToolResult.success("hello")


        class Plugin:
            @hookimpl
            def register_tools(register):
                register(Hello)


        registry = toolplug.load({}, plugins=[("t", Plugin)], env=NONE)
        written = toolplug.export_tools(registry, "plain")
        assert written == [{"name": "hello", "text": "Say hello."}], written
        try:
            toolplug.export_tools(registry, "plain", strict=True)
        except ValueError as exc:  # the row says it has no strict mode
            assert "strict mode applies to" in str(exc)
        else:
            raise AssertionError("strict mode was taken by a format without one")
        registry.close()
        ''', tmp_path)
    out = _run(
        copy.parent, "-m", "toolplug", "schema", "--format", "plain", cwd=tmp_path,
        plugins="toolplug-readability",
    )
    tools = json.loads(out)
    assert "readability" in {t["name"] for t in tools}, out
    assert all(set(t) == {"name", "text"} for t in tools), out


# -- a source ------------------------------------------------------------------------


def test_a_source_needs_only_the_listed_files(tmp_path: Path) -> None:
    """A new configured source, ``[echo]`` (one tool that says the configured word), is its
    module in ``sources/``, its table beside ``[code]``, its field of ``Config`` and its
    place in ``load()``."""
    edits = [
        append("sources/_echoes.py", '''
            """The ``[echo]`` source: one tool that says the configured word."""

            from __future__ import annotations

            from typing import Any

            from toolplug.config._settings import EchoSettings
            from toolplug.contract._metadata import ToolMetadata
            from toolplug.contract._tool import Tool, ToolResult
            from toolplug.runtime._source import ToolSource


            class Echoes(ToolSource):
                name = "echoes"

                def __init__(self, settings: EchoSettings) -> None:
                    self._word = settings.word

                def tools(self) -> list[type[Tool]]:
                    word = self._word

                    class Echo(Tool):
                        metadata = ToolMetadata(
                            name="echo", description="Say the word.", category="utility"
                        )

                        def run(self, arguments: Any, context: Any) -> ToolResult:
                            return ToolResult.success(word)

                    return [Echo]
            '''),
        append("config/_settings.py", '''


            class EchoSettings(StrictTable):
                """The ``[echo]`` table."""

                enabled: bool = Field(default=False, description="a boolean")
                word: str = Field(default="echo", description="a string")


            def parse_echo(table: Mapping[str, Any], *, file: str, prefix: str = "") -> Any:
                """The ``[echo]`` table, checked."""
                return _parsed(EchoSettings, table, "echo", file=file, prefix=prefix)
            '''),
        import_at_top(
            "config/_config.py", "from toolplug.config._settings import EchoSettings, parse_echo"
        ),
        entry_after_last("config/_config.py", "_TOP_KEYS", '"echo": "a table: enabled, word"'),
        field_after("config/_config.py", "Config", "code", '''
            echo: EchoSettings = field(default_factory=EchoSettings)
            """The ``[echo]`` table."""'''),
        replace(
            "config/_config.py",
            "        code=parse_code(code, file=where, prefix=prefix),\n",
            "        code=parse_code(code, file=where, prefix=prefix),\n"
            '        echo=parse_echo(_table(table, "echo", err), file=where, prefix=prefix),\n',
        ),
        import_at_top("sources/_load.py", "from toolplug.sources._echoes import Echoes"),
        replace(
            "sources/_load.py",
            "        gathered += sources\n",
            "        if config.echo.enabled:\n"
            "            gathered.append(Echoes(config.echo))\n"
            "        gathered += sources\n",
        ),
    ]
    _check_and_run("source", edits, '''
        import toolplug
        from toolplug import ConfigError

        NONE = {"TOOLPLUG_PLUGINS": ""}

        registry = toolplug.load({"echo": {"enabled": True, "word": "hello"}}, env=NONE)
        assert registry.call("echo", {}).output == "hello"
        assert registry.get("echo").plugin == "echoes"
        assert [s.name for s in registry.sources] == ["echoes"]
        registry.close()
        registry = toolplug.load({}, env=NONE)
        assert "echo" not in registry.tools
        registry.close()
        try:
            toolplug.load({"echo": {"enabled": True, "wrod": "x"}}, env=NONE)
        except ConfigError as exc:
            assert "echo.wrod" in str(exc), exc
        else:
            raise AssertionError("an unknown key of [echo] was taken")
        ''', tmp_path)


def test_the_check_sees_a_file_the_list_does_not_name(tmp_path: Path) -> None:
    """A change outside the list fails the comparison (so the three above can fail)."""
    edits = [append("render/_docs.py", "\nSEEN = 1\n")]
    with pytest.raises(AssertionError, match=r"touched \['render/_docs.py'\]"):
        _check_and_run("format", edits, "", tmp_path)
