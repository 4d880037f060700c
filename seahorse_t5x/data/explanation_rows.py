"""The fields an explainable metric's output rows carry beside their score: written by
`explain` (`inference/explain.py`), read by the report (`evaluation/explanation_report.py`).

`details(...)` is the one builder of those fields; `data/scorefiles.score_row` places them
after the score in a score-file row.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from seahorse_t5x.formats import error_analysis

# The generated text, as the model wrote it.
TEXT_FIELD = "explanation"
# Its parsed errors ({location, aspect, explanation, severity, score_reduction} each), or
# null when the text did not parse.
ERRORS_FIELD = "errors"
# Why the text did not parse (one line), or null.
PROBLEM_FIELD = "parse_error"
# How a parsed text's first line disagrees with its errors (another count or total; the
# score is its errors'), or null.
NOTE_FIELD = "parse_note"
# The known errors of the row's truth, where it has one.
TRUE_ERRORS_FIELD = "true_errors"


def error_dicts(analysis: error_analysis.ErrorAnalysis) -> list[dict[str, Any]]:
    """An analysis' errors as the rows hold them."""
    return [dataclasses.asdict(e) for e in analysis.errors]


def details(
    text: str,
    analysis: error_analysis.ErrorAnalysis | None,
    problem: str | None,
    truth: error_analysis.ErrorAnalysis | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """The explanation fields of one row: the text, its errors (None when `analysis` is
    None), the parse problem and note, and the true errors when a truth is known."""
    fields: dict[str, Any] = {
        TEXT_FIELD: text,
        ERRORS_FIELD: None if analysis is None else error_dicts(analysis),
        PROBLEM_FIELD: problem,
        NOTE_FIELD: note,
    }
    if truth is not None:
        fields[TRUE_ERRORS_FIELD] = error_dicts(truth)
    return fields
