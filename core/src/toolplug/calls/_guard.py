"""The flow guard: what entered a conversation, and whether a call's sinks carry it.

A ``Conversation`` (``registry.conversation(request)``, an agent run, an MCP session, a
plan, a code-mode program) is made current through a context variable; every call made
inside it is recorded with its tool's labels (``Registry.labels``). Before a call runs,
``Guard.check`` looks at

1. the ``[policies]`` rules of the tool (JSON Schema per argument; allow, ask, deny);
2. the flow rule: a sink argument whose value carries text from an untrusted output of
   this conversation that is not in the user's request asks (for a call that only reads,
   such as a fetch's GET, once the conversation has also read something private).
   "Carries" means, after case folding: a *token* of the value (no spaces, surrounding
   punctuation stripped) of ``min_token_chars`` or more that is not only letters (a URL,
   an address, an account number, a path), or any token with ``@`` or ``://``, found
   inside the output; or ``min_phrase_words`` consecutive words found in it. Inside a
   plan or a program the tracking is exact as well: a value passed by ``$stepN``
   reference from an untrusted step, or equal to a value the program received from an
   untrusted call;
3. the trifecta rule: once the conversation has read untrusted content, a sink of a tool
   that leaves the machine or changes something (not read-only, or open-world) asks when
   its value carries private data (``trifecta = "private"``), or always
   (``"always"``); except a destination (``Trust.destinations``) whose every string is,
   whole, a token of trusted private output: it goes where the user's own data points.

A ref (``Trust.refs``: a sink that names something the service holds) whose value, a
string or a list of strings, is each a whole string of an earlier result's ``data`` (case
folded, stripped) is a choice among what was listed: neither rule reads it. Anything else
in a ref is read as in any sink.

The pipeline (``toolplug.calls._pipeline``) turns an ``ask`` into the approval it already
knows and a ``deny`` into a refusal.

Folding an untrusted or private result's text and listing its words (what the phrase rule
searches) costs about 10 ns a character. For a result of ``OFF_LOOP_CHARS`` characters or
more, where an event loop runs, the engine has both done in a worker thread, a slice at a
time, and awaits that before the call returns (``Conversation.record_off_loop``): the
loop goes on, and the next call sees the result as it would have. A check searches what
was read, once per token and run of words of a sink value (0.17 ms a MB): in a
conversation that read that much, a check whose searches are long (``Guard.long``) is
awaited in that worker thread too (``Guard.check_off_loop``), with the same verdict.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from toolplug.calls._bridge import loop_running, offload_pool
from toolplug.calls._validation import compile_schema
from toolplug.contract._metadata import Trust
from toolplug.contract._tool import Tool, ToolResult

if TYPE_CHECKING:
    from toolplug.contract._metadata import Annotations, ToolMetadata
    from toolplug.runtime._registry import Registry
    from toolplug.runtime._settings import GuardSettings, PolicyRule

__all__ = [
    "OFF_LOOP_CHARS", "Conversation", "Guard", "Source", "Verdict", "current", "derived_from",
    "off_loop",
]

_CURRENT: Final[contextvars.ContextVar[Conversation | None]] = contextvars.ContextVar(
    "toolplug_conversation", default=None
)
_ENTERED: Final[contextvars.ContextVar[tuple[Any, ...]]] = contextvars.ContextVar(
    "toolplug_conversations_entered", default=()
)
"""The tokens of the conversations entered in this context, innermost first, as pairs
``(token, outer pairs)``: one conversation may be entered by several tasks at once
(parallel tool calls)."""
_DERIVED: Final[contextvars.ContextVar[Mapping[str, Source] | None]] = contextvars.ContextVar(
    "toolplug_derived", default=None
)
"""The top-level arguments of the call about to be made that a plan passed by ``$stepN``
reference from an untrusted step, and that step's source."""

_WORD: Final = re.compile(r"\w+")
_TRUSTED: Final = Trust(output="trusted")
_STRIP: Final = "\"'`.,;:!?()[]{}<>*"
_SHOWN: Final = 60
_NAME_CHARS: Final = 256
"""The longest string of a result's data a ref may name (a name, an id; not a page)."""
_MOST_NAMES: Final = 10_000
"""The most strings of one result's data kept as names (the first ones): bounded work."""
_NO_NAMES: Final[frozenset[str]] = frozenset()
_UNKNOWN: Final = object()
_DECLARED: Final = object()
"""A tool's declared annotations hold for every call (it does not refine them)."""
_PLAIN_HINTS: Final = Tool.annotations_for.__func__  # type: ignore[attr-defined]

OFF_LOOP_CHARS: Final = 64 * 1024
"""The characters of an untrusted or private result's text (its output and the strings of
its data) from which the engine records it off the event loop (``off_loop``,
``Conversation.record_off_loop``). Folding the text and listing its words costs about
10 ns a character, on the loop when done inline (at the first check: 14 ms for 1 MB, 60
for 4 MB in bench/guard_large.py). At this size that is 0.7-0.8 ms, twice what the loop
waits for one slice of the work done in a worker thread (``_SLICE_CHARS``, 0.35 ms), and
the hop to the thread adds about 0.5 ms to the call; below it the thread saves the loop
little and costs the call more than it saves, above it the stall inline grows with the
text while in a thread it stays one slice."""
_ITEM_CHARS: Final = 20
"""What each value of a result's data counts for besides its text, in ``off_loop``'s
characters: reading one (a string, a number, a list) costs about what 20 characters of
text do (0.15 us against 0.008)."""
_SLICE_CHARS: Final = 64 * 1024
"""How much text a worker thread folds or lists the words of before it hands the GIL back
(``_hand_over``): what the event loop may wait for, about 0.35 ms."""
_SLICE_VALUES: Final = _SLICE_CHARS // _ITEM_CHARS
"""How many values of a result's data a worker thread reads before it hands the GIL back:
as long as a slice of text takes (``_ITEM_CHARS``)."""
_SEARCH_CHARS: Final = 2 * 1024 * 1024
"""How many characters a check's substring searches go through (each token and run of words
of a sink value, through the words of every untrusted or private source) in about the time
a slice (``_SLICE_CHARS``) takes to fold or list: a search goes through about 6 characters
a ns, so 0.35 ms. A check that would search more is made in a worker thread
(``Guard.long``), and there hands the GIL over after each such slice of searching."""
_VALUE_CHARS_PER_SEARCH: Final = 6
"""The characters of a sink value counted as one search (a word and the space after it:
each starts a token, a run of words, or both)."""
_BREAK: Final = re.compile(r"\W")


def current() -> Conversation | None:
    """The conversation calls are recorded in here, or None."""
    return _CURRENT.get()


def derived_from(references: Mapping[str, Source]) -> contextvars.Token[Any]:
    """Mark arguments of the next call in this context as passed from ``references``."""
    return _DERIVED.set(references or None)


def off_loop(result: ToolResult) -> bool:
    """Whether recording ``result``, untrusted or private, would hold an event loop long
    enough to do it in a worker thread (``Conversation.record_off_loop``): its text holds
    ``OFF_LOOP_CHARS`` characters or more, each value of its data counted ``_ITEM_CHARS``
    more. The data is read only until that many are counted."""
    left = OFF_LOOP_CHARS - len(result.output)
    if result.error is not None:
        left -= len(result.error.message)
    if left <= 0:
        return True
    data = result.data
    return data is not None and _left_after(data, left, 0) <= 0


@dataclass(eq=False, slots=True)
class Source:
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
    listed: frozenset[str] = _NO_NAMES
    """The whole strings of its data, as they came: what a ref may name (``names``)."""
    echoed: frozenset[str] = _NO_NAMES
    """The strings of the call's own arguments: the data repeating them lists nothing."""
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
            found = self._words = _spaced_words(self.text)
        return found

    @property
    def given_words(self) -> str:
        """The call's arguments as words joined by one space."""
        words = self._given_words
        if words is None:
            words = self._given_words = _spaced_words(self.given)
        return words

    def names(self) -> frozenset[str]:
        """The names its data lists, as a ref is compared (stripped, case folded, 256
        characters at most), less the call's own arguments; folded on first use, so only
        a tool with refs pays for it."""
        names = self._names
        if names is None:
            names = _names(self.listed)
            if names and self.echoed:
                names -= _names(self.echoed)
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
    def from_json(cls, raw: str) -> Source | None:
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
        self, request: str | None = None, *, parent: Conversation | None = None, exact: bool = False
    ) -> None:
        self.parent = parent
        """The conversation this one runs inside, or None."""
        self._root: Conversation = parent.root if parent is not None else self
        self._exact_nodes: tuple[Conversation, ...] = ((self,) if exact else ()) + (
            parent._exact_nodes if parent is not None else ()
        )
        self.exact = exact
        """Track whole values too (plans and programs: what they pass on, they pass as is)."""
        self.sources: list[Source] = []
        """Everything recorded, in order (the outermost conversation holds them all)."""
        self._requests: list[str] = []
        self._request = ""
        self._request_words = ""
        self._lock = threading.Lock()
        self._untrusted: list[Source] = []
        self._private: list[Source] = []
        self._exact_values: dict[Any, Source] = {}
        self._listings: list[Source] = []
        """The sources whose data listed strings (``Source.listed``), in the outermost one."""
        self.calls = 0
        """How many calls were recorded (in the outermost conversation: all of them)."""
        self.untrusted = False
        """Whether any untrusted output entered."""
        self.private = False
        """Whether any private output entered."""
        self.read_chars = 0
        """The characters of the untrusted and private text entered (their ``Source.text``):
        what a check searches, in the outermost conversation (``Guard.long``)."""
        self._untrusted_chars = 0
        self._private_chars = 0
        if request:
            self.trust(request)

    @staticmethod
    def current() -> Conversation | None:
        """The conversation calls are recorded in here (this context), or None."""
        return _CURRENT.get()

    # -- entering --------------------------------------------------------------------

    def trust(self, text: str) -> None:
        """Add trusted text: the user's request, or a later message of theirs."""
        root = self.root
        folded = _fold(text)
        root._requests.append(folded)
        root._request = "\n".join(root._requests)
        root._request_words = _spaced_words(root._request)
        with root._lock:  # a worker thread may be adding a long result
            root.sources.append(Source(0, None, None, _TRUSTED, folded))

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
        ``listing``: keep the strings of its data for refs to name (``Guard.lists``: False
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
                    root.sources.append(Source(root.calls, tool, call_id, trust, ""))
                return None
            echoed = _NO_NAMES
            found: list[str] = []
            _strings_of(data, found)
            listed = frozenset(found)
            if listed and arguments:
                found = []
                _strings_of(arguments, found)
                echoed = frozenset(found)
            with root._lock:  # calls may end in several threads at once
                root.calls += 1
                plain = Source(
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
                tool, trust, result, call_id, arguments, data=data, fold=_fold_joined,
                leaves=_leaves,
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
        (``off_loop``): reading it, folding its text and listing its words (``Source.words``,
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
            tool, trust, result, call_id, arguments, data=data, fold=_sliced_fold,
            leaves=_sliced_leaves,
        )
        source._words = _sliced_words(source.text)
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
        fold: Callable[[list[str]], str],
        leaves: Callable[[Any, list[str], set[Any]], None],
    ) -> tuple[Source, set[Any]]:
        """The source an untrusted or private result makes (numbered when it enters), and
        the whole values of it that exact tracking keeps; ``leaves`` reads its data's
        strings and values, ``fold`` folds and joins its strings."""
        strings: list[str] = []
        values: set[Any] = set()
        if result.output:
            strings.append(result.output)
            if self.exact and len(result.output.strip()) >= 2:
                values.add(result.output.strip())
        start = len(strings)
        leaves(result.data, strings, values)
        listed = _NO_NAMES if data is None else frozenset(strings[start : start + _MOST_NAMES])
        if result.error is not None:
            strings.append(result.error.message)
        given: list[str] = []
        if arguments:
            mine: set[Any] = set()
            _leaves(arguments, given, mine)
            values -= mine
        source = Source(
            0,
            tool,
            call_id,
            trust,
            fold(strings),
            frozenset(values) if self.exact else frozenset(),
            "\n".join(_fold(s) for s in given),
            listed,
            frozenset(given) if listed else _NO_NAMES,
        )
        return source, values

    def _enter(self, source: Source, values: set[Any]) -> None:
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

    def absorb(self, source: Source) -> None:
        """Add what another process recorded in this conversation (a replica's call or
        request, ``Source.to_json``): the guard reads it as if recorded here, numbered
        here (the last of ``sources``)."""
        root = self._root
        if source.tool is None:
            root.trust(source.text)
            return
        with root._lock:
            root.calls += 1
            here = Source(
                root.calls, source.tool, source.call_id, source.trust, source.text,
                given=source.given, listed=source.listed, echoed=source.echoed,
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
        _ENTERED.set((_CURRENT.set(self), _ENTERED.get()))
        return self

    def __exit__(self, *exc: object) -> None:
        token, outer = _ENTERED.get()
        _ENTERED.set(outer)
        _CURRENT.reset(token)

    async def __aenter__(self) -> Conversation:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)

    def child(self, *, exact: bool = True) -> Conversation:
        """A conversation inside this one (a plan's, a program's)."""
        return Conversation(parent=self, exact=exact)

    # -- reading ---------------------------------------------------------------------

    def _lists(self, value: Any) -> bool:
        """Whether ``value``, a string or a non-empty list of strings, names only what
        earlier results listed: each string (stripped, case folded) a whole string of some
        result's data (``Source.names``)."""
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
            name = _name(item) if type(item) is str else None
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
            token = item.strip().casefold().strip(_STRIP)
            if token != item.strip().lower().strip(_STRIP):
                # folding changed more than case (a long s, sharp s, a ligature): the value
                # may name another place than the one it folds onto
                return False
            if len(token) < 3 or any(c.isspace() for c in token):
                return False
            if not any(_whole_token(token, source.text) for source in mine):
                return False
        return True

    def _carried(  # noqa: C901 - the value-flow rules tried in turn, each a short exit
        self, value: Any, settings: GuardSettings, *, untrusted: bool = True
    ) -> tuple[Source, str, str] | None:
        """The first source ``value`` carries text of (untrusted ones, else private ones),
        the text, and the rule that found it; None when it carries none."""
        root = self._root
        wanted = root._untrusted if untrusted else root._private
        request = root._request
        exact = self._exact_nodes if untrusted else ()
        size = settings.min_phrase_words
        min_chars = settings.min_token_chars
        # each search holds the GIL throughout: in a conversation that read long text, off
        # the loop (``Guard.long``: in a worker thread), it is handed over between searches
        # (``_searched``), as recording does a slice at a time; else the loop waits for the
        # interpreter's switch interval (5 ms) or the check's end, whichever comes first
        since = 0  # characters searched since the GIL was last handed over
        for text in (value,) if type(value) is str else _strings(value):
            if exact:
                whole = text.strip()
                for node in exact:
                    found = node._exact_values.get(whole)
                    if found is not None and whole.casefold() not in request:
                        return found, whole, "exact"
            if not wanted:
                continue
            folded = text.casefold()
            parts = folded.split()
            for word in parts:
                if len(word) < min_chars and "@" not in word and "://" not in word:
                    continue  # no token of it can count: the common case, decided first
                if len(word) < 3:
                    continue
                token = word.strip(_STRIP)
                if "@" in token or "://" in token:
                    if len(token) < 3:
                        continue
                elif len(token) < min_chars or _letters(token):
                    continue
                if token in request:
                    continue
                for source in reversed(wanted):
                    if token in source.text and token not in source.given:
                        return source, token, "token"
                if root.read_chars >= OFF_LOOP_CHARS and not loop_running():  # few tokens
                    since = _searched(since, root, untrusted=untrusted)
            if len(folded) < 2 * size - 1:
                continue  # too short to hold that many words
            if len(parts) < size:  # _fewer_words, inline: most values are short
                most = 0
                for part in parts:
                    most += 1 if part.isalnum() else (len(part) + 1) // 2
                if most < size:
                    continue
            words = _WORD.findall(folded)
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

    def _exact_numbers(self, value: Any) -> tuple[Source, Any] | None:
        """A number of ``value`` that a program received from an untrusted call."""
        for number in _numbers(value):
            node: Conversation | None = self
            while node is not None:
                found = node._exact_values.get(number)
                if found is not None:
                    return found, number
                node = node.parent
        return None


@dataclass(frozen=True)
class Verdict:
    """What the guard or a policy decided about one call."""

    action: Literal["ask", "deny"]
    reason: str
    """Why, for the person asked (``ApprovalRequest.reason``) and the model."""
    details: Mapping[str, Any]
    """The rule, the argument and the source call, for hosts."""


class Guard:
    """The flow guard and the ``[policies]`` rules of one registry."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        config = registry.config
        self.settings = config.guard
        self._rules: dict[str, tuple[tuple[PolicyRule, Callable[[Any], bool]], ...]] = {
            tool: tuple((rule, compile_schema(rule.json_schema)) for rule in rules)
            for tool, rules in config.policies.items()
        }
        self._labels: dict[str, Trust] = {}
        self._lists: bool | None = None
        self._refines: dict[str, Any] = {}

    def labels(self, name: str) -> Trust:
        """``Registry.labels(name)``, read once per tool."""
        found = self._labels.get(name)
        if found is None:
            found = self._labels[name] = self.registry.labels(name)
        return found

    @property
    def lists(self) -> bool:
        """Whether any tool of the registry has refs: only then does a conversation keep
        what results list (``Conversation.record``'s ``listing``)."""
        found = self._lists
        if found is None:
            registry = self.registry
            found = self._lists = any(registry.labels(name).refs for name in registry.tools)
        return found

    def of_result(self, name: str, own: Trust | None) -> Trust:
        """The labels of one result of ``name``: the tool's (``labels``), with the
        ``output`` and ``private`` labels the tool gave this result (``ToolResult.trust``:
        what this result holds, such as messages all written inside the organisation) in
        their place. A result that says it is untrusted or private is believed; one that
        says it is trusted or not private is not where the configuration's ``trust`` table
        for the tool sets that label: the operator's word stands over the tool's. A result
        cannot change its tool's sinks."""
        labels = self.labels(name)
        if own is None or own is labels or (
            own.output == labels.output and own.private == labels.private
        ):
            return labels
        overlay = None
        if (own.output == "trusted" and labels.untrusted) or (not own.private and labels.private):
            overlay = self.registry.config.tool_settings(name).trust
        output = own.output
        if output == "trusted" and overlay is not None and overlay.output is not None:
            output = labels.output
        private = own.private
        if not private and overlay is not None and overlay.private is not None:
            private = labels.private
        if output == labels.output and private == labels.private:
            return labels
        return labels.model_copy(update={"output": output, "private": private})

    def active(self, tool: str) -> bool:
        """Whether ``check`` may have something to say about a call of ``tool`` here."""
        return tool in self._rules or (self.settings.enabled and _CURRENT.get() is not None)

    def check(
        self, name: str, arguments: Mapping[str, Any], metadata: ToolMetadata | None
    ) -> Verdict | None:
        """The policies' and the flow guard's verdict on a call; None lets it go on."""
        asked: Verdict | None = None
        rules = self._rules.get(name)
        if rules:
            asked = self._policy(name, rules, arguments)
            if asked is not None and asked.action == "deny":
                return asked
        conversation = _CURRENT.get()
        if conversation is None or not self.settings.enabled:
            return asked
        flow = self._flow(name, arguments, metadata, conversation)
        return flow if flow is not None else asked

    def long(self, name: str, arguments: Mapping[str, Any]) -> bool:
        """Whether a check of this call here would hold an event loop running in this thread
        long enough to make it in a worker thread: the current conversation read
        ``OFF_LOOP_CHARS`` characters or more of untrusted or private text
        (``Conversation.read_chars``, recorded here or absorbed from a replica), and its
        searches for the sink values (one a word, about) would go through ``_SEARCH_CHARS``
        or more. The caller then awaits ``check_off_loop`` instead of ``check``."""
        conversation = _CURRENT.get()
        if conversation is None:
            return False
        read = conversation._root.read_chars
        if read < OFF_LOOP_CHARS or not self.settings.enabled:  # the common case
            return False
        if not loop_running():
            return False
        chars = 0
        for sink in self.labels(name).sinks:
            value = arguments.get(sink)
            if value is not None:
                for text in _strings(value):
                    chars += len(text)
        return read * (chars // _VALUE_CHARS_PER_SEARCH + 1) >= _SEARCH_CHARS

    def check_off_loop(
        self, name: str, arguments: Mapping[str, Any], metadata: ToolMetadata | None
    ) -> asyncio.Future[Verdict | None]:
        """``check``, in a worker thread (``offload_pool``'s), for a call whose check would search
        long text (``long``): each token and run of ``min_phrase_words`` words of a sink value
        is one search of the text read, 0.17 ms a MB, which would hold the event loop; in the
        thread they hand the GIL back a slice at a time. The same verdict: it runs in a copy of
        this context (the current conversation, the arguments a plan passed by reference),
        and the words of a long source not listed yet (absorbed from a replica, recorded
        where no loop ran) are listed a slice at a time first."""
        work = functools.partial(self._check_sliced, name, arguments, metadata)
        context = contextvars.copy_context()
        return asyncio.get_running_loop().run_in_executor(offload_pool(), context.run, work)

    def _check_sliced(
        self, name: str, arguments: Mapping[str, Any], metadata: ToolMetadata | None
    ) -> Verdict | None:
        """``check_off_loop``'s work, in the worker thread."""
        conversation = _CURRENT.get()
        if conversation is not None:
            root = conversation._root
            for source in (*root._untrusted, *root._private):
                if source._words is None and len(source.text) >= _SLICE_CHARS:
                    source._words = _sliced_words(source.text)
        return self.check(name, arguments, metadata)

    # -- policies --------------------------------------------------------------------

    def _policy(
        self,
        name: str,
        rules: tuple[tuple[PolicyRule, Callable[[Any], bool]], ...],
        arguments: Mapping[str, Any],
    ) -> Verdict | None:
        for index, (rule, matches) in enumerate(rules):
            if rule.argument is None:
                value: Any = dict(arguments)
            elif rule.argument in arguments:
                value = arguments[rule.argument]
            else:
                continue
            if not matches(value):
                continue
            if rule.action == "allow":
                return None
            where = f"policies.{name}[{index}]"
            about = f" on {rule.argument}" if rule.argument else ""
            because = f": {rule.reason}" if rule.reason else ""
            verb = "refuses" if rule.action == "deny" else "asks about"
            return Verdict(
                rule.action,
                f"the policy {where}{about} {verb} this call{because}",
                {
                    "rule": where,
                    "policy": rule.action,
                    "argument": rule.argument,
                    "reason": rule.reason,
                },
            )
        return None

    # -- the flow guard --------------------------------------------------------------

    def _flow(  # noqa: C901 - the guard's decision steps in the order docs/security.md gives
        self,
        name: str,
        arguments: Mapping[str, Any],
        metadata: ToolMetadata | None,
        conversation: Conversation,
    ) -> Verdict | None:
        if not conversation.untrusted:
            return None
        labels = self.labels(name)
        settings = self.settings
        derived = _DERIVED.get()
        hints = self._hints(name, arguments, metadata)
        reads = hints is not None and hints.read_only
        # A call that only reads changes nothing: what it sends out can harm only by
        # carrying something private, so with nothing private read, following a link
        # found in a page is no flow to ask about.
        sinks = () if reads and not conversation.root.private else labels.sinks
        # a ref naming, whole, what a result listed chooses among what exists: no rule reads it
        chosen = (
            {ref for ref in labels.refs if conversation._lists(arguments.get(ref))}
            if labels.refs
            else _NO_NAMES
        )
        for sink in sinks:
            value = arguments.get(sink)
            if value is None or value == "" or (type(value) in (list, dict) and not value):
                continue
            if chosen and sink in chosen:
                continue
            if derived is not None and sink in derived:
                source = derived[sink]
                return self._tainted(name, sink, source, "", "reference")
            hit = conversation._carried(value, settings)
            if hit is None and conversation.exact:
                number = conversation._exact_numbers(value)
                if number is not None:
                    hit = (number[0], str(number[1]), "exact")
            if hit is not None:
                return self._tainted(name, sink, *hit)
        if settings.trifecta == "off" or not conversation.root.private:
            return None
        if reads and hints is not None and not hints.open_world:
            return None  # stays on this machine and changes nothing
        destinations = labels.destinations
        for sink in labels.sinks:
            value = arguments.get(sink)
            if value is None or value in ("", [], {}) or (chosen and sink in chosen):
                continue
            if destinations and sink in destinations and conversation._points(value):
                continue  # where the user's own data points: it reaches only that place
            if settings.trifecta == "always":
                return self._trifecta(name, sink, None, "")
            hit = conversation._carried(value, settings, untrusted=False)
            if hit is not None:
                return self._trifecta(name, sink, hit[0], hit[1])
        return None

    def _hints(
        self, name: str, arguments: Mapping[str, Any], metadata: ToolMetadata | None
    ) -> Annotations | None:
        """The annotations that hold for this call (``Tool.annotations_for``); None for a
        tool that declares none (treated as changing the world)."""
        if metadata is None:
            return None
        refines = self._refines.get(name, _UNKNOWN)
        if refines is _UNKNOWN:  # read once per tool: it is the same for every call
            refines = self._refines[name] = self._refinement(name, metadata)
        if refines is None:
            return None
        if refines is _DECLARED:
            return metadata.annotations
        try:
            return refines(arguments)  # type: ignore[no-any-return]
        except Exception:  # arguments the tool cannot read: what it declares
            return metadata.annotations

    def _refinement(self, name: str, metadata: ToolMetadata) -> Any:
        """None: the tool declares no annotations; ``_DECLARED``: its declared ones hold for
        every call; else its ``annotations_for``, which refines them per call."""
        if "annotations" not in metadata.model_fields_set:
            return None
        tool = self.registry.tools.get(name)
        if tool is None or getattr(tool.cls.annotations_for, "__func__", None) is _PLAIN_HINTS:
            return _DECLARED
        return tool.cls.annotations_for

    def _tainted(self, tool: str, sink: str, source: Source, text: str, rule: str) -> Verdict:
        what = {
            "token": f"the text {_quoted(text)}",
            "phrase": f"the words {_quoted(text)}",
            "exact": f"the value {_quoted(text)}",
            "reference": "a value passed by reference",
        }[rule]
        reason = (
            f"this session read untrusted content: {tool}'s {sink} carries {what} from "
            f"{source.describe()}, whose output anyone outside could have written, and not "
            f"from the user's request (flow rule: {self._rule(rule)})"
        )
        return Verdict(
            "ask",
            reason,
            {
                "rule": f"flow.{rule}",
                "argument": sink,
                "fragment": text,
                "source": source.to_dict(),
            },
        )

    def _rule(self, rule: str) -> str:
        settings = self.settings
        return {
            "token": f"a token of {settings.min_token_chars}+ characters, not only letters, "
            "or one with @ or ://",
            "phrase": f"{settings.min_phrase_words} consecutive words",
            "exact": "a whole value received from that call",
            "reference": "a $step reference to that step",
        }[rule]

    def _trifecta(self, tool: str, sink: str, source: Source | None, text: str) -> Verdict:
        carried = (
            f" and carries {_quoted(text)} from {source.describe()}, whose output is private"
            if source is not None
            else ""
        )
        reason = (
            f"this session read untrusted content and private data, and {tool}'s {sink} "
            f"leaves the machine or changes something{carried} (trifecta rule)"
        )
        return Verdict(
            "ask",
            reason,
            {
                "rule": "trifecta",
                "argument": sink,
                "fragment": text,
                "source": None if source is None else source.to_dict(),
            },
        )


_NOT_WORD: Final = {
    code: " " for code in range(128) if not (chr(code).isalnum() or chr(code) == "_")
}
"""Every ASCII character ``\\w`` does not match, to a space."""


def _spaced_words(text: str) -> str:
    """The words of ``text`` (``\\w+``) joined by one space, a space at each end: a run of
    words is then found with one substring search. ASCII text (most pages) takes a path
    about twice as fast as the regular expression, with the same words."""
    if text.isascii():
        return " " + " ".join(text.translate(_NOT_WORD).split()) + " "
    return " " + " ".join(_WORD.findall(text)) + " "


def _fewer_words(parts: list[str], size: int) -> bool:
    r"""Whether the space-separated ``parts`` surely hold fewer than ``size`` words of
    ``\w+``: a part of letters and digits is one word, and any part of n characters holds
    at most (n + 1) // 2 (a word needs a character, and two words a character between
    them). False when unsure: then count them."""
    if len(parts) >= size:
        return False
    most = 0
    for part in parts:
        most += 1 if part.isalnum() else (len(part) + 1) // 2
    return most < size


def _whole_token(token: str, text: str) -> bool:
    """Whether ``token`` is one of the tokens of ``text``: a run between spaces or line
    ends, its surrounding punctuation (``_STRIP``) stripped, as the guard reads a value."""
    start = text.find(token)
    while start != -1:
        begin = start
        while begin > 0 and not text[begin - 1].isspace():
            begin -= 1
        end = start + len(token)
        while end < len(text) and not text[end].isspace():
            end += 1
        if text[begin:end].strip(_STRIP) == token:
            return True
        start = text.find(token, start + 1)
    return False


def _letters(token: str) -> bool:
    """Whether ``token`` is a word: letters only, apostrophes allowed (``grandma's`` and
    ``don't`` are words, not an address or a number)."""
    return token.isalpha() or (
        ("'" in token or "\u2019" in token)
        and token.replace("'", "").replace("\u2019", "").isalpha()
    )


def _fold(text: str) -> str:
    return text.casefold()


def _fold_joined(strings: list[str]) -> str:
    """The strings case folded, one per line (``Source.text``)."""
    return "\n".join(_fold(s) for s in strings)


def _sliced_fold(strings: list[str], size: int | None = None) -> str:
    """``_fold_joined(strings)``, ``size`` (``_SLICE_CHARS``) characters at a time, the GIL
    handed over between slices (folding is per character: a slice folds as in the whole),
    and the text copied once, at the end."""
    size = size or _SLICE_CHARS
    folded: list[str] = []
    since = 0
    for index, text in enumerate(strings):
        if index:
            folded.append("\n")
        for start in range(0, len(text), size):
            piece = text[start : start + size] if len(text) > size else text
            folded.append(piece.casefold())
            since += len(piece)
            if since >= size:
                _hand_over()
                since = 0
    return "".join(folded)


def _sliced_words(text: str, size: int | None = None) -> str:
    """``_spaced_words(text)``, about ``size`` (``_SLICE_CHARS``) characters at a time, the
    GIL handed over between slices. Each slice ends before a character no word holds
    (``\\W``), so no word is cut: the slices' words, in order, are the text's."""
    size = size or _SLICE_CHARS
    found: list[str] = []
    start, end = 0, len(text)
    while start < end:
        cut = _BREAK.search(text, start + size) if start + size < end else None
        stop = end if cut is None else cut.start()
        words = _spaced_words(text[start:stop])
        if len(words) > 2:
            found.append(words[1:-1])
        start = stop
        _hand_over()
    if not found:
        return "  "  # as _spaced_words has it
    return " ".join(["", *found, ""])  # one copy of the words, not three


def _searched(since: int, root: Conversation, *, untrusted: bool) -> int:
    """The characters searched since the GIL was last handed over, ``since`` and one more
    search of every untrusted (or private) source of ``root``'s; the GIL handed over
    (``_hand_over``) first and 0 returned when the next search would pass ``_SEARCH_CHARS``
    (about a slice's time)."""
    searched = root._untrusted_chars if untrusted else root._private_chars
    since += searched
    if since + searched > _SEARCH_CHARS:
        _hand_over()
        return 0
    return since


def _hand_over() -> None:
    """Let a thread waiting for the GIL take it: the event loop's, when it has something to
    run. A worker that keeps the GIL through a long string operation (``str.casefold`` of a
    MB) holds the loop as long as doing the work on it would, and even between operations
    the loop waits for the interpreter's switch interval (5 ms) before it may run."""
    time.sleep(0)


def _left_after(value: Any, left: int, depth: int) -> int:
    """``left`` less the characters of ``value``'s strings and ``_ITEM_CHARS`` for each of
    its values, down to 0 or below at most (then the count stops)."""
    left -= _ITEM_CHARS
    if isinstance(value, str):
        return left - len(value)
    if isinstance(value, Mapping):
        items: Any = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return left
    if depth > 64:
        return left
    for item in items:
        left = _left_after(item, left, depth + 1)
        if left <= 0:
            break
    return left


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _numbers(value: Any) -> Iterator[int | float]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers(item)


def _leaves(value: Any, strings: list[str], values: set[Any], depth: int = 0) -> None:
    if depth > 64:
        return
    if isinstance(value, str):
        strings.append(value)
        if len(value.strip()) >= 2:
            values.add(value.strip())
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        values.add(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            _leaves(item, strings, values, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _leaves(item, strings, values, depth + 1)


def _sliced_leaves(
    value: Any, strings: list[str], values: set[Any], size: int | None = None
) -> None:
    """``_leaves(value, strings, values)`` in a worker thread: the same strings in the same
    order, the GIL handed over every ``size`` (``_SLICE_VALUES``) values read, so that data
    of a million values holds the event loop no longer than a slice of text does."""
    size = size or _SLICE_VALUES
    read = 0

    def walk(container: Mapping[Any, Any] | list[Any] | tuple[Any, ...], depth: int) -> None:
        nonlocal read
        for item in container.values() if isinstance(container, Mapping) else container:
            if depth < 64 and isinstance(item, Mapping | list | tuple):
                walk(item, depth + 1)
            else:
                _leaves(item, strings, values, depth + 1)
            read += 1
            if read >= size:
                _hand_over()
                read = 0

    if isinstance(value, Mapping | list | tuple):
        walk(value, 0)
    else:
        _leaves(value, strings, values)


def _name(text: str) -> str | None:
    """``text`` as a listed name is compared: stripped, case folded; None when empty or
    longer than a name (``_NAME_CHARS``)."""
    stripped = text.strip()
    if not stripped or len(stripped) > _NAME_CHARS:
        return None
    return stripped.casefold()


def _names(strings: frozenset[str]) -> frozenset[str]:
    """The names among ``strings``: each as ``_name`` gives it (inline: no call per string)."""
    return frozenset(
        name.casefold() for text in strings if 0 < len(name := text.strip()) <= _NAME_CHARS
    )


def _strings_of(value: Any, strings: list[str], depth: int = 0) -> None:
    """The strings of ``value`` (JSON data) into ``strings``: 64 levels deep and
    ``_MOST_NAMES`` strings at most."""
    kind = type(value)
    if kind is str:
        strings.append(value)
        return
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        items: Any = value.values()
    elif kind is list or kind is tuple or isinstance(value, list | tuple):
        items = value
    elif isinstance(value, str):
        strings.append(value)
        return
    else:
        return
    if depth > 64 or len(strings) >= _MOST_NAMES:
        return
    for item in items:
        kind = type(item)
        if kind is str:  # most items: no call for them
            strings.append(item)
            if len(strings) >= _MOST_NAMES:
                return
        elif kind is not int and kind is not float and kind is not bool and item is not None:
            _strings_of(item, strings, depth + 1)


def _quoted(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")
