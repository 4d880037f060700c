"""SEAHORSE's duplicate ratings (`duplicates/`: items rated more than once), in the layout of
the rating TSVs (`readers.py`: header, tab separated, no quoting), read into one frame of
ratings for the report's pairwise agreement (Table 4).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from seahorse_t5x import constants, errors, fileio


def _read_duplicates_tsv(path: pathlib.Path) -> pd.DataFrame:
    """The SEAHORSE columns of one duplicates TSV as text (NaN where a row is short), read
    by `fileio.open_table` as every SEAHORSE TSV is: tabs only, quotes are text.

    Raises:
      errors.DataError: an empty file, a missing column, a row with more fields than the
        header, bytes that are not UTF-8.
    """
    with fileio.open_table(path, kind=".tsv") as table:
        # The whole file first: bytes that are not UTF-8 are reported before the header.
        rows = list(table)
    header = table.header
    if header is None:
        raise errors.DataError(str(path), 1, None, "empty file; expected a SEAHORSE header row")
    for column in constants.TSV_COLUMNS:
        if column not in header:
            raise errors.DataError(str(path), 1, column, "SEAHORSE column missing from the header")
    columns: dict[str, list[str | None]] = {c: [] for c in constants.TSV_COLUMNS}
    for row in rows:
        if row.extra:
            raise errors.DataError(
                str(path),
                row.line,
                None,
                f"expected {len(header)} tab-separated fields, found "
                f"{len(header) + len(row.extra)}",
            )
        for column, values in columns.items():
            values.append(row.values[column])
    # Text columns as pandas' CSV reader gives them (a missing field is NaN).
    return pd.DataFrame(columns, dtype=str)


def read_duplicate_ratings(path: str | pathlib.Path) -> pd.DataFrame:
    """Ratings of items annotated more than once (SEAHORSE's `duplicates/`): one row per rating.

    Args:
      path: a TSV in the SEAHORSE layout (header, tab separated, no quoting), or a folder of
        them.

    Returns:
      `gem_id`, `summary`, `language` (the TSV's `worker_lang`), `system` and `q1`..`q6`
      (1 Yes, 0 No, None otherwise; a Q1 No leaves Q2..Q6 None, as in the split files).

    Raises:
      errors.UserError: the path is missing or holds no TSV.
      errors.DataError: a file is empty, lacks a SEAHORSE column, has a row with more
        fields than its header, or bytes that are not UTF-8 (file:line).
    """
    path = pathlib.Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.tsv"))
    elif path.is_file():
        files = [path]
    else:
        raise errors.UserError(f"duplicates not found: {path}")
    if not files:
        raise errors.UserError(f"no .tsv files in {path}")
    frames = []
    for file in files:
        raw = _read_duplicates_tsv(file)
        labels = {
            f"q{q}": raw[f"question{q}"].str.strip().str.lower().map({"yes": 1, "no": 0})
            for q in constants.QUESTIONS
        }
        frame = pd.DataFrame(
            {
                "gem_id": raw["gem_id"],
                "summary": raw["summary"],
                "language": raw["worker_lang"].map(constants.WORKER_LANG_TO_LANGUAGE),
                "system": raw["model"],
                **labels,
            }
        )
        q1_no = frame["q1"] == 0
        for q in constants.QUESTIONS[1:]:
            frame.loc[q1_no, f"q{q}"] = np.nan
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    label_columns = list(constants.LABEL_FIELDS)
    frame[label_columns] = (
        frame[label_columns].astype(object).where(frame[label_columns].notna(), None)
    )
    return frame
