"""The one table of schema formats (render/_formats.py) and what is derived from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolplug import ToolMetadata
from toolplug.render._formats import (
    CODE_EXECUTION_FORMATS,
    FORMATS,
    NATIVE_SEARCH,
    STRICT_DEFAULTS,
    TABLE,
    Format,
    export_tool,
    writer,
)

ROOT = Path(__file__).resolve().parents[2]
META = ToolMetadata(name="echo", description="Repeat the text.", category="utility")


@pytest.mark.parametrize("row", TABLE, ids=lambda row: row.name)
def test_every_row_names_a_writer_that_writes_the_tool(row: Format) -> None:
    assert callable(writer(row.name))
    definition = export_tool(META, row.name)
    assert "echo" in repr(definition)


def test_the_derived_lists_follow_the_table() -> None:
    assert tuple(row.name for row in TABLE) == FORMATS
    assert set(STRICT_DEFAULTS) == {row.name for row in TABLE if row.strict is not None}
    assert set(FORMATS) >= NATIVE_SEARCH
    assert set(CODE_EXECUTION_FORMATS) <= NATIVE_SEARCH


def test_the_schemas_page_documents_every_format() -> None:
    text = (ROOT / "docs" / "schemas.md").read_text(encoding="utf-8")
    assert [fmt for fmt in FORMATS if f"`{fmt}`" not in text] == []


def test_the_table_imports_no_writer() -> None:
    """The command line reads the table on every start: it must not load the exporters."""
    code = (
        "import sys, toolplug.render._formats\n"
        "print(sorted(m for m in sys.modules if m.startswith('toolplug.render.') or "
        "m.startswith('toolplug.schema')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['toolplug.render._formats']"
