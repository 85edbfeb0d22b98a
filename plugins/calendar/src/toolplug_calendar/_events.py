"""Reading iCalendar sources and expanding them into one sorted list of events.

Imported only when the tool runs: it needs icalendar, recurring-ical-events and httpx.

How times come out:

* a timed event with a time zone (a ``TZID`` or UTC): ``start``/``end`` in UTC, the zone's name
  in ``timezone``, and the wall-clock times of that zone in ``local_start``/``local_end``;
* a floating time (no zone at all): read in the configured ``timezone``, ``floating`` true;
* an all-day event: dates (``YYYY-MM-DD``), the end exclusive as in iCalendar; for deciding
  whether it falls in the range it covers midnight to midnight in the configured time zone.

Recurrences (RRULE, RDATE, EXDATE, and instances moved with RECURRENCE-ID) are expanded by
recurring-ical-events, window by window, stopping once no later occurrence can make it into
the answer; a series that repeats so often (every minute for years) that expanding it would
stall the call is skipped with a warning.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from toolplug import Citation, ErrorType, ToolContext, ToolFailure, ToolResult

__all__ = ["list_events"]

_UTC: Final = dt.UTC
_DEFAULT_SPAN: Final = dt.timedelta(days=30)
# recurring-ical-events compares floating times and dates as if they were UTC; the configured
# zone moves them by up to 14 hours. Two days of slack around every comparison with the
# library's order keeps every event that could qualify.
_SLACK: Final = dt.timedelta(days=2)
_MAX_SCANNED: Final = 50_000
"""Occurrences looked at per source before giving up (a pathological feed)."""
_MAX_RULE_STEPS: Final = 250_000
"""Steps a rule may need to reach the range before its series is skipped as too dense."""
_FIRST_WINDOW: Final = dt.timedelta(days=64)
_MIN_WINDOW: Final = dt.timedelta(minutes=1)
_DENSE_WINDOW: Final = 500
"""A window with more occurrences than this is followed by a smaller one."""
_BOM: Final = b"\xef\xbb\xbf"
_FIRST_YEAR: Final = 1900
_LAST_YEAR: Final = 2999


@dataclass(frozen=True)
class Source:
    """One configured calendar: a URL or a file."""

    name: str
    url: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class Query:
    """What was asked: the range (UTC, end exclusive) and how to shape the events."""

    start: dt.datetime
    end: dt.datetime
    zone: dt.tzinfo
    limit: int
    description_chars: int


@dataclass(frozen=True)
class Event:
    """One occurrence, normalised; ``data`` is what the result carries."""

    begin: dt.datetime
    """Start in UTC (an all-day event's midnight in the configured zone)."""
    finish: dt.datetime
    local_start: dt.datetime | dt.date
    local_end: dt.datetime | dt.date
    data: dict[str, Any]

    @property
    def key(self) -> tuple[dt.datetime, str, str]:
        """Sort order: start, then title, then source."""
        return (self.begin, str(self.data["title"]), str(self.data["source"]))


@dataclass
class Found:
    """The events one source contributed, and anything worth a warning."""

    events: list[Event]
    warnings: list[str]


async def list_events(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    """Run the ``list_events`` action; failures come back as results."""
    try:
        return await _list_events(arguments, context)
    except ToolFailure as failure:
        return failure.to_result()


async def _list_events(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    config = context.config
    sources = _sources(config.get("sources") or [])
    zone = _zone(config.get("timezone", "UTC"))
    query = _query(arguments, zone, int(config.get("description_chars", 500)))
    chosen = _choose(sources, arguments.get("source"))
    cap = int(config.get("max_bytes", 10_000_000))

    outcomes = await asyncio.gather(*(_load(s, query, context, cap) for s in chosen))
    events: list[Event] = []
    warnings: list[str] = []
    failures: list[tuple[Source, ToolFailure]] = []
    for source, outcome in zip(chosen, outcomes, strict=True):
        if isinstance(outcome, ToolFailure):
            failures.append((source, outcome))
        else:
            events.extend(outcome.events)
            warnings.extend(outcome.warnings)
    if failures and len(failures) == len(chosen):
        raise _all_failed([f for _, f in failures])
    warnings.extend(
        f"{failure.message} ({failure.type}); the other sources' events are listed"
        for _, failure in failures
    )

    events.sort(key=lambda e: e.key)
    shown = events[: query.limit]
    truncated = len(events) > query.limit
    names = [s.name for s in chosen]
    data = {
        "events": [e.data for e in shown],
        "count": len(shown),
        "truncated": truncated,
        "time_min": _iso_utc(query.start),
        "time_max": _iso_utc(query.end),
        "sources": names,
        "failed_sources": [
            {"source": s.name, "error_type": f.type, "message": f.message} for s, f in failures
        ],
    }
    citations = _unique_citations(
        Citation(title=str(e.data["title"]), url=str(e.data["url"]))
        for e in shown
        if str(e.data["url"] or "").lower().startswith(("http://", "https://"))
    )
    return ToolResult.success(
        _render(shown, query, names, truncated), data, citations=citations, warnings=warnings
    )


# --- arguments and configuration ------------------------------------------------------------


def _sources(raw: Sequence[Any]) -> list[Source]:
    sources: list[Source] = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ToolFailure(
                ErrorType.UNAVAILABLE,
                f"[tools.calendar] sources[{index}] needs a name and a url or a path",
            )
        url, path = item.get("url"), item.get("path")
        if (url is None) == (path is None):
            raise ToolFailure(
                ErrorType.UNAVAILABLE,
                f"[tools.calendar] source {item['name']!r} needs exactly one of url and path",
            )
        sources.append(Source(item["name"], url=url, path=path))
    if not sources:
        raise ToolFailure(
            ErrorType.UNAVAILABLE,
            "no calendar source is configured; add one under [tools.calendar] sources",
        )
    names = [s.name for s in sources]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ToolFailure(
            ErrorType.UNAVAILABLE,
            f"[tools.calendar] source names must be unique; repeated: {', '.join(repeated)}",
        )
    return sources


def _zone(name: Any) -> ZoneInfo:
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolFailure(
            ErrorType.UNAVAILABLE,
            f"[tools.calendar] timezone {name!r} is not an IANA time zone name (such as "
            "'Europe/Berlin' or 'UTC')",
        ) from None


def _query(arguments: Mapping[str, Any], zone: dt.tzinfo, description_chars: int) -> Query:
    action = arguments.get("action", "list_events")
    if action != "list_events":
        raise ToolFailure(ErrorType.VALIDATION, f"action: expected 'list_events', got {action!r}")
    raw_min, raw_max = arguments.get("time_min"), arguments.get("time_max")
    start = _instant(raw_min, "time_min", zone) if raw_min else dt.datetime.now(_UTC)
    end = _instant(raw_max, "time_max", zone) if raw_max else start + _DEFAULT_SPAN
    _supported(end, "time_max")
    if end <= start:
        raise ToolFailure(
            ErrorType.VALIDATION,
            f"time_max ({_iso_utc(end)}) must be after time_min ({_iso_utc(start)})",
        )
    limit = arguments.get("max_results", 10)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        raise ToolFailure(
            ErrorType.VALIDATION, f"max_results: expected a whole number 1..100, got {limit!r}"
        )
    return Query(start, end, zone, limit, max(0, description_chars))


def _instant(value: Any, field: str, zone: dt.tzinfo) -> dt.datetime:
    """An RFC 3339 date-time as aware UTC; a bare date or a naive time is read in ``zone``."""
    text = str(value).strip()
    try:
        if len(text) == 10:
            moment = dt.datetime.combine(dt.date.fromisoformat(text), dt.time())
        else:
            moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ToolFailure(
            ErrorType.VALIDATION,
            f"{field}: {text[:60]!r} is not an RFC 3339 date-time such as 2025-03-01T09:00:00Z "
            "(or a date such as 2025-03-01)",
        ) from None
    _supported(moment, field)  # before any arithmetic, which far-off years overflow
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return _supported(moment.astimezone(_UTC), field)


def _supported(moment: dt.datetime, field: str) -> dt.datetime:
    if not _FIRST_YEAR <= moment.year <= _LAST_YEAR:
        raise ToolFailure(
            ErrorType.VALIDATION,
            f"{field}: {moment.isoformat().replace('+00:00', 'Z')} is outside the supported "
            f"years {_FIRST_YEAR}..{_LAST_YEAR}",
        )
    return moment


def _choose(sources: list[Source], wanted: Any) -> list[Source]:
    if wanted is None:
        return sources
    for source in sources:
        if source.name == wanted:
            return [source]
    names = ", ".join(repr(s.name) for s in sources)
    raise ToolFailure(
        ErrorType.NOT_FOUND,
        f"no calendar source is named {str(wanted)[:64]!r}; configured sources: {names} "
        "(leave source out to search all of them)",
    )


# --- reading a source -----------------------------------------------------------------------


async def _load(
    source: Source, query: Query, context: ToolContext, cap: int
) -> Found | ToolFailure:
    try:
        if source.url is not None:
            raw = await _fetch(source.name, source.url, context, cap)
        else:
            assert source.path is not None
            raw = await asyncio.to_thread(_read_file, source.name, source.path, cap)
        return await asyncio.to_thread(_expand, raw, source.name, query)
    except ToolFailure as failure:
        return failure


def http_url(url: str) -> str:
    """The URL to fetch: ``webcal://`` and ``webcals://`` are https in disguise."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in ("webcal", "webcals"):
        return f"https://{rest}"
    return url


async def _fetch(name: str, url: str, context: ToolContext, cap: int) -> bytes:
    """The body of a URL source, through the network guard.

    A calendar URL often *is* the secret (Google's secret address), so messages name the
    source and the host, never the URL.
    """
    from toolplug.http import NetworkError, fetch, guard_failure

    target = http_url(url)
    host = urlsplit(target).hostname or "the calendar host"
    where = f"calendar source {name!r} ({host})"
    try:
        result = await fetch(
            "GET",
            target,
            policy=context.network,
            headers={"Accept": "text/calendar, application/calendar+xml;q=0.5, */*;q=0.1"},
            max_bytes=cap,
        )
    except NetworkError as exc:
        # The reason, not the message: a secret calendar address must not be shown.
        raise guard_failure(exc, f"{where}: {exc.reason}") from None
    if not 200 <= result.status < 300:
        raise _status_failure(where, result.status)
    if result.truncated:
        raise ToolFailure(
            ErrorType.PARSE,
            f"{where} is larger than [tools.calendar] max_bytes ({cap} bytes); raise it to "
            "read this calendar",
        )
    return result.content


def _status_failure(where: str, status: int) -> ToolFailure:
    said = f"{where} answered HTTP {status}"
    if status in (404, 410):
        return ToolFailure(
            ErrorType.NOT_FOUND,
            f"{said}: the calendar address is wrong or was withdrawn (a reset Google secret "
            "address stops working)",
        )
    if status in (401, 403):
        return ToolFailure(
            ErrorType.PERMISSION,
            f"{said}: the calendar is not shared at this address, or it needs a login",
        )
    if status == 429:
        return ToolFailure(ErrorType.RATE_LIMIT, f"{said}: too many requests", retry_possible=True)
    if status >= 500:
        return ToolFailure(
            ErrorType.UNAVAILABLE, f"{said}: the server has a problem", retry_possible=True
        )
    return ToolFailure(ErrorType.EXECUTION, said)


def _read_file(name: str, raw_path: str, cap: int) -> bytes:
    path = Path(raw_path).expanduser()
    where = f"calendar source {name!r}"
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ToolFailure(ErrorType.NOT_FOUND, f"{where}: {path} is not a regular file")
        if info.st_size > cap:
            raise _too_large(where, cap)
        with path.open("rb") as handle:
            data = handle.read(cap + 1)
    except FileNotFoundError:
        raise ToolFailure(ErrorType.NOT_FOUND, f"{where}: there is no file at {path}") from None
    except PermissionError:
        raise ToolFailure(
            ErrorType.PERMISSION, f"{where}: {path} cannot be read (permission denied)"
        ) from None
    except OSError as exc:
        raise ToolFailure(
            ErrorType.EXECUTION, f"{where}: {path} cannot be read ({exc.strerror})"
        ) from None
    if len(data) > cap:
        raise _too_large(where, cap)
    return data


def _too_large(where: str, cap: int) -> ToolFailure:
    return ToolFailure(
        ErrorType.PARSE,
        f"{where} is larger than [tools.calendar] max_bytes ({cap} bytes); raise it to read "
        "this calendar",
    )


# --- parsing and expanding ------------------------------------------------------------------


def _expand(raw: bytes, name: str, query: Query) -> Found:
    """Parse one calendar and collect the events that may make it into the answer."""
    import icalendar
    import recurring_ical_events  # type: ignore[import-untyped]  # ships no type information

    where = f"calendar source {name!r}"
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        calendar = icalendar.Calendar.from_ical(raw)
    except ValueError as exc:
        raise ToolFailure(
            ErrorType.PARSE, f"{where} is not valid iCalendar data: {_brief(exc)}"
        ) from None
    if calendar.name != "VCALENDAR":
        raise ToolFailure(
            ErrorType.PARSE,
            f"{where} is not valid iCalendar data: it holds a {calendar.name} component, "
            "not a VCALENDAR",
        )
    warnings: list[str] = []
    broken = sum(1 for c in calendar.walk("VEVENT") if c.errors)
    if broken:
        warnings.append(f"{where}: {broken} event(s) with invalid properties were skipped")
    survey = _survey(calendar, query.start - _SLACK)
    if survey.skipped:
        warnings.append(
            f"{where}: skipped {len(survey.skipped)} series that repeat too often to expand "
            f"({', '.join(survey.skipped[:3])})"
        )
    try:
        occurrences = recurring_ical_events.of(calendar, skip_bad_series=True)
        events, complete = _collect(occurrences, name, query, survey)
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        # icalendar's and recurring-ical-events' errors are ValueErrors; a VEVENT without
        # DTSTART surfaces as a KeyError or an IncompleteComponent (a ValueError).
        raise ToolFailure(
            ErrorType.PARSE, f"{where} could not be expanded into events: {_brief(exc)}"
        ) from None
    if not complete:
        warnings.append(f"{where}: stopped after {_MAX_SCANNED} occurrences; narrow the time range")
    return Found(events, warnings)


@dataclass(frozen=True)
class Survey:
    """What a look at the calendar's series found before expanding them."""

    skipped: list[str]
    """Titles of the series left out because they repeat too often."""
    shortest_period: dt.timedelta
    """The shortest repeat interval of any rule (one day when none repeats more often)."""
    loose_times: bool
    """Some start is a date or a floating time, which the library orders as if UTC."""


def _collect(
    occurrences: Any, source: str, query: Query, survey: Survey
) -> tuple[list[Event], bool]:
    """The source's earliest ``limit + 1`` events in the range, window by window.

    One ``between`` call over the whole range is cheapest for ordinary calendars, but a wide
    range of a dense series would build thousands of events only to keep ten; so the range
    is walked in windows sized by the densest series, which grow while they are sparse and
    shrink while they are dense, and the walk stops once no later occurrence can enter.

    Returns:
        The events, and False when the walk gave up after ``_MAX_SCANNED`` occurrences.
    """
    keep = query.limit + 1
    slack = _SLACK if survey.loose_times else dt.timedelta(0)
    events: list[Event] = []
    seen: set[tuple[str, str, str]] = set()
    cursor, stop = query.start - slack, query.end + slack
    span = min(max(survey.shortest_period * 100, _MIN_WINDOW), _FIRST_WINDOW)
    scanned = 0
    while cursor < stop:
        upper = min(cursor + span, stop)
        batch = occurrences.between(cursor, upper)
        scanned += len(batch)
        for component in batch:
            # An event that crosses a window boundary comes back in both windows.
            identity = (str(component.get("UID", "")), repr(component.start), repr(component.end))
            if identity in seen:
                continue
            seen.add(identity)
            event = _event(component, source, query)
            if event is not None:
                events.append(event)
        if len(events) >= keep:
            events.sort(key=lambda e: e.key)
            del events[keep:]
            # Occurrences not seen yet start at or after `upper` in the library's order,
            # which is within `slack` of ours: none can come before the last one kept.
            if events[-1].begin + slack <= upper:
                break
        if scanned > _MAX_SCANNED:
            return events, False
        cursor = upper
        span = span * 2 if len(batch) < _DENSE_WINDOW else max(span / 4, _MIN_WINDOW)
    return events, True


_SECONDS_PER: Final = {"SECONDLY": 1, "MINUTELY": 60, "HOURLY": 3600, "DAILY": 86400}


def _survey(calendar: Any, since: dt.datetime) -> Survey:
    """Look at every series; remove those whose expansion up to ``since`` would take too long.

    The recurrence engine (dateutil) walks a rule from its first occurrence, so a
    minute-by-minute series that began years ago costs millions of steps for any query.
    """
    dense: set[str] = set()
    titles: list[str] = []
    shortest = dt.timedelta(days=1)
    loose = False
    for component in calendar.walk("VEVENT"):
        if component.errors:
            continue
        try:
            first = component.decoded("DTSTART")
        except (KeyError, ValueError, TypeError):
            continue
        if not isinstance(first, dt.datetime) or first.tzinfo is None:
            loose = True
        rule = component.get("RRULE")
        if isinstance(rule, list):
            rule = rule[0] if rule else None
        if rule is None:
            continue
        freq = str((rule.get("FREQ") or [""])[0]).upper()
        if freq not in _SECONDS_PER:
            continue
        try:
            period = _SECONDS_PER[freq] * max(1, int((rule.get("INTERVAL") or [1])[0]))
        except (ValueError, TypeError):
            continue
        steps = (since - _library_order(first)).total_seconds() / period
        count = rule.get("COUNT")
        if count:
            steps = min(steps, int(count[0]))
        if steps > _MAX_RULE_STEPS:
            dense.add(str(component.get("UID", "")))
            titles.append(repr(_text(component, "SUMMARY") or "(no title)"))
        else:
            shortest = min(shortest, dt.timedelta(seconds=period))
    if dense:
        calendar.subcomponents[:] = [
            c
            for c in calendar.subcomponents
            if not (c.name == "VEVENT" and str(c.get("UID", "")) in dense)
        ]
    return Survey(titles, shortest, loose)


def _library_order(value: dt.date) -> dt.datetime:
    """A start as recurring-ical-events orders it: dates and floating times as UTC."""
    if not isinstance(value, dt.datetime):
        return dt.datetime.combine(value, dt.time(), _UTC)
    if value.tzinfo is None:
        return value.replace(tzinfo=_UTC)
    return value.astimezone(_UTC)


def _event(component: Any, source: str, query: Query) -> Event | None:
    """The occurrence as an ``Event``, or None when it is cancelled or outside the range."""
    if str(component.get("STATUS", "")).upper() == "CANCELLED":
        return None
    start, end = component.start, component.end
    if not isinstance(start, dt.datetime):
        return _all_day(component, start, end, source, query)
    floating = start.tzinfo is None
    if floating:
        start = start.replace(tzinfo=query.zone)
        zone_name = _zone_key(query.zone)
    else:
        zone_name = _zone_name(component, start)
    if not isinstance(end, dt.datetime):
        end = dt.datetime.combine(end, dt.time(), start.tzinfo)
    elif end.tzinfo is None:
        end = end.replace(tzinfo=start.tzinfo)
    begin, finish = start.astimezone(_UTC), end.astimezone(_UTC)
    finish = max(finish, begin)
    if not _overlaps(begin, finish, query):
        return None
    data = _common(component, source, query)
    data.update(
        start=_iso_utc(begin),
        end=_iso_utc(finish),
        all_day=False,
        timezone=zone_name,
        floating=floating,
        local_start=start.isoformat(),
        local_end=end.isoformat(),
    )
    return Event(begin, finish, start, end, _ordered(data))


def _all_day(
    component: Any, start: dt.date, end: dt.date, source: str, query: Query
) -> Event | None:
    if isinstance(end, dt.datetime):
        end = end.date()
    if end <= start:
        end = start + dt.timedelta(days=1)
    begin = dt.datetime.combine(start, dt.time(), query.zone).astimezone(_UTC)
    finish = dt.datetime.combine(end, dt.time(), query.zone).astimezone(_UTC)
    if not _overlaps(begin, finish, query):
        return None
    data = _common(component, source, query)
    data.update(
        start=start.isoformat(),
        end=end.isoformat(),
        all_day=True,
        timezone=None,
        floating=False,
        local_start=None,
        local_end=None,
    )
    return Event(begin, finish, start, end, _ordered(data))


def _overlaps(begin: dt.datetime, finish: dt.datetime, query: Query) -> bool:
    """Whether the event touches [start, end); an instant counts when it lies inside."""
    if finish > begin:
        return begin < query.end and finish > query.start
    return query.start <= begin < query.end


_FIELDS: Final = (
    "title",
    "start",
    "end",
    "all_day",
    "timezone",
    "floating",
    "local_start",
    "local_end",
    "location",
    "description",
    "url",
    "source",
)


def _ordered(data: dict[str, Any]) -> dict[str, Any]:
    return {key: data[key] for key in _FIELDS}


def _common(component: Any, source: str, query: Query) -> dict[str, Any]:
    description = _text(component, "DESCRIPTION")
    if description is not None:
        if query.description_chars == 0:
            description = None
        elif len(description) > query.description_chars:
            description = description[: query.description_chars].rstrip() + "…"
    return {
        "title": _text(component, "SUMMARY") or "(no title)",
        "location": _text(component, "LOCATION"),
        "description": description,
        "url": _text(component, "URL"),
        "source": source,
    }


def _text(component: Any, name: str) -> str | None:
    value = component.get(name)
    if isinstance(value, list):  # a property given more than once
        value = value[0] if value else None
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _zone_name(component: Any, start: dt.datetime) -> str:
    """The name the source used for the start's zone (its TZID), or the zone's own key."""
    prop = component.get("DTSTART")
    params = getattr(prop, "params", None)
    tzid = params.get("TZID") if params is not None else None
    if tzid:
        return str(tzid)
    return _zone_key(start.tzinfo)


def _zone_key(zone: dt.tzinfo | None) -> str:
    key = getattr(zone, "key", None)
    if isinstance(key, str) and key:
        return "UTC" if key in ("Etc/UTC", "Etc/Zulu", "Zulu", "UCT") else key
    name = zone.tzname(None) if zone is not None else None
    return name or "UTC"


# --- results --------------------------------------------------------------------------------


def _all_failed(failures: list[ToolFailure]) -> ToolFailure:
    if len(failures) == 1:
        return failures[0]
    types = {f.type for f in failures}
    kind = failures[0].type if len(types) == 1 else ErrorType.EXECUTION
    return ToolFailure(
        kind,
        "every calendar source failed: " + "; ".join(f"{f.message} ({f.type})" for f in failures),
        retry_possible=any(f.retry_possible for f in failures),
    )


def _unique_citations(citations: Iterable[Citation]) -> list[Citation]:
    seen: dict[tuple[str, str], Citation] = {}
    for citation in citations:
        seen.setdefault((citation.title, citation.url), citation)
    return list(seen.values())


def _iso_utc(moment: dt.datetime) -> str:
    return moment.astimezone(_UTC).isoformat().replace("+00:00", "Z")


def _brief(exc: BaseException, limit: int = 160) -> str:
    # icalendar quotes the raw bytes after ": b'"; they add nothing for a reader.
    text = " ".join(str(exc).split(": b'")[0].split()) or type(exc).__name__
    if isinstance(exc, KeyError):
        text = f"missing {text}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _render(events: list[Event], query: Query, sources: list[str], truncated: bool) -> str:
    span = f"from {_iso_utc(query.start)} to {_iso_utc(query.end)}"
    where = ", ".join(sources)
    if not events:
        return f"No events {span} in {where}."
    noun = "event" if len(events) == 1 else "events"
    lines = [f"{len(events)} {noun} {span} in {where}:"]
    for number, event in enumerate(events, 1):
        data = event.data
        lines.append(f"{number}. {_when(event)}: {data['title']} [{data['source']}]")
        if data["location"]:
            lines.append(f"   Location: {data['location']}")
        if data["url"]:
            lines.append(f"   Link: {data['url']}")
        if data["description"]:
            lines.append(f"   {' '.join(str(data['description']).split())}")
    if truncated:
        lines.append(
            f"More events fall in this range; raise max_results (now {query.limit}) or "
            "narrow the range to see them."
        )
    return "\n".join(lines)


def _when(event: Event) -> str:
    start, end = event.local_start, event.local_end
    if not isinstance(start, dt.datetime) or not isinstance(end, dt.datetime):
        last = end - dt.timedelta(days=1)
        if last > start:
            return f"{start.isoformat()} to {last.isoformat()} (all day)"
        return f"{start.isoformat()} (all day)"
    zone = event.data["timezone"]
    same_day = end.date() == start.date()
    finish = f"{end:%H:%M}" if same_day else f" {end:%Y-%m-%d %H:%M}"
    text = f"{start:%Y-%m-%d %H:%M}-{finish}"
    text += f" {zone}"
    in_utc = f"{event.begin:%Y-%m-%d %H:%M} UTC"
    if event.data["floating"]:
        text += " (the calendar gave no time zone" + (f"; {in_utc})" if zone != "UTC" else ")")
    elif zone != "UTC":
        text += f" ({in_utc})"
    return text
