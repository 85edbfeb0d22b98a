"""The readability tool: textstat's scores, the longest sentences, audience advice."""

from __future__ import annotations

from typing import Any

import pytest
import textstat

import toolplug
from toolplug.testing import check_plugin
from toolplug_readability import AUDIENCES

PLAIN = (
    "The cat sat on the mat. It was warm. The sun came in through the window. "
    "The cat slept until noon, and then it went out to play in the yard."
)
DENSE = (
    "Notwithstanding considerable methodological heterogeneity across the constituent "
    "investigations, the systematic reviewers ultimately concluded that the multifaceted "
    "intervention substantially ameliorated longitudinal cardiovascular outcomes. "
    "Consequently, institutional implementation necessitates comprehensive organisational "
    "restructuring."
)


@pytest.fixture
def tools() -> toolplug.Registry:
    return toolplug.load({}, env={"TOOLPLUG_PLUGINS": "toolplug-readability"})


def call(tools: toolplug.Registry, **arguments: Any) -> toolplug.ToolResult:
    return tools.call("readability", arguments)


def test_scores_are_textstats(tools: toolplug.Registry) -> None:
    result = call(tools, text=PLAIN)
    assert result.ok, result.error
    data = result.data
    assert data["flesch_reading_ease"] == round(textstat.flesch_reading_ease(PLAIN), 1)
    assert data["flesch_kincaid_grade"] == round(textstat.flesch_kincaid_grade(PLAIN), 1)
    assert data["gunning_fog"] == round(textstat.gunning_fog(PLAIN), 1)
    assert data["smog_index"] == round(textstat.smog_index(PLAIN), 1)
    assert data["sentences"] == 4
    assert data["words"] == 31


def test_plain_text_suits_a_general_readership_and_dense_text_does_not(
    tools: toolplug.Registry,
) -> None:
    plain, dense = call(tools, text=PLAIN), call(tools, text=DENSE)
    assert plain.data["flesch_reading_ease"] > dense.data["flesch_reading_ease"]
    assert plain.data["suits_audience"] is True
    assert plain.output.startswith("Readability: the text suits a general adult readership.")
    assert dense.data["suits_audience"] is False
    assert any("split the longest sentences" in note for note in dense.data["advice"])


def test_the_audience_moves_the_targets(tools: toolplug.Registry) -> None:
    text = DENSE
    verdicts = {
        name: call(tools, text=text, audience=name).data["suits_audience"] for name in AUDIENCES
    }
    assert verdicts["children"] is False
    assert call(tools, text=PLAIN, audience="academic").data["suits_audience"] is True


def test_longest_sentences_come_longest_first(tools: toolplug.Registry) -> None:
    result = call(tools, text=PLAIN, longest=2)
    first, second = result.data["longest_sentences"]
    assert first["sentence"].startswith("The cat slept until noon")
    assert first["words"] == 15
    assert second["words"] == 7
    assert "- (15 words) The cat slept until noon" in result.output


def test_text_without_words_is_a_validation_error(tools: toolplug.Registry) -> None:
    result = call(tools, text="... !!! ???")
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert "no words" in result.error.message
    unknown = call(tools, text=PLAIN, audience="robots")
    assert unknown.error is not None
    assert unknown.error.type == "ValidationError"


def test_smog_warns_on_short_texts(tools: toolplug.Registry) -> None:
    assert any(
        "SMOG is reliable from 30 sentences" in n for n in call(tools, text=PLAIN).data["advice"]
    )
    long_text = " ".join([PLAIN] * 10)
    assert not any("SMOG" in n for n in call(tools, text=long_text).data["advice"])


def test_passes_the_contract_kit() -> None:
    check_plugin("toolplug-readability")
