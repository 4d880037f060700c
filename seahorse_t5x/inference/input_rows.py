"""The rows `score_file` scores: (article, summary) pairs read from JSON Lines, TSV or CSV,
each checked, bad rows named by line."""

from __future__ import annotations

import pathlib
from collections.abc import Iterable, Iterator
from typing import Any

from seahorse_t5x import errors, fileio

# (line number, row or None, problem or None) of one data line.
Record = tuple[int, dict[str, Any] | None, str | None]
# Bad rows listed in the error message before "and N more".
_SHOWN_BAD_ROWS = 5


def read_rows(path: pathlib.Path) -> Iterator[Record]:
    """(line number, row or None, problem or None) for each data line of the input file.

    A leading UTF-8 byte-order mark is dropped; a line that is not UTF-8 is a bad row. A
    .tsv or .csv file is read by `fileio.open_table` (TSV: split on tabs, quotes are text;
    CSV: standard quoting); the line is where a record starts.
    """
    suffix = path.suffix.lower()
    if suffix not in (".tsv", ".csv"):
        for number, row in fileio.iter_json_lines(path):
            if isinstance(row, errors.DataError):
                yield number, None, row.reason
            else:
                yield number, row, None
        return
    with fileio.open_table(path, invalid="replace") as table:
        if table.header is None:
            return
        rows: Iterable[fileio.TableRow] = table
        if not "".join(table.header).strip():
            # No header: a file of whitespace only is empty (`check_input` says so).
            rows = list(table)
            if not any("".join(map(str, (*r.values.values(), *r.extra))).strip() for r in rows):
                return
        for row in rows:
            if row.invalid_utf8:
                yield row.line, None, "not valid UTF-8"
            elif row.extra:
                yield row.line, None, "more fields than the header names"
            else:
                yield row.line, row.values, None


def row_problem(row: dict[str, Any]) -> str | None:
    """Why a parsed row cannot be scored, or None."""
    for field in ("article", "summary"):
        if field not in row:
            return f"missing field {field!r}"
        if not isinstance(row[field], str):
            return f"field {field!r} must be a string, got {type(row[field]).__name__}"
    if not row["summary"].strip():
        return "empty summary"
    return None


def records(path: pathlib.Path) -> Iterator[Record]:
    """`read_rows` with each row's scoring problem (None for a good row)."""
    for number, row, problem in read_rows(path):
        yield number, row, problem if problem is not None else row_problem(row)


def check_input(path: pathlib.Path, skip_bad_rows: bool) -> tuple[int, int]:
    """Reads the whole input once, keeping nothing: (rows, bad rows).

    Raises:
      DataError: the file has no row (`fileio.empty_file_error`).
      UserError: listing the bad rows by line, unless `skip_bad_rows`.
    """
    total, bad = 0, []
    for number, _, problem in records(path):
        total += 1
        if problem is not None:
            bad.append((number, problem))
    if not total:
        raise fileio.empty_file_error(
            path,
            "one row per line with an article and a summary (JSON Lines, or a CSV/TSV "
            "header and rows)",
            header_only=path.suffix.lower() in (".csv", ".tsv") and _has_header(path),
        )
    if bad and not skip_bad_rows:
        shown = "; ".join(f"line {n}: {p}" for n, p in bad[:_SHOWN_BAD_ROWS])
        more = f"; and {len(bad) - _SHOWN_BAD_ROWS} more" if len(bad) > _SHOWN_BAD_ROWS else ""
        raise errors.UserError(
            f"{path}: {len(bad)} bad rows ({shown}{more}); fix them or pass "
            "`skip_bad_rows` to write them with a null score"
        )
    return total, len(bad)


def _has_header(path: pathlib.Path) -> bool:
    with fileio.open_table(path, invalid="replace") as table:
        return bool(table.header and "".join(table.header).strip())


def chunks(path: pathlib.Path, skip: int, size: int) -> Iterator[list[Record]]:
    """The records after the first `skip`, `size` at a time."""
    chunk: list[Record] = []
    for index, record in enumerate(records(path)):
        if index < skip:
            continue
        chunk.append(record)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
