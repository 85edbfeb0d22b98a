"""toolplug-weather: a daily weather forecast for a place, from a forecast API."""

from __future__ import annotations

from typing import Any

from toolplug import (
    Annotations,
    Capability,
    ConfigField,
    ConfigKey,
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

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

WEATHER_KEY = Capability(
    name="weather_key",
    description="An API key for the forecast service is configured.",
    detectors=(ConfigKey("tools.weather_forecast.api_key"),),
    setup=(
        "Create an API key at your forecast provider and export it:\n"
        "    export WEATHER_API_KEY=...\n"
        "or point toolplug at another variable or a file in toolplug.toml:\n"
        "    [tools.weather_forecast]\n"
        '    api_key = { env = "MY_WEATHER_KEY" }'
    ),
)


class WeatherForecastTool(Tool):
    """The daily forecast for one place."""

    metadata = ToolMetadata(
        name="weather_forecast",
        title="Weather forecast",
        description="Get the daily weather forecast (up to 7 days) for a named place.",
        category="research",
        usage_hint=(
            "Use when the answer depends on the weather at a specific place in the coming "
            "days: plans, travel, events outdoors."
        ),
        guidelines=Guidelines(
            do=(
                "The user asks what the weather will be like somewhere in the next week.",
                "A plan or itinerary depends on rain, heat or wind at a known place and date.",
            ),
            do_not=(
                "The question is about climate or past weather: the tool only forecasts.",
                "The date is more than 7 days ahead: say that no reliable forecast exists.",
                "No place is known yet: ask the user for it first.",
            ),
            common_mistakes=(
                "Passing a country or a region as location: give a city or town.",
                "Asking for days=7 when only tomorrow matters: use days=1.",
            ),
        ),
        requires_capabilities=("network", "weather_key"),
        produces=("forecast",),
        parameters={
            "type": "object",
            "properties": {
                "location": {
                    "type": "string",
                    "minLength": 1,
                    "description": "City or town, optionally with its country: 'Lyon, FR'",
                },
                "days": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 7,
                    "default": 3,
                    "description": "How many days, starting today",
                },
            },
            "required": ["location"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "location": {"type": "string"},
                "days": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "date": {"type": "string"},
                            "summary": {"type": "string"},
                            "min_c": {"type": "number"},
                            "max_c": {"type": "number"},
                        },
                        "required": ["date", "summary", "min_c", "max_c"],
                    },
                },
            },
            "required": ["location", "days"],
        },
        errors=(
            ErrorSpec(type="NotFoundError", when="the service does not know the place"),
            ErrorSpec(
                type="PermissionError",
                when="the API key was rejected, or the network guard refused the address",
            ),
            ErrorSpec(
                type="RateLimitError", when="the request quota is used up", retry_possible=True
            ),
            ErrorSpec(
                type="TimeoutError", when="the service did not answer in time", retry_possible=True
            ),
            ErrorSpec(
                type="NetworkError", when="the service could not be reached", retry_possible=True
            ),
            ErrorSpec(type="ParseError", when="the answer is not a forecast"),
        ),
        examples=(
            Example(description="Three days in Lyon", input={"location": "Lyon, FR"}),
            Example(
                description="Tomorrow only",
                input={"location": "Oslo", "days": 1},
                output={
                    "location": "Oslo",
                    "days": [{"date": "2025-01-01", "summary": "snow", "min_c": -8, "max_c": -3}],
                },
            ),
        ),
        config_fields=(
            ConfigField(
                name="api_key",
                type="string",
                description="API key of the forecast service",
                env_var="WEATHER_API_KEY",
                secret=True,
            ),
            ConfigField(
                name="base_url",
                type="string",
                description="Base URL of the forecast API",
                default="https://api.weather.example/v1",
            ),
        ),
        setup_instructions="pip install toolplug-weather, then set WEATHER_API_KEY.",
        # A forecast from the configured service, not text anyone could write; the
        # location is sent to that service, so it leaves the machine.
        trust=Trust(output="trusted", sinks=("location",)),
        annotations=Annotations(
            read_only=True, destructive=False, idempotent=True, open_world=True
        ),
        timeout_seconds=20,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Fetch and summarise the forecast."""
        from toolplug_weather._client import forecast  # httpx is imported only here

        return await forecast(arguments["location"], arguments["days"], context)


register_tools = provides(WeatherForecastTool)
register_capabilities = provides(WEATHER_KEY)
