"""The prepared split files (`prepare` output `OUT/{train,validation,test}.jsonl`), read back.

The one owner of their format (docs/architecture.md, "Joined split file"): the fields every
row carries, the row check, and which rows a question's tasks use. The SeqIO tasks, the
model-free baselines, the T5X score converters and `report` all read them here.

Each row: `gem_id`, `language` (one of `constants.LANGUAGES`), `dataset`, `system`,
`summary`, `article` (strings) and `q1`..`q6` (1, 0 or null; a Q1 No leaves Q2..Q6 null).
A row with a null label for a question is not an example of that question's tasks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator

from seahorse_t5x import constants, errors, fileio

# The string fields of a row, in the order `prepare` writes them (labels follow); a score
# row carries the slice fields from it.
TEXT_FIELDS: tuple[str, ...] = (*constants.SLICE_FIELDS, "summary", "article")
LABEL_FIELDS: tuple[str, ...] = constants.LABEL_FIELDS
FIELDS: tuple[str, ...] = (*TEXT_FIELDS, *LABEL_FIELDS)

Opener = Callable[[str], contextlib.AbstractContextManager[Iterable[str]]]

# What a split file holds, for the message when it is empty.
EMPTY_SPLIT_EXPECTED = "one rated summary per line, as `seahorse-t5x prepare` writes the splits"


def split_path(data_dir: str | os.PathLike, split: str) -> str:
    """`{data_dir}/{split}.jsonl` (not checked to exist: remote folders are checked by the caller).

    Raises:
      UserError: `split` is not one of `constants.SPLITS`.
    """
    if split not in constants.SPLITS:
        raise errors.UserError(
            f"unknown split {split!r}: expected one of {', '.join(constants.SPLITS)}"
        )
    return os.path.join(os.fspath(data_dir), f"{split}.jsonl")


def label_field(question: int) -> str:
    """`q4` for question 4."""
    return f"q{question}"


def check_row(path: str, line: int, row: dict) -> dict:
    """The row, after checking that it has every field of the contract with a valid value.

    Raises:
      DataError: a field is missing, a text field is not a string, a label is not 1, 0 or
        null (`true`/`false` and `1.0` are not labels), or the language is unknown.
    """
    for field in FIELDS:
        if field not in row:
            raise errors.DataError(path, line, field, "missing")
    for field in TEXT_FIELDS:
        if not isinstance(row[field], str):
            raise errors.DataError(path, line, field, f"expected a string, got {row[field]!r}")
    for field in LABEL_FIELDS:
        value = row[field]
        # bool is an int subclass: true/false are not labels; 1.0 is written only as 1.
        if value is not None and not (type(value) is int and value in (0, 1)):
            raise errors.DataError(
                path, line, field, f"expected 1 (Yes), 0 (No) or null, got {value!r}"
            )
    if row["language"] not in constants.LANGUAGES:
        raise errors.DataError(
            path,
            line,
            "language",
            f"expected one of {', '.join(constants.LANGUAGES)}, got {row['language']!r}",
        )
    return row


def iter_rows(path: str | os.PathLike, opener: Opener | None = None) -> Iterator[tuple[int, dict]]:
    """(1-based line, row) for each row of a split file, every row checked (`check_row`).

    Args:
      path: the split file.
      opener: opens the path as an iterable of lines (default: `fileio.open_text_input`;
        the SeqIO tasks pass a `tf.io.gfile.GFile` opener for remote folders).

    Raises:
      UserError: the file cannot be read.
      DataError: a line that is not UTF-8, not a JSON object, or not a valid row.
    """
    path = os.fspath(path)
    for line, row in fileio.iter_json_objects(path, opener=opener):
        yield line, check_row(path, line, row)


def empty_split_error(path: str | os.PathLike) -> errors.DataError:
    """The one-line message for a split file without rows (`fileio.empty_file_error`).

    `prepare` writes one when a split keeps no row while the others keep some, so readers
    of several splits may warn with it and go on; a command whose input is that split
    raises it.
    """
    return fileio.empty_file_error(path, EMPTY_SPLIT_EXPECTED)


def is_empty(path: str | os.PathLike, opener: Opener | None = None) -> bool:
    """Whether a split file holds no row (0 bytes, or blank lines only)."""
    with contextlib.closing(iter_rows(path, opener)) as rows:
        return next(rows, None) is None


def read_rows(path: str | os.PathLike, opener: Opener | None = None) -> list[dict]:
    """Every row of a split file, checked, in file order (see `iter_rows`).

    Raises:
      UserError: a local file is missing (the message names the command that writes it).
    """
    if opener is None and not os.path.isfile(path):
        raise errors.UserError(
            f"split file not found: {os.fspath(path)}. Create it with `seahorse-t5x prepare` "
            "(or `seahorse-t5x demo-data` for the synthetic demo data)."
        )
    return [row for _, row in iter_rows(path, opener)]


def is_labelled(row: dict, question: int, language: str | None = None) -> bool:
    """Whether `row` is an example of question `question`'s tasks (in `language`, if given):
    its label for the question is 1 or 0, not null."""
    if language is not None and row["language"] != language:
        return False
    return row[label_field(question)] is not None


def labelled_rows(
    path: str | os.PathLike,
    question: int,
    language: str | None = None,
    opener: Opener | None = None,
) -> Iterator[dict]:
    """The rows labelled for `question` (in `language`, if given), in file order: the examples
    of the question's SEAHORSE tasks (`seahorse_q{n}`, `.{lang}`, `_score`, `seahorse_all_q{n}`).

    Every row of the file is checked, also those that are skipped.
    """
    for _, row in iter_rows(path, opener):
        if is_labelled(row, question, language):
            yield row


def label_counts(
    path: str | os.PathLike, opener: Opener | None = None
) -> dict[tuple[int, str], int]:
    """Number of labelled rows per (question, language) in a split file (every row checked)."""
    counts: dict[tuple[int, str], int] = {}
    for _, row in iter_rows(path, opener):
        for question in constants.QUESTIONS:
            if is_labelled(row, question):
                key = (question, row["language"])
                counts[key] = counts.get(key, 0) + 1
    return counts
