"""Scores of several questions (or score-file rows) from one input: each question scored
into its own column file beside the output, then input and columns joined into the output.

`OUTPUT.qN.scores` holds question N's scores, one line per input row; a run resumes column
by column. With a `metric`, the output is a score file (`data/scorefiles.py`) of the
labelled rows, else the input rows with `score_qN` added (`score_polite` for a rating
set's question `polite`: `arguments.question_key`).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import math
import pathlib
from collections.abc import Sequence
from typing import Any

from seahorse_t5x import constants, errors, fileio
from seahorse_t5x.arguments import Question, question_key
from seahorse_t5x.data import scorefiles
from seahorse_t5x.inference import input_rows

# Beside the output while a run of several columns is under way: one column per question.
COLUMN_SUFFIX = ".scores"
# Input fields a score-file row does not repeat: the article, and the labels it holds as
# `label`.
_NOT_IN_SCORE_ROWS = ("article", "label", *constants.LABEL_FIELDS)


def column_path(output: pathlib.Path, question: Question) -> pathlib.Path:
    """`OUTPUT.q4.scores` (`OUTPUT.polite.scores`): one question's scores, one line per
    input row."""
    return output.with_name(f"{output.name}.{question_key(question)}{COLUMN_SUFFIX}")


def leftovers(output: pathlib.Path) -> list[pathlib.Path]:
    """The column files (and their partial files) an interrupted run left beside `output`."""
    return sorted(output.parent.glob(f"{glob.escape(output.name)}.*{COLUMN_SUFFIX}*"))


def label_of(row: dict[str, Any], question: Question, single: bool) -> Any:
    """A row's label for `question`: `label` when one question is scored and the row has
    it, else `qN` (a rating set's question: its name); None when the row has none."""
    if single and "label" in row:
        return row["label"]
    return row.get(question_key(question))


def score_file_row(
    row: dict[str, Any], metric: str, benchmark: str, question: int, label: Any, score: Any
) -> dict[str, Any]:
    """A score-file row (`scorefiles.score_row`) for an input row and one question: the
    input's other fields follow in their order."""
    dropped = (*_NOT_IN_SCORE_ROWS, *scorefiles.REQUIRED_FIELDS)
    return scorefiles.score_row(
        metric=metric,
        benchmark=benchmark,
        question=question,
        label=label,
        score=score,
        extra={k: v for k, v in row.items() if k not in dropped},
    )


def check_labels(
    path: pathlib.Path, questions: Sequence[int], metric: str, benchmark: str, skip_bad_rows: bool
) -> dict[int, int]:
    """Checks the labels a `metric` run writes: {question: labelled rows}.

    Raises:
      UserError: a question without any labelled row; DataError: a label the score files
        refuse (the file and line named), unless `skip_bad_rows`.
    """
    single = len(questions) == 1
    labelled = dict.fromkeys(questions, 0)
    for number, row, problem in input_rows.records(path):
        if problem is not None:
            continue
        for question in questions:
            label = label_of(row, question, single)
            if label is None:
                continue
            try:
                scorefiles.validate_row(
                    score_file_row(row, metric, benchmark, question, label, 0.5),
                    str(path),
                    number,
                    exact_labels=True,
                )
            except errors.DataError:
                if skip_bad_rows:
                    continue
                raise
            labelled[question] += 1
    unlabelled = [q for q, n in labelled.items() if not n]
    if unlabelled:
        fields = "`label` or " if single else ""
        raise errors.UserError(
            f"`metric` writes score-file rows, which need labels: no row of {path} carries "
            f"{fields}`{question_key(unlabelled[0])}` (1 or 0); leave out `metric` for scores "
            "alone"
        )
    return labelled


@dataclasses.dataclass
class Joined:
    """What the joined output holds: rows written, and per question the mean P(yes), the
    share above 0.5 and the input rows left out for want of a label."""

    rows: int
    mean: dict[int, float]
    share: dict[int, float]
    unlabelled: dict[int, int]


class _Tally:
    def __init__(self, questions: Sequence[int]) -> None:
        self.sums = dict.fromkeys(questions, 0.0)
        self.above = dict.fromkeys(questions, 0)
        self.scored = dict.fromkeys(questions, 0)
        self.unlabelled = dict.fromkeys(questions, 0)

    def add(self, question: int, score: float | None) -> None:
        if score is not None:
            self.sums[question] += score
            self.above[question] += score > 0.5
            self.scored[question] += 1

    def joined(self, rows: int) -> Joined:
        def ratio(numerators: dict[int, float]) -> dict[int, float]:
            return {
                q: v / self.scored[q] if self.scored[q] else math.nan for q, v in numerators.items()
            }

        return Joined(rows, ratio(self.sums), ratio(self.above), self.unlabelled)


def _plain_row(row, number, problem, questions, scores) -> str:
    base = {**row} if problem is None else {**(row or {"line": number})}
    written = {
        **base,
        **{f"score_{question_key(q)}": v for q, v in zip(questions, scores, strict=True)},
    }
    if problem is not None:
        written["error"] = problem
    return json.dumps(written, ensure_ascii=False) + "\n"


def _score_file_rows(row, number, questions, scores, tally, metric, benchmark, input_path):
    single = len(questions) == 1
    for question, score in zip(questions, scores, strict=True):
        label = label_of(row, question, single)
        if label is None:
            tally.unlabelled[question] += 1
            continue
        record = score_file_row(row, metric, benchmark, question, label, score)
        try:  # what `check_labels` let through under skip_bad_rows
            scorefiles.validate_row(record, str(input_path), number, True)
        except errors.DataError:
            continue
        yield record


def join_columns(
    input_path: pathlib.Path,
    output: pathlib.Path,
    questions: Sequence[int],
    metric: str | None,
    benchmark: str,
) -> Joined:
    """Joins the input rows and the question columns into `output`, written atomically:
    rows with `score_qN` (bad rows with nulls and their error), or with a `metric` the
    score-file rows of the labelled ones.

    Raises:
      UserError: a column that does not match the input row for row.
    """
    tally = _Tally(questions)
    rows = 0
    columns = [open(column_path(output, q), encoding="utf-8") for q in questions]
    # Score-file rows through the one score-file writer (checked above against the input's
    # lines, so written as built); plain rows are the input's own, with their scores.
    writer = (
        fileio.atomic_writer(output, "w", encoding="utf-8")
        if metric is None
        else scorefiles.ScoreFileWriter(output, validate=False)
    )
    try:
        with writer as out:
            for (number, row, problem), *lines in zip(
                input_rows.records(input_path), *columns, strict=True
            ):
                scores = [json.loads(line)["score"] for line in lines]
                for question, score in zip(questions, scores, strict=True):
                    tally.add(question, score)
                if metric is None:
                    out.write(_plain_row(row, number, problem, questions, scores))
                    rows += 1
                elif problem is None:
                    for record in _score_file_rows(
                        row, number, questions, scores, tally, metric, benchmark, input_path
                    ):
                        out.write(record)
                        rows += 1
    except ValueError as e:  # a column shorter or longer than the input: not this input's
        raise errors.UserError(
            f"the question columns beside {output} do not match {input_path} ({e}); "
            f"delete {output.name}.*{COLUMN_SUFFIX}* and score again"
        ) from None
    finally:
        for f in columns:
            f.close()
    return tally.joined(rows)
