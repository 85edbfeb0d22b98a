"""The docs cannot drift: the doc-test harness itself, and docs/cli.md's generated parts.

The code blocks of README.md, docs/ and guidelines/ run as tests through the root
``conftest.py`` (Sybil). This module tests that harness, and keeps the command list and
the usage lines of docs/cli.md equal to what the argument parser says. When
``test_cli_reference_is_generated_from_the_parser`` fails, regenerate them with::

    uv run python tests/e2e/test_docs.py
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import unittest
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from sybil import Document

import toolplug
from tests.helpers.docs import examples_run_by

ROOT = Path(__file__).resolve().parents[2]
CLI_DOC = ROOT / "docs" / "cli.md"
BEGIN = "<!-- begin: generated from toolplug's argument parser by tests/e2e/test_docs.py -->"
END = "<!-- end: generated -->"
REGENERATE = "uv run python tests/e2e/test_docs.py"


def harness() -> ModuleType:
    """The root conftest.py, where the doc-test harness lives."""
    spec = importlib.util.spec_from_file_location("docs_harness", ROOT / "conftest.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- docs/cli.md from the parser ------------------------------------------------------------


def _commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """``(name, one-line help, parser)`` of every command, in the order of ``--help``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps[name], sub) for name, sub in action.choices.items()]
    raise AssertionError("the parser has no commands")


def cli_reference(text: str) -> str:
    """docs/cli.md with its generated parts (help, command list, usage lines) made current."""
    from toolplug.cli._commands import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"  # the width the page is written for
    try:
        parser = build_parser()
        commands = _commands(parser)
        lines = [
            BEGIN,
            "",
            "```console",
            "$ toolplug --help",
            parser.format_help().rstrip("\n"),
            "```",
            "",
            "| command | what it does |",
            "|---|---|",
            *[f"| [`{name}`](#{name}) | {help_text} |" for name, help_text, _ in commands],
            "",
            END,
        ]
        begin, end = text.index(BEGIN), text.index(END) + len(END)
        text = text[:begin] + "\n".join(lines) + text[end:]
        for name, _, sub in commands:
            section = re.search(rf"^## `{name}`\n\n```text\n(.*?)```\n", text, re.M | re.S)
            if section is None:
                raise AssertionError(f"docs/cli.md has no '## `{name}`' section with its usage")
            text = text[: section.start(1)] + sub.format_usage() + text[section.end(1) :]
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return text


def test_cli_reference_is_generated_from_the_parser() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    assert cli_reference(text) == text, f"docs/cli.md is stale: run {REGENERATE}"


def test_every_command_has_a_section() -> None:
    from toolplug.cli._commands import build_parser

    text = CLI_DOC.read_text(encoding="utf-8")
    names = [name for name, _, _ in _commands(build_parser())]
    assert len(names) >= 11
    for name in names:
        assert f"\n## `{name}`\n" in text, name


# -- the harness ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "got", "matches"),
    [
        ("a\nb", "a\nb\n", True),  # trailing newlines do not count
        ("a  \nb", "a\nb", True),  # nor trailing spaces
        ("a\nb", "a\nc", False),
        ("why not: no token: ...", "why not: no token: GITHUB_TOKEN is not set", True),
        ("head\n...", "head\nline 1\nline 2", True),  # an elision across lines
        ("head\n...\ntail", "head\nx\ntail", True),
        ("head\n...\ntail", "head\nx\ntale", False),
        ("(... ms)", "(15 ms)", True),
        ("a...a", "a", False),  # the pieces may not overlap
        ("...", "", True),
    ],
)
def test_ellipsis(expected: str, got: str, matches: bool) -> None:
    assert harness().output_matches(expected, got) is matches


@pytest.mark.parametrize(
    ("command", "parsed"),
    [
        ("toolplug list --all", ({}, ["list", "--all"], None)),
        ("uv run toolplug info x", ({}, ["info", "x"], None)),
        ("python -m toolplug doctor", ({}, ["doctor"], None)),
        ("A=1 B='x y' toolplug plugins", ({"A": "1", "B": "x y"}, ["plugins"], None)),
        ("toolplug schema --format mcp | head -4", ({}, ["schema", "--format", "mcp"], 4)),
        ("toolplug serve   # a comment", ({}, ["serve"], None)),
        ("/tmp/venv/bin/toolplug list", None),  # another installation: not runnable here
        ("toolplug list > out.txt", None),
        ("pip install toolplug", None),
    ],
)
def test_console_commands(command: str, parsed: object) -> None:
    assert harness().parse_command(command) == parsed


@pytest.mark.parametrize(
    ("command", "shows"),
    [
        ("toolplug list", True),
        ("uv run toolplug list", True),
        ("/tmp/wheel-check/bin/toolplug doctor", True),
        ("npx @modelcontextprotocol/inspector toolplug serve", True),
        ("pip install toolplug-word-count", False),
        ("pipx inject toolplug toolplug-web-search", False),
    ],
)
def test_which_commands_are_toolplug_commands(command: str, shows: bool) -> None:
    assert harness().shows_toolplug(command) is shows


def test_a_console_block_that_differs_from_the_real_output_fails() -> None:
    module = harness()
    assert module.evaluate_console("$ toolplug frob\ntoolplug: error: ...\n") is None
    failure = module.evaluate_console("$ toolplug frob\nall is well\n")
    assert failure is not None
    assert "got (exit code 2)" in failure
    unrunnable = module.evaluate_console("$ cd somewhere\n$ toolplug list\n")
    assert unrunnable is not None
    assert "cannot run" in unrunnable
    assert module.evaluate_console("$ pip install toolplug\n") is None  # no toolplug command


def test_every_page_under_docs_and_guidelines_and_each_readme_is_collected() -> None:
    module = harness()
    collected = (
        "README.md", "docs/new-page.md", "docs/deep/er/page.md", "guidelines/x.md",
        "core/README.md", "plugins/new_tool/README.md",  # each distribution's README
    )
    for relative in collected:
        assert module.is_doc(ROOT / relative), relative
    left_out = (
        "docs/tools/x.txt", "tests/test_docs.py", "CHANGES.md", "plugins/x/tests/README.md",
    )
    for relative in left_out:
        assert not module.is_doc(ROOT / relative), relative
    pages = sorted(p for p in ROOT.glob("**/*.md") if module.is_doc(p))
    assert ROOT / "guidelines" / "README.md" in pages
    assert ROOT / "docs" / "cli.md" in pages


def test_every_skipped_block_says_why() -> None:
    module = harness()
    unmarked = []
    for page in sorted(p for p in ROOT.glob("**/*.md") if module.is_doc(p)):
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"<!--\s*skip:", line) and not re.search(
                r"<!--\s*skip:\s*(next|start)\s+\"[^\"]{8,}\"\s*-->", line
            ):
                unmarked.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()}")
    assert unmarked == [], 'write the reason: <!-- skip: next "why it cannot run" -->'


def test_a_skipped_block_is_reported_at_its_file_and_line(tmp_path: Path) -> None:
    module = harness()
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n"
        "\n"
        '<!-- skip: next "starts a server that runs until it is stopped" -->\n'
        "\n"
        "```python\n"  # line 5: where the skipped block is
        'raise SystemExit("never run")\n'
        "```\n"
        "\n"
        "```python\n"
        "shown = 1\n"
        "```\n",
        encoding="utf-8",
    )
    document = Document.parse(str(page), module.BlockParser(), module.PlacedSkipParser())
    skipped = []
    for example in document.examples():
        try:
            example.evaluate()
        except unittest.SkipTest as skip:
            skipped.append(str(skip))
    assert skipped == [f"{page}:5: starts a server that runs until it is stopped"]
    assert document.namespace["shown"] == 1  # the skip ends with its block


def test_a_block_left_to_a_test_names_a_test_that_exists() -> None:
    named = set()
    for page in sorted(p for p in ROOT.glob("**/*.md") if harness().is_doc(p)):
        for line in page.read_text(encoding="utf-8").splitlines():
            if re.search(r"<!--\s*skip:", line):
                named.update(re.findall(r"tests/[\w/]+\.py", line))
    assert named, "the docs leave some blocks to tests"
    missing = sorted(name for name in named if not (ROOT / name).is_file())
    assert missing == [], "a skip reason names a test file that is not there"
    # and a skipped test points back at the block it stands for, at the block's fence
    where = examples_run_by("tests/state/test_store.py")
    assert len(where) == 1
    shown, line = where[0].split(":")
    assert (ROOT / shown).read_text(encoding="utf-8").splitlines()[int(line) - 1].startswith("```")


def test_no_toolplug_session_hides_outside_a_console_block() -> None:
    """A ``$ toolplug ...`` line in a text or sh block would never be compared with the
    command's real output: such sessions belong in ``console`` blocks."""
    module = harness()
    fence = re.compile(r"^```(\S*)\s*$")
    hidden = []
    for page in sorted(p for p in ROOT.glob("**/*.md") if module.is_doc(p)):
        language = None
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            found = fence.match(line)
            if found:
                language = found[1] if language is None else None
            elif (
                language not in (None, "console")
                and line.startswith("$ ")
                and module.shows_toolplug(line[2:])
            ):
                hidden.append(f"{page.relative_to(ROOT)}:{number}: {line}")
    assert hidden == [], "show these sessions in console blocks, so they are run"


def test_docs_import_no_private_module() -> None:
    """Docs name only public modules: a private one (``toolplug._export`` once) moves
    without notice, and the doc tests would not notice an import that still works."""
    module = harness()
    private = re.compile(r"\btoolplug(?:\.\w+)*\._[a-z]\w*")
    found = []
    for page in sorted(p for p in ROOT.glob("**/*.md") if module.is_doc(p)):
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\b(?:import|from)\b", line) and private.search(line):
                found.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == [], "import from toolplug, toolplug.http, .schema, .search or .testing"


def test_the_guide_shows_the_kit_as_it_is() -> None:
    """The guide's signature block of the contract kit (a skipped block: signatures, not a
    program) names the parameters and defaults the functions really have."""
    import inspect

    import toolplug.testing

    guide = (ROOT / "guidelines" / "README.md").read_text(encoding="utf-8")
    marker = guide.index('<!-- skip: next "signatures, not a program" -->')
    block = guide[marker:].split("```python\n", 1)[1].split("```", 1)[0]
    calls = [" ".join(c.split()) for c in re.split(r"(?m)^(?=\w+\()", block) if c.strip()]
    shown = {}
    for call in calls:
        parts = re.fullmatch(r"(\w+)\((.*)\)", call)
        assert parts is not None, call
        shown[parts[1]] = parts[2]
    assert set(shown) == {"check_plugin", "check_tool"}
    for name, parameters in shown.items():
        function = getattr(toolplug.testing, name)
        real = inspect.signature(function).replace(return_annotation=inspect.Signature.empty)
        plain = [p.replace(annotation=inspect.Parameter.empty) for p in real.parameters.values()]
        bare = real.replace(parameters=plain)
        assert f"({parameters})" == str(bare), f"guidelines/README.md shows {name} out of date"


def test_the_real_embedder_example_runs_against_fastembeds_interface(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/ranking.md's fastembed block is skipped by the doc tests (it downloads a model).
    Run it here with a stand-in ``fastembed`` module of the same interface, which is what the
    block relies on: ``TextEmbedding(name).embed(texts)`` yielding arrays with ``tolist()``.
    The toolplug half (the hook, ``load(plugins=...)``, hybrid ranking) runs for real."""
    page = (ROOT / "docs" / "ranking.md").read_text(encoding="utf-8")
    marker = page.index("downloads a model; the test below uses a deterministic embedder")
    block = page[marker:].split("```python\n", 1)[1].split("```", 1)[0]

    class Vector(list[float]):
        def tolist(self) -> list[float]:
            return list(self)

    class TextEmbedding:
        def __init__(self, model_name: str) -> None:
            assert model_name == "BAAI/bge-small-en-v1.5"

        def embed(self, texts: list[str]) -> Iterator[Vector]:
            for text in texts:  # a bag of letters: deterministic, and similar texts are near
                yield Vector(float(text.lower().count(c)) for c in "abcdefghijklmnopqrstuvwxyz")

    monkeypatch.setitem(sys.modules, "fastembed", ModuleType("fastembed"))
    monkeypatch.setattr(sys.modules["fastembed"], "TextEmbedding", TextEmbedding, raising=False)
    namespace: dict[str, object] = {}
    exec(compile(block, "docs/ranking.md", "exec"), namespace)
    tools = namespace["tools"]
    assert isinstance(tools, toolplug.Registry)
    assert tools.embedder is not None  # the hook is in: ranking is hybrid
    assert [hit.name for hit in tools.search("read a web page", limit=3)]


def test_the_readme_catalog_lists_every_plugin() -> None:
    """The README's catalog table names each distribution under plugins/."""
    import tomllib

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## The catalog") :]
    for project in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        name = tomllib.loads(project.read_text(encoding="utf-8"))["project"]["name"]
        assert f"\n| {name} |" in table, f"README.md's catalog has no row for {name}"


if __name__ == "__main__":
    CLI_DOC.write_text(cli_reference(CLI_DOC.read_text(encoding="utf-8")), encoding="utf-8")
    sys.stdout.write(f"{CLI_DOC.relative_to(ROOT)}\n")
