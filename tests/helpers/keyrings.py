"""A real keyring for the tests of ``[oauth] store = "keyring"``: keyrings.alt's file
backend, chosen the way a user chooses one (``PYTHON_KEYRING_BACKEND``), its file in a
temporary directory (``XDG_DATA_HOME``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import keyring
import keyring.core
import pytest

PLAIN = "keyrings.alt.file.PlaintextKeyring"


@contextmanager
def file_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """keyring set to the file backend for this process and its children; the file."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", PLAIN)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    before = keyring.get_keyring()
    keyring.core.init_backend()
    try:
        yield tmp_path / "data" / "python_keyring" / "keyring_pass.cfg"
    finally:
        keyring.core.set_keyring(before)
