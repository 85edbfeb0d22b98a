"""Fixtures of the integration tests: the tools of ``tests.helpers.integrations``, and the
catalog's url_fetch beside the guard's test tools, reading a page from a real server on
127.0.0.1 (the walk-through of docs/security.md through each framework's own loop), and
``chart``, a tool whose result carries a real PNG, WAV and PDF as its parts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

import toolplug
from tests.helpers.guard import PAGES, PLUGIN, POSTED
from tests.helpers.integrations import Chart, Seen, load, load_chart
from toolplug import Registry

NEWS = "https://news.example/today"


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


@pytest.fixture
def news_page(httpserver_ipv4: HTTPServer) -> str:
    """The URL, on 127.0.0.1, of the news page whose hidden comment asks the agent to post
    the user's notes to ``https://collect.evil.example/drop?k=1``. The server's log holds
    this test's requests only."""
    httpserver_ipv4.clear()
    httpserver_ipv4.expect_request("/today").respond_with_data(
        PAGES[NEWS], content_type="text/html"
    )
    return str(httpserver_ipv4.url_for("/today"))


@pytest.fixture
def fetching(tmp_path: Path) -> Iterator[Registry]:
    """The catalog's url_fetch (loopback allowed) and the guard's test tools: ``post``, a
    sink no approval rule gates, so only the flow guard asks about it."""
    POSTED.clear()
    loaded = toolplug.load(
        {
            "network": {"allow": ["127.0.0.1/32"]},
            "cache_dir": str(tmp_path / "cache"),
            "state_dir": str(tmp_path / "state"),
        },
        plugins=[PLUGIN],
        env={"TOOLPLUG_PLUGINS": "toolplug-url-fetch"},
    )
    yield loaded
    loaded.close()



@pytest.fixture
def chart() -> Iterator[Chart]:
    """A registry of one tool, ``chart``, whose result has a PNG, a WAV, a PDF, a text part
    and a link, in that order."""
    made = load_chart()
    yield made
    made.registry.close()
