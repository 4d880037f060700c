"""`score`'s last line names each question as its rows spell it (`q4`, or a rating set's
`polite`), with its mean P(yes) and share above 0.5."""

from __future__ import annotations

import types

from seahorse_t5x.cli import score
from seahorse_t5x.inference import columns


def _result(questions, joined):
    return types.SimpleNamespace(
        already_complete=False,
        settings=types.SimpleNamespace(windowed=False),
        truncated_articles=0,
        truncated_summaries=0,
        columns=True,
        joined=joined,
        metric=None,
        rows=3,
        resumed=[],
        questions=questions,
        bad_rows=0,
        seconds=1.0,
        output="out.jsonl",
    )


def test_the_summary_names_seahorse_and_rating_set_questions_as_rows_spell_them():
    joined = columns.Joined(
        rows=3,
        mean={4: 0.25, "polite": 0.5},
        share={4: 0.0, "polite": 1 / 3},
        unlabelled={4: 0, "polite": 1},
    )
    first, means = score.summary_lines(_result([4, "polite"], joined))
    assert first.startswith("scored 3 rows with 2 question(s) (0 bad rows")
    assert means == (
        "mean P(yes), share > 0.5: q4 0.250, 0.000; "
        "polite 0.500, 0.333 (1 unlabelled rows left out)"
    )
