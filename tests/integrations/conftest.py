"""Fixtures of the integration tests: the tools of ``tests.helpers.integrations``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.integrations import Seen, load
from toolplug import Registry


@pytest.fixture
def seen() -> Seen:
    """What the inline tools saw in this test."""
    return Seen()


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """The directory read_file and write_file work in."""
    path = tmp_path / "sandbox"
    path.mkdir()
    return path


@pytest.fixture
def registry(seen: Seen, sandbox: Path) -> Iterator[Registry]:
    """The tools of ``load``, closed after the test."""
    loaded = load(seen, sandbox)
    yield loaded
    loaded.close()
