"""Fixtures of the framework integration tests: a registry of exactly the watched test tools
(tests/helpers/agent_tools.py), and the record of their runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import toolplug
from tests.helpers.agent_tools import WATCH, TestTools, Watch


@pytest.fixture
def watch() -> Watch:
    """The record of tool runs, empty at the start of each test."""
    WATCH.runs.clear()
    WATCH.cancelled.clear()
    WATCH.started = None
    return WATCH


@pytest.fixture
def registry(watch: Watch) -> Iterator[toolplug.Registry]:
    """A registry of exactly the test tools (no installed plugin is loaded)."""
    loaded = toolplug.load(
        {}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("integration-test-tools", TestTools())]
    )
    yield loaded
    loaded.close()
