"""What the record holds: one ``RecordEvent`` per call, approval request, approval decision and
guard decision, and the filters a query reads them by
(``toolplug.state._record`` writes and reads them; docs/record.md).

Each event says who (``principal``: the call's owner, ``session``, ``conversation``), what
(``tool``, ``arguments`` redacted, ``status``, ``size``), why (``rule``, ``reason``,
``labels``, ``sources``), when (``time``, ``duration_ms``) and where (``replica``, and the
OpenTelemetry ``trace_id`` and ``span_id`` of the call's span when there was one).

Arguments are recorded redacted: every configured secret replaced by ``***`` (the
registry's ``Redactor``), every value under a key that names a secret (``password``,
``token``, ``api_key``, ``authorization``, ...) replaced whole, and the JSON cut to
``[record] max_argument_chars``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "COLUMNS", "KINDS", "EventKind", "RecordEvent", "RecordFilters", "arguments_text",
    "encoded", "labels_text", "masked_secrets", "names_secret", "recorded_arguments",
]

EventKind = Literal["call", "approval.request", "approval.decision", "guard"]

KINDS: Final[tuple[EventKind, ...]] = ("call", "approval.request", "approval.decision", "guard")
"""Every kind of event, in the order a call meets them: the guard, the question, the
answer, the call's end."""

_SECRET_KEY: Final = re.compile(
    r"pass(word|wd|phrase)?$|secret|token|api[_-]?key|auth(orization)?$|credential|"
    r"private[_-]?key|cookie|session[_-]?key",
    re.IGNORECASE,
)
"""Argument names whose values are recorded (and kept in the approvals inbox) as ``***``
whatever they hold."""


@dataclass(slots=True)
class RecordEvent:
    """One thing that happened, as the record keeps it."""

    kind: EventKind
    time: float
    """Seconds since the epoch (UTC) when it happened."""
    tool: str
    call_id: str | None = None
    """The host's id for the call (``context={"call_id": ...}``), else the span's or None."""
    principal: str | None = None
    """Who made the call: its owner (``context={"client": ...}``; over MCP the verified
    principal, else ``session:...``, else ``stdio``)."""
    session: str | None = None
    """The MCP session (``Mcp-Session-Id``), or the host's ``context={"session": ...}``."""
    conversation: str | None = None
    """The conversation's id (``Conversation.id``) when the call ran in one."""
    replica: str = ""
    """The process that recorded it (``[record] replica``, else host name and pid)."""
    status: str | None = None
    """A call's ``ok`` or error type; an approval's ``asked``, ``approved``, ``denied``,
    ``unanswered``, ``failed`` (its holder stopped) or ``refused``; the guard's ``allow``,
    ``ask`` or ``deny``."""
    size: int | None = None
    """A call's result: characters of its output (and of its data as JSON)."""
    duration_ms: float | None = None
    """A call's time from its arrival to its result."""
    rule: str | None = None
    """The rule that asked or refused (``flow.token``, ``policies.TOOL[0]``, ``approval``)."""
    reason: str | None = None
    """The reason shown to the person asked, or a denial's reason."""
    labels: list[str] = field(default_factory=list)
    """A call's result labels (``untrusted``, ``private``); the guard's carried labels."""
    sources: list[dict[str, Any]] = field(default_factory=list)
    """The guard's: each argument carrying outside data, with its source call and label."""
    arguments: Any = None
    """The call's arguments, redacted (a string ending ``...`` when cut)."""
    trace_id: str | None = None
    span_id: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    """Anything else: who decided an approval, a guard decision's looked-at arguments."""
    id: int | None = None
    """The store's number for it, once stored (increasing in one store)."""
    arguments_text: str | None = field(default=None, repr=False, compare=False)
    """``arguments`` as the stored JSON, when already encoded (``recorded_arguments``
    encodes them once, to cut them, and the row reuses it); None: encoded by ``row``. Not
    part of ``to_dict``."""

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON data (one line of ``toolplug history export``)."""
        data = asdict(self)
        del data["arguments_text"]
        return data

    def row(self, null: Any = None) -> tuple[Any, ...]:
        """The values of ``COLUMNS``, JSON columns as text, ``null`` for each missing one
        (a store's ``null``: SQLite binds an empty ``bytearray`` faster than None)."""
        arguments = self.arguments_text
        if arguments is None:
            arguments = _text(self.arguments)
        row = (
            self.time, self.kind, self.tool, self.call_id, self.principal, self.session,
            self.conversation, self.replica, self.status, self.size, self.duration_ms,
            self.rule, self.reason, labels_text(self.labels), _text(self.sources),
            arguments, self.trace_id, self.span_id, _text(self.detail),
        )
        if null is None:
            return row
        return tuple(null if value is None else value for value in row)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> RecordEvent:
        """The event of a stored row: ``id`` followed by ``COLUMNS``."""
        (ident, when, kind, tool, call_id, principal, session, conversation, replica, status,
         size, duration, rule, reason, labels, sources, arguments, trace_id, span_id,
         detail) = row
        return cls(
            kind, when, tool, call_id, principal, session, conversation, replica, status,
            size, duration, rule, reason, _data(labels) or [], _data(sources) or [],
            _data(arguments), trace_id, span_id, _data(detail) or {}, ident, arguments,
        )


COLUMNS: Final = (
    "time", "kind", "tool", "call_id", "principal", "session", "conversation", "replica",
    "status", "size", "duration_ms", "rule", "reason", "labels", "sources", "arguments",
    "trace_id", "span_id", "detail",
)
"""The stored columns, in ``RecordEvent.row`` order (after the store's ``id``)."""


def recorded_arguments(arguments: Any, redact: Any, most: int) -> tuple[Any, str | None]:
    """``arguments`` as the record keeps them, and their JSON (``RecordEvent.arguments`` and
    ``arguments_text``: encoded once, to be measured and stored): secrets out (``redact``:
    the registry's ``Redactor.redact_data``; values under secret-named keys), JSON cut to
    ``most`` characters (a string then). Called by the writer thread (a call's), or with
    the loop's arguments already redacted (a guard decision's, an approval request's)."""
    if most <= 0:
        return None, None
    value = redact(masked_secrets(arguments))
    text = _text(value)
    if text is not None and len(text) > most:
        cut = text[: max(most - 3, 0)] + "..."
        return cut, _text(cut)
    return value, text


def arguments_text(arguments: Any, redactor: Any, most: int) -> str | None:
    """``recorded_arguments``' JSON alone, as the writer thread stores a call's: the same
    text, found faster. Masked, encoded, then searched for ``redactor``'s secrets as JSON
    text writes them (``Redactor.in_json``); only arguments that hold one are redacted
    value by value (``Redactor.redact_data``) and encoded again."""
    if most <= 0:
        return None
    value = masked_secrets(arguments)
    if value is None:
        return None
    text = _encode(value)
    if redactor and redactor.in_json(text):
        text = _encode(redactor.redact_data(value))
    if len(text) > most:
        return _encode(text[: max(most - 3, 0)] + "...")
    return text


_SECRET_NAMES: Final[dict[str, bool]] = {}
"""Whether each argument name seen names a secret: names repeat call after call, and the
writer thread asks for every one (bounded: a name seen first past 10,000 is not kept)."""


def names_secret(key: str) -> bool:
    """Whether an argument named ``key`` holds a secret (``masked_secrets`` masks it)."""
    return _names_secret(key)


def _names_secret(key: str) -> bool:
    known = _SECRET_NAMES.get(key)
    if known is None:
        known = _SECRET_KEY.search(key) is not None
        if len(_SECRET_NAMES) < 10_000:
            _SECRET_NAMES[key] = known
    return known


def masked_secrets(value: Any, depth: int = 0) -> Any:
    """``value`` with every value under a key that names a secret (``_SECRET_KEY``: password,
    token, api_key, authorization, ...) replaced by ``***``, in nested objects and lists
    too (as JSON data: tuples become lists, keys strings). The record's arguments and the
    approvals inbox's requests are masked by this one function."""
    if depth > 32:
        return "..."
    deeper = depth < 32  # a plain value one level down is kept as it is, without a call
    if isinstance(value, dict | Mapping):
        masked: dict[str, Any] = {}
        for k, v in value.items():
            key = k if type(k) is str else str(k)
            if _names_secret(key) and v not in (None, ""):
                masked[key] = "***"
            elif deeper and type(v) in _PLAIN:
                masked[key] = v
            else:
                masked[key] = masked_secrets(v, depth + 1)
        return masked
    if isinstance(value, list | tuple):
        return [
            v if deeper and type(v) in _PLAIN else masked_secrets(v, depth + 1) for v in value
        ]
    return value


_PLAIN: Final = frozenset({str, int, float, bool, type(None)})
"""The types of values ``masked_secrets`` keeps as they are (most arguments' values)."""


def _encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))``, with
    the C encoder made once (``JSONEncoder.encode`` makes one per value) and no check for
    cycles: what is encoded here is built by the record (``masked_secrets``' copies, bounded
    in depth), a cycle in it impossible; a value too deep raises RecursionError."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the pure Python encoder, as json.dumps would
        return json.JSONEncoder(ensure_ascii=False, default=str, separators=(",", ":")).encode
    chunks = make(
        None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


_encode: Final = _encoder()


def encoded(value: Any) -> str:
    """``value`` as the record's JSON (``RecordEvent.row``'s columns)."""
    return _encode(value)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if not value and isinstance(value, list | dict):  # most events' labels, sources, detail
        return "[]" if isinstance(value, list) else "{}"
    return _encode(value)


_LABELS: Final[dict[tuple[Any, ...], str | None]] = {}
"""The JSON of each list of labels seen: a handful of lists (``untrusted``, ``private``)
repeat event after event (bounded as ``_SECRET_NAMES``)."""


def labels_text(labels: Any) -> str | None:
    """``labels`` as their JSON column (the JSON of each list seen kept)."""
    if not isinstance(labels, list):
        return _text(labels)
    key = tuple(labels)
    known = _LABELS.get(key) if all(type(label) is str for label in key) else ""
    if known:
        return known
    text = _text(labels)
    if known == "":  # a label that is no string: not kept
        return text
    if len(_LABELS) < 10_000:
        _LABELS[key] = text
    return text


def _data(text: str | None) -> Any:
    return None if text is None else json.loads(text)


@dataclass(frozen=True, slots=True)
class RecordFilters:
    """Which events a query returns (every field optional; all given must match)."""

    tool: str | None = None
    status: str | None = None
    principal: str | None = None
    conversation: str | None = None
    kind: str | None = None
    call_id: str | None = None
    since: float | None = None
    """Events at or after this time (seconds since the epoch)."""
    until: float | None = None
    after: int | None = None
    """Events whose ``id`` is greater (paging through an export)."""
    limit: int | None = 100
    oldest_first: bool = False

    def where(self, mark: Callable[[int], str]) -> tuple[str, list[Any]]:
        """The SQL condition and its parameters, ``mark(n)`` writing the n-th placeholder."""
        clauses: list[str] = []
        values: list[Any] = []
        for column, value in (
            ("tool", self.tool), ("status", self.status), ("principal", self.principal),
            ("conversation", self.conversation), ("kind", self.kind), ("call_id", self.call_id),
        ):
            if value is not None:
                values.append(value)
                clauses.append(f"{column} = {mark(len(values))}")
        bounds: tuple[tuple[str, str, float | None], ...] = (
            ("time", ">=", self.since), ("time", "<", self.until),
            ("id", ">", None if self.after is None else float(self.after)),
        )
        for column, op, bound in bounds:
            if bound is not None:
                values.append(bound)
                clauses.append(f"{column} {op} {mark(len(values))}")
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", values
