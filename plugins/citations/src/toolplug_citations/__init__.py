"""toolplug-citations: the sources an agent used, kept per project and formatted on demand.

The tool adds, lists, formats (Markdown, APA-style, BibTeX) and removes citations. With
``[tools.citations] collect = true`` it also records, through the ``tool_call`` hook, the
citations any other tool returns (web_search, rss_feed, github_api ...)::

    [tools.citations]
    collect = true
    project = "launch-post"
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Generator
from datetime import date
from pathlib import Path
from typing import Any, Final

from toolplug import (
    Annotations,
    ConfigField,
    ErrorSpec,
    Example,
    Guidelines,
    Tool,
    ToolCall,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
    hookimpl,
    provides,
)
from toolplug_citations._format import STYLES, render
from toolplug_citations._store import Entry, Store, Unrecoverable

__all__ = [
    "TOOLPLUG_CONTRACT",
    "CitationsTool",
    "default_store_dir",
    "flush",
    "register_tools",
    "tool_call",
]

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

log = logging.getLogger("toolplug.citations")

NAME: Final = "citations"
_ENTRY: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "title": {"type": "string"},
        "url": {"type": "string"},
        "authors": {"type": "array", "items": {"type": "string"}},
        "published": {"type": "string"},
        "accessed": {"type": "string"},
        "source_tool": {"type": "string"},
    },
    "required": ["id", "title", "url"],
}


def default_store_dir() -> Path:
    """Where the lists live unless ``[tools.citations] store_dir`` says otherwise."""
    import platformdirs

    return platformdirs.user_data_path("toolplug") / "citations"


class CitationsTool(Tool):
    """Keeps one list of citations per project in a JSON file."""

    metadata = ToolMetadata(
        name=NAME,
        title="Citations",
        description=(
            "Keep the sources used for a piece of work: add, list, remove, and format them "
            "as a Markdown list, APA-style references or BibTeX."
        ),
        category="reference",
        optionality="optional",
        usage_hint=(
            "Use to remember each source you rely on as you work, and at the end to produce "
            "the reference list in the style the content needs."
        ),
        guidelines=Guidelines(
            do=(
                "You quote, summarise or rely on a web page, post, paper or repository",
                "The content needs a references section or footnotes",
                "The user asks which sources were used, or for a bibliography",
            ),
            do_not=(
                "The link is the author's own profile or channel (use static_links)",
                "You have not read the source: cite only what you used",
            ),
            common_mistakes=(
                "Adding the same page twice with different tracking parameters (they merge)",
                "Formatting before adding the last sources",
                "Using another project's name by accident: the project keeps lists apart",
            ),
        ),
        produces=("citations",),
        parameters={
            "type": "object",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": ["add", "list", "format", "remove"],
                    "description": "add one source, list them, format them, or remove one",
                },
                "project": {
                    "type": "string",
                    "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
                    "description": "Which list; default: [tools.citations] project",
                },
                "title": {"type": "string", "minLength": 1, "description": "For add"},
                "url": {
                    "type": "string",
                    "pattern": "^https?://",
                    "description": "For add (required) and remove",
                },
                "authors": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "description": "For add: as the source names them",
                },
                "published": {"type": "string", "description": "For add: YYYY-MM-DD or YYYY"},
                "accessed": {
                    "type": "string",
                    "description": "For add: YYYY-MM-DD; default today",
                },
                "source_tool": {
                    "type": "string",
                    "description": "For add: the tool the source came from",
                },
                "style": {
                    "type": "string",
                    "enum": list(STYLES),
                    "default": "markdown",
                    "description": "For format",
                },
                "id": {"type": "integer", "minimum": 1, "description": "For remove"},
            },
            "required": ["action"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "project": {"type": "string"},
                "citations": {"type": "array", "items": _ENTRY},
                "status": {"type": "string"},
                "formatted": {"type": "string"},
            },
            "required": ["project", "citations"],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="add without a url, remove without an id or url, or a bad project name",
            ),
            ErrorSpec(type="NotFoundError", when="remove names no citation of the project"),
            ErrorSpec(
                type="ExecutionError",
                when="the list's folder cannot be read or written, or its lock is held too long",
                retry_possible=True,
            ),
            ErrorSpec(
                type="ExecutionError",
                when="the list's file is not a readable citation list and neither is its last "
                "good copy: a person must fix or move it",
            ),
        ),
        examples=(
            Example(
                description="Record a source",
                input={
                    "action": "add",
                    "title": "Python 3.13 release notes",
                    "url": "https://docs.python.org/3/whatsnew/3.13.html",
                    "published": "2024-10-07",
                },
            ),
            Example(
                description="The reference list in APA style",
                input={"action": "format", "style": "apa"},
            ),
        ),
        config_fields=(
            ConfigField(
                name="store_dir",
                type="string",
                description="Folder of the lists; default: the user data folder, citations/",
                required=False,
            ),
            ConfigField(
                name="project",
                type="string",
                description="The list used when a call names none, and for collect",
                default="default",
            ),
            ConfigField(
                name="collect",
                type="boolean",
                description="Record the citations every other tool returns",
                default=False,
            ),
        ),
        setup_instructions="pip install toolplug-citations",
        required_packages=("toolplug-citations",),
        # Titles, authors and URLs kept here came from pages and search results. The store
        # is local to the project and recording what the research tools found is its
        # purpose: no argument leaves the machine.
        trust=Trust(output="untrusted"),
        annotations=Annotations(
            read_only=False, destructive=False, idempotent=False, open_world=False
        ),
        timeout_seconds=20,
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Do the action on the project's list (blocking file I/O: a worker thread runs it)."""
        flush()  # collected citations first, so the list is complete
        try:
            store = Store(
                _folder(context.config),
                arguments.get("project") or context.config.get("project", "default"),
            )
        except ValueError as exc:
            return ToolResult.failure("ValidationError", str(exc))
        try:
            return _act(store, arguments)
        except Unrecoverable as exc:  # a person must repair the file: retrying cannot
            return ToolResult.failure("ExecutionError", f"the citation list failed: {exc}")
        except OSError as exc:  # includes a lock not taken in time
            return ToolResult.failure(
                "ExecutionError", f"the citation list failed: {exc}", retry_possible=True
            )


def _act(store: Store, arguments: dict[str, Any]) -> ToolResult:
    action = arguments["action"]
    if action == "add":
        if not arguments.get("url"):
            return ToolResult.failure("ValidationError", "url is required to add a citation")
        entry = Entry(
            0,
            arguments.get("title", ""),
            arguments["url"],
            [a.strip() for a in arguments.get("authors", []) if a.strip()],  # no blank names
            arguments.get("published", ""),
            arguments.get("accessed") or date.today().isoformat(),
            arguments.get("source_tool", ""),
        )
        [(kept, status)] = store.add([entry])
        text = {
            "added": f"Added [{kept.id}] {kept.title or kept.url}.",
            "merged": f"Already listed as [{kept.id}]; filled in what it lacked.",
            "known": f"Already listed as [{kept.id}].",
        }[status]
        return _answer(store, text, [kept], status=status)
    if action == "remove":
        wanted = arguments.get("id") or arguments.get("url")
        if not wanted:
            return ToolResult.failure("ValidationError", "remove needs the citation's id or url")
        removed = store.remove(wanted)
        if removed is None:
            return ToolResult.failure(
                "NotFoundError", f"project {store.project} has no citation {wanted!r}"
            )
        return _answer(
            store,
            f"Removed [{removed.id}] {removed.title or removed.url}.",
            [removed],
            status="removed",
        )
    entries = store.entries()
    if action == "format":
        style = arguments.get("style", "markdown")
        formatted = render(entries, style) if entries else ""
        text = formatted or f"Project {store.project} has no citations yet."
        return _answer(store, text, entries, formatted=formatted)
    lines = [f"[{e.id}] {e.title or e.url} <{e.url}>" for e in entries]
    text = "\n".join(lines) or f"Project {store.project} has no citations yet."
    return _answer(store, text, entries)


def _answer(store: Store, text: str, entries: list[Entry], **extra: str) -> ToolResult:
    from dataclasses import asdict

    from toolplug import Citation

    data = {"project": store.project, "citations": [asdict(e) for e in entries], **extra}
    return ToolResult.success(
        text,
        data,
        citations=[Citation(e.title or e.url, e.url) for e in entries],
        warnings=store.warnings,
    )


def _folder(config: Any) -> Path:
    configured = config.get("store_dir")
    return Path(configured).expanduser() if configured else default_store_dir()


_WRITER: Final = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="citations")
"""Collected citations are written here, one batch after another, never on the loop."""
_PENDING: Final[set[concurrent.futures.Future[Any]]] = set()


@hookimpl(wrapper=True)
def tool_call(call: ToolCall) -> Generator[None, ToolResult, ToolResult]:
    """With ``collect = true``: record the citations each other call's result carries.

    A wrapper, so it sees every result, however it was produced. The list is written by
    a worker thread (never on the caller's event loop); pending writes finish before the
    tool reads the list, and before the interpreter exits.
    """
    result = yield
    try:
        _collect(call, result)
    except Exception:  # collecting must never break the call it watches
        log.exception("citations from %s were not recorded", call.tool)
    return result


def _collect(call: ToolCall, result: ToolResult) -> None:
    registry = call.registry
    if call.tool == NAME or not result.ok or not result.citations or registry is None:
        return
    if NAME not in registry.tools or not registry.availability(NAME).available:
        return
    settings = registry.tool_config(NAME)
    if not settings.get("collect"):
        return
    today = date.today().isoformat()
    found = [
        Entry(0, c.title, c.url, accessed=today, source_tool=call.tool)
        for c in result.citations
        if c.url
    ]
    store = Store(_folder(settings), settings.get("project", "default"))
    future = _WRITER.submit(_record, store, found)
    _PENDING.add(future)
    future.add_done_callback(_written)


def _record(store: Store, found: list[Entry]) -> None:
    """Add what a call cited (in the writer thread); a restore of the list is logged, as
    there is no result to carry its warning."""
    store.add(found)
    for warning in store.warnings:
        log.warning("while collecting citations: %s", warning)


def _written(future: concurrent.futures.Future[Any]) -> None:
    _PENDING.discard(future)
    if future.exception() is not None:
        log.warning("collected citations were not recorded: %s", future.exception())


def flush() -> None:
    """Wait until every collected citation is written."""
    concurrent.futures.wait(list(_PENDING))


register_tools = provides(CitationsTool)
