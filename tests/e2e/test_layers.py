"""The layers of the core, enforced by import-linter (the contract is in pyproject.toml).

``.ci/run`` runs ``lint-imports`` on the real tree; these tests prove the contract bites:
a copy of the package with one upward import, at module level, inside a function or under
``if TYPE_CHECKING:``, breaks it.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
PACKAGE = ROOT / "core" / "src" / "toolplug"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(tmp_path: Path, module: str, addition: str) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "toolplug", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = src / "toolplug" / module
    target.write_text(target.read_text(encoding="utf-8") + addition, encoding="utf-8")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_real_tree_keeps_its_layers(tmp_path: Path) -> None:
    done = _lint(tmp_path, "contract/_errors.py", "")
    assert done.returncode == 0, done.stdout + done.stderr
    contracts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    assert f"{len(contracts['contracts'])} kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "addition"),
    [
        # the contract reaching up to the registry, at module level
        ("contract/_tool.py", "\nfrom toolplug.runtime import _registry  # noqa\n"),
        # the runtime reaching up to the call engine from inside a function
        ("runtime/_registry.py", "\n\ndef _sneak():\n    from toolplug.engine import _engine\n"),
        # two siblings of one layer: render may not import the engine
        ("render/_prompt.py", "\n\ndef _sneak():\n    import toolplug.engine._plan\n"),
        # a renderer reaching into the state it has no business with (a forbidden contract)
        ("render/_prompt.py", "\nfrom toolplug.state import _store  # noqa\n"),
        # the schema rewrites reaching into the contract
        ("schema/_losses.py", "\nfrom toolplug.contract import _tool  # noqa\n"),
        # the call engine fetching through the network guard
        ("engine/_engine.py", "\n\ndef _sneak():\n    import toolplug.http._netguard\n"),
        # the MCP server leaning on a framework's integration (imported lazily, too)
        ("serve/_server.py", "\n\ndef _sneak():\n    import toolplug.integrations._offer\n"),
        # the minimal core taking on an HTTP client
        ("config/_config.py", "\n\ndef _sneak():\n    import httpx\n"),
        # search asking the registry instead of being given an embedder
        ("search/_index.py", "\n\ndef _sneak():\n    import toolplug.runtime._registry\n"),
    ],
)
def test_an_upward_import_breaks_the_contract(tmp_path: Path, module: str, addition: str) -> None:
    done = _lint(tmp_path, module, addition)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "BROKEN" in done.stdout


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        # the circle this layout removed: the guard naming the registry for a type
        ("trust/_guard.py", "toolplug.runtime._registry"),
        # its other half: the registry naming the engine's types (it holds a CallEngine)
        ("runtime/_registry.py", "toolplug.engine._engine"),
        # the contract naming the command line for a type
        ("contract/_errors.py", "toolplug.cli._commands"),
    ],
)
def test_a_type_only_upward_import_breaks_the_contract(
    tmp_path: Path, module: str, imported: str
) -> None:
    addition = (
        "\nfrom typing import TYPE_CHECKING\n"
        f"if TYPE_CHECKING:\n    import {imported}  # noqa\n"
    )
    done = _lint(tmp_path, module, addition)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "BROKEN" in done.stdout


def _runtime_imports(path: Path) -> list[tuple[int, bool]]:
    """Each import of ``toolplug.runtime`` in a module: its line, and whether it is under
    ``if TYPE_CHECKING:``."""
    found: list[tuple[int, bool]] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for branch in node.body:
                visit(branch, True)
            for branch in node.orelse:
                visit(branch, typing_only)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [node.module or ""] if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
            )
            if any(name.startswith("toolplug.runtime") for name in names):
                found.append((node.lineno, typing_only))
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_render_names_the_registry_only_as_a_type() -> None:
    """The render contract ignores render's imports of the registry and the capability
    checker; this holds each of them under ``if TYPE_CHECKING:``, so a renderer draws what
    it is given and never asks a registry to run anything."""
    loose = [
        f"{path.name}:{line}"
        for path in sorted((PACKAGE / "render").glob("*.py"))
        for line, typing_only in _runtime_imports(path)
        if not typing_only
    ]
    assert loose == []


def test_the_type_check_sees_a_runtime_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from toolplug.runtime._registry import Registry\n"
        "import toolplug.runtime._capabilities\n",
        encoding="utf-8",
    )
    assert _runtime_imports(module) == [(3, True), (4, False)]


def _unplaced(package: Path) -> tuple[list[str], list[str]]:
    """The subpackages of ``package`` that no layer names, and the names of no subpackage."""
    contracts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = next(c for c in contracts["contracts"] if c["type"] == "layers")["layers"]
    named = {part.strip() for layer in layers for part in layer.split("|")}
    present = {f"toolplug.{path.parent.name}" for path in package.glob("*/__init__.py")}
    present |= {f"toolplug.{path.stem}" for path in package.glob("[!_]*.py")}
    return sorted(present - named), sorted(named - present)


def test_every_subpackage_stands_in_the_layers() -> None:
    """A subpackage the layers contract does not name is bound by none of its arrows (a new
    ``toolplug/graphql/`` importing cli, integrations and calls kept every contract)."""
    unplaced, missing = _unplaced(PACKAGE)
    assert unplaced == [], "add these subpackages to a layer in pyproject.toml"
    assert missing == [], "the layers name subpackages that do not exist"


def test_a_subpackage_outside_the_layers_is_caught(tmp_path: Path) -> None:
    copy = tmp_path / "toolplug"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "graphql").mkdir()
    (copy / "graphql" / "__init__.py").write_text("import toolplug.cli\n", encoding="utf-8")
    assert _unplaced(copy) == (["toolplug.graphql"], [])


def test_no_module_of_the_core_imports_itself_back() -> None:
    """No import cycle anywhere in the core, imports inside functions included. (A type
    named under ``if TYPE_CHECKING:`` may point back inside one package, as a source's
    hooks name the registry that gathers it; between layers the contract forbids even
    that.)"""
    import grimp

    graph = grimp.build_graph("toolplug", exclude_type_checking_imports=True)
    cycles = sorted(
        (module, imported)
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if imported != module and graph.chain_exists(importer=imported, imported=module)
    )
    assert cycles == []


def _outside_the_sources_contract(package: Path) -> list[str]:
    """The modules and subpackages of ``package/sources`` but ``_load`` that the contract
    "sources gather tools" does not hold away from the engine and render."""
    contracts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    held = set(
        next(c for c in contracts["contracts"] if c["name"].startswith("sources gather tools"))[
            "source_modules"
        ]
    )
    sources = package / "sources"
    present = {f"toolplug.sources.{p.parent.name}" for p in sources.glob("*/__init__.py")}
    present |= {f"toolplug.sources.{p.stem}" for p in sources.glob("*.py")}
    return sorted(present - held - {"toolplug.sources.__init__", "toolplug.sources._load"})


def test_every_source_module_is_held_by_the_sources_contract() -> None:
    """Only ``load()`` binds a registry to its engine; a new source (CONTRIBUTING's "Adding
    a source") that the contract does not name could import the engine unseen."""
    assert _outside_the_sources_contract(PACKAGE) == []


def test_a_source_outside_the_sources_contract_is_caught(tmp_path: Path) -> None:
    copy = tmp_path / "toolplug"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "sources" / "_graphql.py").write_text('"""A new source."""\n', encoding="utf-8")
    assert _outside_the_sources_contract(copy) == ["toolplug.sources._graphql"]
