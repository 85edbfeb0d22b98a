"""toolplug-chart: a bar or line chart of a small table of numbers, as a PNG image.

The model gives the table as arguments; the tool draws it with matplotlib's Agg backend
(imported when a chart is drawn, through its object API: no pyplot, no global figure, so
calls in threads side by side do not meet) and returns the picture as an ``Image`` part::

    registry.call("chart", {"labels": ["Q1", "Q2"],
                            "series": [{"name": "sales", "values": [3, 5]}]})
"""

from __future__ import annotations

import io
import math
from typing import Any, Final

from toolplug import (
    Annotations,
    ErrorSpec,
    Example,
    Guidelines,
    Image,
    Tool,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
    Trust,
    provides,
)

__all__ = ["TOOLPLUG_CONTRACT", "ChartTool", "register_tools"]

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

MAX_LABELS: Final = 50
MAX_SERIES: Final = 8
WIDTH_PX: Final = 800
HEIGHT_PX: Final = 500
_DPI: Final = 100

_SERIES_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 60,
                 "description": "The series' name, shown in the legend"},
        "values": {
            # bounded: matplotlib's axis limits overflow a float near 1e308
            "type": "array", "items": {"type": "number", "minimum": -1e15, "maximum": 1e15},
            "minItems": 1,
            "maxItems": MAX_LABELS,
            "description": "One number per label, in the order of labels",
        },
    },
    "required": ["name", "values"],
    "additionalProperties": False,
}

_EXAMPLE_INPUT: Final[dict[str, Any]] = {
    "kind": "bar",
    "title": "Sales by quarter",
    "labels": ["Q1", "Q2", "Q3", "Q4"],
    "series": [{"name": "2025", "values": [12, 15, 9, 20]}],
    "y_label": "units (thousands)",
}


class ChartTool(Tool):
    """Draws a bar or line chart of the numbers given and returns it as a PNG."""

    metadata = ToolMetadata(
        name="chart",
        title="Draw a chart",
        description=(
            "Draw a bar or line chart of a small table of numbers (labels and one or more "
            "series) and return it as a PNG image."
        ),
        category="utility",
        optionality="optional",
        usage_hint=(
            "Use when the user should see numbers you already have as a picture: a "
            "comparison as bars, a trend over time as a line."
        ),
        guidelines=Guidelines(
            do=(
                "The user asks for a chart, a graph or a plot of numbers in the conversation",
                "A comparison of a few categories reads better as bars",
                "A trend over ordered labels (months, years) reads better as a line",
            ),
            do_not=(
                "You do not have the numbers yet: fetch or compute them first",
                "The table has more than 50 labels or 8 series: summarise it first",
                "One or two numbers: say them in words",
            ),
            common_mistakes=(
                "Giving a series fewer or more values than there are labels",
                "Passing numbers as strings ('12'): give them as numbers",
                "Describing the picture as if you saw it: say what the numbers show",
            ),
        ),
        produces=("images",),
        parts=("image",),
        parameters={
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["bar", "line"], "default": "bar",
                         "description": "bar for categories, line for a trend"},
                "title": {"type": "string", "maxLength": 120,
                          "description": "The chart's title"},
                "labels": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 40},
                    "minItems": 1,
                    "maxItems": MAX_LABELS,
                    "description": "The labels along the x axis, in order",
                },
                "series": {
                    "type": "array", "items": _SERIES_SCHEMA, "minItems": 1,
                    "maxItems": MAX_SERIES,
                    "description": "The series of numbers, each one value per label",
                },
                "x_label": {"type": "string", "maxLength": 60,
                            "description": "The x axis' title"},
                "y_label": {"type": "string", "maxLength": 60,
                            "description": "The y axis' title"},
            },
            "required": ["labels", "series"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["bar", "line"]},
                "width_px": {"type": "integer"},
                "height_px": {"type": "integer"},
                "bytes": {"type": "integer", "description": "The PNG's size"},
                "series": {"type": "array", "items": {"type": "string"},
                           "description": "The series' names, in the legend's order"},
            },
            "required": ["kind", "width_px", "height_px", "bytes", "series"],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="a series has not one value per label, a value is not finite, or two "
                "series share a name; the message names the series",
            ),
            ErrorSpec(type="UnavailableError", when="matplotlib is not installed"),
        ),
        examples=(
            Example(description="Quarterly sales as bars", input=_EXAMPLE_INPUT),
            Example(
                description="Two trends over months as lines",
                input={
                    "kind": "line",
                    "labels": ["Jan", "Feb", "Mar"],
                    "series": [
                        {"name": "visitors", "values": [120, 180, 150]},
                        {"name": "sign-ups", "values": [10, 22, 19]},
                    ],
                },
            ),
        ),
        required_packages=("matplotlib",),
        # Drawn from the model's own arguments: nothing from outside comes in, nothing leaves.
        trust=Trust(output="trusted"),
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        timeout_seconds=30,
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Check the table, draw it, return the PNG as an image part."""
        kind = str(arguments.get("kind") or "bar")
        labels = [str(label) for label in arguments["labels"]]
        series = _checked_series(arguments["series"], len(labels))
        png = _draw(kind, labels, series, arguments)
        names = [name for name, _ in series]
        output = (
            f"A {kind} chart of {len(names)} series ({', '.join(names)}) over "
            f"{len(labels)} labels: a {WIDTH_PX}x{HEIGHT_PX} PNG of {len(png)} bytes."
        )
        data = {"kind": kind, "width_px": WIDTH_PX, "height_px": HEIGHT_PX,
                "bytes": len(png), "series": names}
        return ToolResult.success(output, data, parts=[Image(png, "image/png")])


def _checked_series(given: list[dict[str, Any]], count: int) -> list[tuple[str, list[float]]]:
    """The series as (name, values), or a ValidationError naming the one that is wrong."""
    checked: list[tuple[str, list[float]]] = []
    seen: set[str] = set()
    for index, one in enumerate(given):
        name, values = str(one["name"]), [float(v) for v in one["values"]]
        where = f"series[{index}] ({name!r})"
        if len(values) != count:
            raise ToolFailure(
                "ValidationError",
                f"{where} has {len(values)} values for {count} labels: give one value per "
                "label, in the order of labels",
            )
        if not all(math.isfinite(v) for v in values):
            raise ToolFailure("ValidationError", f"{where}: every value must be a finite number")
        if name in seen:
            raise ToolFailure(
                "ValidationError", f"{where}: another series has that name; name each once"
            )
        seen.add(name)
        checked.append((name, values))
    return checked


def _draw(
    kind: str, labels: list[str], series: list[tuple[str, list[float]]], arguments: dict[str, Any]
) -> bytes:
    try:
        from matplotlib import font_manager
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ToolFailure(
            "UnavailableError", "matplotlib is not installed: pip install toolplug-chart"
        ) from None
    font = font_manager.get_font(font_manager.findfont(font_manager.FontProperties()))

    def shown(text: Any) -> str:
        """The text as drawn: characters the font has no glyph for become '?' (matplotlib
        would warn and draw a box), control characters go, and a '$' is a dollar sign,
        not the start of mathtext."""
        kept = (
            c if font.get_char_index(ord(c)) else "?" for c in str(text) if c.isprintable()
        )
        return "".join(kept).replace("$", r"\$")

    labels = [shown(label) for label in labels]
    # matplotlib leaves out of the legend every artist whose label is empty or starts with
    # "_" (and warns): such a series name is drawn after a space, so the legend names it
    series = [(_legend_name(shown(name)), values) for name, values in series]
    figure = Figure(figsize=(WIDTH_PX / _DPI, HEIGHT_PX / _DPI), dpi=_DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = list(range(len(labels)))
    if kind == "bar":
        width = 0.8 / len(series)
        for index, (name, values) in enumerate(series):
            offset = (index - (len(series) - 1) / 2) * width
            axes.bar([p + offset for p in positions], values, width, label=name)
    else:
        for name, values in series:
            axes.plot(positions, values, marker="o", label=name)
    axes.set_xticks(positions, labels, rotation=45 if len(labels) > 8 else 0)
    if arguments.get("title"):
        axes.set_title(shown(arguments["title"]))
    if arguments.get("x_label"):
        axes.set_xlabel(shown(arguments["x_label"]))
    if arguments.get("y_label"):
        axes.set_ylabel(shown(arguments["y_label"]))
    if len(series) > 1:
        axes.legend()
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=_DPI)
    return out.getvalue()


def _legend_name(name: str) -> str:
    """``name`` as a legend shows it: an empty one as "?", one starting with "_" after a
    space (matplotlib would leave it out)."""
    if not name:
        return "?"
    return " " + name if name.startswith("_") else name


register_tools = provides(ChartTool)
