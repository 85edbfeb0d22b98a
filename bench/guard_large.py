"""How long does the flow guard hold the event loop for a long untrusted result? The
longest stall while a long page is recorded and a sink then checked against it, with the
work on the loop (as before) and in a worker thread (now), side by side in one run.

Run from the workspace root: ``uv run python bench/guard_large.py``.

One process, one registry, inside a conversation: ``page`` returns ``--chars`` characters
of untrusted text (1 MB by default), then ``post`` is called with a 30-word message that
carries nothing from the page (so the phrase rule tries every run of six of its words
against the page's words: the whole check). A probe task on the same loop ticks
(``await asyncio.sleep(0)``) all the while; its longest gap between two ticks is the
longest stall another task saw. Five ways, interleaved round by round:

* ``on the loop``: the threshold (``OFF_LOOP_CHARS``) set out of reach, so the page is
  recorded inline, its words listed on the loop by the first check, and the check made on
  the loop: the code before either was moved;
* ``worker thread, whole text``: off the loop, but the slice as long as the text, so the
  thread holds the GIL through each long string operation (shows why the work is sliced);
* ``sliced, checked on the loop``: the page recorded a slice at a time in a worker thread,
  the check made on the loop (``FlowGuard.long`` answering no): the code before the check moved;
* ``sliced, checked in a thread, no hand-over``: the check in a worker thread too, its
  searches keeping the GIL from one run of words to the next (shows whether they need to
  hand it over);
* ``worker thread, sliced``: what the engine does now: recorded and checked in a worker
  thread, a slice at a time.

Then the same for sizes around the thresholds, the page recorded in a thread at every size
and the check made on the loop or in a thread at every size (``sliced, checked in a
thread``, whatever ``FlowGuard.long`` says): where the work starts to cost the loop more than
handing it to a thread does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from stall_probe import Probe

import toolplug
from toolplug import Tool, ToolContext, ToolMetadata, ToolResult, Trust, hookimpl
from toolplug.trust import _conversation, _guard, _text

PARAGRAPH = (
    "Paragraph {n}: the harbour office posts the tide tables every morning at "
    "https://tides.example/{n} and the ferry leaves from pier {n} at nine. "
)
MESSAGE = (
    "Hello team, the quarterly review moved to Thursday afternoon in the large meeting "
    "room on the second floor; bring your notes, the budget sheet and any open questions "
    "you have"
)
PAGE = {"text": ""}
"""The page ``page`` returns, made before the rounds (not on the loop while measured)."""


def page_text(chars: int) -> str:
    parts: list[str] = []
    total = 0
    n = 0
    while total < chars:
        part = PARAGRAPH.format(n=n)
        parts.append(part)
        total += len(part)
        n += 1
    return "".join(parts)[:chars]


class Page(Tool):
    metadata = ToolMetadata(
        name="page",
        description="A long page.",
        category="research",
        trust=Trust(output="untrusted"),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output=PAGE["text"])


class Post(Tool):
    metadata = ToolMetadata(
        name="post",
        description="Post a message.",
        category="publish",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        trust=Trust(output="trusted", sinks=("text",)),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(output="posted")


class Bench:
    @hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(Page)
        register(Post)


_SEARCHING = threading.local()
_CARRIED = _conversation.Conversation._carried
_HAND_OVER = _text.hand_over


def _searching(conversation: _conversation.Conversation, *args: Any, **kwargs: Any) -> Any:
    _SEARCHING.on = True
    try:
        return _CARRIED(conversation, *args, **kwargs)
    finally:
        _SEARCHING.on = False


def _not_while_searching() -> None:
    if not getattr(_SEARCHING, "on", False):
        _HAND_OVER()


def _never_long(guard: _guard.FlowGuard, name: str, arguments: Any) -> bool:
    """``FlowGuard.long`` answering no: every check made on the loop, as before it moved."""
    return False


def _always_long(guard: _guard.FlowGuard, name: str, arguments: Any) -> bool:
    """``FlowGuard.long`` answering yes: every check made in a worker thread."""
    return True


@contextlib.contextmanager
def way(name: str) -> Iterator[None]:
    """The guard's module set for one way (its constants read at call time)."""
    values = vars(_guard)
    saved = values["OFF_LOOP_CHARS"], values["_SLICE_CHARS"], values["_hand_over"]
    guard = _guard.FlowGuard
    if name == "on the loop":
        values["OFF_LOOP_CHARS"] = sys.maxsize
    elif name == "worker thread, whole text":
        values["_SLICE_CHARS"] = sys.maxsize
    elif name == "sliced, checked in a thread":
        guard.long = _always_long  # type: ignore[method-assign,assignment]
    elif name == "sliced, checked on the loop":
        # the methods replaced for the round, put back after it
        guard.long = _never_long  # type: ignore[method-assign,assignment]
    elif name == "sliced, checked in a thread, no hand-over":
        _conversation.Conversation._carried = _searching  # type: ignore[method-assign,assignment]
        values["_hand_over"] = _not_while_searching
    try:
        yield
    finally:
        values["OFF_LOOP_CHARS"], values["_SLICE_CHARS"], values["_hand_over"] = saved
        guard.long = _LONG  # type: ignore[method-assign]
        _conversation.Conversation._carried = _CARRIED  # type: ignore[method-assign]


_LONG = _guard.FlowGuard.long
WAYS = (
    "on the loop",
    "worker thread, whole text",
    "sliced, checked on the loop",
    "sliced, checked in a thread, no hand-over",
    "worker thread, sliced",
)


async def one_round(registry: toolplug.Registry) -> tuple[float, float, float, float]:
    """The longest gap between the probe's ticks while the page is read, and while a post
    is then checked; the page call's time and the post call's; in seconds."""
    with registry.conversation("Summarize the harbour page for me"):
        async with Probe() as probe:
            started = time.perf_counter()
            page = await registry.acall("page")
            read = time.perf_counter()
            stalled_reading = await probe.take()
            began = time.perf_counter()
            post = await registry.acall("post", {"text": MESSAGE})
            checked = time.perf_counter()
            stalled_checking = await probe.take()
    assert page.ok, page.error
    assert post.ok, post.error  # the message carries nothing from the page
    return stalled_reading, stalled_checking, read - started, checked - began


FIGURES = ("stall reading", "stall checking", "longest stall", "page call", "post check")


async def measure(chars: int, rounds: int, ways: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Per way, the median of each figure (``FIGURES``) over ``rounds``, in ms."""
    PAGE["text"] = page_text(chars)
    registry = toolplug.load({}, env={"TOOLPLUG_PLUGINS": ""}, plugins=[("bench", Bench())])
    samples: dict[str, dict[str, list[float]]] = {
        name: {figure: [] for figure in FIGURES} for name in ways
    }
    for name in ways:  # warm up: the pool's threads started, the code paths run once
        with way(name):
            await one_round(registry)
    for round_ in range(rounds):
        order = ways if round_ % 2 == 0 else tuple(reversed(ways))
        for name in order:
            with way(name):
                reading, checking, read, check = await one_round(registry)
            for figure, value in zip(
                FIGURES, (reading, checking, max(reading, checking), read, check), strict=True
            ):
                samples[name][figure].append(value * 1e3)
    registry.close()
    return {
        name: {figure: statistics.median(values) for figure, values in figures.items()}
        for name, figures in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--sweep-rounds", type=int, default=9)
    options = parser.parse_args()
    figures = asyncio.run(measure(options.chars, options.rounds, WAYS))
    print(
        f"{options.rounds} interleaved rounds: a {options.chars:,}-character untrusted page "
        "read, then a 30-word post checked against it (medians, ms)"
    )
    print()
    print("| way | " + " | ".join(FIGURES) + " |")
    print("|---|" + "---:|" * len(FIGURES))
    for name, figure in figures.items():
        print(f"| {name} | " + " | ".join(f"{figure[f]:.2f}" for f in FIGURES) + " |")
    before = figures["on the loop"]["longest stall"]
    recorded = figures["sliced, checked on the loop"]
    now = figures["worker thread, sliced"]
    after = now["longest stall"]
    print()
    print(
        f"longest stall, read and check: {before:.2f} ms on the loop -> "
        f"{recorded['longest stall']:.2f} ms recorded in a worker thread, checked on the loop "
        f"-> {after:.2f} ms recorded and checked in a worker thread ({before / after:.1f}x "
        f"shorter than on the loop); stall while checked {recorded['stall checking']:.2f} -> "
        f"{now['stall checking']:.2f} ms, the post's call {recorded['post check']:.2f} -> "
        f"{now['post check']:.2f} ms"
    )
    print()
    print(
        f"sizes around the threshold ({_conversation.OFF_LOOP_CHARS:,} characters), "
        f"{options.sweep_rounds} rounds each, the threads used at every size (medians, ms):"
    )
    print()
    print(
        "| characters | stall reading + checking, on the loop | the same, sliced in a thread, "
        "checked on the loop | the same, sliced and checked in a thread "
        "| page call, on the loop / in a thread | post check, on the loop / in a thread |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    ways = ("on the loop", "sliced, checked on the loop", "sliced, checked in a thread")
    for chars in (16_384, 32_768, 65_536, 131_072, 262_144, 1_048_576, 4_194_304):
        with _lowered():
            sweep = asyncio.run(measure(chars, options.sweep_rounds, ways))
        loop, inline, thread = (sweep[name] for name in ways)
        print(
            f"| {chars:,} | {loop['stall reading']:.2f} + {loop['stall checking']:.2f} "
            f"| {inline['stall reading']:.2f} + {inline['stall checking']:.2f} "
            f"| {thread['stall reading']:.2f} + {thread['stall checking']:.2f} "
            f"| {loop['page call']:.2f} / {thread['page call']:.2f} "
            f"| {inline['post check']:.2f} / {thread['post check']:.2f} |"
        )


@contextlib.contextmanager
def _lowered() -> Iterator[None]:
    values = vars(_guard)
    saved = values["OFF_LOOP_CHARS"]
    values["OFF_LOOP_CHARS"] = 1
    try:
        yield
    finally:
        values["OFF_LOOP_CHARS"] = saved


if __name__ == "__main__":
    main()
