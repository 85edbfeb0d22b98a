"""The reference site (mkdocs.yml): every page and every public name, links checked.

``.ci/run`` builds it with ``mkdocs build --strict``. These tests prove that the build
fails on what it must catch (a broken link, a public name without a docstring) and that
the hooks put the repository's pages where their links expect them. They need the
``docs`` dependency group (``uv run --group docs pytest tests/e2e/test_reference_site.py``)
and are skipped without it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.docs import line_of

ROOT = Path(__file__).resolve().parents[2]


def hooks() -> ModuleType:
    group = line_of("pyproject.toml", "docs = [")
    here = Path(__file__).resolve().relative_to(ROOT).as_posix()
    why = f"needs the docs dependency group ({group}): uv run --group docs pytest {here}"
    pytest.importorskip("mkdocs", reason=why)
    pytest.importorskip("griffe", reason=why)
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "mkdocs_hooks.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ci_builds_the_site_strictly() -> None:
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "run --group docs mkdocs build --strict" in run
    assert "strict: true" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "build/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    ("page", "on_site", "target", "mapped"),
    [
        # docs/ is the site's root; guidelines/ sits beside it in the repository, inside it here
        ("docs/concepts.md", "concepts.md", "../guidelines/README.md", "guidelines/README.md"),
        ("docs/concepts.md", "concepts.md", "tools/index.md", "tools/index.md"),
        ("docs/cli.md", "cli.md", "../guidelines/walkthrough.md", "guidelines/walkthrough.md"),
        ("guidelines/README.md", "guidelines/README.md", "../docs/hooks.md", "../hooks.md"),
        ("guidelines/README.md", "guidelines/README.md", "walkthrough.md", "walkthrough.md"),
        ("README.md", "README.md", "docs/cli.md", "cli.md"),
        ("README.md", "README.md", "docs/tools/", "tools/index.md"),  # a directory: its index
        ("README.md", "README.md", "guidelines/", "guidelines/README.md"),
        # not pages of the site: left for mkdocs to report
        (
            "README.md",
            "README.md",
            "core/src/toolplug/__init__.py",
            "core/src/toolplug/__init__.py",
        ),
        ("README.md", "README.md", "https://example.org/x.md", "https://example.org/x.md"),
    ],
)
def test_links_are_mapped_from_the_repository_to_the_site(
    page: str, on_site: str, target: str, mapped: str
) -> None:
    assert hooks().map_link(page, on_site, target) == mapped


def test_every_public_name_has_a_docstring() -> None:
    assert hooks().missing_docstrings() == []


def test_a_public_name_without_a_docstring_is_found(tmp_path: Path) -> None:
    module = hooks()
    source = tmp_path / "src"
    shutil.copytree(ROOT / "core" / "src", source, ignore=shutil.ignore_patterns("__pycache__"))
    tool = source / "toolplug" / "contract" / "_tool.py"
    text = tool.read_text(encoding="utf-8")
    text = text.replace('        """True for a success."""\n', "", 1)  # ToolResult.ok
    text = text.replace('    """A source the result came from."""\n', "", 1)  # Citation
    tool.write_text(text, encoding="utf-8")
    assert module.missing_docstrings(source) == ["toolplug.Citation", "toolplug.ToolResult.ok"]


def _build(config: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(config),
            "-d",
            str(tmp_path / "site"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


@pytest.mark.slow
def test_the_site_builds_and_a_broken_link_fails_it(tmp_path: Path) -> None:
    hooks()
    done = _build(ROOT / "mkdocs.yml", tmp_path)
    assert done.returncode == 0, done.stderr
    site = tmp_path / "site"
    for page in (
        "index.html",
        "cli.html",
        "guidelines/index.html",
        "reference/http.html",
        "tools/static_links.html",
    ):
        assert (site / page).is_file(), page
    assert "fetch" in (site / "reference" / "http.html").read_text(encoding="utf-8")
    # the same site with one broken link among docs/
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    concepts = docs / "concepts.md"
    broken_link = "\nSee [nowhere](no-such-page.md).\n"
    concepts.write_text(concepts.read_text("utf-8") + broken_link, "utf-8")
    config = tmp_path / "mkdocs.yml"
    text = (ROOT / "mkdocs.yml").read_text("utf-8")
    text = text.replace("docs_dir: docs", f"docs_dir: {docs}")
    text = text.replace("  - mkdocs_hooks.py", f"  - {ROOT / 'mkdocs_hooks.py'}")
    text = text.replace("paths: [core/src]", f"paths: [{ROOT / 'core' / 'src'}]")
    config.write_text(text, "utf-8")
    broken = _build(config, tmp_path)
    assert broken.returncode != 0
    assert "no-such-page.md" in broken.stderr
