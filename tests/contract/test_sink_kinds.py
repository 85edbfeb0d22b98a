"""The kinds of sink are one table (``SINK_KINDS``): a new one is a row there, a field of
each trust model, and a rule of the flow guard, in the files CONTRIBUTING.md lists; every
other place (command line, reference docs, MCP ``_meta``, transforms, OpenAPI, the
configuration's checks) reads the table."""

from __future__ import annotations

import ast
from pathlib import Path

from toolplug import Trust
from toolplug.config._openapi import ApiTrust
from toolplug.contract._settings import SINK_KINDS, TrustOverlay

CORE = Path(__file__).resolve().parents[2] / "core" / "src" / "toolplug"

WRITTEN_OUT = {
    "contract/_settings.py",  # the table, and TrustOverlay's fields
    "contract/_metadata.py",  # Trust's fields
    "config/_openapi.py",  # ApiTrust's fields
    "trust/_guard.py",  # each kind's rule
}
"""Where a sink kind is spelled out by name: the files CONTRIBUTING.md lists for a new one."""


def _spelled(path: Path, word: str) -> bool:
    """Whether ``word`` is a name, an attribute, a keyword or a string in ``path``'s code
    (docstrings and comments do not count)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == word:
            return True
        if isinstance(node, ast.Attribute) and node.attr == word:
            return True
        if isinstance(node, ast.keyword) and node.arg == word:
            return True
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == word:
            return True
        if (
            isinstance(node, ast.Constant) and node.value == word and id(node) not in docstrings
        ):
            return True
    return False


def test_each_trust_model_has_a_field_per_sink_kind() -> None:
    for model in (Trust, TrustOverlay, ApiTrust):
        assert set(SINK_KINDS) <= set(model.model_fields), model.__name__


def test_only_the_listed_files_spell_a_sink_kind_out() -> None:
    spelled = {
        path.relative_to(CORE).as_posix()
        for path in CORE.rglob("*.py")
        for kind in SINK_KINDS
        if _spelled(path, kind)
    }
    assert spelled <= WRITTEN_OUT, "read SINK_KINDS there instead of naming each kind"


def test_the_check_sees_a_kind_spelled_in_code_not_in_a_docstring(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""refs are kept."""\n# refs\nx = 1\n', encoding="utf-8")
    assert not _spelled(module, "refs")
    module.write_text('"""Doc."""\nmeta = {"refs": []}\n', encoding="utf-8")
    assert _spelled(module, "refs")
    module.write_text("def f(labels):\n    return labels.refs\n", encoding="utf-8")
    assert _spelled(module, "refs")


ROOT = CORE.parents[2]


def _trust_row(page: str) -> str:
    """The row of ``page``'s key table that documents ``trust``."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return next(line for line in text.splitlines() if line.startswith("| `trust` |"))


def test_the_docs_name_every_sink_kind() -> None:
    """docs/security.md explains each kind, and the ``trust`` rows of the configuration's
    and OpenAPI's key tables list each key (openapi.md's had lost the three typed sinks)."""
    security = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    assert [k for k in SINK_KINDS if f"`{k}`" not in security] == []
    for page in ("configuration.md", "openapi.md"):
        row = _trust_row(page)
        assert [k for k in SINK_KINDS if f"{k} = [...]" not in row] == [], page
