"""A user's rating set's split files read: each row checked and normalized, or dropped with
its reason, and a whole file's counts and drops (`RatingsFile`).

One JSON object per line of `{data_dir}/{split}.jsonl`:

  article, summary        non-empty strings (the premise and the hypothesis)
  one field per question  1 (Yes), 0 (No) or null; a row without the field is unlabelled
                          for that question, as with null
  language                optional: a lowercase code such as `en` (or null)
  system, dataset         optional strings (or null): slice fields in the report
  gem_id (or id)          optional string or integer; without one a row is `train:12`
                          (its file's name and line)

Other fields are ignored. Unlike the SEAHORSE split files (`splits.py`, checked once and
strict), a bad row here is dropped and counted, never lost silently: a line that is not
UTF-8, not JSON or not an object, a missing or empty `article`/`summary`, a label other than
1, 0 or null (`"yes"`, `true` and `1.0` are not labels), or a slice field of the wrong type
becomes one `errors.DataError` (file, line, field, reason) in `RatingsFile.dropped`, and
`rows_kept + rows_dropped == rows_read` for every file. No TensorFlow here.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping

from seahorse_t5x import errors, fileio

Opener = Callable[[str], contextlib.AbstractContextManager[Iterable[str]]]

TEXT_FIELDS: tuple[str, ...] = ("article", "summary")
RATING_SLICE_FIELDS: tuple[str, ...] = ("language", "system", "dataset")
ID_FIELDS: tuple[str, ...] = ("gem_id", "id")
# The field of a drop that concerns the whole line (not UTF-8, not JSON, not an object).
WHOLE_ROW = "row"
# How the drop report counts rows without a language.
NO_LANGUAGE = "(none)"
# Drops listed by `RatingsFile.as_dict`; the counts are always complete.
MAX_DROP_EXAMPLES = 10
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")


def is_identifier(value: object) -> bool:
    """Whether `value` is a lowercase identifier (`polite`, `en`): what a language code and
    every part of a rating set's names (`ratings.check_rating_names`) must be."""
    return isinstance(value, str) and _IDENTIFIER.fullmatch(value) is not None


def _json_text(value: object) -> str:
    """A value as the file spells it (`true`, `1.0`, `"yes"`), for error messages."""
    return json.dumps(value, ensure_ascii=False)


def _label_problem(value: object) -> str | None:
    # bool is an int subclass: true/false are not labels; 1.0 is written only as 1.
    if value is None or (type(value) is int and value in (0, 1)):
        return None
    hint = ""
    if isinstance(value, bool):
        hint = " (true/false are not labels)"
    elif isinstance(value, float) and value in (0.0, 1.0):
        hint = " (write 1 or 0, not a decimal)"
    return f"expected 1 (Yes), 0 (No) or null, got {_json_text(value)}{hint}"


def check_row(
    path: str, line: int, record: Mapping, questions: Iterable[str], default_id: str
) -> dict:
    """One rating row, checked and normalized.

    Args:
      path, line: where the row was read (for the error).
      record: the row's JSON object.
      questions: the set's question names (one label field each).
      default_id: the `gem_id` of a row without `gem_id` or `id`.

    Returns:
      `{"article", "summary", "language", "system", "dataset", "gem_id", "labels",
      "unasked"}`: `labels` maps each question to 1, 0 or None (also for a row without the
      field, whose question is listed in `unasked`); absent slice fields are None.

    Raises:
      DataError: naming the file, line and field that is wrong and what was expected.
    """
    row: dict = {}
    for field in TEXT_FIELDS:
        value = record.get(field)
        if field not in record or value is None:
            raise errors.DataError(path, line, field, "missing; expected a non-empty string")
        if not isinstance(value, str):
            raise errors.DataError(
                path, line, field, f"expected a non-empty string, got {_json_text(value)}"
            )
        if not value.strip():
            raise errors.DataError(path, line, field, "empty; expected a non-empty string")
        row[field] = value
    labels = {}
    for question in questions:
        value = record.get(question)
        problem = _label_problem(value)
        if problem:
            raise errors.DataError(path, line, question, problem)
        labels[question] = value
    for field in RATING_SLICE_FIELDS:
        value = record.get(field)
        if value is not None and not isinstance(value, str):
            raise errors.DataError(
                path, line, field, f"expected a string or null, got {_json_text(value)}"
            )
        row[field] = value
    language = row["language"]
    if language is not None and not is_identifier(language):
        raise errors.DataError(
            path,
            line,
            "language",
            f"expected a lowercase code such as 'en' (letters, digits, _) or null, got "
            f"{_json_text(language)}",
        )
    row["gem_id"] = default_id
    for field in ID_FIELDS:
        value = record.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise errors.DataError(
                path, line, field, f"expected a string, an integer or null, got {_json_text(value)}"
            )
        row["gem_id"] = str(value)
        break
    row["labels"] = labels
    row["unasked"] = tuple(q for q in labels if q not in record)
    return row


def _stem(path: str) -> str:
    base = os.path.basename(path)
    return base[: -len(".jsonl")] if base.endswith(".jsonl") else base


def iter_rows(
    path: str | os.PathLike, questions: Iterable[str], opener: Opener | None = None
) -> Iterator[tuple[int, dict | errors.DataError]]:
    """(1-based line, checked row or the `DataError` that drops it) per non-blank line.

    Args:
      path: a rating split file.
      questions: the set's question names.
      opener: opens the path as an iterable of lines (default `fileio.open_text_input`,
        with lines that are not UTF-8 reported; the SeqIO tasks pass a `tf.io.gfile`
        opener for remote folders).

    Raises:
      UserError: the file cannot be read.
    """
    path = os.fspath(path)
    questions = tuple(questions)
    stem = _stem(path)
    for line, record in fileio.iter_json_lines(path, opener=opener):
        if isinstance(record, errors.DataError):
            yield line, record
            continue
        try:
            yield line, check_row(path, line, record, questions, f"{stem}:{line}")
        except errors.DataError as e:
            yield line, e


@dataclasses.dataclass
class RatingsFile:
    """What one rating split file holds: counts, labels per question, and every drop.

    Attributes:
      path: the file read.
      questions: the question names it was read for.
      rows_read: non-blank lines.
      rows_kept: rows that passed the check (examples for each question they label).
      dropped: one `DataError` (file, line, field, reason) per dropped row, in file order.
      labels: per question, `{"yes", "no", "null", "missing"}` over the kept rows
        (`missing`: rows without the field, which count as unlabelled like `null`).
      labelled: rows labelled 1 or 0, per (question, language); language None for rows
        without one.
      languages: kept rows per language (None: rows without one).
    """

    path: str
    questions: tuple[str, ...]
    rows_read: int = 0
    rows_kept: int = 0
    dropped: list[errors.DataError] = dataclasses.field(default_factory=list)
    labels: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    labelled: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    languages: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    @property
    def rows_dropped(self) -> int:
        return len(self.dropped)

    def drop_counts(self) -> dict[str, int]:
        """Dropped rows per field (`"row"` for a line that is not a JSON object), sorted."""
        counts = collections.Counter(d.field or WHOLE_ROW for d in self.dropped)
        return dict(sorted(counts.items()))

    def labelled_row_count(self, question: str, language: str | None = None) -> int:
        """Rows labelled 1 or 0 for `question` (in `language`, if given): its tasks' examples."""
        return sum(
            n
            for (q, lang), n in self.labelled.items()
            if q == question and language in (None, lang)
        )

    def unasked_questions(self) -> list[str]:
        """Questions no kept row has a field for (a misspelt question name, most likely)."""
        return [
            q
            for q in self.questions
            if self.rows_kept and self.labels[q]["missing"] == self.rows_kept
        ]

    def summary(self) -> str:
        """One line: read, kept and dropped rows, the drops per field and the first drop
        (an empty file says so: its tasks have no examples in this split)."""
        if not self.rows_read:
            return (
                f"{self.path}: empty (no rows; expected one JSON object per line with "
                f"article, summary and the questions {', '.join(self.questions)})"
            )
        line = (
            f"{self.path}: read {self.rows_read} rows, kept {self.rows_kept}, "
            f"dropped {self.rows_dropped}"
        )
        if self.dropped:
            counts = ", ".join(f"{k} {v}" for k, v in self.drop_counts().items())
            line += f" ({counts}; first: {self.dropped[0]})"
        unasked = self.unasked_questions()
        if unasked:
            line += f"; no row has a field for {', '.join(unasked)}"
        return line

    def as_dict(self) -> dict:
        """The drop report as JSON-ready data (the first `MAX_DROP_EXAMPLES` drops listed)."""
        return {
            "path": self.path,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "rows_dropped": self.rows_dropped,
            "dropped_by_field": self.drop_counts(),
            "drop_examples": [str(d) for d in self.dropped[:MAX_DROP_EXAMPLES]],
            "labels": {q: dict(c) for q, c in self.labels.items()},
            # Rows without a language as "(none)", which no language code can be.
            "languages": dict(
                sorted((NO_LANGUAGE if k is None else k, v) for k, v in self.languages.items())
            ),
        }


def read_file(
    path: str | os.PathLike, questions: Iterable[str], opener: Opener | None = None
) -> RatingsFile:
    """Reads a whole rating split file into its counts and drops (the rows are not kept:
    `iter_rows` streams them again when a dataset is built).

    Raises:
      UserError: the file cannot be read.
    """
    questions = tuple(questions)
    result = RatingsFile(
        os.fspath(path),
        questions,
        labels={q: {"yes": 0, "no": 0, "null": 0, "missing": 0} for q in questions},
    )
    for _, row in iter_rows(path, questions, opener):
        result.rows_read += 1
        if isinstance(row, errors.DataError):
            result.dropped.append(row)
            continue
        result.rows_kept += 1
        result.languages[row["language"]] += 1
        for question, value in row["labels"].items():
            if value is None:
                result.labels[question]["missing" if question in row["unasked"] else "null"] += 1
            else:
                result.labels[question]["yes" if value == 1 else "no"] += 1
                result.labelled[(question, row["language"])] += 1
    # The accounting every consumer relies on: nothing is lost silently.
    assert result.rows_kept + result.rows_dropped == result.rows_read
    return result
