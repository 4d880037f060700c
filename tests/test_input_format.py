"""The input format: its text, its length budget and the arithmetic of both truncation modes
(their token ids in TensorFlow and numpy: test_preprocessors.py, test_scoring.py)."""

from __future__ import annotations

import itertools

import pytest

from seahorse_t5x import errors
from seahorse_t5x.formats import input_format


def test_input_text_is_the_three_parts_joined():
    assert input_format.marker_text() == "premise:"
    assert input_format.marker_text("concise") == "question: concise premise:"
    assert input_format.hypothesis_text("A cat.") == "hypothesis: A cat."
    assert input_format.input_text("A cat sat.", "A cat.", "concise") == (
        "question: concise premise: A cat sat. hypothesis: A cat."
    )


def test_plan_cut_docstring_example():
    keep = input_format.plan_cut(1, 4, 3, 6, "keep_summary")
    assert keep == input_format.Cut(
        premise_kept=2, article_tokens_dropped=2, summary_truncated=False
    )
    right = input_format.plan_cut(1, 4, 3, 6, "right")
    assert right == input_format.Cut(
        premise_kept=4, article_tokens_dropped=0, summary_truncated=True
    )


@pytest.mark.parametrize("truncation", input_format.TRUNCATION_MODES)
def test_plan_cut_keeps_what_slicing_the_joined_parts_keeps(truncation):
    # Parts of distinct tokens: what survives a cut says which part lost what. A hypothesis
    # always has tokens (its marker).
    for m, p, h, budget in itertools.product(range(4), range(6), range(1, 5), range(1, 12)):
        marker, premise, hypothesis = ["m"] * m, ["p"] * p, ["h"] * h
        cut = input_format.plan_cut(m, p, h, budget, truncation)
        kept = (marker + premise[: cut.premise_kept] + hypothesis)[:budget]
        if truncation == "right":
            assert kept == (marker + premise + hypothesis)[:budget]
        else:  # the premise gives way first
            room = max(0, budget - m - h)
            assert kept == (marker + premise[:room] + hypothesis)[:budget]
        assert cut.article_tokens_dropped == p - kept.count("p")
        assert cut.summary_truncated == (kept.count("h") < h)


def test_one_check_of_the_mode_and_the_length():
    for bad in ("left", None):
        with pytest.raises(errors.UserError, match="one of keep_summary, right, got"):
            input_format.check_truncation(bad)
    with pytest.raises(errors.UserError, match="one of keep_summary, right"):
        input_format.plan_cut(1, 1, 1, 4, "left")
    assert input_format.content_budget(None, "n") is None
    assert input_format.content_budget(2, "n") == 1
    assert input_format.sequence_budget({"inputs": 64, "targets": 4}) == 63
    assert input_format.sequence_budget({"targets": 4}) is None
    with pytest.raises(errors.UserError, match="--input_length must be at least 2"):
        input_format.content_budget(1, "--input_length")
    with pytest.raises(errors.UserError, match="must be an integer"):
        input_format.check_input_length(True, "n")
