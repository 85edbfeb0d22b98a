"""``toolplug call`` as a tool's host: a question is asked on the terminal, field by field.

A tool's ``context.ask`` reaches the person at the terminal when stdin and stderr are both
one: the message, then each field of the form with its title, its choices and its default
(an empty line keeps the default, or leaves an optional field out), read from stdin in a
worker thread so the call's loop goes on. Ctrl-D cancels; answering ``n`` to the first
question declines. Progress is a one-line bar on stderr, log lines go to stderr, and there
is no model to sample: ``can_sample`` is False and says where a tool can sample.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from typing import Any, Final

from toolplug.contract._talk import LOG_LEVELS, Answer, Channel, LogLevel, Question

__all__ = ["TerminalChannel", "terminal_approver"]

_SHOWN_FROM: Final = LOG_LEVELS.index("info")
"""Log lines below ``info`` are not shown on the terminal."""


class _Cancelled(Exception):
    """The person pressed Ctrl-D."""


class TerminalChannel(Channel):
    """The channel of ``toolplug call``: the terminal's person, if there is one."""

    can_sample = False
    why_not = (
        "toolplug call has no model to ask; run the tool from an agent (toolplug serve, or an "
        "integration) to sample"
    )

    def __init__(self, lock: asyncio.Lock | None = None) -> None:
        self.can_ask = sys.stdin.isatty() and sys.stderr.isatty()
        if not self.can_ask:
            self.why_not = "stdin is not a terminal: nobody at this command can be asked"
        self._one_at_a_time = lock or asyncio.Lock()  # shared with the approvals' questions

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        if not sys.stderr.isatty():
            return
        said = f" {message}" if message else ""
        if total is None or total <= 0:
            sys.stderr.write(f"\r{done:g}{said}\x1b[K")
        else:
            width = 30
            filled = min(width, int(width * done // total))
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done:g}/{total:g}{said}")
            if done >= total:
                sys.stderr.write("\n")
        sys.stderr.flush()

    def log(self, level: LogLevel, message: str, data: Mapping[str, Any] | None) -> None:
        if LOG_LEVELS.index(level) < _SHOWN_FROM:
            return
        extra = f" {json.dumps(data, default=str)[:500]}" if data else ""
        print(f"toolplug: [{level}] {message}{extra}", file=sys.stderr, flush=True)

    async def ask(self, question: Question) -> Answer:
        async with self._one_at_a_time:
            try:
                return await self._ask(question)
            except _Cancelled:
                print("", file=sys.stderr)
                return Answer("cancel")

    async def _ask(self, question: Question) -> Answer:
        say(f"toolplug: {question.tool} asks: {question.message}")
        fields = question.fields()
        first = await _line("Answer it? [Y/n] " if fields else "Confirm? [y/N] ")
        if fields and first.lower() in ("n", "no"):
            return Answer("decline")
        if not fields:
            return Answer("accept") if first.lower() in ("y", "yes") else Answer("decline")
        content: dict[str, Any] = {}
        for name, spec, required in fields:
            value = await _field(name, spec, required)
            if value is not None:
                content[name] = value
        return Answer("accept", content)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _line(prompt: str) -> str:
    print(prompt, end="", file=sys.stderr, flush=True)
    read: str = await asyncio.to_thread(sys.stdin.readline)
    if not read:
        raise _Cancelled
    return read.strip()


def _choices(spec: Mapping[str, Any]) -> list[str]:
    if "enum" in spec:
        return [str(v) for v in spec["enum"]]
    if "oneOf" in spec:
        return [str(o.get("const")) for o in spec["oneOf"]]
    items = spec.get("items") or {}
    if "enum" in items:
        return [str(v) for v in items["enum"]]
    return [str(o.get("const")) for o in items.get("anyOf") or ()]


async def _field(name: str, spec: Mapping[str, Any], required: bool) -> Any:
    """One field's value as the person types it, asked again until it parses; None when
    they left an optional field without a default empty."""
    title = spec.get("title") or name
    kind = spec.get("type")
    choices = _choices(spec)
    hint = f" ({', '.join(choices)}{'; several, comma-separated' if kind == 'array' else ''})"
    if not choices:
        hint = {"boolean": " (y/n)", "number": " (a number)", "integer": " (a whole number)"}.get(
            str(kind), ""
        )
    default = spec.get("default")
    shown = f" [{_shown(default)}]" if default is not None else ("" if required else " [skip]")
    if spec.get("description"):
        say(f"  {spec['description']}")
    while True:
        typed = await _line(f"  {title}{hint}{shown}: ")
        if not typed:
            if default is not None:
                return default
            if not required:
                return None
            say("  an answer is needed here")
            continue
        value, problem = _parsed(str(kind), typed, choices)
        if problem is None:
            return value
        say(f"  {problem}")


def _parsed(kind: str, typed: str, choices: list[str]) -> tuple[Any, str | None]:
    if kind == "boolean":
        if typed.lower() in ("y", "yes", "true"):
            return True, None
        if typed.lower() in ("n", "no", "false"):
            return False, None
        return None, "answer y or n"
    if kind in ("number", "integer"):
        try:
            number = int(typed) if kind == "integer" else float(typed)
        except ValueError:
            return None, f"{typed!r} is not a {'whole ' if kind == 'integer' else ''}number"
        return number, None
    if kind == "array":
        picked = [p.strip() for p in typed.split(",") if p.strip()]
        wrong = [p for p in picked if p not in choices]
        return picked, (f"{wrong[0]!r} is not one of the choices" if wrong else None)
    if choices and typed not in choices:
        return None, f"{typed!r} is not one of {', '.join(choices)}"
    return typed, None


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "y" if value else "n"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


_REMEMBERED: Final = {"": "once", "c": "conversation", "a": "always"}


def terminal_approver(yes: bool, lock: asyncio.Lock | None = None) -> Any:
    """``--yes`` approves; on a terminal the person is asked: ``y`` or ``n`` for this call,
    ``yc``/``nc`` for this conversation, ``ya``/``na`` always for these arguments (kept in
    the approvals' store: ``toolplug approvals remembered``); else nobody decides (the call
    then fails with ApprovalRequiredError, which says how to approve, or waits in the inbox
    under ``[approvals] inbox = true``)."""
    from toolplug.contract._approval import Approval, ApprovalRequest

    one_at_a_time = lock or asyncio.Lock()  # a plan's parallel steps ask one after the other

    async def decide(request: ApprovalRequest) -> Approval | None:
        if yes:
            return Approval.approve("approved with --yes")
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            return None
        async with one_at_a_time:
            say(f"toolplug: {request.describe()}")
            print("Run it? [y/N; yc/nc: for this conversation, ya/na: always for these "
                  "arguments] ", end="", file=sys.stderr, flush=True)
            answer = (await asyncio.to_thread(sys.stdin.readline)).strip().lower()
        verdict, remember = answer[:1], _REMEMBERED.get(answer[1:].strip(), "once")
        if answer in ("yes", "no"):
            remember = "once"
        if verdict == "y":
            return Approval.approve("approved at the terminal", remember=remember)  # type: ignore[arg-type]
        return Approval.deny("the person at the terminal said no", remember=remember)  # type: ignore[arg-type]

    return decide
