"""The forecast service's client, imported only when the tool runs (it brings in httpx)."""

from __future__ import annotations

import json
from urllib.parse import quote

from toolplug import ErrorType, ToolContext, ToolResult
from toolplug.http import FetchResult, NetworkError, fetch, guard_failure

SERVICE = "the forecast service"


async def _get(location: str, days: int, context: ToolContext) -> FetchResult:
    url = f"{context.config['base_url']}/forecast?q={quote(location)}&days={days}"
    headers = {"Authorization": f"Bearer {context.config['api_key']}"}
    try:
        return await fetch("GET", url, policy=context.network, headers=headers)
    except NetworkError as exc:
        raise guard_failure(exc, f"{SERVICE}: {exc.reason}") from None


async def forecast(location: str, days: int, context: ToolContext) -> ToolResult:
    """The forecast for ``location``: one line a day for the model, the days as data."""
    response = await _get(location, days, context)
    if response.status == 404:
        return ToolResult.failure(
            ErrorType.NOT_FOUND,
            f"{SERVICE} does not know {location!r}; give a city or town, "
            "optionally with its country ('Lyon, FR')",
        )
    if response.status in (401, 403):
        return ToolResult.failure(
            ErrorType.PERMISSION,
            f"{SERVICE} rejected the API key; the user must check WEATHER_API_KEY "
            "(or [tools.weather_forecast] api_key). Do not retry.",
        )
    if response.status == 429:
        wait = response.headers.get("retry-after", "60")
        return ToolResult.failure(
            ErrorType.RATE_LIMIT,
            f"{SERVICE} quota is used up; try again in {wait} seconds",
            retry_possible=True,
        )
    if response.status >= 500:
        return ToolResult.failure(
            ErrorType.NETWORK,
            f"{SERVICE} answered HTTP {response.status}; try again later",
            retry_possible=True,
            details={"status": response.status},
        )
    try:
        found = [
            {
                "date": str(day["date"]),
                "summary": str(day["summary"]),
                "min_c": float(day["min_c"]),
                "max_c": float(day["max_c"]),
            }
            for day in json.loads(response.text())["days"]
        ]
    except (ValueError, KeyError, TypeError):
        return ToolResult.failure(
            ErrorType.PARSE,
            f"{SERVICE} answered HTTP {response.status} with something that is not a forecast",
            details={"status": response.status},
        )
    lines = [f"{d['date']}: {d['summary']}, {d['min_c']:g} to {d['max_c']:g} °C" for d in found]
    return ToolResult.success(
        "\n".join(lines) or f"{SERVICE} has no forecast for {location!r}",
        {"location": location, "days": found},
    )
