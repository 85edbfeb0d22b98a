"""The commands of the ``toolplug`` command line.

Exit codes: 0 ok, 1 a tool or plan failed, 2 usage or configuration error. Every error is
one line on stderr; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import difflib
import gc
import importlib
import io
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolplug.cli import _parser
from toolplug.cli._parser import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Handler, _Exit
from toolplug.cli._published import (
    find_published,
    published_hint,
    published_lines,
    published_listing,
    published_records,
    record_lines,
)
from toolplug.cli._reports import (
    approval_lines,
    approval_record,
    plugin_lines,
    scan_lines,
    schema_warnings,
    server_annotations,
    store_state,
    tool_record,
    trust_report,
    trust_source,
    trust_words,
    unreached_records,
)
from toolplug.contract._settings import SINK_KINDS

if TYPE_CHECKING:
    from toolplug.config._config import Config
    from toolplug.contract._tool import ToolResult
    from toolplug.runtime._registry import Registry

__all__ = ["RecordingEnv", "build_parser", "run"]

STRICT_ENV = "TOOLPLUG_STRICT"

_HANDLERS: Final[dict[str, Handler]] = {}
"""What runs each command of ``commands.toml``, by the command's name."""


def _runs(command: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as what ``toolplug COMMAND`` runs."""

    def register(handler: Handler) -> Handler:
        _HANDLERS[command] = handler
        return handler

    return register


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with help text for every command (declared in commands.toml)."""
    return _parser.build_parser(_HANDLERS)


# -- helpers ----------------------------------------------------------------------------


class RecordingEnv(Mapping[str, str]):
    """A read-only view of the environment that remembers which names were asked for.

    The registry reads the environment only through the mapping it is given, so this tells
    the output cache every variable an answer depended on.
    """

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return self._environ[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return key in self._environ

    def __iter__(self) -> Iterator[str]:
        self.read.update(self._environ)  # iterating may depend on any variable
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


class _Session:
    """What the command that is running loaded: for the output cache."""

    env: RecordingEnv | None = None
    registry: Registry | None = None


def _load(
    args: argparse.Namespace, *, adjust: Callable[[Config], Config] | None = None
) -> Registry:
    registry = _load_lenient(args, adjust=adjust)
    strict = getattr(args, "strict", False) or os.environ.get(STRICT_ENV, "") not in ("", "0")
    if strict and registry.problems:
        for problem in registry.problems:
            print(registry.redact(f"toolplug: {problem.describe()}"), file=sys.stderr)
        raise _Exit(EXIT_USAGE, f"strict mode: {len(registry.problems)} plugin load problem(s)")
    return registry


def _emit(registry: Registry | None, text: str) -> None:
    if registry is not None:
        text = registry.redact(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows
    )


# -- commands ---------------------------------------------------------------------------


@_runs("list")
def _cmd_list(args: argparse.Namespace) -> int:
    registry = _load(args)
    if args.published:
        return _list_published(registry, args)
    tools = registry.select(
        toolset=args.toolset, include_unavailable=args.all, category=args.category
    )
    records = [tool_record(registry, t.name) for t in tools]
    if args.all:
        records += unreached_records(registry, args.toolset, args.category)
    unlisted = [line for s in registry.sources for line in s.unlisted()] if args.all else []
    if args.json:
        _emit(registry, _dumps(records))
        for line in unlisted:  # stdout stays the list of tools
            print(registry.redact(f"toolplug: {line}"), file=sys.stderr)
        return EXIT_OK
    also = "\nNot listed, their tools unknown:\n" + "\n".join(f"  {u}" for u in unlisted)
    if not records:
        _emit(registry, "No tools are available. Run 'toolplug doctor' to see why."
              + (also if unlisted else "") + published_hint(registry))
        return EXIT_OK
    header = ["NAME", "CATEGORY", "OPTIONALITY", "DISTRIBUTION"]
    if args.all:
        header.append("AVAILABLE")
    rows = [header]
    for r in records:
        made = " ".join(str(part) for part in (r["distribution"], r["version"]) if part)
        row = [r["name"], r["category"], r["optionality"], made]
        if args.all:
            row.append("yes" if r["available"] else "no: " + "; ".join(r["reasons"]))
        rows.append(row)
    _emit(registry, _table(rows))
    if unlisted:
        _emit(registry, also)
    hint = published_hint(registry)
    if hint:
        _emit(registry, hint)
    return EXIT_OK


def _list_published(registry: Registry, args: argparse.Namespace) -> int:
    """``list --published``: the plugins' prompts and resources instead of the tools."""
    if args.category is not None or args.toolset is not None:
        raise _Exit(
            EXIT_USAGE,
            "--published lists prompts and resources, which have no category nor toolset: "
            "drop --category and --toolset",
        )
    _emit(registry, published_listing(registry, everything=args.all, as_json=args.json))
    return EXIT_OK


@_runs("info")
def _cmd_info(args: argparse.Namespace) -> int:  # noqa: C901 - one branch per section of info's output
    registry = _load(args)
    if args.name not in registry.tools:
        published = find_published(registry, args.name)
        if published is not None:  # a prompt's name, a resource's URI or template
            _emit(registry, _dumps(published) if args.json else "\n".join(record_lines(published)))
            return EXIT_OK
        close = difflib.get_close_matches(args.name, list(registry.tools), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see 'toolplug list --all'"
        raise _Exit(EXIT_USAGE, f"no installed tool is named {args.name!r}{hint}")
    tool = registry.get(args.name)
    meta = tool.metadata
    record = tool_record(registry, args.name)
    labels = registry.labels(args.name)
    record["trust"] = {
        "output": labels.output,
        "private": labels.private,
        "sinks": list(labels.sinks),
        **{kind: list(getattr(labels, kind)) for kind in SINK_KINDS if getattr(labels, kind)},
        "source": trust_source(registry, args.name),
    }
    record["approval"] = approval_record(registry, args.name)
    said = server_annotations(registry, args.name)
    if said is not None:
        record["server_annotations"] = said
    if args.json:
        record["metadata"] = meta.model_dump(mode="json")
        record["config"] = _shown_config(registry, args.name)
        _emit(registry, _dumps(record))
        return EXIT_OK
    out = [f"{meta.name}: {meta.description}", ""]
    out.append(f"  category      {meta.category} ({meta.optionality})")
    made = " ".join(str(part) for part in (tool.distribution, tool.version) if part)
    out.append(f"  plugin        {made} ({tool.plugin})")
    if meta.parts:  # what toolplug call writes to files, besides the text
        out.append("  parts         " + ", ".join(meta.parts))
    if meta.requires_capabilities:
        states = [registry.checker.state(c) for c in meta.requires_capabilities]
        out.append(
            "  capabilities  "
            + ", ".join(f"{s.name} ({'present' if s.present else 'missing'})" for s in states)
        )
    out.append("  available     " + ("yes" if record["available"] else "no"))
    for reason in record["reasons"]:
        out.append(f"    why not: {reason}")
    for step in record["setup"]:
        out.append("    to enable: " + step.strip().replace("\n", "\n      "))
    out.append(
        f"  trust         {trust_words(registry.labels(args.name))} ("
        + _TRUST_SOURCES[trust_source(registry, args.name)].format(name=args.name)
        + ")"
    )
    out += approval_lines(meta, record)
    if meta.usage_hint:
        out += ["", "When to use:", _indent(meta.usage_hint.strip())]
    g = meta.guidelines
    for heading, items in (
        ("DO use when:", g.do),
        ("DO NOT use when:", g.do_not),
        ("Common mistakes:", g.common_mistakes),
    ):
        if items:
            out += ["", heading] + [f"  - {i}" for i in items]
    out += ["", "Parameters (JSON Schema):", _indent(_dumps(meta.parameters))]
    if meta.config_fields:
        out += ["", f"Configuration ([tools.{meta.name}]):"]
        for f in meta.config_fields:
            extra = []
            if f.env_var:
                extra.append(f"env {f.env_var}")
            if f.required:
                extra.append("required")
            if f.default is not None:
                extra.append(f"default {json.dumps(f.default)}")
            if f.secret:
                extra.append("secret")
            suffix = f" ({', '.join(extra)})" if extra else ""
            out.append(f"  {f.name}: {f.type}{suffix} - {f.description}")
    if meta.errors:
        out += ["", "Errors:"]
        out += [
            f"  {e.type}: {e.when}{' (retry possible)' if e.retry_possible else ''}"
            for e in meta.errors
        ]
    if meta.examples:
        out += ["", "Examples:"]
        for ex in meta.examples:
            out.append(f"  {ex.description}: {json.dumps(ex.input, sort_keys=True)}")
    _emit(registry, "\n".join(out))
    return EXIT_OK


_TRUST_SOURCES: Final = {
    "declared": "declared by the tool",
    "configured": "the configuration's trust table over the tool's own",
    "default": "the cautious default: nobody labelled {name}; see 'toolplug doctor'",
}


def _shown_config(registry: Registry, name: str) -> dict[str, Any]:
    secrets = {f.name for f in registry.get(name).metadata.config_fields if f.secret}
    return {k: ("***" if k in secrets else v) for k, v in registry.tool_config(name).items()}


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def _load_lenient(
    args: argparse.Namespace, *, refresh: bool = False,
    adjust: Callable[[Config], Config] | None = None,
) -> Registry:
    """Load without applying strict mode (doctor and plugins report problems themselves);
    ``refresh`` asks mounted MCP servers for their tools now; ``adjust`` changes the
    configuration the registry is built with."""
    from toolplug.config._config import load_config
    from toolplug.sources._load import load

    _Session.env = RecordingEnv(os.environ)
    path: str | None = getattr(args, "config", None)
    config: Config | str | None = path
    if adjust is not None:
        config = adjust(load_config(Path(path) if path is not None else None))
    # What load() builds lives as long as the command: the collector is held off while it
    # is built (a catalog of a thousand tools is tens of thousands of objects, each a reason
    # for a full collection that finds nothing) and then told to leave it be (gc.freeze).
    collecting = gc.isenabled()
    gc.disable()
    from toolplug.cli._status import on_terminal

    try:
        with on_terminal():  # mounting servers and parsing descriptions can take seconds
            registry = load(config, env=_Session.env, refresh=refresh)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()
    _Session.registry = registry
    _redact_logs()
    return registry


def _redact_logs() -> None:
    """This process is ours: whatever logs through its handlers (the MCP SDK, the web
    server, Python's last resort when nobody configured logging) is redacted."""
    from toolplug.trust._logs import protect_handler

    for handler in [logging.lastResort, *logging.getLogger().handlers,
                    *logging.getLogger("toolplug").handlers]:
        if handler is not None:
            protect_handler(handler)


@_runs("lock")
def _cmd_lock(args: argparse.Namespace) -> int:
    from toolplug.sources.mcp import lock, mounted, report_drift

    registry = _load_lenient(args, refresh=True)
    mounts = mounted(registry)
    changes = report_drift(mounts) if mounts is not None else []
    path, counts, down = lock(registry)
    if not counts and not down:
        raise _Exit(EXIT_USAGE, "no MCP server is mounted: add [mcp_servers.NAME] tables first")
    for name in down:
        print(f"toolplug: {name}: not reached, its entries are kept as they were", file=sys.stderr)
    total = sum(counts.values())
    lines = [f"Locked {total} tool definition(s) of {len(counts)} server(s) in {path}"]
    lines += [f"  accepted: {change}" for change in changes if change.split(":")[0] in counts]
    _emit(registry, "\n".join(lines))
    return EXIT_OK if not down else EXIT_FAILED


@_runs("login")
def _cmd_login(args: argparse.Namespace) -> int:
    from toolplug.cli._signin import login

    _emit(None, login(args, _config_of(args)))
    return EXIT_OK


@_runs("logout")
def _cmd_logout(args: argparse.Namespace) -> int:
    from toolplug.cli._signin import logout

    _emit(None, logout(args, _config_of(args)))
    return EXIT_OK


def _config_of(args: argparse.Namespace) -> Config:
    from toolplug.config._config import load_config

    path: str | None = getattr(args, "config", None)
    return load_config(Path(path) if path is not None else None)


@_runs("scan")
def _cmd_scan(args: argparse.Namespace) -> int:
    from toolplug.sources.mcp import mounted
    from toolplug.sources.mcp._screen import findings

    registry = _load_lenient(args, refresh=True)
    reported = findings(registry, mounted(registry))
    failing = [r for r in reported if r.state != "accepted"]
    if args.json:
        _emit(registry, _dumps([r.to_dict() for r in reported]))
        return EXIT_FAILED if failing else EXIT_OK
    if not reported:
        _emit(registry, f"No findings in {len(registry.tools)} tool definition(s).")
        return EXIT_OK
    states = {s: sum(r.state == s for r in reported) for s in ("withheld", "reported", "accepted")}
    counted = ", ".join(f"{n} {s}" for s, n in states.items() if n)
    out = [f"{len(reported)} finding(s) in {len(registry.tools)} tool definition(s): {counted}"]
    out += scan_lines(reported)
    if states["withheld"]:
        out += [
            "",
            "A withheld tool is offered to no model until its findings are accepted: "
            'accept_findings = ["RULE", ...] under [mcp_servers.NAME.tools.TOOL].',
        ]
    _emit(registry, "\n".join(out))
    return EXIT_FAILED if failing else EXIT_OK


@_runs("doctor")
def _cmd_doctor(args: argparse.Namespace) -> int:
    registry = _load_lenient(args, refresh=True)
    out = [f"Configuration: {registry.config.path or 'none found (defaults)'}", "", "Plugins:"]
    out += plugin_lines(registry)
    out += ["", "Capabilities:"]
    for cap in registry.capability_states():
        line = f"  {cap.name}: {'present' if cap.present else 'missing'}"
        if cap.reason:
            line += f" ({cap.reason})"
        out.append(line)
        if not cap.present and cap.setup:
            out.append(_indent("setup: " + cap.setup.strip(), "    "))
    unavailable = [t for t in registry.tools if not registry.availability(t).available]
    out += ["", "Tools:"]
    for name in registry.tools:
        mark = "unavailable" if name in unavailable else "available"
        out.append(f"  {name}: {mark}")
        availability = registry.availability(name)
        for reason in availability.reasons:
            out.append(f"    why: {reason}")
        for step in availability.setup:
            out.append(_indent("to enable: " + step.strip(), "    "))
    published = published_records(registry, everything=True)
    if any(published.values()):
        out += ["", "Prompts and resources:"]
        out += [f"  {line}" if line else line for line in published_lines(published, why=True)[1:]]
    for source in registry.sources:  # each source reports itself (mounted servers, APIs)
        if source.title:
            out += ["", f"{source.title}:", *source.report()]
    out += ["", "Trust labels:", *trust_report(registry)]
    from toolplug.sources.mcp import mounted
    from toolplug.sources.mcp._screen import findings

    reported = findings(registry, mounted(registry))
    count = f"{len(reported)} finding(s)" if reported else "no findings"
    out += ["", f"Definitions: {count}"]
    out += scan_lines(reported)
    out += ["", "Schema exports:"]
    warnings = schema_warnings(registry)
    quiet = ["  no export loses a pattern, enum or required"]
    out += [f"  warning: {w}" for w in warnings] or quiet
    store = registry.config.calls.store
    if store != "memory":
        out += ["", "Call store:", f"  {store_state(store)}"]
    problems = registry.problems
    out += ["", f"Problems: {len(problems) or 'none'}"]
    out += [f"  {p.describe()}" for p in problems]
    _emit(registry, "\n".join(out))
    strict = getattr(args, "strict", False) or os.environ.get(STRICT_ENV, "") not in ("", "0")
    if strict and problems:
        raise _Exit(EXIT_USAGE, f"strict mode: {len(problems)} plugin load problem(s)")
    return EXIT_OK


@_runs("plugins")
def _cmd_plugins(args: argparse.Namespace) -> int:
    registry = _load_lenient(args)
    problems = registry.problems
    records: list[dict[str, Any]] = []
    for plugin in registry.plugins:
        records.append(
            {
                "name": plugin.name,
                "distribution": plugin.distribution,
                "version": plugin.version,
                "entry_point": plugin.entry_point,
                "builtin": plugin.builtin,
                "loaded": plugin.loaded,
                "hooks": list(plugin.hooks),
                "tools": sorted(t.name for t in registry.tools.values() if t.plugin == plugin.name),
                "problems": [p.describe() for p in problems if p.plugin == plugin.name],
            }
        )
    if args.json:
        _emit(registry, _dumps(records))
    else:
        rows = [["DISTRIBUTION", "VERSION", "HOOKS", "TOOLS"]]
        for r in records:
            rows.append(
                [
                    str(r["distribution"] or r["name"]),
                    str(r["version"] or "?"),
                    ",".join(r["hooks"]) or "-",
                    ",".join(r["tools"]) or ("(failed to load)" if not r["loaded"] else "-"),
                ]
            )
        text = _table(rows)
        if problems:
            text += "\n\nProblems:\n" + "\n".join(f"  {p.describe()}" for p in problems)
        _emit(registry, text)
    strict = getattr(args, "strict", False) or os.environ.get(STRICT_ENV, "") not in ("", "0")
    if strict and problems:
        raise _Exit(EXIT_USAGE, f"strict mode: {len(problems)} plugin load problem(s)")
    return EXIT_OK


@_runs("prompt")
def _cmd_prompt(args: argparse.Namespace) -> int:
    from toolplug.render._prompt import optional_tools_section

    return _print_selected(args, optional_tools_section,
                           include_guidelines=not args.no_guidelines)


@_runs("stubs")
def _cmd_stubs(args: argparse.Namespace) -> int:
    from toolplug.render._stubs import tool_stubs

    return _print_selected(args, tool_stubs, include_unavailable=args.all)


def _print_selected(args: argparse.Namespace, render: Callable[..., str], **options: Any) -> int:
    """Print what ``render`` makes of the tools ``--toolset``, ``--task`` and ``--max-tools``
    select, given the command's own ``options`` (prompt, stubs)."""
    registry = _load(args)
    selection = {"toolset": args.toolset, "task": args.task, "max_tools": args.max_tools}
    _emit(registry, render(registry, **selection, **options))
    return EXIT_OK


@_runs("search")
def _cmd_search(args: argparse.Namespace) -> int:
    registry = _load(args)
    found = registry.search(
        args.task, limit=args.limit, toolset=args.toolset, include_unavailable=args.all
    )
    hits = [hit for hit in found if hit.score > 0]
    if args.json:
        _emit(registry, _dumps([hit.to_dict() for hit in hits]))
    elif not hits:
        _emit(registry, "no tool matches that task; toolplug list shows them all")
    else:
        rows = [["RANK", "NAME", "SCORE", "MATCHED"]]
        for rank, hit in enumerate(hits, 1):
            matched = "; ".join(f"{f}: {' '.join(terms)}" for f, terms in hit.matched.items())
            rows.append([str(rank), hit.name, f"{hit.score:.3f}", matched])
        _emit(registry, _table(rows))
    return EXIT_OK


@_runs("schema")
def _cmd_schema(args: argparse.Namespace) -> int:
    from toolplug.render._export import STRICT_DEFAULTS, dumps, explain_export, export_tools

    if args.strict_schema is not None and args.format not in STRICT_DEFAULTS:
        raise _Exit(EXIT_USAGE, f"--strict applies to {', '.join(STRICT_DEFAULTS)} only")
    if args.task is not None and args.max_tools is None:
        raise _Exit(EXIT_USAGE, "--task needs --max-tools (how many tools come in full)")
    if args.code_execution:
        from toolplug.render._callers import check_callers

        try:
            check_callers(args.format)
        except ValueError as exc:
            raise _Exit(EXIT_USAGE, str(exc)) from None
    registry = _load(args)
    options: dict[str, Any] = {
        "strict": args.strict_schema, "toolset": args.toolset, "include_unavailable": args.all,
        "task": args.task, "max_tools": args.max_tools, "code_execution": args.code_execution,
    }
    if args.explain:
        report = explain_export(registry, args.format, **options)
        _emit(registry, _explained(args.format, args.strict_schema, report))
        return EXIT_OK
    exported = export_tools(registry, args.format, **options)
    _emit(registry, dumps(exported))
    names = {
        d.get("name") or (d.get("function") or {}).get("name")
        for d in exported if isinstance(d, dict)
    }
    if args.max_tools is not None and "search_tools" in names:
        print(
            f"toolplug: --max-tools {args.max_tools} counts the tools given in full; "
            "search_tools, which finds the others, is added beside them",
            file=sys.stderr,
        )
    return EXIT_OK


def _explained(fmt: str, strict: bool | None, report: Mapping[str, Sequence[Any]]) -> str:
    from toolplug.render._export import STRICT_DEFAULTS, is_strict

    label = fmt
    if fmt in STRICT_DEFAULTS:
        label += ", strict" if is_strict(fmt, strict) else ", not strict"
    if not report:
        return f"{label}: no tools selected"
    lines = []
    for name, losses in report.items():
        if not losses:
            lines.append(f"{name} ({label}): passed through unchanged")
            continue
        lines.append(f"{name} ({label}): {len(losses)} change(s)")
        lines += [f"  {loss.line()}" for loss in losses]
    return "\n".join(lines)


@_runs("docs")
def _cmd_docs(args: argparse.Namespace) -> int:
    from toolplug.render._docs import write_reference

    registry = _load(args)
    written = write_reference(
        registry, args.output, toolset=args.toolset, task=args.task, max_tools=args.max_tools
    )
    _emit(registry, f"wrote {len(written)} page(s) to {args.output}")
    return EXIT_OK


@_runs("new")
def _cmd_new(args: argparse.Namespace) -> int:
    from toolplug.cli._scaffold import new_plugin, next_steps

    if args.from_openapi is not None:
        from toolplug.cli._scaffold_openapi import new_openapi_plugin

        path = new_openapi_plugin(
            args.name, args.from_openapi, args.dir, include=args.include,
            exclude=args.exclude, auth=args.auth, auth_name=args.auth_name,
        )
        (operations,) = path.glob("src/*/operations.json")
        count = len(json.loads(operations.read_text(encoding="utf-8"))["operations"])
        _emit(None, f"Created {path.name} in {path}: {count} tool(s), one per operation "
              f"kept ({operations.relative_to(path)})\n\nNext steps:\n  cd {path}\n"
              "  pip install -e '.[test]'\n  python -m pytest")
        return EXIT_OK
    if args.include or args.exclude or args.auth or args.auth_name:
        raise _Exit(EXIT_USAGE, "--include, --exclude and --auth go with --from-openapi")
    path = new_plugin(args.name, args.dir)
    _emit(None, next_steps(args.name, path))
    return EXIT_OK


@_runs("serve")
def _cmd_serve(args: argparse.Namespace) -> int:
    from toolplug.serve._server import serve

    if args.task is not None and args.max_tools is None:
        raise _Exit(EXIT_USAGE, "--task needs --max-tools (how many tools to list at first)")
    if args.verbose:  # what the server refused or dropped, and why, on stderr
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("toolplug: %(message)s"))
        logger = logging.getLogger("toolplug")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    registry = _load(args)
    serve(
        registry,
        toolset=args.toolset,
        http=args.http,
        max_tools=args.max_tools,
        task=args.task,
        grace=args.shutdown_grace,
        no_auth=args.no_auth,
        console=_served_console if registry.config.serve.auth else None,
    )
    return EXIT_OK


def _served_console(*given: Any) -> Any:
    from toolplug.cli._console._signin import served_console

    return served_console(*given)


def _parse_call_arguments(args: argparse.Namespace) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    from toolplug.utilities._limits import TooLarge, loads_bounded

    if args.json_args is not None:
        try:
            parsed = loads_bounded(args.json_args)
        except TooLarge as exc:
            raise _Exit(EXIT_USAGE, f"--json is over the limits: {exc}") from None
        except ValueError as exc:
            raise _Exit(EXIT_USAGE, f"--json is not valid JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise _Exit(EXIT_USAGE, "--json must be a JSON object")
        arguments.update(parsed)
    for pair in args.pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            shown = repr(pair[:80]) + (f"... ({len(pair):,} characters)" if len(pair) > 80 else "")
            raise _Exit(EXIT_USAGE, f"expected KEY=VALUE, got {shown}")
        try:
            arguments[key] = loads_bounded(text)
        except TooLarge as exc:
            raise _Exit(EXIT_USAGE, f"the value of {key[:40]} is over the limits: {exc}") from None
        except ValueError:
            arguments[key] = text
    return arguments


def _kept_only_with_a_shared_store(config: Config) -> Config:
    """In-process, a cut output would be kept for nobody once this command exits: keep none,
    so that the notice says how to see the rest instead (a Redis store keeps it)."""
    calls = config.calls
    if calls.store == "memory" and calls.spill_ttl_seconds:
        off = calls.model_copy(update={"spill_ttl_seconds": 0.0})
        return dataclasses.replace(config, calls=off)
    return config


@_runs("call")
def _cmd_call(args: argparse.Namespace) -> int:
    arguments = _parse_call_arguments(args)
    registry = _load(args, adjust=_kept_only_with_a_shared_store)
    from toolplug.cli._terminal import TerminalChannel

    asking = asyncio.Lock()  # the tool's questions and the approval's, one at a time
    try:
        result = registry.call(
            args.name, arguments, approver=_terminal_approver(args.yes, asking),
            channel=TerminalChannel(asking),
        )
    finally:
        registry.close()
    paths = _saved_parts(result, args)
    if args.result == "json":
        body = result.to_dict()
        for index, path in paths.items():
            body["parts"][index]["path"] = str(path)
        _emit(registry, _dumps(body))
    elif result.ok:
        from toolplug.cli._saved import shown
        from toolplug.contract._parts import Text

        lines = tuple(Text(shown(p, paths.get(i))) for i, p in enumerate(result.parts))
        _emit(registry, dataclasses.replace(result, parts=lines).for_model())
    if result.spill:
        ttl = registry.config.calls.spill_ttl_seconds
        print(
            f"toolplug: the whole output is kept for {ttl:g} s: toolplug read {result.spill}",
            file=sys.stderr,
        )
    if result.error is not None:
        if args.result == "text":
            line = f"{result.error.type}: {result.error.message}"
            retry = " (retry possible)" if result.error.retry_possible else ""
            print(registry.redact(f"toolplug: {line}{retry}"), file=sys.stderr)
        advice = result.error.details.get("advice")
        if advice and args.result == "text":  # the operator reads this, not a model
            reason = result.error.details.get("reason")
            why = f" (it needs approval because {reason})" if reason else ""
            print(registry.redact(f"toolplug: to approve it{why}: {advice}"), file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _saved_parts(result: ToolResult, args: argparse.Namespace) -> dict[int, Path]:
    """Write the result's images, audio and files where ``--parts-dir`` says (text output:
    always, to a new temporary directory by default; JSON carries them in base64, and
    writes them too only when ``--parts-dir`` is given)."""
    if not result.ok or not result.parts or (args.result == "json" and args.parts_dir is None):
        return {}
    from toolplug.cli._saved import save_parts

    try:
        return save_parts(result.parts, args.parts_dir)
    except OSError as exc:
        where = args.parts_dir or "a temporary directory"
        raise _Exit(
            EXIT_USAGE,
            f"cannot write the result's parts to {where}: {exc.strerror or exc}; choose a "
            "directory you can write to with --parts-dir DIR",
        ) from None


@_runs("read")
def _cmd_read(args: argparse.Namespace) -> int:
    registry = _load(args)
    try:
        page = registry.read(args.uri, offset=args.offset, length=args.length)
    finally:
        registry.close()
    if page is None:
        raise _Exit(
            EXIT_FAILED,
            f"{args.uri} is not kept: it expired or was evicted, or this store never held it "
            "(outputs are kept beyond one command only in a shared store: [calls] store)",
        )
    if page.data is not None:  # a cut image, recording or file: to a file, never the terminal
        return _read_bytes(args, page)
    sys.stdout.write(registry.redact(page.text))
    if page.next_offset is not None:
        print(f"\ntoolplug: {page.total - page.next_offset:,} more characters: "
              f"--offset {page.next_offset}", file=sys.stderr)
    return EXIT_OK


def _read_bytes(args: argparse.Namespace, page: Any) -> int:
    """A binary part's range, written to a file as ``call`` writes parts; its path printed."""
    from toolplug.cli._saved import save_parts, shown
    from toolplug.contract._parts import File, part_for

    data = page.data
    part = part_for(data, page.mime_type) if page.offset == 0 and page.next_offset is None else (
        File(data, "application/octet-stream", name="range.bin")  # a slice is no whole image
    )
    try:
        paths = save_parts([part], args.parts_dir)
    except OSError as exc:
        raise _Exit(EXIT_USAGE, f"--parts-dir: cannot write there: {exc}") from None
    print(shown(part, paths.get(0)))
    if page.next_offset is not None:
        print(f"toolplug: {page.total - page.next_offset:,} more bytes: "
              f"--offset {page.next_offset}", file=sys.stderr)
    return EXIT_OK


def _terminal_approver(yes: bool, lock: asyncio.Lock | None = None) -> Any:
    from toolplug.cli._terminal import terminal_approver

    return terminal_approver(yes, lock)


def _run_by_its_module(command: str) -> None:
    """``toolplug COMMAND`` as ``toolplug.cli._COMMAND.run_COMMAND(args, config)``, that
    module imported only when the command runs."""

    def handler(args: argparse.Namespace) -> int:
        module = importlib.import_module(f"toolplug.cli._{command}")
        return int(getattr(module, f"run_{command}")(args, _config_of(args)))

    _runs(command)(handler)


for _command in ("approvals", "history", "console"):
    _run_by_its_module(_command)


async def _run_plan_here(registry: Registry, plan: Any, yes: bool) -> Any:
    """A plan's steps, their questions and approvals asked at this terminal, one at a time."""
    from toolplug.cli._terminal import TerminalChannel
    from toolplug.engine._plan import run_plan
    from toolplug.runtime._talk import CHANNEL

    asking = asyncio.Lock()
    host = {CHANNEL: TerminalChannel(asking)}
    return await run_plan(registry, plan, context=host, approver=_terminal_approver(yes, asking))


@_runs("run")
def _cmd_run(args: argparse.Namespace) -> int:
    from toolplug.engine._plan import parse_plan

    try:
        text = sys.stdin.read() if args.plan == "-" else Path(args.plan).read_text("utf-8")
    except OSError as exc:
        raise _Exit(EXIT_USAGE, f"cannot read {args.plan}: {exc.strerror}") from None
    from toolplug.utilities._limits import TooLarge, loads_bounded

    try:
        document = loads_bounded(text)
    except TooLarge as exc:
        raise _Exit(EXIT_USAGE, f"{args.plan} is over the limits: {exc}") from None
    except ValueError as exc:
        raise _Exit(EXIT_USAGE, f"{args.plan} is not valid JSON: {exc}") from None
    registry = _load(args, adjust=_kept_only_with_a_shared_store)
    plan = parse_plan(document, registry)
    try:
        outcome = asyncio.run(_run_plan_here(registry, plan, args.yes))
    finally:
        registry.close()
    if args.result == "json":
        _emit(registry, _dumps(outcome.to_dict()))
    else:
        lines = []
        for step in outcome.steps:
            head = f"step {step.id} {step.action}: {step.status}"
            if step.status != "skipped":
                head += f" ({step.elapsed_ms:.0f} ms)"
            lines.append(head)
            if step.reason:
                lines.append(f"  {step.reason}")
            if step.result is not None:
                body = step.result.for_model()
                lines += ["  " + line for line in body.splitlines()]
        lines.append(f"plan {'succeeded' if outcome.ok else 'failed'} in "
                     f"{outcome.elapsed_ms:.0f} ms")
        _emit(registry, "\n".join(lines))
    return EXIT_OK if outcome.ok else EXIT_FAILED


# -- entry point ------------------------------------------------------------------------


def run(argv: Sequence[str], *, cache: bool = False) -> int:
    """Run the command line; returns the exit code.

    With ``cache``, the output of a successful run is stored for ``toolplug.cli._cache``.
    """
    argv = list(argv)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        handler: Callable[[argparse.Namespace], int] = args.handler
        if not cache:
            return handler(args)
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = handler(args)
        sys.stdout.write(buffer.getvalue())
        if code == EXIT_OK and _Session.env is not None and _Session.registry is not None:
            from toolplug.cli import _cache as _clicache

            registry = _Session.registry
            watched = list(registry.files_read)
            for plugin in registry.plugins:
                if plugin.metadata_dir:
                    watched += [plugin.metadata_dir, f"{plugin.metadata_dir}/entry_points.txt"]
            if registry.config.path is not None:
                watched.append(str(registry.config.path))
            ends = [e for s in registry.sources if (e := s.expires()) is not None]
            expires = int(min(ends) * 1e9) if ends else None
            _clicache.store(
                argv, code, buffer.getvalue(), env_read=_Session.env.read, extra_files=watched,
                expires_ns=expires,
            )
        return code
    except _Exit as stop:
        if stop.message:
            print(f"toolplug: error: {stop.message}", file=sys.stderr)
        return stop.code
    except KeyboardInterrupt:
        print("toolplug: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:
        return _report(exc)


def _report(exc: Exception) -> int:
    from toolplug.contract._errors import ToolplugError

    first = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, ToolplugError):
        print(f"toolplug: error: {first}", file=sys.stderr)
        return EXIT_USAGE
    print(
        f"toolplug: internal error: {type(exc).__name__}: {first} "
        "(please report this with the command you ran)",
        file=sys.stderr,
    )
    return EXIT_FAILED
