"""toolplug-calendar: upcoming events from any iCalendar (RFC 5545) source.

Google Calendar's secret address, Outlook's published calendars, Apple iCloud, Nextcloud and
plain ``.ics`` files all speak iCalendar, so one tool reads them all::

    [tools.calendar]
    sources = [
      { name = "team", url = "https://calendar.example/team.ics" },
      { name = "local", path = "/home/me/holidays.ics" },
    ]

The tool is offered when at least one source is configured (capability ``calendar``). URL
sources are fetched through the network guard (``toolplug.http``), so a URL the ``[network]``
policy refuses fails with a ``PermissionError`` while file sources keep working.

This module imports only toolplug and the standard library; the iCalendar parsing lives in
``toolplug_calendar._events`` and is imported when the tool runs.
"""

from __future__ import annotations

from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from toolplug import (
    Annotations,
    Capability,
    Check,
    ConfigField,
    DetectContext,
    ErrorSpec,
    Example,
    Guidelines,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
    provides,
)

__all__ = [
    "CAPABILITY",
    "TOOLPLUG_CONTRACT",
    "CalendarTool",
    "register_capabilities",
    "register_tools",
]

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

_SOURCE_SCHEMA: Final[dict[str, Any]] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
                "description": "Short name the agent uses to pick this source",
            },
            "url": {
                "type": "string",
                "pattern": "^(https?|webcals?)://",
                "description": "http(s) or webcal address of an .ics feed",
            },
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "Path of an .ics file on this machine",
            },
        },
        "required": ["name"],
        "oneOf": [{"required": ["url"]}, {"required": ["path"]}],
        "additionalProperties": False,
    },
}

_EVENT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "start": {"type": "string", "description": "UTC ISO 8601, or YYYY-MM-DD when all_day"},
        "end": {
            "type": "string",
            "description": "UTC ISO 8601, or YYYY-MM-DD (exclusive: the day after) when all_day",
        },
        "all_day": {"type": "boolean"},
        "timezone": {
            "type": ["string", "null"],
            "description": "The event's own time zone (TZID or UTC); null for all-day events",
        },
        "floating": {
            "type": "boolean",
            "description": "The source gave no time zone; times were read in the configured one",
        },
        "local_start": {"type": ["string", "null"], "description": "Start in the event's zone"},
        "local_end": {"type": ["string", "null"], "description": "End in the event's zone"},
        "location": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"]},
        "url": {"type": ["string", "null"]},
        "source": {"type": "string"},
    },
    "required": ["title", "start", "end", "all_day", "source"],
}


def _calendar_problem(ctx: DetectContext) -> str | None:
    """Why the ``calendar`` capability is missing, or None when a usable source exists."""
    sources = ctx.config("tools.calendar.sources")
    if not sources:
        return "no calendar source is configured ([tools.calendar] sources is empty)"
    names = [str(s.get("name")) for s in sources if isinstance(s, dict)]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        return f"source names must be unique; repeated: {', '.join(repeated)}"
    zone = ctx.config("tools.calendar.timezone")
    if zone is not None:
        try:
            ZoneInfo(str(zone))
        except (ZoneInfoNotFoundError, ValueError):
            return f"[tools.calendar] timezone {zone!r} is not an IANA time zone name"
    offline = ctx.config("offline") is True
    if offline and all(isinstance(s, dict) and "url" in s for s in sources):
        return "offline = true and every configured calendar source is a URL"
    return None


CAPABILITY: Final = Capability(
    name="calendar",
    description="At least one iCalendar source (URL or .ics file) is configured.",
    detectors=(Check(_calendar_problem),),
    setup=(
        "Add a calendar source to the configuration (toolplug.toml):\n"
        "[tools.calendar]\n"
        'sources = [{ name = "team", url = "https://calendar.example/team.ics" }]\n'
        "For Google Calendar use the calendar's 'Secret address in iCal format' "
        "(Settings > Integrate calendar); Outlook, iCloud and Nextcloud publish an .ics "
        'link the same way. A local file works too: { name = "local", path = "/x.ics" }.'
    ),
)


class CalendarTool(Tool):
    """Lists the events of the configured iCalendar sources in a time range."""

    metadata = ToolMetadata(
        name="calendar",
        title="Calendar events",
        description="List upcoming events from the configured iCalendar calendars.",
        category="research",
        optionality="optional",
        usage_hint=(
            "Use when the content needs real dates from the user's calendars: upcoming "
            "events, deadlines, meetups, or a 'what's coming up' section."
        ),
        guidelines=Guidelines(
            do=(
                "The content should mention upcoming events, deadlines or conferences",
                "The user asks what is on their (or their team's) schedule",
                "A newsletter needs a 'what's coming' section",
                "You need the exact date or time of a known recurring meeting",
            ),
            do_not=(
                "The content is timeless and would not change with the date",
                "The events you would find are not relevant to the topic",
                "The user wants only the core content, without schedule details",
                "You need events from a calendar that is not configured; the tool cannot "
                "reach arbitrary calendars",
            ),
            common_mistakes=(
                "Guessing a source name: leave source out to search all, or use a name the "
                "error message lists",
                "Sending a range where time_max is not after time_min",
                "Reading an all-day event's end as its last day: it is the day after",
                "Presenting UTC times to the user without converting them; local_start and "
                "timezone give the event's own local time",
                "Asking for a very wide range with a small max_results and assuming the list "
                "is complete: check truncated",
            ),
        ),
        requires_capabilities=("calendar",),
        produces=("events", "citations"),
        parameters={
            "type": "object",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": ["list_events"],
                    "description": "Calendar operation; list_events is the only one",
                },
                "time_min": {
                    "type": "string",
                    "minLength": 1,
                    "description": (
                        "Start of the range, RFC 3339 (2025-03-01T09:00:00Z). A bare date "
                        "or a time without offset is read in the configured time zone. "
                        "Default: now"
                    ),
                },
                "time_max": {
                    "type": "string",
                    "minLength": 1,
                    "description": (
                        "End of the range (exclusive), same format; must be after time_min. "
                        "Default: 30 days after time_min"
                    ),
                },
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 100,
                    "default": 10,
                    "description": "Most events to return, earliest first",
                },
                "source": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Name of one configured source; default: all of them",
                },
            },
            "required": ["action"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "events": {"type": "array", "items": _EVENT_SCHEMA},
                "count": {"type": "integer"},
                "truncated": {
                    "type": "boolean",
                    "description": "More events fall in the range than max_results allowed",
                },
                "time_min": {"type": "string"},
                "time_max": {"type": "string"},
                "sources": {"type": "array", "items": {"type": "string"}},
                "failed_sources": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "source": {"type": "string"},
                            "error_type": {"type": "string"},
                            "message": {"type": "string"},
                        },
                        "required": ["source", "error_type", "message"],
                    },
                },
            },
            "required": ["events", "count", "truncated", "time_min", "time_max", "sources"],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="time_min or time_max is not a date-time, or time_max is not after time_min",
            ),
            ErrorSpec(
                type="NotFoundError",
                when="source names no configured source (the message lists them), a file "
                "source does not exist, or a URL answers 404/410",
            ),
            ErrorSpec(
                type="ParseError",
                when="a source is not valid iCalendar data, or is larger than max_bytes",
            ),
            ErrorSpec(
                type="PermissionError",
                when="the network guard refuses a URL source, the server answers 401/403, "
                "or a file source cannot be read",
            ),
            ErrorSpec(type="TimeoutError", when="a URL source took too long", retry_possible=True),
            ErrorSpec(
                type="NetworkError",
                when="a URL source's host could not be resolved or reached",
                retry_possible=True,
            ),
            ErrorSpec(type="RateLimitError", when="the server answered 429", retry_possible=True),
            ErrorSpec(
                type="UnavailableError",
                when="the server answered 5xx, or the tool's configuration is unusable",
                retry_possible=True,
            ),
            ErrorSpec(type="ExecutionError", when="the server answered another HTTP error"),
        ),
        examples=(
            Example(
                description="What is coming up in the next 30 days, in every calendar",
                input={"action": "list_events"},
            ),
            Example(
                description="The team calendar's events in March 2025",
                input={
                    "action": "list_events",
                    "time_min": "2025-03-01T00:00:00Z",
                    "time_max": "2025-04-01T00:00:00Z",
                    "source": "team",
                    "max_results": 25,
                },
                output={
                    "events": [
                        {
                            "title": "Planning",
                            "start": "2025-03-04T09:00:00Z",
                            "end": "2025-03-04T10:00:00Z",
                            "all_day": False,
                            "timezone": "Europe/Berlin",
                            "floating": False,
                            "local_start": "2025-03-04T10:00:00+01:00",
                            "local_end": "2025-03-04T11:00:00+01:00",
                            "location": "Room 2",
                            "description": None,
                            "url": None,
                            "source": "team",
                        }
                    ],
                    "count": 1,
                    "truncated": False,
                    "time_min": "2025-03-01T00:00:00Z",
                    "time_max": "2025-04-01T00:00:00Z",
                    "sources": ["team"],
                    "failed_sources": [],
                },
            ),
        ),
        config_fields=(
            ConfigField(
                name="sources",
                type="array",
                description=(
                    "The calendars: a list of { name, url } or { name, path }; webcal:// is "
                    "read as https://"
                ),
                default=[],
                json_schema=_SOURCE_SCHEMA,
            ),
            ConfigField(
                name="timezone",
                type="string",
                description=(
                    "IANA time zone for floating times, all-day boundaries and time_min/"
                    "time_max given without an offset"
                ),
                default="UTC",
            ),
            ConfigField(
                name="description_chars",
                type="integer",
                description="Longest event description returned, in characters (0 omits it)",
                default=500,
                json_schema={"type": "integer", "minimum": 0, "maximum": 100_000},
            ),
            ConfigField(
                name="max_bytes",
                type="integer",
                description="Largest calendar read from one source, in bytes",
                default=10_000_000,
                json_schema={"type": "integer", "minimum": 1},
            ),
        ),
        required_packages=("toolplug-calendar",),
        setup_instructions=(
            "pip install toolplug-calendar, then add sources under [tools.calendar]. URL "
            "sources also need the network: not offline = true, and for addresses on a "
            "private network an entry in [network] allow."
        ),
        # The user's own calendar, whose event titles and descriptions anyone who sends an
        # invitation writes. The arguments filter configured sources here: none leaves.
        trust=Trust(output="untrusted", private=True),
        annotations=Annotations(read_only=True, idempotent=True, open_world=True),
        timeout_seconds=30,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """List the events of the chosen sources in the requested range."""
        from toolplug_calendar._events import list_events

        return await list_events(arguments, context)


register_tools = provides(CalendarTool)
register_capabilities = provides(CAPABILITY)
