"""``toolplug console`` in a real browser, as a person uses it: Debian's Chromium, driven by
Playwright (pointed at that executable: it never downloads a browser of its own), finding
what it clicks by role and label as a screen reader would. A real call waits in this
process on the SQLite inbox (on ``Agent``'s loop, in a thread of its own, since
Playwright's sync API runs where no asyncio loop does); the page approves it and the call
resumes, denies it and the call fails, revokes a remembered decision and the next call is
asked again; the history's filter form, used from the keyboard, finds a recorded call; a
conversation's timeline shows where an argument came from; the catalog says why a tool is
unavailable; the console of ``serve --http`` signs a person in with a pasted token.

A failed test keeps a screenshot of the page under ``.artifacts/screenshots/`` and its
report names the file (tests/helpers/artefacts.py). The last test takes the screenshots
docs/approvals.md shows: with ``TOOLPLUG_UPDATE_SCREENSHOTS=1`` it writes them into
docs/images/, otherwise it checks the ones there are the PNGs it would take.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, ViewportSize, expect, sync_playwright

import toolplug
from tests.helpers.artefacts import ROOT, artefact, keep_on_failure
from tests.helpers.cli import Site
from tests.helpers.console import (
    ALICE,
    CAPABLE,
    CAROL,
    Agent,
    Pages,
    agent,
    console_config,
    pending,
    served_env,
    serving,
)
from tests.helpers.posting import posting_plugin
from tests.helpers.serve import free_port, http_server
from toolplug import ErrorType, Registry

# Read when the module is imported: each test runs without the developer's TOOLPLUG_*
# variables (tests/conftest.py's _isolated).
UPDATE = os.environ.get("TOOLPLUG_UPDATE_SCREENSHOTS") == "1"
IMAGES = ROOT / "docs" / "images"
SHOTS = ("console-approvals.png", "console-remembered.png", "console-history.png")
MORE_SHOTS = ("console-timeline.png", "console-catalog.png")
VIEWPORT: ViewportSize = {"width": 960, "height": 540}


def _chromium() -> str:
    """The system's Chromium; skips the test where there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    pytest.skip(
        "Chromium is not installed (apt-get install -y chromium; .ci/run installs it): "
        "the console's browser tests drive that executable with Playwright, which never "
        "downloads a browser of its own"
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for this module's tests."""
    executable = _chromium()
    with sync_playwright() as playwright:
        # Playwright's own flags already turn Chromium's background networking off; no
        # name resolves either, so nothing but the console's 127.0.0.1 is reached.
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True,
            args=["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh page (no cookie yet) of a fixed size; a screenshot of it is kept if the
    test fails."""
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="en-US",
                                  timezone_id="UTC", color_scheme="light")
    opened = context.new_page()
    node = request.node

    def screenshot() -> str:
        path = artefact(node, "screenshots", ".png")
        opened.screenshot(path=path, full_page=True)
        return f"the page when the test failed ({opened.url}): {path}"

    keep_on_failure(node, screenshot)
    try:
        yield opened
    finally:
        context.close()


@pytest.fixture
def tools(site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with posting_plugin(site, monkeypatch, "browser_tools") as module:
        yield module


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return console_config(tmp_path)


@pytest.fixture
def console(config: Path) -> Iterator[str]:
    with serving(config) as address:
        yield address


@pytest.fixture
def registry(tools: Any, config: Path) -> Iterator[Registry]:
    loaded = toolplug.load(config, plugins=[("browser_tools", tools)],
                           env={"TOOLPLUG_PLUGINS": ""})
    try:
        yield loaded
    finally:
        loaded.close()


@pytest.fixture
def side(registry: Registry) -> Iterator[Agent]:
    with agent() as running:
        yield running


def _form(page: Page, button: str) -> Locator:
    """The form whose submit button is named ``button``."""
    return page.locator("form").filter(has=page.get_by_role("button", name=button, exact=True))


def _decide(page: Page, button: str, *, note: str = "", remember: str = "once") -> None:
    form = _form(page, button)
    form.get_by_label("Note").fill(note)
    form.get_by_label("Remember").select_option(remember)
    form.get_by_role("button", name=button, exact=True).click()


def test_approving_on_the_page_resumes_the_call(
    page: Page, console: str, registry: Registry, side: Agent, tools: Any
) -> None:
    call = side.start(registry.acall("post", {"text": "hello"}))
    (request,) = side.run(pending(registry))
    page.goto(console)
    waiting = page.get_by_role("region", name=f"post (request {request.id})")
    expect(waiting).to_contain_text('"text": "hello"')
    expect(waiting).to_contain_text("not read-only")  # the reason
    assert not call.done()

    _decide(page, "Approve post", note="fine")
    expect(page.get_by_role("heading", name="Request approved")).to_be_visible()
    result = call.result(10)
    assert result.ok, result.error
    assert tools.RAN == ["hello"]
    page.get_by_role("link", name="Back to the approvals").click()
    expect(page.get_by_text("No approval request is waiting.")).to_be_visible()


def test_denying_on_the_page_fails_the_call(
    page: Page, console: str, registry: Registry, side: Agent, tools: Any
) -> None:
    call = side.start(registry.acall("post", {"text": "no"}))
    side.run(pending(registry))
    page.goto(console)
    _decide(page, "Deny post", note="not today")
    expect(page.get_by_role("heading", name="Request denied")).to_be_visible()
    result = call.result(10)
    assert result.error is not None
    assert result.error.type == ErrorType.PERMISSION
    assert "not today" in result.error.message
    assert tools.RAN == []


def test_a_decision_remembered_for_the_conversation_is_revoked_on_the_page(
    page: Page, console: str, registry: Registry, side: Agent, tools: Any
) -> None:
    conversation = registry.conversation("post what I say")

    async def say(text: str) -> Any:
        async with conversation:
            return await registry.acall("post", {"text": text})

    call = side.start(say("one"))
    side.run(pending(registry))
    page.goto(console)
    _decide(page, "Approve post", remember="conversation")
    expect(page.get_by_role("heading", name="Request approved")).to_be_visible()
    assert call.result(10).ok
    assert side.run(say("two")).ok  # remembered: not asked again
    (kept,) = side.run(registry.approvals.aremembered(every_owner=True))

    page.goto(console)
    expect(page.get_by_role("heading", name="Remembered decisions (1)")).to_be_visible()
    page.get_by_role("button", name=f"Revoke {kept.id}").click()
    expect(page.get_by_role("heading", name="Decision revoked")).to_be_visible()
    page.get_by_role("link", name="Back to the approvals").click()
    expect(page.get_by_text("No decision is remembered.")).to_be_visible()
    assert side.run(registry.approvals.aremembered(every_owner=True)) == []

    again = side.start(say("three"))
    (asked,) = side.run(pending(registry))  # forgotten: the next call waits again
    assert not again.done()
    side.run(registry.approvals.adecide(asked.id, False))
    assert again.result(10).error is not None
    assert tools.RAN == ["one", "two"]


def test_the_history_filter_finds_a_call_from_the_keyboard(
    page: Page, console: str, registry: Registry, side: Agent
) -> None:
    call = side.start(registry.acall("post", {"text": "find me"}))
    (request,) = side.run(pending(registry))
    side.run(registry.approvals.adecide(request.id, True))
    assert call.result(10).ok
    assert registry.record is not None
    assert side.run(registry.record.aflush())

    page.goto(console + "history")
    for _ in ("Approvals", "History", "Catalog", "Tool"):  # the links, then the first field
        page.keyboard.press("Tab")
    expect(page.get_by_label("Tool")).to_be_focused()
    page.keyboard.type("post")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Kind")).to_be_focused()
    page.keyboard.type("call")  # a closed select picks the option typed
    expect(page.get_by_label("Kind")).to_have_value("call")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Filter")).to_be_focused()
    page.keyboard.press("Enter")

    expect(page).to_have_url(re.compile(r"/history\?tool=post&kind=call&since=$"))
    rows = page.get_by_role("table", name="Recorded events, newest first").get_by_role("row")
    expect(rows).to_have_count(2)  # the header, the call
    expect(rows.nth(1)).to_contain_text("post")
    expect(rows.nth(1)).to_contain_text("ok")

    page.get_by_label("Tool").fill("nothing-of-that-name")
    page.get_by_label("Tool").press("Enter")
    expect(page.get_by_text("No events recorded match.")).to_be_visible()


def test_the_timeline_shows_where_an_argument_came_from(
    page: Page, config: Path, tools: Any, side: Agent, tmp_path: Path
) -> None:
    """From the history, a conversation's link opens its timeline: what it read, with its
    labels, and the guard's question, the argument and the call its value came from."""
    registry = toolplug.load(config, plugins=[("browser_tools", tools), ("pages", Pages())],
                             env={"TOOLPLUG_PLUGINS": ""})
    conversation = registry.conversation("what does the library's page say?")

    async def run() -> Any:
        async with conversation:
            assert (await registry.acall("read_page", {"url": "https://library.example/"})).ok
            return await registry.acall("post", {"text": "mail it to notes@collect.example"})

    try:
        with serving(config) as console:
            call = side.start(run())
            (request,) = side.run(pending(registry))
            page.goto(console)
            page.get_by_role("link", name=conversation.id).click()  # the request's conversation
            expect(page.get_by_role("heading", level=1)).to_contain_text("Conversation")
            side.run(registry.approvals.adecide(request.id, False, note="that came from the page"))
            assert call.result(10).error is not None
            assert registry.record is not None
            assert side.run(registry.record.aflush())

            page.goto(console + "history?tool=post")
            page.get_by_role("link", name=conversation.id[:15]).first.click()
            expect(page.get_by_role("heading", name=re.compile(r"Timeline \(\d+ events\)"))
                   ).to_be_visible()
            read = page.get_by_role("table", name="The conversation's calls and the labels of "
                                    "what each returned")
            expect(read.get_by_role("row")).to_have_count(2)  # the header, the page read
            expect(read.get_by_role("row").nth(1)).to_contain_text("untrusted")
            carried = page.get_by_role("table", name="Where the arguments came from").first
            expect(carried).to_contain_text("read_page (call 1)")
            expect(carried).to_contain_text("flow.token")
            expect(page.get_by_role("list", name=re.compile("Timeline"))).to_contain_text(
                "that came from the page"
            )
            _shot(page, tmp_path, MORE_SHOTS[0])
    finally:
        registry.close()


def test_the_catalog_says_why_a_tool_is_unavailable(  # noqa: PLR0917 - its fixtures
    page: Page, config: Path, tools: Any, site: Site, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    site.add("catalog-mailer", entry_points={"t": "catalog_mailer"},
             modules={"catalog_mailer": CAPABLE})
    for name, value in site.env(TOOLPLUG_PLUGINS="browser-tools,catalog-mailer").items():
        monkeypatch.setenv(name, value)
    with serving(config) as console:
        page.goto(console)
        page.get_by_role("link", name="Catalog").click()
        expect(page.get_by_role("heading", name="Unavailable tools (1)")).to_be_visible()
        region = page.get_by_role("region", name=re.compile("^send_report"))
        expect(region).to_contain_text("CONSOLE_SMTP_RELAY")
        expect(region.get_by_role("heading", name="To enable it")).to_be_visible()
        expect(page.get_by_role("table", name="Available tools")).to_contain_text("post")
        page.get_by_role("button", name="Check again").focus()
        page.keyboard.press("Enter")  # asks the mounted servers again: the same catalog
        expect(page).to_have_url(re.compile(r"/catalog\?refresh=1$"))
        expect(page.get_by_role("heading", name="Unavailable tools (1)")).to_be_visible()
        page.goto(console + "catalog")
        _shot(page, tmp_path, MORE_SHOTS[1])


def test_signing_in_to_the_console_of_serve_http(page: Page, tmp_path: Path) -> None:
    """Under serve --http, a person pastes a token once and the browser stays signed in
    (its cookie: HttpOnly, SameSite=Strict); a token without the console's scope is
    refused, saying which scope; signing out asks again."""
    port = free_port()
    with http_server(tmp_path, port, env=served_env(tmp_path, port)):
        page.goto(f"http://127.0.0.1:{port}/console/")
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        page.get_by_label("Access token").fill(CAROL)
        page.get_by_label("Access token").press("Enter")
        expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
        expect(page.get_by_role("alert")).to_contain_text("toolplug:console")

        page.get_by_label("Access token").fill(ALICE)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Approvals")).to_be_visible()
        expect(page.get_by_role("navigation")).to_contain_text("signed in as alice")
        (cookie,) = [c for c in page.context.cookies() if c["name"] == "toolplug_console_auth"]
        assert cookie["httpOnly"]
        assert cookie["sameSite"] == "Strict"
        assert ALICE not in cookie["value"]
        page.get_by_role("link", name="Catalog").click()
        expect(page.get_by_role("heading", name="Catalog")).to_be_visible()
        expect(page.get_by_role("table", name="Available tools")).to_contain_text("echo")
        page.get_by_role("link", name="History").click()
        expect(page.get_by_role("heading", name="History")).to_be_visible()

        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        page.goto(f"http://127.0.0.1:{port}/console/")
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def _shot(page: Page, scratch: Path, name: str) -> None:
    """A docs screenshot: retaken with TOOLPLUG_UPDATE_SCREENSHOTS=1, else taken into a
    scratch folder and the committed one checked."""
    folder = IMAGES if UPDATE else scratch
    folder.mkdir(exist_ok=True)
    page.screenshot(path=folder / name, full_page=True)
    committed = IMAGES / name
    assert committed.exists(), (
        f"{committed} is missing: TOOLPLUG_UPDATE_SCREENSHOTS=1 uv run pytest "
        f"{Path(__file__).relative_to(ROOT)} takes it"
    )
    assert _png_width(committed) == _png_width(folder / name) == VIEWPORT["width"]


def _png_width(path: Path) -> int:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR", f"{path} is not a PNG"
    return int.from_bytes(data[16:20], "big")


def test_the_screenshots_of_the_docs(
    page: Page, console: str, registry: Registry, side: Agent, tmp_path: Path
) -> None:
    """docs/approvals.md's screenshots: retaken with TOOLPLUG_UPDATE_SCREENSHOTS=1, else
    taken into a scratch folder and the committed ones checked."""
    folder = IMAGES if UPDATE else tmp_path
    folder.mkdir(exist_ok=True)
    call = side.start(registry.acall("post", {"text": "Release notes for 2.0 are out"}))
    side.run(pending(registry))
    page.goto(console)
    expect(page.get_by_role("heading", name="Waiting for a decision (1)")).to_be_visible()
    page.screenshot(path=folder / SHOTS[0], full_page=True)

    _decide(page, "Approve post", note="announced on the blog", remember="always")
    assert call.result(10).ok
    page.goto(console)
    expect(page.get_by_role("heading", name="Remembered decisions (1)")).to_be_visible()
    page.screenshot(path=folder / SHOTS[1], full_page=True)

    assert registry.record is not None
    assert side.run(registry.record.aflush())
    page.goto(console + "history?tool=post")
    expect(page.get_by_role("table")).to_be_visible()
    page.screenshot(path=folder / SHOTS[2], full_page=True)

    for name in SHOTS:
        taken = _png_width(folder / name)
        committed = IMAGES / name
        assert committed.exists(), (
            f"{committed} is missing: TOOLPLUG_UPDATE_SCREENSHOTS=1 uv run pytest "
            f"{Path(__file__).relative_to(ROOT)} takes it"
        )
        assert _png_width(committed) == taken == VIEWPORT["width"]
