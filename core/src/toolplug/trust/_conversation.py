"""What entered a conversation: the records the flow guard (``_guard``) checks calls against.

A ``Conversation`` (``registry.conversation(request)``, an agent run, an MCP session, a
plan, a code-mode program) is made current through a context variable; every call made
inside it is recorded with its tool's labels (``Registry.labels``): an untrusted or private
result becomes a ``Record`` of its folded text, the whole values exact tracking keeps and
the names it listed. The user's request is trusted text.

Folding an untrusted or private result's text (``_values.canon``: for ASCII text without
``&`` or ``%``, case folding alone) and listing its words (what the phrase rule searches)
costs about 10 ns a character; text that is not ASCII costs about 20 ns more a character
(NFKC, format characters removed, look-alike letters mapped), and a text with line breaks
about 2 more (``Record.joined``). For a result of ``OFF_LOOP_CHARS`` characters or
more, where an event loop runs, the engine has both done in a worker thread, a slice at a
time, and awaits that before the call returns (``Conversation.record_off_loop``): the
loop goes on, and the next call sees the result as it would have.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import json
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._metadata import Trust
from toolplug.contract._tool import ToolResult
from toolplug.utilities._bridge import loop_running, offload_pool

if TYPE_CHECKING:
    from toolplug.trust._settings import GuardSettings

from toolplug.trust._decisions import Decisions
from toolplug.trust._effects import budgets_given, effects_given, named_in
from toolplug.trust._text import (
    MOST_NAMES,
    NO_NAMES,
    SEARCH_CHARS,
    STRIP,
    WORD,
    fold,
    fold_joined,
    hand_over,
    leaves,
    left_after,
    letters,
    name_of,
    names_of,
    numbers,
    sliced_fold,
    sliced_leaves,
    sliced_words,
    spaced_words,
    strings_in,
    strings_of,
    whole_token,
)
from toolplug.trust._values import canon, joined, pieces, url_prefix_in

__all__ = [
    "CURRENT", "DERIVED", "OFF_LOOP_CHARS", "Conversation", "Record", "current",
    "derived_from", "off_loop", "part_strings",
]

CURRENT: Final[contextvars.ContextVar[Conversation | None]] = contextvars.ContextVar(
    "toolplug_conversation", default=None
)


_ENTERED: Final[contextvars.ContextVar[tuple[Any, ...]]] = contextvars.ContextVar(
    "toolplug_conversations_entered", default=()
)
"""The tokens of the conversations entered in this context, innermost first, as pairs
``(token, outer pairs)``: one conversation may be entered by several tasks at once
(parallel tool calls)."""


DERIVED: Final[contextvars.ContextVar[Mapping[str, Record] | None]] = contextvars.ContextVar(
    "toolplug_derived", default=None
)
"""The top-level arguments of the call about to be made that a plan passed by ``$stepN``
reference from an untrusted step, and that step's source."""


_TRUSTED: Final = Trust(output="trusted")


OFF_LOOP_CHARS: Final = 64 * 1024
"""The characters of an untrusted or private result's text (its output and the strings of
its data) from which the engine records it off the event loop (``off_loop``,
``Conversation.record_off_loop``). Folding the text and listing its words costs about
10 ns a character, on the loop when done inline (at the first check: 14 ms for 1 MB, 60
for 4 MB in bench/guard_large.py). At this size that is 0.7-0.8 ms, twice what the loop
waits for one slice of the work done in a worker thread (``SLICE_CHARS``, 0.35 ms), and
the hop to the thread adds about 0.5 ms to the call; below it the thread saves the loop
little and costs the call more than it saves, above it the stall inline grows with the
text while in a thread it stays one slice."""


def current() -> Conversation | None:
    """The conversation calls are recorded in here, or None."""
    return CURRENT.get()


def derived_from(references: Mapping[str, Record]) -> contextvars.Token[Any]:
    """Mark arguments of the next call in this context as passed from ``references``."""
    return DERIVED.set(references or None)


_PART_STRINGS: Final = ("text", "uri", "name", "description")


def part_strings(result: ToolResult) -> list[str]:
    """The text a result's parts carry, read like its output: a text part's, an embedded
    resource's text and URI, a link's URI, name and description, a file's name. Never
    bytes: the guard reads no pixels and hears no audio (the result's labels stand for
    them: an untrusted tool's image is untrusted content read)."""
    if not result.parts:
        return []
    found = []
    for part in result.parts:
        for name in _PART_STRINGS:
            value = getattr(part, name, None)
            if isinstance(value, str) and value:
                found.append(value)
    return found


def off_loop(result: ToolResult) -> bool:
    """Whether recording ``result``, untrusted or private, would hold an event loop long
    enough to do it in a worker thread (``Conversation.record_off_loop``): its text holds
    ``OFF_LOOP_CHARS`` characters or more, each value of its data counted ``ITEM_CHARS``
    more. The data is read only until that many are counted."""
    left = OFF_LOOP_CHARS - len(result.output) - sum(map(len, part_strings(result)))
    if result.error is not None:
        left -= len(result.error.message)
    if left <= 0:
        return True
    data = result.data
    return data is not None and left_after(data, left, 0) <= 0


@dataclass(eq=False, slots=True)
class Record:
    """One thing that entered a conversation: the user's request or a call's result."""

    index: int
    """Which call of the conversation it came from, from 1 (0 for the user's request)."""
    tool: str | None
    """The tool whose result it is; None for the user's request."""
    call_id: str | None
    """The host's id for the call, when it gave one."""
    trust: Trust
    """The labels of the tool (``Registry.labels``)."""
    text: str
    """Every string of the result (output, data, error), case folded, one per line."""
    values: frozenset[Any] = frozenset()
    """The whole strings and numbers of its data and output (exact tracking)."""
    given: str = ""
    """The call's own arguments, case folded: what the output repeats of them came from
    whoever made the call, not from outside."""
    listed: frozenset[str] = NO_NAMES
    """The whole strings of its data, as they came: what a ref may name (``names``)."""
    echoed: frozenset[str] = NO_NAMES
    """The strings of the call's own arguments: the data repeating them lists nothing."""
    joined: str | None = None
    """``text`` with its line breaks removed (``_values.joined``), when it has any: a value
    a page broke across lines is found whole there."""
    _words: str | None = field(default=None, repr=False)
    _given_words: str | None = field(default=None, repr=False)
    _names: frozenset[str] | None = field(default=None, repr=False)

    def describe(self) -> str:
        """``url_fetch (call 2, id c1)``: what names the source in a reason."""
        if self.tool is None:
            return "the user's request"
        call = f"call {self.index}" + (f", id {self.call_id}" if self.call_id else "")
        return f"{self.tool} ({call})"

    @property
    def words(self) -> str:
        """The text's words joined by single spaces, with a space at each end (a run of
        words is found with one substring search): listed on first use, or, for a long
        result, by the worker thread that recorded it."""
        found = self._words
        if found is None:
            found = self._words = spaced_words(self.text)
        return found

    @property
    def given_words(self) -> str:
        """The call's arguments as words joined by one space."""
        words = self._given_words
        if words is None:
            words = self._given_words = spaced_words(self.given)
        return words

    def names(self) -> frozenset[str]:
        """The names its data lists, as a ref is compared (stripped, case folded, 256
        characters at most), less the call's own arguments; folded on first use, so only
        a tool with refs pays for it."""
        names = self._names
        if names is None:
            names = names_of(self.listed)
            if names and self.echoed:
                names -= names_of(self.echoed)
            self._names = names
        return names

    def to_json(self) -> str:
        """What another process needs to guard with this source (``Conversation.absorb``);
        exact values stay with the program that received them."""
        return json.dumps({
            "tool": self.tool, "call_id": self.call_id, "text": self.text, "given": self.given,
            "trust": self.trust.model_dump(mode="json"), "names": sorted(self.names()),
        })

    @classmethod
    def from_json(cls, raw: str) -> Record | None:
        """A source ``to_json`` wrote, or None when it cannot be read."""
        try:
            body = json.loads(raw)
            names = body.get("names", [])  # an older version wrote none
            if not isinstance(names, list) or not all(type(n) is str for n in names):
                raise TypeError("names")
            source = cls(
                0, body["tool"], body["call_id"], Trust.model_validate(body["trust"]),
                body["text"], given=body["given"], listed=frozenset(names),
            )
            source._names = source.listed  # folded where they were recorded
            return source
        except (ValueError, TypeError, KeyError):  # written by another version: skipped
            return None

    def to_dict(self) -> dict[str, Any]:
        """The source as JSON data (for ``details``)."""
        return {
            "index": self.index,
            "tool": self.tool,
            "call_id": self.call_id,
            "untrusted": self.trust.untrusted,
            "private": self.trust.private,
        }


class Conversation:
    """What entered one conversation, with which labels; the flow guard reads it.

    Use as ``with registry.conversation(request):`` (or ``async with``): calls made inside
    are recorded and guarded. A conversation opened inside another (a plan, a program)
    records into the outer one too, and tracks its own values exactly.
    """

    def __init__(
        self,
        request: str | None = None,
        *,
        parent: Conversation | None = None,
        exact: bool = False,
        allow: Iterable[str] | Mapping[str, int | None] | None = None,
    ) -> None:
        self.parent = parent
        """The conversation this one runs inside, or None."""
        self.id: str = parent.id if parent is not None else secrets.token_hex(8)
        """Names the conversation (the outermost one's): what a decision remembered "for
        this conversation" holds for. A server's conversation is named by its owner and
        session, alike on every replica."""
        self._root: Conversation = parent.root if parent is not None else self
        self._exact_nodes: tuple[Conversation, ...] = ((self,) if exact else ()) + (
            parent._exact_nodes if parent is not None else ()
        )
        self.exact = exact
        """Track whole values too (plans and programs: what they pass on, they pass as is)."""
        self.sources: list[Record] = []
        """Everything recorded, in order (the outermost conversation holds them all)."""
        self._requests: list[str] = []
        self._request = ""
        self._request_words = ""
        self._lock = threading.Lock()
        self._untrusted: list[Record] = []
        self._private: list[Record] = []
        self._exact_values: dict[Any, Record] = {}
        self._listings: list[Record] = []
        """The sources whose data listed strings (``Record.listed``), in the outermost one."""
        self.calls = 0
        """How many calls were recorded (in the outermost conversation: all of them)."""
        self.untrusted = False
        """Whether any untrusted output entered."""
        self.private = False
        """Whether any private output entered."""
        self.read_chars = 0
        """The characters of the untrusted and private text entered (their ``Record.text``):
        what a check searches, in the outermost conversation (``FlowGuard.long``)."""
        self._untrusted_chars = 0
        self._private_chars = 0
        self._effects: frozenset[str] | None = None
        self._budgets: dict[str, int] | None = None
        """The tools ``allow`` gave a count (``budgets_given``)."""
        self._bounds: tuple[Conversation, ...] = parent._bounds if parent is not None else ()
        """The conversations opened inside the outermost one with an ``allow`` of their own,
        this one and those around it, innermost first: a call is inside the effects asked
        for when it is inside each of them and the outermost one's."""
        self._spent: collections.Counter[str] = collections.Counter()
        self._spent_seen = 0
        self.decisions: Decisions = (
            parent.root.decisions if parent is not None else Decisions()
        )
        """What the guard decided about each call it looked at here, in order, the last
        ``KEPT`` (``toolplug.trust._decisions``): the outermost conversation's, shared."""
        if allow is not None:
            self._effects = effects_given(allow)
            if isinstance(allow, Mapping):
                self._budgets = budgets_given(allow) or None
            if parent is not None:
                self._bounds = (self, *self._bounds)
        if request:
            self.trust(request)

    @property
    def effects(self) -> frozenset[str] | None:
        """The tools and tool categories whose effects the user's request asked for
        (``allow``); None when the host bounded none (every effect may run, as the other
        rules let it). Once untrusted content entered, a call with an effect outside them
        asks (the effects rule, docs/security.md). In a conversation opened inside another
        with an ``allow`` of its own (``child``), its own: a call must be inside the outer
        one's too."""
        return self._nearest._effects

    @property
    def _nearest(self) -> Conversation:
        """The innermost conversation with a bound of its own, else the outermost."""
        return self._bounds[0] if self._bounds else self._root

    def allow(self, *effects: str) -> None:
        """Add tools or tool categories to the effects the user asked for: a later message
        of theirs asking for more. The first call bounds a conversation opened unbounded.
        Inside a conversation with a bound of its own, that bound widens, never the outer
        ones (what an MCP client or a toolkit asked for stays within the operator's)."""
        nearest = self._nearest
        nearest._effects = (nearest._effects or frozenset()) | frozenset(effects)

    @property
    def budgets(self) -> Mapping[str, int]:
        """How many calls of each tool the user's request asked for, where ``allow`` gave
        a count (``{"delete_file": 1}``): once untrusted content entered, a call beyond its
        count asks as one outside the bound would (the effects rule); ``spent`` counts
        them."""
        return self._nearest._budgets or {}

    @property
    def spent(self) -> Mapping[str, int]:
        """How many calls of each tool were recorded in the outermost conversation (those a
        replica recorded too): what a count of ``allow`` is spent by. Counted from
        ``sources`` when read, so recording a call pays nothing for it."""
        root = self._root
        with root._lock:
            sources = root.sources
            seen = root._spent_seen
            if seen < len(sources):
                counter = root._spent
                for index in range(seen, len(sources)):
                    tool = sources[index].tool
                    if tool is not None:
                        counter[tool] += 1
                root._spent_seen = len(sources)
            return root._spent

    @staticmethod
    def current() -> Conversation | None:
        """The conversation calls are recorded in here (this context), or None."""
        return CURRENT.get()

    # -- entering --------------------------------------------------------------------

    def trust(self, text: str) -> None:
        """Add trusted text: the user's request, or a later message of theirs."""
        root = self.root
        folded = fold(text)
        root._requests.append(folded)
        root._request = "\n".join(root._requests)
        root._request_words = spaced_words(root._request)
        with root._lock:  # a worker thread may be adding a long result
            root.sources.append(Record(0, None, None, _TRUSTED, folded))

    @property
    def root(self) -> Conversation:
        """The outermost conversation."""
        return self._root

    @property
    def request(self) -> str:
        """The user's trusted text, case folded (every request, one per line)."""
        return self.root._request

    def record(
        self,
        tool: str,
        trust: Trust,
        result: ToolResult,
        call_id: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        *,
        listing: bool = True,
        in_thread: bool = False,
    ) -> asyncio.Future[None] | None:
        """Record a call's result (made with ``arguments``): ``sources`` holds it next.
        ``listing``: keep the strings of its data for refs to name (``FlowGuard.lists``: False
        when no tool of the registry has refs, and nothing would read them).

        ``in_thread``: when the result is untrusted or private and long (``off_loop``) and
        an event loop runs in this thread, record it in a worker thread instead
        (``record_off_loop``) and return that future, which the caller awaits before the
        call returns; else (and always without ``in_thread``) it is recorded here and None
        returned."""
        root = self._root
        data = result.data if result.error is None and listing else None
        if not (trust.untrusted or trust.private):  # only the names its data lists
            if data is None:  # the common case: nothing the guard reads later
                with root._lock:  # calls may end in several threads at once
                    root.calls += 1
                    root.sources.append(Record(root.calls, tool, call_id, trust, ""))
                return None
            echoed = NO_NAMES
            found: list[str] = []
            strings_of(data, found)
            listed = frozenset(found)
            if listed and arguments:
                found = []
                strings_of(arguments, found)
                echoed = frozenset(found)
            with root._lock:  # calls may end in several threads at once
                root.calls += 1
                plain = Record(
                    root.calls, tool, call_id, trust, "", listed=listed, echoed=echoed
                )
                root.sources.append(plain)
                if listed:
                    root._listings.append(plain)
            return None
        if in_thread and loop_running() and off_loop(result):
            return self.record_off_loop(
                tool, trust, result, call_id, arguments, listing=listing
            )
        self._enter(
            *self._read(
                tool, trust, result, call_id, arguments, data=data, fold_all=fold_joined,
                read_data=leaves,
            )
        )
        return None

    def record_off_loop(
        self,
        tool: str,
        trust: Trust,
        result: ToolResult,
        call_id: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        *,
        listing: bool = True,
    ) -> asyncio.Future[None]:
        """``record``, its work done in a worker thread, for a result whose text is long
        (``off_loop``): reading it, folding its text and listing its words (``Record.words``,
        which a check would otherwise list on the loop), a slice at a time with the GIL
        handed back between slices. The source enters the conversation at the end; await
        the future before the call returns (the engine shields it: a cancelled caller's
        result is still recorded, as one recorded inline is)."""
        work = functools.partial(
            self._record_sliced, tool, trust, result, call_id, arguments, listing=listing
        )
        return asyncio.get_running_loop().run_in_executor(offload_pool(), work)

    def _record_sliced(
        self,
        tool: str,
        trust: Trust,
        result: ToolResult,
        call_id: str | None,
        arguments: Mapping[str, Any] | None,
        *,
        listing: bool,
    ) -> None:
        """``record_off_loop``'s work, in the worker thread."""
        if not (trust.untrusted or trust.private):  # nothing to index: as record does it
            self.record(tool, trust, result, call_id, arguments, listing=listing)
            return
        data = result.data if result.error is None and listing else None
        source, values = self._read(
            tool, trust, result, call_id, arguments, data=data, fold_all=sliced_fold,
            read_data=sliced_leaves,
        )
        source._words = sliced_words(source.text)
        self._enter(source, values)

    def _read(
        self,
        tool: str,
        trust: Trust,
        result: ToolResult,
        call_id: str | None,
        arguments: Mapping[str, Any] | None,
        *,
        data: Any,
        fold_all: Callable[[list[str]], str],
        read_data: Callable[[Any, list[str], set[Any]], None],
    ) -> tuple[Record, set[Any]]:
        """The record an untrusted or private result makes (numbered when it enters), and
        the whole values of it that exact tracking keeps; ``read_data`` reads its data's
        strings and values, ``fold_all`` folds and joins its strings."""
        strings: list[str] = []
        values: set[Any] = set()
        for text in (result.output, *part_strings(result)):
            if text:
                strings.append(text)
                if self.exact and len(text.strip()) >= 2:
                    values.add(text.strip())
        start = len(strings)
        read_data(result.data, strings, values)
        listed = NO_NAMES if data is None else frozenset(strings[start : start + MOST_NAMES])
        if result.error is not None:
            strings.append(result.error.message)
        given: list[str] = []
        if arguments:
            mine: set[Any] = set()
            leaves(arguments, given, mine)
            values -= mine
        text = fold_all(strings)
        source = Record(
            0,
            tool,
            call_id,
            trust,
            text,
            frozenset(values) if self.exact else frozenset(),
            "\n".join(fold(s) for s in given),
            listed,
            frozenset(given) if listed else NO_NAMES,
            joined(text),
        )
        return source, values

    def _enter(self, source: Record, values: set[Any]) -> None:
        """Number ``source`` and add it, with what it sets: at once, under the lock (calls
        may end in several threads at once, a long result's in a worker), so ``sources``
        stays in the order of its numbers."""
        root = self._root
        trust = source.trust
        with root._lock:
            root.calls += 1
            source.index = root.calls
            root.sources.append(source)
            if source.listed:
                root._listings.append(source)
            if trust.untrusted:
                root._untrusted.append(source)
                root._untrusted_chars += len(source.text)
            if trust.private:
                root._private.append(source)
                root._private_chars += len(source.text)
            root.read_chars += len(source.text)
            node: Conversation | None = self
            while node is not None:
                if trust.untrusted:
                    node.untrusted = True
                    if node.exact:
                        for value in values:
                            node._exact_values.setdefault(value, source)
                if trust.private:
                    node.private = True
                node = node.parent

    def absorb(self, source: Record) -> None:
        """Add what another process recorded in this conversation (a replica's call or
        request, ``Record.to_json``): the guard reads it as if recorded here, numbered
        here (the last of ``sources``)."""
        root = self._root
        if source.tool is None:
            root.trust(source.text)
            return
        with root._lock:
            root.calls += 1
            here = Record(
                root.calls, source.tool, source.call_id, source.trust, source.text,
                given=source.given, listed=source.listed, echoed=source.echoed,
                joined=joined(source.text),
            )
            here._names = source._names
            root.sources.append(here)
            if here.listed:
                root._listings.append(here)
            trust = source.trust
            if trust.untrusted:
                root._untrusted.append(here)
                root._untrusted_chars += len(here.text)
                root.untrusted = True
            if trust.private:
                root._private.append(here)
                root._private_chars += len(here.text)
                root.private = True
            if trust.untrusted or trust.private:
                root.read_chars += len(here.text)

    def __enter__(self) -> Conversation:
        _ENTERED.set((CURRENT.set(self), _ENTERED.get()))
        return self

    def __exit__(self, *exc: object) -> None:
        token, outer = _ENTERED.get()
        _ENTERED.set(outer)
        CURRENT.reset(token)

    async def __aenter__(self) -> Conversation:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)

    def child(
        self, *, exact: bool = True, allow: Iterable[str] | Mapping[str, int | None] | None = None
    ) -> Conversation:
        """A conversation inside this one (a plan's, a program's; exact tracking unless
        ``exact=False``). ``allow`` bounds the effects of the calls made inside it within
        this one's bound: a call must be inside both (an MCP client's ``toolplug/allow``
        within the operator's ``[serve] allow``, a toolkit's within the host's)."""
        return Conversation(parent=self, exact=exact, allow=allow)

    # -- reading ---------------------------------------------------------------------

    def _lists(self, value: Any) -> bool:
        """Whether ``value``, a string or a non-empty list of strings, names only what
        earlier results listed: each string (stripped, case folded) a whole string of some
        result's data (``Record.names``)."""
        listings = self._root._listings
        if not listings:
            return False
        if type(value) is str:
            items: list[Any] | tuple[str] = (value,)
        elif type(value) is list and value:
            items = value
        else:
            return False
        for item in items:
            name = name_of(item) if type(item) is str else None
            if name is None or not any(name in source.names() for source in listings):
                return False
        return True

    def _points(self, value: Any) -> bool:
        """Whether ``value``, a string or a non-empty list of strings, names only places the
        user's own data names: each string (stripped, case folded) a whole token (no
        spaces, between spaces, line ends or punctuation) of some trusted private output
        of this conversation."""
        if type(value) is str:
            items: list[Any] | tuple[str] = (value,)
        elif type(value) is list and value:
            items = value
        else:
            return False
        mine = [source for source in self._root._private if not source.trust.untrusted]
        if not mine:
            return False
        for item in items:
            if type(item) is not str:
                return False
            token = item.strip().casefold().strip(STRIP)
            if token != item.strip().lower().strip(STRIP):
                # folding changed more than case (a long s, sharp s, a ligature): the value
                # may name another place than the one it folds onto
                return False
            if len(token) < 3 or any(c.isspace() for c in token):
                return False
            if not any(whole_token(token, source.text) for source in mine):
                return False
        return True

    def _carried(  # noqa: C901, PLR0912 - the value-flow rules tried in turn, each a short exit
        self,
        value: Any,
        settings: GuardSettings,
        *,
        untrusted: bool = True,
        kind: str | None = None,
    ) -> tuple[Record, str, str] | None:
        """The first source ``value`` carries text of (untrusted ones, else private ones),
        the text, and the rule that found it; None when it carries none. ``kind``: what
        the sink's value is (``url``, ``address``, ``path``), its pieces read that way
        only (``_values.pieces``); None, undeclared, tries each way."""
        root = self._root
        wanted = root._untrusted if untrusted else root._private
        request = root._request
        exact = self._exact_nodes if untrusted else ()
        size = settings.min_phrase_words
        min_chars = settings.min_token_chars
        # each search holds the GIL throughout: in a conversation that read long text, off
        # the loop (``FlowGuard.long``: in a worker thread), it is handed over between searches
        # (``_searched``), as recording does a slice at a time; else the loop waits for the
        # interpreter's switch interval (5 ms) or the check's end, whichever comes first
        since = 0  # characters searched since the GIL was last handed over
        for text in (value,) if type(value) is str else strings_in(value):
            if exact:
                whole = text.strip()
                for node in exact:
                    found = node._exact_values.get(whole)
                    if found is not None and canon(whole) not in request:
                        return found, whole, "exact"
            if not wanted:
                continue
            folded = (  # canon's own first step, inline: most values are plain ASCII
                text.casefold()
                if text.isascii() and "&" not in text and "%" not in text
                else canon(text)
            )
            parts = folded.split()
            for word in parts:
                if len(word) < min_chars and "@" not in word and "://" not in word:
                    continue  # no token of it can count: the common case, decided first
                if len(word) < 3:
                    continue
                token = word.strip(STRIP)
                if not _counts(token, min_chars) or token in request:
                    continue
                found = _found(token, wanted)
                if found is not None:
                    return found, token, "token"
                if "@" in token or "/" in token or "," in token or ";" in token:
                    # what the token is made of: addresses glued into a list or a mailto:,
                    # a URL's path segments and query values, a path resolved
                    for piece in pieces(token, kind):
                        if _counts(piece, min_chars) and piece not in request:
                            found = _found(piece, wanted)
                            if found is not None:
                                return found, piece, "token"
                    if (
                        untrusted
                        and kind in (None, "url")
                        and "://" in token
                        and not url_prefix_in(token, request)
                    ):
                        # a host and path an outside text named, with more appended
                        for source in reversed(wanted):
                            if url_prefix_in(token, source.text) and not url_prefix_in(
                                token, source.given
                            ):
                                return source, token, "token"
                if root.read_chars >= OFF_LOOP_CHARS and not loop_running():  # few tokens
                    since = _searched(since, root, untrusted=untrusted)
            if len(folded) < 2 * size - 1:
                continue  # too short to hold that many words
            if len(parts) < size:  # fewer_words, inline: most values are short
                most = 0
                for part in parts:
                    most += 1 if part.isalnum() else (len(part) + 1) // 2
                if most < size:
                    continue
            words = WORD.findall(folded)
            if len(words) < size:
                continue
            request_words = root._request_words
            handing = root.read_chars >= OFF_LOOP_CHARS and not loop_running()
            for i in range(len(words) - size + 1):
                phrase = " ".join(words[i : i + size])
                spaced = f" {phrase} "
                if spaced in request_words:
                    continue
                for source in reversed(wanted):
                    if spaced in source.words and spaced not in source.given_words:
                        return source, phrase, "phrase"
                if handing:
                    since = _searched(since, root, untrusted=untrusted)
        return None

    def _named_outside(self, value: Any) -> tuple[Record, str] | None:
        """The first untrusted source that names a string of ``value`` (a ref's: a string or
        a list of strings; a number read as its digits) which neither the user's trusted
        text nor any result's listing named, and that name; None when there is none. A
        name counts at any length, found as a whole run of the source's text (not inside a
        longer word or number), not from the source call's own arguments."""
        root = self._root
        wanted = root._untrusted
        if not wanted:
            return None
        if type(value) is list:
            items: list[Any] | tuple[Any] = value
        else:
            items = (value,)
        request = root._request
        listings = root._listings
        for item in items:
            text = str(item) if type(item) is int else item
            if type(text) is not str:
                continue
            name = name_of(text)
            if name is None or named_in(name, request):
                continue
            if any(name in source.names() for source in listings):
                continue
            for source in reversed(wanted):
                if named_in(name, source.text) and not named_in(name, source.given):
                    return source, name
        return None

    def _exact_numbers(self, value: Any) -> tuple[Record, Any] | None:
        """A number of ``value`` that a program received from an untrusted call."""
        for number in numbers(value):
            node: Conversation | None = self
            while node is not None:
                found = node._exact_values.get(number)
                if found is not None:
                    return found, number
                node = node.parent
        return None


def _counts(token: str, min_chars: int) -> bool:
    """Whether the token rule reads ``token``: one with ``@`` or ``://`` of 3 characters or
    more, else one of ``min_chars`` or more that is not only letters."""
    if "@" in token or "://" in token:
        return len(token) >= 3
    return len(token) >= min_chars and not letters(token)


def _found(token: str, wanted: list[Record]) -> Record | None:
    """The latest of ``wanted`` whose text holds ``token`` (or holds it once its line breaks
    are removed), not as the call's own arguments."""
    for source in reversed(wanted):
        if (token in source.text or (source.joined is not None and token in source.joined)) and (
            token not in source.given
        ):
            return source
    return None


def _searched(since: int, root: Conversation, *, untrusted: bool) -> int:
    """The characters searched since the GIL was last handed over, ``since`` and one more
    search of every untrusted (or private) source of ``root``'s; the GIL handed over
    (``hand_over``) first and 0 returned when the next search would pass ``SEARCH_CHARS``
    (about a slice's time)."""
    searched = root._untrusted_chars if untrusted else root._private_chars
    since += searched
    if since + searched > SEARCH_CHARS:
        hand_over()
        return 0
    return since
