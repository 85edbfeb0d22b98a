"""Doc tests: every code block of README.md, docs/, guidelines/ and each distribution's README
is run or checked.

Sybil (https://sybil.readthedocs.io) finds the blocks: it parses Markdown into regions
that pytest collects as tests, one per block, in document order, and reports a failure at
the block's file and line. It is used rather than pytest-examples because the blocks here
are not only Python: console sessions are run and compared with their real output, and
files are written or compared, which needs parsers of our own; Sybil is built for that.

What happens to each fenced block, in the order of the page:

- ``python``: runs; the blocks of one page share one namespace.
- ``console``: every ``$ toolplug ...`` line runs (in this process, through
  ``toolplug.cli.main``; also ``uv run toolplug``, ``python -m toolplug``, ``VAR=value``
  before it, ``| head -N`` after it, and ``$ echo $?``), and stdout and stderr together must
  match the lines shown after it. ``...`` stands for any text, across lines too (doctest's
  ELLIPSIS). A console block whose toolplug command cannot run here must be marked.
- ``json`` and ``toml``: must parse.
- Anything else is prose.

Comments in the Markdown steer it:

- ``<!-- skip: next "why" -->`` before a block: not run, with the reason shown after the
  block's file and line (``docs/mcp.md:9: why``; Sybil's own skip directive; a reason is
  required, tests/e2e/test_docs.py checks that).
- ``<!-- docs-test: write PATH -->`` before a block: its text is the file PATH in the page's
  working directory (the ``toolplug.toml`` a tour runs with, say).
- ``<!-- docs-test: file PATH -->``: the block is the repository's file PATH, exactly.
- ``<!-- docs-test: part-of PATH -->``: every line of the block is in that file, in order.

Each page runs in a working directory of its own, with an environment without the
developer's ``TOOLPLUG_*`` variables or tokens, and with sockets that refuse anything but
loopback: a page may call a network tool, it never leaves the machine.

The whole suite (these pages, tests/ and each plugin's tests) tests one set of plugins: the
catalog, the distributions under plugins/. ``TOOLPLUG_PLUGINS`` is set to them unless it is
set already, so a plugin someone installed into the same environment (``toolplug new``, then
``pip install -e``) adds no tool to a listing the docs show or a count a test expects.
Subprocesses inherit the selection; a test about discovery itself sets its own.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import socket
import tempfile
import tomllib
import unittest
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sybil import Document, Example, Region, Sybil
from sybil.evaluators.python import PythonEvaluator
from sybil.evaluators.skip import Skipper
from sybil.parsers.markdown import SkipParser
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

ROOT = Path(__file__).resolve().parent
DOC_ROOTS = ("docs", "guidelines")
DOC_FILES = ("README.md",)
_DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(?P<action>[\w-]+)\s+(?P<arg>\S+)\s*-->\s*\Z")
PLUGINS_ENV = "TOOLPLUG_PLUGINS"


# -- the plugins the suite tests ----------------------------------------------------------


def catalog_distributions() -> list[str]:
    """The distribution names of the catalog's plugins (plugins/NAME/pyproject.toml), sorted."""
    return sorted(
        tomllib.loads(path.read_text(encoding="utf-8"))["project"]["name"]
        for path in ROOT.glob("plugins/*/pyproject.toml")
    )


def pytest_configure(config: Any) -> None:
    """Select the catalog, unless the one running the suite selected plugins already."""
    if PLUGINS_ENV in os.environ:
        return
    os.environ[PLUGINS_ENV] = ",".join(catalog_distributions())
    config.add_cleanup(lambda: os.environ.pop(PLUGINS_ENV, None))


def is_doc(path: Path) -> bool:
    """Whether the doc tests cover this file: README.md, any page under docs/ and
    guidelines/, and the README of each distribution (core/, plugins/NAME/)."""
    try:
        relative = path.resolve().relative_to(ROOT)
    except ValueError:
        return False
    if path.suffix != ".md":
        return False
    if relative.as_posix() in DOC_FILES or relative.parts[0] in DOC_ROOTS:
        return True
    # Each distribution's README: what its users read first.
    return relative.name == "README.md" and (
        relative.parts[0] == "core" or (relative.parts[0] == "plugins" and len(relative.parts) == 3)
    )


# -- comparing output ---------------------------------------------------------------------


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def output_matches(expected: str, got: str) -> bool:
    """``got`` matches ``expected``, where ``...`` in ``expected`` stands for any text."""
    expected, got = _normalise(expected), _normalise(got)
    pieces = expected.split("...")
    if len(pieces) == 1:
        return expected == got
    first, *middle, last = pieces
    if not (got.startswith(first) and got.endswith(last)) or len(first) + len(last) > len(got):
        return False
    position, end = len(first), len(got) - len(last)
    for piece in middle:
        found = got.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True


# -- console sessions ---------------------------------------------------------------------

_PREFIXES = (("uv", "run", "toolplug"), ("python", "-m", "toolplug"), ("toolplug",))
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _words(command: str) -> list[str]:
    return shlex.split(command, comments=True)


def shows_toolplug(command: str) -> bool:
    """Whether a console line runs toolplug (by any path, through uv, python, npx or uvx)."""
    try:
        words = [w for w in _words(command) if not _ASSIGNMENT.match(w)]
    except ValueError:
        return "toolplug" in command
    if not words:
        return False
    if Path(words[0]).name == "toolplug" or words[:3] in (list(p) for p in _PREFIXES):
        return True
    return words[0] in ("npx", "uvx") and "toolplug" in words


def parse_command(command: str) -> tuple[dict[str, str], list[str], int | None] | None:
    """``(environment, toolplug arguments, head -N)`` of a command this harness runs, or None."""
    try:
        words = _words(command)
    except ValueError:
        return None
    env: dict[str, str] = {}
    while words and _ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    head = None
    if len(words) >= 3 and words[-3] == "|" and words[-2] == "head" and words[-1][:1] == "-":
        head = int(words[-1][1:])
        words = words[:-3]
    if any(w in ("|", "&&", "||", ";", ">", "<", ">>") for w in words):
        return None
    for prefix in _PREFIXES:
        if words[: len(prefix)] == list(prefix):
            return env, words[len(prefix) :], head
    return None


def run_toolplug(arguments: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run the command line in this process; its exit code and stdout + stderr, interleaved."""
    from toolplug.cli import main

    buffer = io.StringIO()
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            try:
                code = main(arguments)
            except SystemExit as stop:  # --help exits through argparse
                code = stop.code if isinstance(stop.code, int) else 0
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return code, buffer.getvalue()


def console_session(source: str) -> list[tuple[str, str]]:
    """The ``(command, expected output)`` pairs of a console block."""
    pairs: list[tuple[str, str]] = []
    for line in source.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], ""))
        elif pairs:
            command, output = pairs[-1]
            pairs[-1] = (command, output + line + "\n")
    return pairs


def evaluate_console(source: str) -> str | None:
    session = console_session(source)
    if not any(shows_toolplug(command) for command, _ in session):
        return None
    last = 0
    for command, expected in session:
        if command.strip() == "echo $?":
            got = f"{last}\n"
        else:
            parsed = parse_command(command)
            if parsed is None:
                return (
                    f"this console block shows a command the doc tests cannot run: $ {command}\n"
                    'Run only toolplug commands in it, or mark it <!-- skip: next "why" -->.'
                )
            env, arguments, head = parsed
            last, got = run_toolplug(arguments, env)
            if head is not None:
                got = "".join(got.splitlines(keepends=True)[:head])
        if not output_matches(expected, got):
            return f"$ {command}\nexpected:\n{expected}\ngot (exit code {last}):\n{got}"
    return None


# -- the parser ---------------------------------------------------------------------------


def _lines_in_order(block: str, text: str) -> str | None:
    """The first line of ``block`` not found in ``text`` after the ones before it, or None.

    Indentation is not compared: a fragment shows a function's body from its own margin.
    """
    lines = [line.strip() for line in text.splitlines()]
    index = 0
    for wanted in (line.strip() for line in block.splitlines() if line.strip()):
        while index < len(lines) and lines[index] != wanted:
            index += 1
        if index == len(lines):
            return wanted
        index += 1
    return None


class BlockParser:
    """Every fenced block of a page, with the ``docs-test`` directive before it, if any."""

    def __init__(self) -> None:
        self.lexer = FencedCodeBlockLexer(language=r"[\w+-]*")
        self.python = PythonEvaluator()

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in self.lexer(document):
            language = region.lexemes["language"]
            directive = _DIRECTIVE.search(document.text, 0, region.start)
            action = (directive["action"], directive["arg"]) if directive else None
            if action is None and language not in ("python", "console", "json", "toml"):
                continue
            region.parsed = region.lexemes["source"]
            region.evaluator = self._evaluator(language, action)
            yield region

    def _evaluator(self, language: str, action: tuple[str, str] | None) -> Any:
        if action is not None:
            kind, argument = action

            def directive(example: Example) -> str | None:
                return self._directive(kind, argument, str(example.parsed))

            return directive
        if language == "python":
            return self.python
        if language == "console":
            return lambda example: evaluate_console(str(example.parsed))
        if language == "json":
            return lambda example: _parses(json.loads, str(example.parsed), "JSON")
        return lambda example: _parses(tomllib.loads, str(example.parsed), "TOML")

    @staticmethod
    def _directive(kind: str, argument: str, source: str) -> str | None:
        if kind == "write":
            target = Path.cwd() / argument
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source, encoding="utf-8")
            return None
        path = ROOT / argument
        if not path.is_file():
            return f"docs-test {kind}: {argument} does not exist"
        text = path.read_text(encoding="utf-8")
        if kind == "file":
            if source.rstrip("\n") != text.rstrip("\n"):
                return f"this block is not {argument} (the guide must show the file as it is)"
            return None
        if kind == "part-of":
            missing = _lines_in_order(source, text)
            if missing is not None:
                return f"this line is not in {argument} (or not in this order):\n{missing}"
            return None
        return f"unknown docs-test directive {kind!r}: write, file or part-of"


def _parses(parse: Any, source: str, what: str) -> str | None:
    try:
        parse(source)
    except ValueError as exc:
        return f"this {what} block does not parse: {exc}"
    return None


# -- one page's surroundings --------------------------------------------------------------

_KEEP_OUT = ("GITHUB_TOKEN",)


def _loopback_only(host: object) -> bool:
    text = str(host)
    return text in ("localhost", "::1") or text.startswith("127.")


def _stub_ddgs() -> tuple[dict[str, Any], Any] | None:
    """ddgs makes requests with a client of its own, below Python's sockets: stub it out."""
    try:
        from ddgs.exceptions import DDGSException

        from toolplug_web_search import _ddgs
    except ImportError:
        return None

    class Offline:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def text(self, *args: Any, **kwargs: Any) -> Any:
            raise DDGSException("the doc tests never leave the machine")

    namespace = vars(_ddgs)
    real = namespace["DDGS"]
    namespace["DDGS"] = Offline
    return namespace, real


@contextlib.contextmanager
def _page_surroundings() -> Iterator[None]:
    work = Path(tempfile.mkdtemp(prefix="toolplug-docs-"))
    previous = os.getcwd()
    saved = dict(os.environ)
    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and not _loopback_only(address[0]):
            raise OSError(f"the doc tests never leave the machine: {address[0]}")
        real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _loopback_only(host):
            raise socket.gaierror(f"the doc tests never leave the machine: {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    for name in list(os.environ):
        # The selection stays: it is the suite's, not the developer's configuration.
        if (name.startswith("TOOLPLUG_") and name != PLUGINS_ENV) or name in _KEEP_OUT:
            del os.environ[name]
    os.environ.update(
        {
            "TOOLPLUG_NO_CACHE": "1",
            "TOOLPLUG_CACHE_DIR": str(work / ".cli-cache"),
            "XDG_CACHE_HOME": str(work / ".cache"),
            "XDG_STATE_HOME": str(work / ".state"),
            "COLUMNS": "80",
        }
    )
    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = getaddrinfo
    ddgs = _stub_ddgs()
    os.chdir(work)
    try:
        yield
    finally:
        os.chdir(previous)
        if ddgs is not None:
            ddgs[0]["DDGS"] = ddgs[1]
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.getaddrinfo = real_getaddrinfo
        os.environ.clear()
        os.environ.update(saved)


def _setup(namespace: dict[str, Any]) -> None:
    stack = contextlib.ExitStack()
    stack.enter_context(_page_surroundings())
    namespace["__docs_stack__"] = stack
    namespace["__name__"] = "docs_example"


def _teardown(namespace: dict[str, Any]) -> None:
    registries = [v for v in namespace.values() if type(v).__name__ == "Registry"]
    for registry in registries:
        registry.close()
    namespace["__docs_stack__"].close()


class _PlacedSkipper(Skipper):
    """Sybil's skipper, with the skipped block's file and line in front of the reason.

    pytest reports a skipped block at the line of unittest that raised ``SkipTest``; the
    reason is the only place that can say where the block is.
    """

    def evaluate_other_example(self, example: Example) -> None:
        try:
            super().evaluate_other_example(example)
        except unittest.SkipTest as skipped:
            raise unittest.SkipTest(f"{block_location(example)}: {skipped}") from None


def block_location(example: Example) -> str:
    """``docs/mcp.md:9``: the page, relative to the repository, and the block's first line."""
    path = Path(example.path).resolve()
    shown = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    return f"{shown}:{example.line}"


class PlacedSkipParser(SkipParser):
    """``<!-- skip: next "why" -->``, reported with where the skipped block is."""

    def __init__(self) -> None:
        super().__init__()
        self.skipper = _PlacedSkipper(self.directive)


_DOCS = Sybil(
    parsers=[BlockParser(), PlacedSkipParser()],
    patterns=["*.md"],
    setup=_setup,
    teardown=_teardown,
    name="docs",
)
_collect = _DOCS.pytest()


def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    """Collect README.md and the pages of docs/ and guidelines/ as doc tests."""
    if is_doc(file_path):
        return _collect(file_path, parent)
    return None
