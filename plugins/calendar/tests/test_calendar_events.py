"""The calendar tool's behaviour against real ICS files, read from disk and over loopback HTTP."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pytest_httpserver import HTTPServer

import toolplug
from toolplug import ToolResult
from toolplug_calendar import CalendarTool
from toolplug_calendar._events import http_url

Load = Callable[..., toolplug.Registry]
Call = Callable[[toolplug.Registry, Mapping[str, Any]], ToolResult]
Serve = Callable[[str, str], str]

JANUARY = {"time_min": "2025-01-01T00:00:00Z", "time_max": "2025-02-05T00:00:00Z"}
MARCH = {"time_min": "2025-03-15T00:00:00Z", "time_max": "2025-04-05T00:00:00Z"}
RETURNS = Draft202012Validator(CalendarTool.metadata.returns or {})


def list_events(call: Call, registry: toolplug.Registry, **arguments: Any) -> dict[str, Any]:
    """Call list_events; assert success and a result that matches the returns schema."""
    result = call(registry, {"action": "list_events", "max_results": 100, **arguments})
    assert result.error is None, result.error
    RETURNS.validate(result.data)
    assert isinstance(result.data, dict)
    return result.data


def spans(data: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["title"], e["start"], e["end"]) for e in data["events"]]


def write(tmp_path: Path, name: str, *events: str) -> str:
    """A calendar file made of the given VEVENT bodies; returns its path."""
    body = "".join(f"BEGIN:VEVENT\n{e.strip()}\nEND:VEVENT\n" for e in events)
    path = tmp_path / name
    path.write_text(
        f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//test//EN\n{body}END:VCALENDAR\n",
        encoding="utf-8",
    )
    return str(path)


# --- recurrence -----------------------------------------------------------------------------

# Weekly on Mondays 15:00Z from 6 Jan, 5 times: 20 Jan is excluded (EXDATE), Wed 22 Jan is
# added (RDATE), 27 Jan is moved to Tue 28 Jan 17:00 (RECURRENCE-ID override).
TEAM_JANUARY = [
    ("Team sync", "2025-01-06T15:00:00Z", "2025-01-06T16:00:00Z"),
    ("Release review", "2025-01-09T13:00:00Z", "2025-01-09T14:00:00Z"),
    ("Team sync", "2025-01-13T15:00:00Z", "2025-01-13T16:00:00Z"),
    ("Company holiday", "2025-01-15", "2025-01-16"),
    ("Team sync", "2025-01-22T15:00:00Z", "2025-01-22T16:00:00Z"),
    ("Team sync (moved)", "2025-01-28T17:00:00Z", "2025-01-28T18:00:00Z"),
    ("Team sync", "2025-02-03T15:00:00Z", "2025-02-03T16:00:00Z"),
]


def test_weekly_series_with_exdate_rdate_and_moved_instance(
    load: Load, call: Call, data: Path
) -> None:
    registry = load([{"name": "team", "path": str(data / "team.ics")}])
    found = list_events(call, registry, **JANUARY)
    # The cancelled talk on 8 Jan (STATUS:CANCELLED) is not listed.
    assert spans(found) == TEAM_JANUARY
    assert found["count"] == 7
    assert found["truncated"] is False
    assert found["sources"] == ["team"]
    assert found["failed_sources"] == []
    assert found["time_min"] == "2025-01-01T00:00:00Z"
    assert found["time_max"] == "2025-02-05T00:00:00Z"
    moved = found["events"][5]
    assert moved["location"] == "Room 4"
    assert moved["timezone"] == "UTC"
    assert moved["local_start"] == "2025-01-28T17:00:00+00:00"


def test_the_same_events_over_http(
    load: Load, call: Call, data: Path, serve: Serve, ics_server: HTTPServer
) -> None:
    from_disk = list_events(
        call, load([{"name": "team", "path": str(data / "team.ics")}]), **JANUARY
    )
    url = serve("/calendars/team.ics", "team.ics")
    over_http = list_events(call, load([{"name": "team", "url": url}]), **JANUARY)
    assert over_http["events"] == from_disk["events"]
    assert len(ics_server.log) == 1
    request, _ = ics_server.log[0]
    assert "text/calendar" in request.headers["Accept"]


def test_webcal_addresses_are_fetched_over_https() -> None:
    assert http_url("webcal://p01-caldav.icloud.com/published/2/x") == (
        "https://p01-caldav.icloud.com/published/2/x"
    )
    assert http_url("WEBCALS://calendar.example/a.ics") == "https://calendar.example/a.ics"
    assert http_url("https://calendar.example/a.ics") == "https://calendar.example/a.ics"


def test_an_event_that_began_before_the_range_is_included(
    load: Load, call: Call, tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        "long.ics",
        "UID:conf\nSUMMARY:Conference\nDTSTART:20250110T080000Z\nDTEND:20250112T180000Z",
        "UID:before\nSUMMARY:Over already\nDTSTART:20250109T080000Z\nDTEND:20250109T090000Z",
    )
    found = list_events(
        call,
        load([{"name": "x", "path": path}]),
        time_min="2025-01-11T00:00:00Z",
        time_max="2025-01-11T12:00:00Z",
    )
    assert spans(found) == [("Conference", "2025-01-10T08:00:00Z", "2025-01-12T18:00:00Z")]


# --- time zones -----------------------------------------------------------------------------


def test_all_day_events_stay_dates(load: Load, call: Call, data: Path) -> None:
    registry = load([{"name": "team", "path": str(data / "team.ics")}])
    result = call(
        registry,
        {
            "action": "list_events",
            "time_min": "2025-01-15T00:00:00Z",
            "time_max": "2025-02-12T00:00:00Z",
            "max_results": 100,
        },
    )
    assert result.data is not None
    all_day = [e for e in result.data["events"] if e["all_day"]]
    assert [(e["title"], e["start"], e["end"]) for e in all_day] == [
        ("Company holiday", "2025-01-15", "2025-01-16"),
        ("Offsite", "2025-02-10", "2025-02-13"),  # three days; the end is exclusive
    ]
    assert all(e["timezone"] is None and e["local_start"] is None for e in all_day)
    assert "2025-01-15 (all day): Company holiday [team]" in result.output
    assert "2025-02-10 to 2025-02-12 (all day): Offsite [team]" in result.output


@pytest.mark.parametrize(
    ("zone", "listed"),
    [
        # In UTC the holiday covers 15 Jan 00:00Z..16 Jan 00:00Z and touches 02:00-03:00Z.
        ("UTC", True),
        # In New York it covers 15 Jan 05:00Z..16 Jan 05:00Z: it has not begun at 02:00Z.
        ("America/New_York", False),
    ],
)
def test_all_day_boundaries_follow_the_configured_zone(
    load: Load, call: Call, data: Path, zone: str, listed: bool
) -> None:
    registry = load([{"name": "team", "path": str(data / "team.ics")}], timezone=zone)
    found = list_events(
        call, registry, time_min="2025-01-15T02:00:00Z", time_max="2025-01-15T03:00:00Z"
    )
    assert [e["title"] for e in found["events"]] == (["Company holiday"] if listed else [])


def test_dst_change_shifts_utc_but_not_local_time(load: Load, call: Call, data: Path) -> None:
    registry = load([{"name": "berlin", "path": str(data / "berlin.ics")}])
    found = list_events(call, registry, **MARCH)
    standups = [e for e in found["events"] if e["title"] == "Standup Berlin"]
    # Europe/Berlin leaves CET (+01:00) for CEST (+02:00) on 30 March 2025.
    assert [(e["start"], e["end"]) for e in standups] == [
        ("2025-03-18T09:00:00Z", "2025-03-18T09:30:00Z"),
        ("2025-03-25T09:00:00Z", "2025-03-25T09:30:00Z"),
        ("2025-04-01T08:00:00Z", "2025-04-01T08:30:00Z"),
    ]
    assert [(e["local_start"], e["local_end"]) for e in standups] == [
        ("2025-03-18T10:00:00+01:00", "2025-03-18T10:30:00+01:00"),
        ("2025-03-25T10:00:00+01:00", "2025-03-25T10:30:00+01:00"),
        ("2025-04-01T10:00:00+02:00", "2025-04-01T10:30:00+02:00"),
    ]
    assert {e["timezone"] for e in standups} == {"Europe/Berlin"}
    assert not any(e["floating"] for e in standups)


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        # No timezone configured: floating 12:00 is read as 12:00 UTC.
        (None, ("2025-03-19T12:00:00Z", "2025-03-19T13:00:00Z", "2025-03-19T12:00:00+00:00")),
        # New York is on EDT (-04:00) since 9 March 2025.
        (
            "America/New_York",
            ("2025-03-19T16:00:00Z", "2025-03-19T17:00:00Z", "2025-03-19T12:00:00-04:00"),
        ),
        # Berlin is still on CET (+01:00) on 19 March.
        (
            "Europe/Berlin",
            ("2025-03-19T11:00:00Z", "2025-03-19T12:00:00Z", "2025-03-19T12:00:00+01:00"),
        ),
    ],
)
def test_floating_times_are_read_in_the_configured_zone(
    load: Load, call: Call, data: Path, zone: str | None, expected: tuple[str, str, str]
) -> None:
    settings = {} if zone is None else {"timezone": zone}
    registry = load([{"name": "berlin", "path": str(data / "berlin.ics")}], **settings)
    found = list_events(call, registry, **MARCH)
    (lunch,) = [e for e in found["events"] if e["title"] == "Lunch"]
    assert (lunch["start"], lunch["end"], lunch["local_start"]) == expected
    assert lunch["floating"] is True
    assert lunch["timezone"] == (zone or "UTC")


@pytest.mark.parametrize(
    ("time_min", "expected"),
    [
        ("2025-03-19", "2025-03-18T23:00:00Z"),  # a date: midnight in Berlin (CET)
        ("2025-03-19T08:00:00", "2025-03-19T07:00:00Z"),  # no offset: Berlin time
        ("2025-03-19T08:00:00+05:30", "2025-03-19T02:30:00Z"),  # an explicit offset wins
        ("2025-03-19T08:00:00Z", "2025-03-19T08:00:00Z"),
    ],
)
def test_range_bounds_without_offset_use_the_configured_zone(
    load: Load, call: Call, data: Path, time_min: str, expected: str
) -> None:
    registry = load([{"name": "b", "path": str(data / "berlin.ics")}], timezone="Europe/Berlin")
    found = list_events(call, registry, time_min=time_min, time_max="2025-04-30T00:00:00Z")
    assert found["time_min"] == expected


# --- merging, limits, text ------------------------------------------------------------------


def test_sources_are_merged_and_sorted_by_start_then_title(
    load: Load, call: Call, data: Path, tmp_path: Path
) -> None:
    same_time = "DTSTART:20250106T150000Z\nDTEND:20250106T153000Z"
    extra = write(tmp_path, "extra.ics", f"UID:a\nSUMMARY:Announcements\n{same_time}")
    registry = load(
        [
            {"name": "team", "path": str(data / "team.ics")},
            {"name": "berlin", "path": str(data / "berlin.ics")},
            {"name": "extra", "path": extra},
        ]
    )
    found = list_events(
        call, registry, time_min="2025-01-01T00:00:00Z", time_max="2025-04-05T00:00:00Z"
    )
    titles = [(e["title"], e["source"]) for e in found["events"]]
    # Same start as "Team sync": the title decides.
    assert titles[:2] == [("Announcements", "extra"), ("Team sync", "team")]
    assert titles[-1] == ("Standup Berlin", "berlin")
    keys = [e["start"] if not e["all_day"] else e["start"] + "T00:00:00Z" for e in found["events"]]
    assert keys == sorted(keys)
    assert found["sources"] == ["team", "berlin", "extra"]


def test_max_results_keeps_the_earliest_and_flags_the_rest(
    load: Load, call: Call, data: Path
) -> None:
    registry = load([{"name": "team", "path": str(data / "team.ics")}])
    result = call(registry, {"action": "list_events", "max_results": 3, **JANUARY})
    assert result.data is not None
    assert spans(result.data) == TEAM_JANUARY[:3]
    assert result.data["count"] == 3
    assert result.data["truncated"] is True
    assert "raise max_results" in result.output


def test_description_is_capped(load: Load, call: Call, data: Path) -> None:
    def review(**settings: Any) -> Any:
        registry = load([{"name": "team", "path": str(data / "team.ics")}], **settings)
        found = list_events(
            call, registry, time_min="2025-01-09T00:00:00Z", time_max="2025-01-10T00:00:00Z"
        )
        (event,) = found["events"]
        return event["description"]

    full = review(description_chars=10_000)
    assert full.startswith("Walk through the release notes. Lorem ipsum dolor sit amet, con")
    assert full.endswith("END-OF-DESCRIPTION")
    default = review()
    assert len(default) <= 501
    assert default.endswith("…")
    assert full.startswith(default[:-1])
    assert review(description_chars=4) == "Walk…"
    assert review(description_chars=0) is None


def test_readable_output_and_citations(load: Load, call: Call, data: Path) -> None:
    registry = load(
        [
            {"name": "team", "path": str(data / "team.ics")},
            {"name": "berlin", "path": str(data / "berlin.ics")},
        ]
    )
    result = call(registry, {"action": "list_events", **JANUARY})
    assert result.output.startswith(
        "7 events from 2025-01-01T00:00:00Z to 2025-02-05T00:00:00Z in team, berlin:"
    )
    assert "1. 2025-01-06 15:00-16:00 UTC: Team sync [team]" in result.output
    assert "   Location: Room 4" in result.output
    assert "   Link: https://example.org/releases/2025-01" in result.output
    assert [(c.title, c.url) for c in result.citations] == [
        ("Release review", "https://example.org/releases/2025-01")
    ]
    march = call(registry, {"action": "list_events", "source": "berlin", **MARCH})
    assert (
        "2025-04-01 10:00-10:30 Europe/Berlin (2025-04-01 08:00 UTC): Standup Berlin [berlin]"
        in march.output
    )
    assert "12:00-13:00 UTC (the calendar gave no time zone): Lunch" in march.output


def test_an_empty_range_says_so(load: Load, call: Call, data: Path) -> None:
    registry = load([{"name": "team", "path": str(data / "team.ics")}])
    result = call(
        registry,
        {"action": "list_events", "time_min": "2030-01-01T00:00:00Z", "time_max": "2030-02-01"},
    )
    assert result.data is not None
    assert result.data["events"] == []
    assert result.output == ("No events from 2030-01-01T00:00:00Z to 2030-02-01T00:00:00Z in team.")


def test_default_range_is_the_next_thirty_days(load: Load, call: Call, tmp_path: Path) -> None:
    daily = write(
        tmp_path,
        "daily.ics",
        "UID:d\nSUMMARY:Daily\nDTSTART:20200101T120000Z\nDTEND:20200101T121500Z\nRRULE:FREQ=DAILY",
    )
    before = dt.datetime.now(dt.UTC)
    result = call(load([{"name": "d", "path": daily}]), {"action": "list_events"})
    after = dt.datetime.now(dt.UTC)
    assert result.data is not None
    start = dt.datetime.fromisoformat(result.data["time_min"])
    end = dt.datetime.fromisoformat(result.data["time_max"])
    assert before - dt.timedelta(seconds=1) <= start <= after
    assert end - start == dt.timedelta(days=30)
    assert result.data["count"] == 10  # the default max_results
    assert result.data["truncated"] is True
    first = dt.datetime.fromisoformat(result.data["events"][0]["end"])
    assert start < first <= start + dt.timedelta(days=1)


def test_a_series_too_dense_to_expand_is_skipped_with_a_warning(
    load: Load, call: Call, tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        "dense.ics",
        "UID:tick\nSUMMARY:Tick\nDTSTART:20000101T000000Z\nRRULE:FREQ=MINUTELY",
        "UID:ok\nSUMMARY:Real meeting\nDTSTART:20250107T100000Z\nDTEND:20250107T110000Z",
    )
    result = call(load([{"name": "d", "path": path}]), {"action": "list_events", **JANUARY})
    assert result.data is not None
    assert [e["title"] for e in result.data["events"]] == ["Real meeting"]
    assert any("repeat too often" in w and "'Tick'" in w for w in result.warnings)


def test_a_dense_recent_series_stops_at_max_results(load: Load, call: Call, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "minutes.ics",
        "UID:m\nSUMMARY:Minute\nDTSTART:20241231T000000Z\nDURATION:PT30S\nRRULE:FREQ=MINUTELY",
    )
    found = list_events(
        call,
        load([{"name": "m", "path": path}]),
        time_min="2025-01-01T00:00:00Z",
        time_max="2026-01-01T00:00:00Z",
        max_results=3,
    )
    assert spans(found) == [
        ("Minute", "2025-01-01T00:00:00Z", "2025-01-01T00:00:30Z"),
        ("Minute", "2025-01-01T00:01:00Z", "2025-01-01T00:01:30Z"),
        ("Minute", "2025-01-01T00:02:00Z", "2025-01-01T00:02:30Z"),
    ]
    assert found["truncated"] is True


# --- errors ---------------------------------------------------------------------------------


def test_a_malformed_file_is_a_parse_error_naming_the_source(
    load: Load, call: Call, data: Path
) -> None:
    result = call(
        load([{"name": "broken", "path": str(data / "broken.ics")}]),
        {"action": "list_events", **JANUARY},
    )
    assert result.error is not None
    assert result.error.type == "ParseError"
    assert "calendar source 'broken' is not valid iCalendar data" in result.error.message
    assert result.error.retry_possible is False


def test_an_html_page_instead_of_a_calendar_is_a_parse_error(
    load: Load, call: Call, ics_server: HTTPServer
) -> None:
    ics_server.expect_request("/login").respond_with_data(
        "<html><body>Please sign in</body></html>", content_type="text/html"
    )
    url = f"http://127.0.0.1:{ics_server.port}/login"
    result = call(load([{"name": "web", "url": url}]), {"action": "list_events", **JANUARY})
    assert result.error is not None
    assert result.error.type == "ParseError"
    assert "'web'" in result.error.message


def test_one_broken_source_leaves_the_others_with_a_warning(
    load: Load, call: Call, data: Path
) -> None:
    registry = load(
        [
            {"name": "team", "path": str(data / "team.ics")},
            {"name": "broken", "path": str(data / "broken.ics")},
        ]
    )
    result = call(registry, {"action": "list_events", "max_results": 100, **JANUARY})
    assert result.error is None
    assert result.data is not None
    assert spans(result.data) == TEAM_JANUARY
    assert result.data["failed_sources"] == [
        {
            "source": "broken",
            "error_type": "ParseError",
            "message": result.data["failed_sources"][0]["message"],
        }
    ]
    assert "'broken'" in result.data["failed_sources"][0]["message"]
    (warning,) = result.warnings
    assert "'broken'" in warning
    assert "ParseError" in warning


def test_when_every_source_fails_the_call_fails(load: Load, call: Call, data: Path) -> None:
    registry = load(
        [
            {"name": "one", "path": str(data / "broken.ics")},
            {"name": "two", "path": str(data / "broken.ics")},
        ]
    )
    result = call(registry, {"action": "list_events", **JANUARY})
    assert result.error is not None
    assert result.error.type == "ParseError"
    assert result.error.message.startswith("every calendar source failed")
    assert "'one'" in result.error.message
    assert "'two'" in result.error.message


def test_an_event_with_a_broken_property_is_skipped_with_a_warning(
    load: Load, call: Call, tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        "partly.ics",
        "UID:bad\nSUMMARY:Bad date\nDTSTART:2025-13-45",
        "UID:good\nSUMMARY:Good\nDTSTART:20250107T100000Z\nDTEND:20250107T110000Z",
    )
    result = call(load([{"name": "p", "path": path}]), {"action": "list_events", **JANUARY})
    assert result.data is not None
    assert [e["title"] for e in result.data["events"]] == ["Good"]
    assert result.warnings == (
        "calendar source 'p': 1 event(s) with invalid properties were skipped",
    )


def test_unknown_source_lists_the_configured_names(load: Load, call: Call, data: Path) -> None:
    registry = load(
        [
            {"name": "team", "path": str(data / "team.ics")},
            {"name": "berlin", "path": str(data / "berlin.ics")},
        ]
    )
    result = call(registry, {"action": "list_events", "source": "teams"})
    assert result.error is not None
    assert result.error.type == "NotFoundError"
    assert "'teams'" in result.error.message
    assert "'team', 'berlin'" in result.error.message


def test_picking_one_source(load: Load, call: Call, data: Path) -> None:
    registry = load(
        [
            {"name": "team", "path": str(data / "team.ics")},
            {"name": "berlin", "path": str(data / "berlin.ics")},
        ]
    )
    found = list_events(
        call, registry, source="berlin", time_min="2025-01-01", time_max="2025-12-31"
    )
    assert {e["source"] for e in found["events"]} == {"berlin"}
    assert found["sources"] == ["berlin"]


def test_a_missing_file_is_not_found(load: Load, call: Call, tmp_path: Path) -> None:
    missing = tmp_path / "nope.ics"
    result = call(load([{"name": "gone", "path": str(missing)}]), {"action": "list_events"})
    assert result.error is not None
    assert result.error.type == "NotFoundError"
    assert "'gone'" in result.error.message
    assert str(missing) in result.error.message


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        # the end is not after the start
        (
            {"time_min": "2025-03-01T00:00:00Z", "time_max": "2025-02-01T00:00:00Z"},
            "time_max (2025-02-01T00:00:00Z) must be after time_min (2025-03-01T00:00:00Z)",
        ),
        # an empty range
        (
            {"time_min": "2025-03-01T00:00:00Z", "time_max": "2025-03-01T01:00:00+01:00"},
            "must be after time_min",
        ),
        # not a date-time
        ({"time_min": "next tuesday"}, "time_min: 'next tuesday' is not an RFC 3339 date-time"),
        ({"time_max": "2025-02-30"}, "time_max: '2025-02-30' is not an RFC 3339 date-time"),
        # years that would overflow date arithmetic
        ({"time_min": "9999-12-31T00:00:00Z"}, "outside the supported years 1900..2999"),
        ({"time_min": "0001-01-01"}, "time_min: 0001-01-01T00:00:00 is outside"),
        ({"time_min": "0001-01-01T00:00:00+09:00"}, "is outside the supported years"),
        ({"time_min": "2999-12-20T00:00:00Z"}, "time_max: 3000-01-19T00:00:00Z is outside"),
    ],
)
def test_bad_ranges_are_validation_errors(
    load: Load, call: Call, data: Path, arguments: dict[str, str], message: str
) -> None:
    registry = load([{"name": "team", "path": str(data / "team.ics")}])
    result = call(registry, {"action": "list_events", **arguments})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert message in result.error.message


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (404, ("NotFoundError", False)),  # wrong address, or a reset secret address
        (410, ("NotFoundError", False)),
        (401, ("PermissionError", False)),  # not shared, or needs a login
        (403, ("PermissionError", False)),
        (429, ("RateLimitError", True)),
        (503, ("UnavailableError", True)),  # the server's problem: try later
        (418, ("ExecutionError", False)),  # anything else
    ],
)
def test_http_errors_map_to_error_types(
    load: Load, call: Call, ics_server: HTTPServer, status: int, expected: tuple[str, bool]
) -> None:
    ics_server.expect_request("/private-s3cr3t/basic.ics").respond_with_data("", status=status)
    url = f"http://127.0.0.1:{ics_server.port}/private-s3cr3t/basic.ics"
    result = call(load([{"name": "team", "url": url}]), {"action": "list_events"})
    assert result.error is not None
    assert (result.error.type, result.error.retry_possible) == expected
    assert f"HTTP {status}" in result.error.message
    assert "s3cr3t" not in result.error.message  # the address may be the secret


def test_the_network_guard_refuses_loopback_unless_allowed(
    load: Load, call: Call, serve: Serve, ics_server: HTTPServer
) -> None:
    url = serve("/private-s3cr3t/basic.ics", "team.ics")
    registry = load([{"name": "team", "url": url}], network={})
    result = call(registry, {"action": "list_events", **JANUARY})
    assert result.error is not None
    assert result.error.type == "PermissionError"
    assert "network guard refused" in result.error.message
    assert "s3cr3t" not in result.error.message
    assert ics_server.log == []  # nothing was sent


def test_an_unreachable_host_is_a_retryable_network_error(load: Load, call: Call) -> None:
    # Port 9 on loopback (discard) is closed on test machines; nothing leaves the host.
    registry = load([{"name": "team", "url": "http://127.0.0.1:9/team.ics"}])
    result = call(registry, {"action": "list_events"})
    assert result.error is not None
    assert (result.error.type, result.error.retry_possible) == ("NetworkError", True)


@pytest.mark.parametrize("over_http", [False, True])
def test_a_calendar_over_max_bytes_is_refused(
    load: Load, call: Call, data: Path, serve: Serve, over_http: bool
) -> None:
    source = (
        {"name": "big", "url": serve("/team.ics", "team.ics")}
        if over_http
        else {"name": "big", "path": str(data / "team.ics")}
    )
    result = call(load([source], max_bytes=200), {"action": "list_events"})
    assert result.error is not None
    assert result.error.type == "ParseError"
    assert "larger than [tools.calendar] max_bytes (200 bytes)" in result.error.message


def test_early_stop_still_finds_a_floating_event_the_library_orders_later(
    load: Load, call: Call, tmp_path: Path
) -> None:
    # The hourly series makes the tool walk the range in windows of about four days; the
    # first window ends at 3 Jan 04:00Z and holds the three ticks. The floating event at
    # 14:00 is 00:00Z in Kiritimati (+14:00), earlier than every tick, but the library
    # orders it as 14:00Z, in the second window: stopping after the first would lose it.
    path = write(
        tmp_path,
        "order.ics",
        "UID:t\nSUMMARY:Tick\nDTSTART:20250103T010000Z\nDURATION:PT10M\nRRULE:FREQ=HOURLY;COUNT=3",
        "UID:f\nSUMMARY:Early bird\nDTSTART:20250103T140000\nDTEND:20250103T143000",
    )
    registry = load([{"name": "o", "path": path}], timezone="Pacific/Kiritimati")
    found = list_events(
        call,
        registry,
        time_min="2025-01-01T00:00:00Z",
        time_max="2025-02-01T00:00:00Z",
        max_results=2,
    )
    assert spans(found) == [
        ("Early bird", "2025-01-03T00:00:00Z", "2025-01-03T00:30:00Z"),
        ("Tick", "2025-01-03T01:00:00Z", "2025-01-03T01:10:00Z"),
    ]
    assert found["truncated"] is True


def test_a_floating_event_in_a_configured_zone_shows_utc_too(
    load: Load, call: Call, data: Path
) -> None:
    registry = load([{"name": "b", "path": str(data / "berlin.ics")}], timezone="Europe/Berlin")
    result = call(registry, {"action": "list_events", **MARCH})
    assert (
        "2025-03-19 12:00-13:00 Europe/Berlin (the calendar gave no time zone; "
        "2025-03-19 11:00 UTC): Lunch [b]"
    ) in result.output
