"""``toolplug new``: the generated package is complete, clean, installable and passes its tests."""

from __future__ import annotations

import importlib.util
import os
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import toolplug
from tests.helpers.venv import clean_env, run, uv_command
from toolplug import UsageError
from toolplug.cli._scaffold import distribution_name, new_plugin, next_steps
from toolplug.testing import check_tool

WORKSPACE = Path(__file__).resolve().parents[2]
NAME = "word_count"


def load_module(package: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import the generated entry module from its file, without installing it."""
    module_name = f"toolplug_{name}"
    init = package / "src" / module_name / "__init__.py"
    spec = importlib.util.spec_from_file_location(module_name, init)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, module_name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """An empty directory to generate into (``tmp_path`` also holds the test's working dir)."""
    path = tmp_path / "out"
    path.mkdir()
    return path


# -- what is generated ------------------------------------------------------------------------


def test_creates_the_package_layout(out: Path) -> None:
    package = new_plugin(NAME, out)
    assert package == out / "toolplug-word-count"
    files = sorted(str(p.relative_to(package)) for p in package.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "pyproject.toml",
        "src/toolplug_word_count/__init__.py",
        "src/toolplug_word_count/py.typed",
        "tests/test_word_count.py",
    ]
    assert [p.name for p in out.iterdir()] == ["toolplug-word-count"]  # no staging left


def test_pyproject_declares_the_entry_point(tmp_path: Path) -> None:
    project = tomllib.loads((new_plugin(NAME, tmp_path) / "pyproject.toml").read_text("utf-8"))
    assert project["build-system"]["build-backend"] == "hatchling.build"
    assert project["project"]["name"] == "toolplug-word-count"
    assert project["project"]["entry-points"]["toolplug"] == {NAME: "toolplug_word_count"}
    assert [d.split(">")[0] for d in project["project"]["dependencies"]] == ["toolplug"]
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["src/toolplug_word_count"]


def test_readme_and_tests_name_the_plugin(tmp_path: Path) -> None:
    package = new_plugin(NAME, tmp_path)
    readme = (package / "README.md").read_text("utf-8")
    assert readme.startswith("# toolplug-word-count\n")
    assert "pip install toolplug-word-count" in readme
    tests = (package / "tests" / "test_word_count.py").read_text("utf-8")
    assert "check_plugin(DISTRIBUTION)" in tests
    assert 'DISTRIBUTION = "toolplug-word-count"' in tests
    assert "registry.call(" in tests
    assert "__" not in tests.replace("__future__", "")  # every marker was replaced


def test_generated_tool_passes_the_contract_kit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = load_module(new_plugin(NAME, tmp_path), NAME, monkeypatch)
    check_tool(module.WordCountTool)  # runs every example and checks data against returns


def test_generated_tool_works_through_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = load_module(new_plugin(NAME, tmp_path), NAME, monkeypatch)
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("generated", module)])
    try:
        assert registry.problems == []
        assert registry.availability(NAME).available
        # labelled by its author: the guard reads what the scaffold wrote
        assert registry.labelled(NAME)
        assert registry.labels(NAME) == toolplug.Trust(output="trusted")
        for example in module.WordCountTool.metadata.examples:
            assert registry.call(NAME, example.input).data == example.output
        result = registry.call(NAME, {"text": "Ab ab, AB! cd"})
        assert result.data["top_words"] == [{"word": "ab", "count": 3}, {"word": "cd", "count": 1}]
        empty = registry.call(NAME, {"text": " "})
        assert empty.error is not None
        assert empty.error.type == "ValidationError"
    finally:
        registry.close()


@pytest.mark.parametrize(
    ("name", "module", "cls"),
    [
        ("a", "toolplug_a", "ATool"),  # shortest name
        ("rss2_digest", "toolplug_rss2_digest", "Rss2DigestTool"),  # digits inside
        ("a" * 64, "toolplug_" + "a" * 64, "A" + "a" * 63 + "Tool"),  # longest name
    ],
)
def test_valid_names(
    name: str, module: str, cls: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = new_plugin(name, tmp_path)
    assert package.name == distribution_name(name)
    assert (package / "src" / module / "__init__.py").is_file()
    check_tool(getattr(load_module(package, name, monkeypatch), cls))


@pytest.mark.parametrize(
    "name",
    [
        "",  # empty
        "Word",  # upper case
        "1word",  # starts with a digit
        "_word",  # starts with an underscore
        "word-count",  # a dash: not a valid tool name (the distribution gets the dashes)
        "word count",  # a space
        "a" * 65,  # one character too long
        "toolplug_x",  # the prefix is added for you
        "toolplug",
    ],
)
def test_invalid_names_are_refused(name: str, out: Path) -> None:
    with pytest.raises(UsageError, match="invalid plugin name"):
        new_plugin(name, out)
    assert list(out.iterdir()) == []


def test_refuses_to_overwrite(out: Path) -> None:
    existing = out / "toolplug-word-count"
    existing.mkdir()
    (existing / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(UsageError, match="already exists"):
        new_plugin(NAME, out)
    assert [p.name for p in existing.iterdir()] == ["mine.txt"]
    assert [p.name for p in out.iterdir()] == ["toolplug-word-count"]


def test_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "toolplug-word-count").write_text("", encoding="utf-8")
    with pytest.raises(UsageError, match="already exists"):
        new_plugin(NAME, tmp_path)


def test_creates_the_parent_directory(tmp_path: Path) -> None:
    package = new_plugin(NAME, tmp_path / "deep" / "er")
    assert package.is_dir()


def test_nothing_is_left_behind_when_writing_fails(
    out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Path.write_bytes
    calls: list[Path] = []

    def flaky(self: Path, data: Any) -> int:
        calls.append(self)
        if len(calls) == 3:
            raise OSError("disk full")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", flaky)
    with pytest.raises(OSError, match="disk full"):
        new_plugin(NAME, out)
    assert list(out.iterdir()) == []


def test_next_steps(tmp_path: Path) -> None:
    text = next_steps(NAME, tmp_path / "toolplug-word-count")
    assert text.startswith(f"Created toolplug-word-count in {tmp_path / 'toolplug-word-count'}")
    assert "python -m pytest" in text
    assert "toolplug info word_count" in text
    assert "src/toolplug_word_count/__init__.py" in text
    relative = next_steps(NAME, Path("toolplug-word-count"))
    assert relative.startswith(f"Created toolplug-word-count in .{os.sep}toolplug-word-count\n")


def test_generation_is_deterministic(tmp_path: Path) -> None:
    one = new_plugin(NAME, tmp_path / "one")
    two = new_plugin(NAME, tmp_path / "two")
    for path in sorted(p for p in one.rglob("*") if p.is_file()):
        assert path.read_bytes() == (two / path.relative_to(one)).read_bytes(), path


# -- the generated code is clean, and works when installed ------------------------------------


@pytest.mark.slow
def test_generated_code_passes_ruff_and_strict_mypy(tmp_path: Path) -> None:
    package = new_plugin(NAME, tmp_path)
    config = str(WORKSPACE / "pyproject.toml")
    run([sys.executable, "-m", "ruff", "check", "--config", config, str(package)], cwd=WORKSPACE)
    run(
        [sys.executable, "-m", "ruff", "format", "--check", "--config", config, str(package)],
        cwd=WORKSPACE,
    )
    run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            str(package / "src"),
            str(package / "tests"),
        ],
        cwd=WORKSPACE,  # the workspace's mypy settings, and toolplug's sources on mypy_path
    )


@pytest.mark.slow
def test_generated_package_installs_and_passes_its_own_tests(tmp_path: Path) -> None:
    uv = uv_command("tests/cli/test_scaffold.py")
    env = clean_env(tmp_path)
    package = new_plugin(NAME, tmp_path / "src")
    venv = tmp_path / "venv"
    run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=tmp_path, env=env)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # The printed next step, as a user with a clone runs it: this core built into a wheel
    # (docs/install.md), then `pip install -e '.[test]' --find-links CLONE/wheels`. uv keys
    # its cache of local builds on pyproject.toml alone; refresh so that edited sources
    # are built again.
    steps = next_steps(NAME, package)
    assert "pip install -e '.[test]'" in steps
    assert "--find-links CLONE/wheels" in steps
    assert "docs/install.md" in steps
    wheels = tmp_path / "wheels"
    run(
        [*uv, "build", "--package", "toolplug", "--wheel", "--out-dir", str(wheels), "--quiet"],
        cwd=WORKSPACE,
        env=env,
    )
    run(
        [
            *uv,
            "pip",
            "install",
            "--quiet",
            "--refresh-package",
            "toolplug",
            "--refresh-package",
            "toolplug-word-count",
            "--python",
            str(python),
            "--find-links",
            str(wheels),
            "-e",
            ".[test]",
        ],
        cwd=package,
        env=env,
    )
    report = run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=package, env=env
    )
    assert "6 passed" in report, report
    listing = run([str(python), "-m", "toolplug", "list", "--all"], cwd=tmp_path, env=env)
    rows = [line.split() for line in listing.splitlines()]
    assert [r[:2] for r in rows if r[0] == NAME] == [[NAME, "utility"]], listing
    assert "toolplug-word-count" in listing
