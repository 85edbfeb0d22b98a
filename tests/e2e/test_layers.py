"""The layers of the core, enforced by import-linter (the contract is in pyproject.toml).

``.ci/run`` runs ``lint-imports`` on the real tree; these tests prove the contract bites:
a copy of the package with one upward import, at module level or inside a function, breaks
it, while an upward import under ``if TYPE_CHECKING:`` does not.
"""

from __future__ import annotations

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
        ("runtime/_registry.py", "\n\ndef _sneak():\n    from toolplug.calls import _engine\n"),
        # two siblings of one layer: render may not import calls
        ("render/_prompt.py", "\n\ndef _sneak():\n    import toolplug.calls._plan\n"),
        # a renderer using the registry for more than a type (a forbidden contract)
        ("render/_prompt.py", "\nfrom toolplug.runtime import _registry  # noqa\n"),
        # the schema rewrites reaching into the contract
        ("schema/_losses.py", "\nfrom toolplug.contract import _tool  # noqa\n"),
        # the call engine fetching through the network guard
        ("calls/_engine.py", "\n\ndef _sneak():\n    import toolplug.http._guard\n"),
        # the MCP server leaning on a framework's integration (imported lazily, too)
        ("serve/_server.py", "\n\ndef _sneak():\n    import toolplug.integrations._offer\n"),
        # the minimal core taking on an HTTP client
        ("runtime/_config.py", "\n\ndef _sneak():\n    import httpx\n"),
        # search asking the registry instead of being given an embedder
        ("search/_index.py", "\n\ndef _sneak():\n    import toolplug.runtime._registry\n"),
    ],
)
def test_an_upward_import_breaks_the_contract(tmp_path: Path, module: str, addition: str) -> None:
    done = _lint(tmp_path, module, addition)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "BROKEN" in done.stdout


def test_type_checking_imports_may_point_anywhere(tmp_path: Path) -> None:
    addition = (
        "\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from toolplug.cli import _commands\n"
    )
    done = _lint(tmp_path, "contract/_errors.py", addition)
    assert done.returncode == 0, done.stdout + done.stderr


def _unplaced(package: Path) -> tuple[list[str], list[str]]:
    """The subpackages of ``package`` that no layer names, and the names of no subpackage."""
    contracts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = next(c for c in contracts["contracts"] if c["type"] == "layers")["layers"]
    named = {part.strip() for layer in layers for part in layer.split("|")}
    present = {f"toolplug.{path.parent.name}" for path in package.glob("*/__init__.py")}
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
    """No import cycle anywhere in the core, imports inside functions included (only
    imports under ``if TYPE_CHECKING:`` name types and may point anywhere)."""
    import grimp

    graph = grimp.build_graph("toolplug", exclude_type_checking_imports=True)
    cycles = sorted(
        (module, imported)
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if imported != module and graph.chain_exists(importer=imported, imported=module)
    )
    assert cycles == []
