"""toolplug-readability: how hard a text is to read, and what that means for its readers.

Pure computation with textstat's formulas: nothing leaves the process. The tool reports
the standard scores, the sentences that weigh most, and how the text compares with the
targets for the audience the author names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from toolplug import (
    Annotations,
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

__all__ = ["AUDIENCES", "TOOLPLUG_CONTRACT", "Audience", "ReadabilityTool", "register_tools"]

TOOLPLUG_CONTRACT = "1.0"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

MAX_TEXT_CHARS: Final = 200_000
"""The longest text one call scores (about 30,000 words)."""


@dataclass(frozen=True)
class Audience:
    """What a readership can take: the lowest Flesch reading ease and highest grade."""

    name: str
    min_ease: float
    max_grade: float
    label: str


AUDIENCES: Final = {
    a.name: a
    for a in (
        Audience("children", 80, 6, "young readers (about ages 8 to 12)"),
        Audience("general", 60, 9, "a general adult readership"),
        Audience("technical", 40, 13, "practitioners who know the field"),
        Audience("academic", 20, 17, "specialists reading closely"),
    )
}

_SENTENCE_END: Final = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_WORD: Final = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")  # it's, it\u2019s, well-known


class ReadabilityTool(Tool):
    """Scores a text with textstat and compares it with an audience's targets."""

    metadata = ToolMetadata(
        name="readability",
        title="Readability",
        description=(
            "Score how easy a text is to read (Flesch, Flesch-Kincaid grade, Gunning fog, "
            "SMOG) and say whether it suits the intended audience."
        ),
        category="enhance",
        optionality="optional",
        usage_hint=(
            "Use on a draft before it is published, when the reader matters: it shows the "
            "scores, the longest sentences, and what to change for the chosen audience."
        ),
        guidelines=Guidelines(
            do=(
                "A draft is finished and should read well for a known audience",
                "The user asks whether a text is too hard, too long-winded or too dense",
                "You rewrote a passage and want to check the rewrite is easier",
            ),
            do_not=(
                "The text is code, a table, a list of links or another non-prose format",
                "The text is a sentence or two: the formulas need a paragraph or more",
                "The text is not in English: the formulas are tuned for English",
            ),
            common_mistakes=(
                "Reading the grade as a quality mark: it is the years of school a reader needs",
                "Trusting SMOG on fewer than 30 sentences (the result says when it is unsure)",
                "Rewriting everything: shorten the longest sentences listed first",
            ),
        ),
        produces=("readability_scores",),
        parameters={
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_TEXT_CHARS,
                    "description": "The prose to score, in English",
                },
                "audience": {
                    "type": "string",
                    "enum": list(AUDIENCES),
                    "default": "general",
                    "description": "Who will read it: children, general, technical or academic",
                },
                "longest": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 10,
                    "default": 3,
                    "description": "How many of the longest sentences to list",
                },
            },
            "required": ["text"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "flesch_reading_ease": {"type": "number"},
                "flesch_kincaid_grade": {"type": "number"},
                "gunning_fog": {"type": "number"},
                "smog_index": {"type": "number"},
                "reading_time_seconds": {"type": "number"},
                "sentences": {"type": "integer"},
                "words": {"type": "integer"},
                "longest_sentences": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "words": {"type": "integer"},
                            "sentence": {"type": "string"},
                        },
                        "required": ["words", "sentence"],
                    },
                },
                "audience": {"type": "string"},
                "suits_audience": {"type": "boolean"},
                "advice": {"type": "array", "items": {"type": "string"}},
            },
            "required": [
                "flesch_reading_ease",
                "flesch_kincaid_grade",
                "sentences",
                "words",
                "suits_audience",
                "advice",
            ],
        },
        errors=(ErrorSpec(type="ValidationError", when="the text has no words to score"),),
        examples=(
            Example(
                description="A plain paragraph for a general readership",
                input={
                    "text": "The cat sat on the mat. It was warm. The sun came in through "
                    "the window, and the cat slept until noon.",
                },
            ),
            Example(
                description="A dense sentence checked for children",
                input={
                    "text": "Notwithstanding considerable methodological heterogeneity, the "
                    "investigators concluded that the intervention substantially ameliorated "
                    "outcomes.",
                    "audience": "children",
                    "longest": 1,
                },
            ),
        ),
        setup_instructions="pip install toolplug-readability",
        required_packages=("toolplug-readability",),
        # Scores computed here from the text it is given; it adds no outside text and
        # sends nothing anywhere.
        trust=Trust(output="trusted"),
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        timeout_seconds=20,
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Score the text and compare it with the audience's targets."""
        import textstat

        text: str = arguments["text"]
        audience = AUDIENCES[arguments.get("audience", "general")]
        sentences = [s.strip() for s in _SENTENCE_END.split(text.strip()) if _WORD.search(s)]
        words = len(_WORD.findall(text))
        if not words:
            return ToolResult.failure(
                "ValidationError", "text: no words to score; pass a paragraph of English prose"
            )
        ease = round(float(textstat.flesch_reading_ease(text)), 1)
        grade = round(float(textstat.flesch_kincaid_grade(text)), 1)
        data: dict[str, Any] = {
            "flesch_reading_ease": ease,
            "flesch_kincaid_grade": grade,
            "gunning_fog": round(float(textstat.gunning_fog(text)), 1),
            "smog_index": round(float(textstat.smog_index(text)), 1),
            "reading_time_seconds": round(float(textstat.reading_time(text)), 1),
            "sentences": len(sentences),
            "words": words,
            "longest_sentences": _longest(sentences, arguments.get("longest", 3)),
            "audience": audience.name,
        }
        advice = _advice(data, audience)
        data["suits_audience"] = ease >= audience.min_ease and grade <= audience.max_grade
        data["advice"] = advice
        return ToolResult.success(_summary(data, audience), data)


def _longest(sentences: list[str], count: int) -> list[dict[str, Any]]:
    measured = [(len(_WORD.findall(s)), i, s) for i, s in enumerate(sentences)]
    measured.sort(key=lambda item: (-item[0], item[1]))  # longest first, then text order
    return [{"words": n, "sentence": s} for n, _, s in measured[:count]]


def _advice(data: dict[str, Any], audience: Audience) -> list[str]:
    notes = []
    if data["flesch_reading_ease"] < audience.min_ease:
        notes.append(
            f"Reading ease {data['flesch_reading_ease']} is below {audience.min_ease:g}, the "
            f"usual floor for {audience.label}: use shorter sentences and shorter words."
        )
    if data["flesch_kincaid_grade"] > audience.max_grade:
        notes.append(
            f"Grade {data['flesch_kincaid_grade']} is above {audience.max_grade:g}: a reader "
            "needs that many years of school; split the longest sentences first."
        )
    words_per_sentence = data["words"] / max(data["sentences"], 1)
    if words_per_sentence > 20:
        notes.append(
            f"Sentences average {words_per_sentence:.0f} words; around 15 to 20 reads easily."
        )
    if data["sentences"] < 30:
        notes.append("SMOG is reliable from 30 sentences on; this text has fewer.")
    if not notes or (len(notes) == 1 and notes[0].startswith("SMOG")):
        notes.insert(0, f"The text suits {audience.label}.")
    return notes


def _summary(data: dict[str, Any], audience: Audience) -> str:
    verdict = "suits" if data["suits_audience"] else "is harder than suits"
    lines = [
        f"Readability: the text {verdict} {audience.label}.",
        f"Flesch reading ease {data['flesch_reading_ease']} (0-100, higher is easier); "
        f"Flesch-Kincaid grade {data['flesch_kincaid_grade']}; Gunning fog "
        f"{data['gunning_fog']}; SMOG {data['smog_index']}.",
        f"{data['words']} words in {data['sentences']} sentences; about "
        f"{data['reading_time_seconds']:g} s to read.",
    ]
    if data["longest_sentences"]:
        lines.append("Longest sentences:")
        lines += [f"- ({s['words']} words) {s['sentence']}" for s in data["longest_sentences"]]
    lines += [f"Advice: {note}" for note in data["advice"]]
    return "\n".join(lines)


register_tools = provides(ReadabilityTool)
