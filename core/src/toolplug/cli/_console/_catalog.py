"""The Catalog page (``/catalog``): what ``toolplug doctor`` says, for a person.

Every tool, with whether it is available, why not and the steps that would make it so
(``tool_record``, as ``list --all`` and ``info`` build it); each mounted server that never
answered (``unreached_records``); the capabilities, present or missing with their setup;
the plugins (``plugin_lines``, doctor's) and the problems loading them. Under ``serve
--http`` it reads the served registry; ``toolplug console`` loads one, in a worker thread,
at the first visit, and again (asking mounted servers for their tools, as doctor does) when
the page's "Check again" button is pressed.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from toolplug.cli._console._page import Console, Viewer, e, page
from toolplug.cli._reports import plugin_lines, tool_record, unreached_records

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolplug.runtime._registry import Registry

__all__ = ["catalog"]


def _gathered(registry: Registry) -> dict[str, Any]:
    """What the page shows, read from ``registry`` (in a worker thread: a capability's
    check may run a command)."""
    records = [tool_record(registry, name) for name in registry.tools]
    records += unreached_records(registry, None, None)
    return {
        "tools": records,
        "capabilities": list(registry.capability_states()),
        "plugins": [line.strip() for line in plugin_lines(registry)],
        "problems": [registry.redact(p.describe()) for p in registry.problems],
        "redact": registry.redact,
    }


_LOCK = asyncio.Lock()


async def _registry(console: Console, refresh: bool) -> Registry:
    """The registry the catalog reads: the served one, or ``toolplug console``'s own."""
    if console.loads is None:
        assert console.registry is not None, "a served console has its registry"
        return console.registry
    async with _LOCK:
        if console.registry is None or refresh:
            old, console.registry = console.registry, await asyncio.to_thread(
                console.loads, refresh
            )
            if old is not None:
                await asyncio.to_thread(old.close)
        return console.registry


async def catalog(console: Console, request: Request, viewer: Viewer) -> Response:
    refresh = request.query_params.get("refresh") == "1" and console.loads is not None
    registry = await _registry(console, refresh)
    found = await asyncio.to_thread(_gathered, registry)
    redact = found["redact"]
    tools = found["tools"]
    missing = [t for t in tools if not t["available"]]
    ready = [t for t in tools if t["available"]]
    body = [f"<p>{len(tools)} tools: {len(ready)} available, {len(missing)} unavailable. "
            "The same as <code>toolplug doctor</code> says.</p>"]
    if console.loads is not None:
        body.append(
            f'<form method="get" action="{console.link("/catalog")}">'
            '<input type="hidden" name="refresh" value="1">'
            '<button type="submit">Check again</button> (asks the mounted servers for '
            "their tools now)</form>"
        )
    body.append(f'<h2 id="unavailable">Unavailable tools ({len(missing)})</h2>')
    body += [_unavailable(t, redact) for t in missing] or ["<p>Every tool is available.</p>"]
    body.append(f'<h2 id="available">Available tools ({len(ready)})</h2>')
    body.append(_available_table(ready) if ready else "<p>No tool is available.</p>")
    body.append(_capabilities(found["capabilities"], redact))
    body.append("<h2>Plugins</h2><ul>"
                + "".join(f"<li>{e(redact(line))}</li>" for line in found["plugins"]) + "</ul>")
    problems = found["problems"]
    body.append(f"<h2>Problems ({len(problems)})</h2>")
    body.append("<ul>" + "".join(f'<li role="alert">{e(p)}</li>' for p in problems) + "</ul>"
                if problems else "<p>Every plugin loaded.</p>")
    return page(console, request, viewer, "Catalog", "\n".join(body))


def _unavailable(record: dict[str, Any], redact: Any) -> str:
    name = e(record["name"])
    why = "".join(f"<li>{e(redact(reason))}</li>" for reason in record["reasons"])
    steps = "".join(f"<li><pre>{e(redact(step.strip()))}</pre></li>" for step in record["setup"])
    return (
        f'<section aria-labelledby="tool-{name}"><h3 id="tool-{name}">{name} '
        f"<small>({e(record['category'])}, {e(record['optionality'])})</small></h3>"
        f"<p>{e(record['description'])}</p>"
        f"<h4>Why it is unavailable</h4><ul>{why or '<li>-</li>'}</ul>"
        + (f"<h4>To enable it</h4><ol>{steps}</ol>" if steps else "")
        + "</section>"
    )


def _available_table(records: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td>{e(r['name'])}</td><td>{e(r['category'])}</td><td>{e(r['optionality'])}</td>"
        f"<td>{e(' '.join(str(p) for p in (r['distribution'], r['version']) if p))}</td>"
        f"<td>{e(r['description'])}</td></tr>"
        for r in records
    )
    return (
        "<table><caption>Available tools</caption><thead><tr><th scope=\"col\">Name</th>"
        '<th scope="col">Category</th><th scope="col">Optionality</th>'
        '<th scope="col">Distribution</th><th scope="col">Description</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _capabilities(states: list[Any], redact: Any) -> str:
    if not states:
        return "<h2>Capabilities</h2><p>No tool needs a capability.</p>"
    missing = '<span class="no">missing</span>'
    rows = "".join(
        f"<tr><td>{e(s.name)}</td><td>{'present' if s.present else missing}</td>"
        f"<td>{e(redact(s.reason or ''))}</td><td>"
        + ("" if s.present or not s.setup else f"<pre>{e(redact(s.setup.strip()))}</pre>")
        + "</td></tr>"
        for s in states
    )
    return (
        "<h2>Capabilities</h2><table><caption>What the tools need of this machine</caption>"
        '<thead><tr><th scope="col">Capability</th><th scope="col">State</th>'
        '<th scope="col">Why</th><th scope="col">Setup</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )
